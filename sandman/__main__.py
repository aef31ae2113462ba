"""The ``sandman`` executable: hook calls go to the stdlib-only hook.py, remember and help pages
to the thin dispatcher (dispatch.py), the rest to cli.py.

Claude Code runs ``sandman take --hook`` and ``sandman recall --hook`` on every
session end and start, so those must not pay for importing typer, pygit2 or
jinja2: this module routes them before anything heavy is imported.
"""

from __future__ import annotations

import sys

HOOK_VERBS = ("take", "recall")


def main(argv: list[str] | None = None) -> None:
    """Run sandman with ``argv`` (default: ``sys.argv[1:]``); exits the process."""
    args = sys.argv[1:] if argv is None else argv
    # Exactly what Claude Code runs; any other argument goes to the CLI, which checks it.
    if len(args) == 2 and args[0] in HOOK_VERBS and args[1] == "--hook":
        from sandman import hook

        raise SystemExit(hook.main(args))
    # remember and every `<command> --help` run before typer, which imports pydantic (dispatch.py).
    from sandman.dispatch import dispatch

    status = dispatch(args)
    if status is not None:
        raise SystemExit(status)
    from sandman.cli import app

    app(args=args, prog_name="sandman")


if __name__ == "__main__":
    main()
