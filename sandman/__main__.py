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
    # remember and every `<command> --help` run before typer parses, which imports pydantic (dispatch.py).
    from sandman import dispatch

    if args and args[0] == "remember" and not dispatch.is_help(args):
        parsed = dispatch.parse_remember(args[1:])
        if parsed is not None:
            raise SystemExit(dispatch.remember_command(**parsed))
    from sandman.cli import app

    if dispatch.is_help(args):
        page = dispatch.help_page(app, args)
        if page is not None:
            print(page)
            raise SystemExit(0)

    app(args=args, prog_name="sandman")


if __name__ == "__main__":
    main()
