"""The typer app: one command per verb. A command parses its arguments, calls the
verb module's function, prints, and sets the exit status; the logic lives in
``sandman/verbs/``. Verb modules are imported inside the commands so that
``sandman --help`` stays fast.

Errors reach the user here as one line on stderr (``sandman: <what>``) and a
non-zero exit: 2 for bad input, 1 for everything else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Optional, TypeVar

import typer

from sandman import __version__, config
from sandman.errors import SandmanError
from sandman.layout import Layout

app = typer.Typer(
    name="sandman",
    help="A memory engine for Claude Code sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals hold transcripts
    rich_markup_mode=None,
)

T = TypeVar("T")


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``sandman: <message>`` on stderr and return the Exit to raise."""
    print(f"sandman: {message}", file=sys.stderr)
    return typer.Exit(code)


def run(action: Callable[[], T]) -> T:
    """Call ``action``; turn a SandmanError or OSError into one stderr line and an exit."""
    try:
        return action()
    except SandmanError as error:
        raise fail(str(error), error.exit_code) from None
    except OSError as error:
        target = f" ({error.filename})" if error.filename else ""
        raise fail(f"{error.strerror or error}{target}") from None


def layout() -> Layout:
    """Return the Layout of the configured root (exits 2 on a bad $SANDMAN_ROOT)."""
    return run(lambda: Layout(config.root()))


def _version(value: bool) -> None:
    if value:
        print(f"sandman {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """A memory engine for Claude Code sessions: archive, dream by 2-of-3 consensus, recall."""


@app.command()
def init() -> None:
    """Create or adopt the memory root as a git repository (idempotent)."""
    from sandman.verbs.init import init as run_init

    root = layout()
    changed = run(lambda: run_init(root))
    print(f"{'initialised' if changed else 'already set up'}: {root.root}")


@app.command()
def remember(
    body: Annotated[str, typer.Argument(help="The memory's text (markdown). '-' reads it from stdin.")],
    cwd: Annotated[Optional[str], typer.Option(help="Absolute directory whose bank gets it [default: current directory].")] = None,
    type_: Annotated[str, typer.Option("--type", help="user, feedback, project or reference.")] = "project",
    name: Annotated[Optional[str], typer.Option(help="Short title [default: the body's first line].")] = None,
    description: Annotated[Optional[str], typer.Option(help="One line [default: the body's first sentence].")] = None,
    session: Annotated[Optional[str], typer.Option(help="Session id for the commit's Session: trailer.")] = None,
) -> None:
    """Commit one memory now: the in-session path."""
    from sandman.verbs.remember import remember as run_remember

    if body == "-":
        body = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    root = layout()
    committed = run(
        lambda: run_remember(
            root, body, cwd=cwd, memory_type=type_, name=name, description=description, session=session
        )
    )
    print(committed.path)


# --- the static site: `sandman site` and `sandman report serve` ---


@app.command()
def site() -> None:
    """Render the memory root as a static site into <root>/.site/."""
    from sandman.verbs.site import site as run_site

    root = layout()
    stats = run(lambda: run_site(root))
    print(
        f"rendered {stats.site}: {stats.pages} pages, {stats.written} written, "
        f"{stats.removed} removed ({stats.seconds:.2f} s)"
    )
    if stats.unreadable:
        print(f"{stats.unreadable} files could not be read; their pages show the error")
    print(f"open {stats.site / 'index.html'}")


report_app = typer.Typer(
    help="The owner's digest of the shifts' reports; only `serve` exists yet.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(report_app, name="report")


@report_app.command("serve")
def report_serve(
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port; 0 picks a free one.")] = config.SITE_PORT,
    host: Annotated[str, typer.Option(help="Address to bind; loopback only unless --public.")] = config.SITE_HOST,
    public: Annotated[bool, typer.Option("--public", help="Allow a non-loopback address: anyone who can reach it reads every memory.")] = False,
) -> None:
    """Serve the rendered site, re-rendering it first if stale."""
    from sandman.site.serve import url
    from sandman.verbs.report import open_server

    root = layout()
    server, stats = run(lambda: open_server(root, host=host, port=port, public=public))
    print(f"site: {stats.written} pages re-rendered" if stats.written else "site: up to date")
    print(f"serving {url(server)} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
