"""The ``sandman`` executable: hook calls go to the stdlib-only hook.py, remember, search, mcp and help pages
to the thin dispatcher (dispatch.py; a help page once rendered is kept in ``<root>/.help/``), the
rest to sandman/cli.

Claude Code runs ``sandman take --hook``, ``sandman recall --hook`` and ``sandman report
--hook`` on every session end and start, and ``sandman recall --prompt-hook`` and ``--file-hook``
on every prompt and file tool, so those must not pay for importing typer, pygit2 or jinja2: this
module routes them before anything heavy is imported.
"""

from __future__ import annotations

import sys

HOOK_VERBS = ("take", "recall", "report")
# The plugin's SessionEnd command: the take runs in a detached child.
DETACHED_TAKE = ["take", "--hook", "--detach"]
# recall's hooks at each prompt and after each file tool (hook.MOMENT_FLAGS).
MOMENT_FLAGS = ("--prompt-hook", "--file-hook")
MAX_PAYLOAD_BYTES = 1 << 20  # hook.MAX_PAYLOAD_BYTES: the same cut, before hook.py is imported


def _leave(code: int) -> None:
    """End a hook process at once: flush the standard streams, then ``os._exit(code)``.

    The interpreter's finalization (tearing down every module the hook imported) cost a
    hook about 6 ms, 0.45 x ``python -c pass``, with nothing to do: the hook paths write
    their files through descriptors they close (store.atomic, the journal) or ``with``
    blocks, and start no thread and register no ``atexit`` handler.
    """
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed when the hook started
                stream.flush()
        except OSError:
            pass  # Claude Code closed the pipe: nothing more can reach it
    os._exit(code)


def _read_payload() -> bytes:
    """hook.read_payload before the fork, where hook.py is not imported yet: the payload from
    stdin, at most MAX_PAYLOAD_BYTES + 1 bytes; empty when stdin is closed or unreadable."""
    try:
        return sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1) if sys.stdin is not None else b""
    except OSError:
        return b""


def main(argv: list[str] | None = None) -> None:
    """Run sandman with ``argv`` (default: ``sys.argv[1:]``); exits the process."""
    args = sys.argv[1:] if argv is None else argv
    # Exactly what Claude Code runs; any other argument goes to the CLI, which checks it.
    if args == DETACHED_TAKE:
        payload = _read_payload()
        from sandman.hookfork import fork_detached  # built-ins only, like everything before the fork

        if fork_detached():
            _leave(0)
        from sandman import hook

        _leave(hook.main(args[:2], payload))
    if args == ["statusline"]:  # Claude Code's statusLine, after each message: built-ins only
        from sandman import statusline

        line = statusline.main(_read_payload())
        try:
            sys.stdout.write(line)
        except (OSError, UnicodeEncodeError):
            pass
        _leave(0)
    if len(args) == 2 and (args[0] in HOOK_VERBS and args[1] == "--hook" or args[0] == "recall" and args[1] in MOMENT_FLAGS):
        from sandman import hook

        _leave(hook.main(args))
    # remember and every `<command> --help` run before typer parses, which imports pydantic (dispatch.py).
    from sandman import dispatch

    if args == ["mcp"]:
        _leave(dispatch.mcp_command())  # os._exit: the SDK's stdin thread would hold the exit open
    if args and args[0] == "search" and not dispatch.is_help(args):
        parsed = dispatch.parse_search(args[1:])
        if parsed is not None:
            raise SystemExit(dispatch.search_command(**parsed))
    if args and args[0] == "remember" and not dispatch.is_help(args):
        parsed = dispatch.parse_remember(args[1:])
        if parsed is not None:
            # No cyclic garbage collection in this short-lived process: its collections ran while importing
            # pygit2 and sandman (many small objects made at once) and freed nothing that matters, about
            # 7 ms of CPU (issue 29). Every file and lock of a remember is closed or released explicitly
            # (``with`` blocks, store.atomic, UndoLog.close, the search index's connection) before os._exit.
            import gc

            gc.disable()
            from sandman.store.gitload import import_for_local_commits

            import_for_local_commits()  # a local commit: libgit2 not made to parse the CA bundle
            # os._exit, as a hook: tearing down pygit2 and the rest cost a remember 15 ms (issue 29). Its
            # files are written and closed, the search index's connection closed, no thread or atexit left.
            _leave(dispatch.remember_command(**parsed))
    if dispatch.is_help(args):
        page = dispatch.cached_help(args)
        if page is not None:
            sys.stdout.write(page)
            raise SystemExit(0)
    from sandman.cli import app

    if dispatch.is_help(args):
        page = dispatch.help_page(app, args)
        if page is not None:
            page += "\n"  # what print() adds
            dispatch.keep_help(args, page)
            sys.stdout.write(page)
            raise SystemExit(0)

    app(args=args, prog_name="sandman")


if __name__ == "__main__":
    main()
