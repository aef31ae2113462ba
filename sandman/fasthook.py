"""The launcher of the hooks' fast paths: ``<python> -I -S <this file> recall --prompt-hook`` (or ``--hook``).

What ``sandman hooks install`` writes as the UserPromptSubmit and SessionStart recall
commands (docs/hooks.md).
``-I -S``: no ``site`` (0.27 x ``python -c pass``) and no console-script wrapper (its
``import re``); this file imports only built-ins, puts the folder holding the ``sandman``
package first on ``sys.path`` (a script's own folder, ``sandman/``, would shadow the
standard library with sandman's modules) and runs sandman/recall/fast.py (the prompt hook)
or sandman/recall/served.py (SessionStart: the reply the full hook kept). Whatever those
paths do not serve, and any other arguments, go to ``sandman.__main__.main`` in this
process: every hook path imports the standard library alone (tests/test_imports.py), so
it runs without ``site`` too.
"""

import os
import sys

if __name__ == "__main__":  # run as a script; imported (a test reads its __file__), sys.path is left alone
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _prompt(payload: bytes) -> str | None:
    from sandman.recall import fast

    return fast.prompt_hook(payload)


def _start(payload: bytes) -> str | None:
    from sandman.recall import served

    return served.serve(payload)


# argv -> the fast path: its reply, "" for none, or None (FALLBACK) for the full hook.
_FAST_PATHS = {("recall", "--prompt-hook"): _prompt, ("recall", "--hook"): _start}


def main() -> None:
    """Run a hook's fast path (``_FAST_PATHS``), else sandman's own entry point; exits the process."""
    from sandman import __main__ as entry

    args = sys.argv[1:]
    fast_path = _FAST_PATHS.get(tuple(args))
    if fast_path is not None and os.environ.get("CLAUDE_MEMORY_PIPELINE", "") != "1":
        payload = entry._read_payload()
        try:
            reply = fast_path(payload)
        except Exception:  # noqa: BLE001 - the full hook decides and journals what failed
            reply = None
        if reply is None:  # FALLBACK
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
