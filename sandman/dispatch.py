"""The thin dispatcher before typer: the hot commands run without importing typer.

Typer (0.29) builds a pydantic ``TypeAdapter`` for the first parameter it
processes, so every command it runs imports pydantic (about 60 ms) on top of
typer and click (about 35 ms). Three kinds of command are too frequent to pay it:

- ``sandman remember BODY [--cwd DIR] [--type T] [--name N] [--description D]
  [--session ID]``, which the model runs mid-session: parsed here with the
  standard library when it has exactly that plain shape, then run by
  ``remember_command``, the same function typer's ``remember`` command calls;
- ``sandman mcp``, the tool server Claude Code starts with every session and
  waits for (``mcp_command``);
- ``sandman search QUERY... [--bank B] [--type T] [--limit N] [--json] [--reindex]``,
  which sessions run to look a memory up (issue 29: typer and pydantic were 95 % of its
  time): parsed by ``parse_search``, run by ``search_command``, what typer's ``search``
  command prints;
- ``sandman [<group>] [<command>] --help``: typer's own help page of that command,
  rendered without processing any parameter, and kept in ``<root>/.help/``, so
  that the next request for the same page is answered without importing typer
  (about 3 x ``python -c pass`` alone): see ``cached_help``.

Anything else, or any shape this module is unsure of (an unknown option, a
repeated one, ``--``, a body starting with ``-``), returns ``None`` and goes to
typer, which parses it and words the error. Output and exit codes are
sandman/cli's: ``sandman: <what>`` on stderr, 2 for bad input, 1 otherwise.
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


# search's options taking one value, the keyword each fills; and its flags.
SEARCH_OPTIONS = {"--bank": "bank", "--type": "memory_type", "--limit": "limit"}
SEARCH_FLAGS = {"--json": "json", "--reindex": "reindex"}


def parse_search(args: list[str]) -> dict | None:
    """Return search's arguments from ``args`` (after the verb), or None when typer must parse them.

    Shape: ``{"query": str, "bank": str | None, "memory_type": str | None, "limit": int,
    "json": bool, "reindex": bool}``; ``--limit`` only as plain digits (anything else is
    typer's to refuse). Several words are one query, joined by one space (cli.common.SeveralWords:
    ``sandman search make release``)."""
    words: list[str] = []
    found: dict = {"query": None, "bank": None, "memory_type": None, "limit": 20, "json": False, "reindex": False}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and arg != "-":
            option, equals, value = arg.partition("=")
            if option in seen or option not in SEARCH_OPTIONS and (option not in SEARCH_FLAGS or equals):
                return None
            seen.add(option)
            if option in SEARCH_FLAGS:
                found[SEARCH_FLAGS[option]] = True
                i += 1
                continue
            if not equals:
                if i + 1 >= len(args):
                    return None
                i += 1
                value = args[i]
            if option == "--limit":
                if not value.isascii() or not value.isdigit():
                    return None
                value = int(value)
            found[SEARCH_OPTIONS[option]] = value
        else:
            words.append(arg)
        i += 1
    found["query"] = " ".join(words)
    return found if words else None


def search_command(query: str, bank: str | None, memory_type: str | None, limit: int, json: bool,
                   reindex: bool) -> int:
    """Run ``sandman search`` as sandman/cli's ``search`` does: the hits as lines (or a JSON array with
    ``json``), ``no_match``'s line and 1 when none; 2 for bad input, 1 otherwise, the error on stderr."""
    from sandman import config
    from sandman.errors import SandmanError
    from sandman.layout import Layout
    from sandman.marks import visible
    from sandman.verbs import search as verb

    try:
        root = Layout(config.root())
        hits = verb.search(root, query, bank=bank, memory_type=memory_type, limit=limit, reindex=reindex)
    except SandmanError as error:
        say_error(str(error))
        return error.exit_code
    except OSError as error:
        say_error(os_error_message(error))
        return 1
    if json:
        print(visible(verb.to_json(root, hits), lines=True))
        return 0
    if not hits:
        print(visible(verb.no_match(query)))
        return 1
    for line in verb.lines(root, hits):
        print(visible(line))
    return 0


