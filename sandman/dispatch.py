"""The thin dispatcher before typer: the hot commands run without importing typer.

Typer (0.29) builds a pydantic ``TypeAdapter`` for the first parameter it
processes, so every command it runs imports pydantic (about 60 ms) on top of
typer and click (about 35 ms). Two kinds of command are too frequent to pay it:

- ``sandman remember BODY [--cwd DIR] [--type T] [--name N] [--description D]
  [--session ID]``, which the model runs mid-session: parsed here with the
  standard library when it has exactly that plain shape, then run by
  ``remember_command``, the same function typer's ``remember`` command calls;
- ``sandman [<group>] <command> --help``: typer's own help page of that command,
  rendered without processing any parameter.

Anything else, or any shape this module is unsure of (an unknown option, a
repeated one, ``--``, a body starting with ``-``), returns ``None`` and goes to
typer, which parses it and words the error. Output and exit codes are
cli.py's: ``sandman: <what>`` on stderr, 2 for bad input, 1 otherwise.
"""

from __future__ import annotations

import sys

# remember's options, each taking one value, and the keyword each fills.
REMEMBER_OPTIONS = {"--cwd": "cwd", "--type": "type_", "--name": "name", "--description": "description",
                    "--session": "session"}


def parse_remember(args: list[str]) -> dict[str, str | None] | None:
    """Return remember's arguments from ``args`` (after the verb), or None when typer must parse them.

    Shape: ``{"body": str, "cwd": str | None, "type_": str, "name", "description", "session"}``.
    """
    found: dict[str, str | None] = {"body": None, "cwd": None, "type_": "project", "name": None,
                                    "description": None, "session": None}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and arg != "-":
            option, equals, value = arg.partition("=")
            if option not in REMEMBER_OPTIONS or option in seen:
                return None
            if not equals:
                if i + 1 >= len(args):
                    return None
                i += 1
                value = args[i]
            seen.add(option)
            found[REMEMBER_OPTIONS[option]] = value
        elif found["body"] is None:
            found["body"] = arg
        else:
            return None
        i += 1
    return found if found["body"] is not None else None


def say_error(message: str) -> None:
    """Print ``sandman: <message>`` on stderr, made inert and on one line (sandman/marks.py)."""
    from sandman.marks import visible

    print(f"sandman: {visible(message, lines=False)}", file=sys.stderr)


def os_error_message(error: OSError) -> str:
    """The one line an OSError becomes: the directory when the current one was deleted under the
    process (``os.getcwd()``'s error names no file), else its reason and the file it names."""
    from sandman import config

    gone = config.deleted_cwd() if isinstance(error, FileNotFoundError) and not error.filename else None
    if gone is not None:
        return f"the current directory {gone} no longer exists; cd to one that does and run it again"
    target = f" ({error.filename})" if error.filename else ""
    return f"{error.strerror or error}{target}"


def remember_command(body: str, cwd: str | None, type_: str, name: str | None, description: str | None,
                     session: str | None) -> int:
    """Run ``sandman remember``: read a ``-`` body from stdin, commit it, print its path.

    Returns the exit status: 0, 2 for bad input, 1 otherwise (the error printed on stderr).
    """
    from sandman import config
    from sandman.errors import SandmanError
    from sandman.layout import Layout
    from sandman.marks import visible

    if body == "-":
        # Read no more than a refusable body: 30 MB on stdin must not take seconds and memory to refuse.
        cap = 2 * config.MEMORY_BODY_MAX_BYTES
        data = sys.stdin.buffer.read(cap + 1)
        if len(data) > cap:
            say_error(f"memory body on stdin is over {cap:,} bytes; the limit is "
                      f"{config.MEMORY_BODY_MAX_BYTES:,} (64 KiB)")
            return 2
        body = data.decode("utf-8", "surrogateescape")
    try:
        root = Layout(config.root())
        from sandman.verbs.remember import remember

        committed = remember(root, body, cwd=cwd, memory_type=type_, name=name, description=description,
                             session=session)
    except SandmanError as error:
        say_error(str(error))
        return error.exit_code
    except OSError as error:
        say_error(os_error_message(error))
        return 1
    print(visible(committed.path))
    return 0


def is_help(args: list[str]) -> bool:
    """True when ``args`` are ``[<group>] <command> --help``: a help page ``help_page`` may render."""
    return len(args) >= 2 and args[-1] == "--help" and not any(arg.startswith("-") for arg in args[:-1])


def help_page(app, args: list[str]) -> str | None:
    """Return the help page of the typer ``app``'s command ``args`` names (``[<group>] <command>
    --help``), or None when ``args`` is not that shape or names no command (then typer parses
    them as usual). ``app`` is passed in, so that the imports run one way: cli -> dispatch."""
    if not is_help(args):
        return None
    import typer.main

    # Contexts made directly, not by make_context: parsing would process (and coerce) parameters.
    command = typer.main.get_command(app)
    ctx = command.context_class(command, info_name="sandman", **command.context_settings)
    for name in args[:-1]:
        sub = command.get_command(ctx, name) if hasattr(command, "get_command") else None
        if sub is None:
            return None
        command = sub
        ctx = command.context_class(command, info_name=name, parent=ctx, **command.context_settings)
    return command.get_help(ctx)
