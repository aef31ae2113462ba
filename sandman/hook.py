"""The hook entry points: what Claude Code runs at SessionStart and SessionEnd.

``sandman <verb> --hook`` reads the hook payload (JSON) on stdin, hands it to
the verb's ``hook`` function, and prints what that returns. Standard library
only, here and in everything it imports before the verb's own work: a hook runs
on every session start and end, and must be fast.

A hook never breaks Claude Code: every failure becomes one journal line in
``.trace/<verb>-<date>.log`` and exit status 0.

Two declines come before the payload is read. Inside a mind
(``CLAUDE_MEMORY_PIPELINE=1``) every hook exits at once, writing nothing: the
minds are Claude Code sessions too, and taking their sessions back into the
queue fork-bombs the machine, while feeding them memories would break their
memory-blindness. ``$SANDMAN_NO_TAKE`` makes ``take --hook`` decline before it
reads stdin, so a caller driving ``claude -p --resume`` keeps its transcript.

``take --hook --detach`` (the plugin's command) is forked off in
sandman/__main__.py before this module is even imported; its child calls
``main`` with the payload the parent read.
"""

from __future__ import annotations

import sys

from sandman import config, journal
from sandman.errors import ConfigError, SandmanError
from sandman.layout import Layout

# recall's hooks beside its SessionStart one: at each prompt and after each file tool (sandman/recall/moments.py).
MOMENT_FLAGS = ("--prompt-hook", "--file-hook")


def _verb_hook(verb: str, flag: str = "--hook"):
    if flag in MOMENT_FLAGS:
        from sandman.recall import moments

        return moments.prompt_hook if flag == "--prompt-hook" else moments.file_hook
    if verb == "take":
        from sandman.verbs import take

        return take.hook
    if verb == "report":
        from sandman.verbs import report

        return report.hook
    from sandman.verbs import recall

    return recall.hook


def read_payload() -> bytes:
    """Return the hook's payload from stdin, at most ``config.HOOK_PAYLOAD_MAX_BYTES`` + 1 bytes;
    empty when stdin is closed or unreadable (the hook then journals the payload as unusable)."""
    try:
        return sys.stdin.buffer.read(config.HOOK_PAYLOAD_MAX_BYTES + 1) if sys.stdin is not None else b""
    except OSError:
        return b""


def main(args: list[str], payload: bytes | None = None) -> int:
    """Run ``args[0]``'s hook (``args[1]``: ``--hook``, or recall's ``--prompt-hook`` or
    ``--file-hook``) on ``payload`` (default: read from stdin); always return 0."""
    verb = args[0]
    flag = args[1] if len(args) > 1 else "--hook"
    if config.in_pipeline():
        return 0
    try:
        layout = Layout(config.root())
    except ConfigError as error:
        print(f"sandman {verb} --hook: {error}", file=sys.stderr)
        return 0
    if verb == "take" and config.no_take():
        journal.write(layout, verb, "declined", hook=True, reason="no-take")
        return 0
    try:
        if payload is None:
            payload = read_payload()
        output = _verb_hook(verb, flag)(layout, payload)
    except SandmanError as error:
        journal.write(layout, verb, "failed", hook=True, error=str(error))
        return 0
    except Exception as error:  # noqa: BLE001 - a hook must never break Claude Code
        journal.write(layout, verb, "crashed", hook=True, error=f"{type(error).__name__}: {error}")
        return 0
    if output:
        try:
            if sys.stdout is None:  # the descriptor was closed when the hook started
                raise OSError("standard output is closed")
            # Payload text may carry lone surrogates (JSON "\ud800"): never let them fail the hook.
            sys.stdout.buffer.write(output.encode("utf-8", "backslashreplace"))
            sys.stdout.flush()
        except OSError as error:  # Claude Code went away before reading it: nothing to tell
            journal.write(layout, verb, "failed", hook=True, error=f"cannot write the hook's output: {error}")
    return 0