def say_error(message: str) -> None:
    """Print ``sandman: <message>`` on stderr, made inert and on one line (sandman/marks.py)."""
    from sandman.marks import visible

    if sys.stderr is None:  # closed when the process started: print(file=None) would write to stdout
        return
    try:
        print(f"sandman: {visible(message, lines=False)}", file=sys.stderr, flush=True)
    except OSError:
        pass  # stderr is full or gone; the exit status still says it failed


def os_error_message(error: OSError) -> str:
    """The one line an OSError becomes: the directory when the current one was deleted under the
    process (``os.getcwd()``'s error names no file), else its reason and the file it names."""
    from sandman import config

    gone = config.deleted_cwd() if isinstance(error, FileNotFoundError) and not error.filename else None
    if gone is not None:
        return f"the current directory {gone} no longer exists; cd to one that does and run it again"
    target = f" ({error.filename})" if error.filename else ""
    return f"{error.strerror or error}{target}"


def _shown(path: object) -> str:
    """``marks.visible(str(path))``, marks.py imported only when ``path`` holds a character to mark
    (none is printable): compiling its patterns was 0.5 ms of every remember (issue 29)."""
    text = str(path)
    if text.isprintable():
        return text
    from sandman.marks import visible

    return visible(text)


def remember_command(body: str, cwd: str | None, type_: str, name: str | None, description: str | None,
                     session: str | None) -> int:
    """Run ``sandman remember``: read a ``-`` body from stdin, commit it, print its path.

    Returns the exit status: 0, 2 for bad input, 1 otherwise (the error printed on stderr).
    """
    from sandman import config
    from sandman.errors import SandmanError
    from sandman.layout import Layout

    if body == "-":
        # Read no more than a refusable body: 30 MB on stdin must not take seconds and memory to refuse.
        cap = 2 * config.MEMORY_BODY_MAX_BYTES
        try:
            # None: the process started with its stdin closed, which holds no body.
            data = sys.stdin.buffer.read(cap + 1) if sys.stdin is not None else b""
        except OSError as error:
            say_error(f"cannot read the memory body from stdin: {os_error_message(error)}")
            return 2
        if len(data) > cap:
            say_error(f"memory body on stdin is over {cap:,} bytes; the limit is "
                      f"{config.MEMORY_BODY_MAX_BYTES:,} (64 KiB)")
            return 2
        body = data.decode("utf-8", "surrogateescape")
    try:
        root = Layout(config.root())
        from sandman.verbs.remember import remember

        committed = remember(root, body, cwd=cwd, memory_type=type_, name=name, description=description,
                             session=session, keep_lock=True)
    except SandmanError as error:
        say_error(str(error))
        return error.exit_code
    except OSError as error:
        say_error(os_error_message(error))
        return 1
    code = 0
    try:
        print(_shown(committed.path), flush=True)
    except BrokenPipeError:
        pass  # the reader went away; the memory is committed all the same
    except OSError as error:
        say_error(f"the memory is committed ({_shown(committed.path)}), but its path could not be written "
                  f"to stdout: {os_error_message(error)}")
        code = 1
    if committed.lock is not None:
        from sandman.store.repo import catch_up_in_child

        catch_up_in_child(root, committed.lock)  # the index, after the answer (docs/remember.md)
    return code


def mcp_command() -> int:
    """Run ``sandman mcp`` (sandman/mcp.py) without typer: the server's start is on every Claude Code
    session's path. Returns 0 when the client closed stdin; 2 on a bad ``$SANDMAN_ROOT``
    (the error printed on stderr). SIGINT and SIGTERM end the process with 0 (mcp_handshake.serve)."""
    from sandman import config
    from sandman.errors import SandmanError
    from sandman.layout import Layout

    try:
        root = Layout(config.root())
    except SandmanError as error:
        say_error(str(error))
        return error.exit_code
    from sandman.mcp_handshake import serve  # the handshake before the SDK's import

    serve(root)
    return 0


