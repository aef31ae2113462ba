"""The launcher of ``recall --prompt-hook``'s fast path: ``<python> -I -S <this file> recall --prompt-hook``.

What ``sandman hooks install`` writes as the UserPromptSubmit command (docs/hooks.md).
``-I -S``: no ``site`` (0.27 x ``python -c pass``) and no console-script wrapper (its
``import re``); this file imports only built-ins, puts the folder holding the ``sandman``
package first on ``sys.path`` (a script's own folder, ``sandman/``, would shadow the
standard library with sandman's modules) and runs sandman/recall/fast.py. Whatever that
path does not serve, and any other arguments, go to ``sandman.__main__.main`` in this
process: every hook path imports the standard library alone (tests/test_imports.py), so
it runs without ``site`` too.
"""

import os
import sys

sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    """Run the prompt hook's fast path, else sandman's own entry point; exits the process."""
    from sandman import __main__ as entry

    args = sys.argv[1:]
    if args == ["recall", "--prompt-hook"] and os.environ.get("CLAUDE_MEMORY_PIPELINE", "") != "1":
        from sandman.recall import fast

        payload = entry._read_payload()
        try:
            reply = fast.prompt_hook(payload)
        except Exception:  # noqa: BLE001 - the full hook decides and journals what failed
            reply = fast.FALLBACK
        if reply is fast.FALLBACK:
            from sandman import hook

            entry._leave(hook.main(args, payload))
        if reply:
            try:
                sys.stdout.buffer.write(reply.encode("utf-8", "backslashreplace"))
            except (OSError, AttributeError):
                pass  # Claude Code went away before reading it
        entry._leave(0)
    entry.main(args)


if __name__ == "__main__":
    main()