def is_help(args: list[str]) -> bool:
    """True when ``args`` are ``[<group>] [<command>] --help``: a help page ``help_page`` may render."""
    return len(args) >= 1 and args[-1] == "--help" and not any(arg.startswith("-") for arg in args[:-1])


# The packages whose code shapes a help page: sandman's (the texts, the defaults), typer's and click's (the layout).
HELP_SOURCES = ("sandman", "typer", "click")


def _package_dir(name: str) -> str | None:
    """The folder ``import name`` would load, found on sys.path without importing it (sandman: its own)."""
    import os

    if name == "sandman":
        import sandman

        return os.path.dirname(sandman.__file__)
    for entry in sys.path:
        folder = os.path.join(entry or ".", name)
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return folder
    return None


def _digest(data: bytes) -> str:
    """64 bits of checksum over ``data`` as 16 hex digits: CRC-32 and Adler-32 (zlib, where hashlib
    would load OpenSSL, about 2 ms of a help page's start)."""
    import zlib

    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _sources_key() -> str | None:
    """A digest of everything a help page is built from but its arguments and the terminal width: the
    Python version, sandman's version, and the path, size and modification time (ns) of every ``.py``
    file of sandman, typer and click. None when one of them is not found (then nothing is cached)."""
    import os

    import sandman

    parts = [sys.version, sandman.__version__]
    for name in HELP_SOURCES:
        folder = _package_dir(name)
        if folder is None:
            return None
        stack = [folder]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                        stack.append(entry.path)
                    elif entry.name.endswith(".py"):
                        info = entry.stat()
                        parts.append(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}")
    return _digest("\0".join(parts).encode("utf-8", "surrogateescape"))


def _page_key(args: list[str]) -> str:
    """A digest of the page's arguments and the inputs of the terminal width click reads
    (``shutil.get_terminal_size``: ``$COLUMNS``, else the size of the terminal on stdout)."""
    import os

    try:
        size = tuple(os.get_terminal_size(sys.__stdout__.fileno()))
    except (AttributeError, ValueError, OSError):
        size = None
    shape = repr((args, os.environ.get("COLUMNS"), os.environ.get("LINES"), size))
    return _digest(shape.encode("utf-8", "surrogateescape"))


def _help_file(args: list[str]):
    """The file that keeps ``args``' page, or None when there is no memory root yet or no code to key on."""
    from sandman import config
    from sandman.errors import ConfigError
    from sandman.layout import Layout

    try:
        layout = Layout(config.root())
    except ConfigError:
        return None
    if not layout.root.is_dir():  # a help page never creates the root
        return None
    sources = _sources_key()
    if sources is None:
        return None
    return layout.help_cache / sources / f"{_page_key(args)}.txt"


def cached_help(args: list[str]) -> str | None:
    """Return the help page ``args`` (``[<group>] [<command>] --help``) asks for as ``keep_help`` kept
    it, or None when it was not kept for this state of the code and this terminal width."""
    try:
        path = _help_file(args)
        return None if path is None else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def keep_help(args: list[str], page: str) -> None:
    """Keep ``page`` (what ``help_page`` rendered for ``args``) for ``cached_help``; remove the pages
    kept for any earlier state of the code. A root that cannot be written keeps nothing, silently."""
    import shutil

    from sandman.store.atomic import write_atomic

    try:
        path = _help_file(args)
        if path is None:
            return
        write_atomic(path, page, durable=False)
        for old in path.parent.parent.iterdir():
            if old.name != path.parent.name and old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        return


def help_page(app, args: list[str]) -> str | None:
    """Return the help page of the typer ``app``'s command ``args`` names (``[<group>] [<command>]
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
