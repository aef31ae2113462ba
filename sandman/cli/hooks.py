"""``sandman hooks install|uninstall|statusline``: sandman's hooks in Claude Code's settings.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from sandman.cli.common import fail, run, say

hooks_app = typer.Typer(help="Register sandman's hooks in Claude Code's settings.", no_args_is_help=True)


def _print_hooks_change(change) -> None:
    for line in change.added:
        say(f"added: {line}")
    for line in change.updated:
        say(f"updated: {line}")
    for line in change.removed:
        say(f"removed: {line}")
    say(f"{'written' if change.written else 'unchanged'}: {change.settings}")


@hooks_app.command("install")
def hooks_install(
    settings: Annotated[
        Optional[str], typer.Option(help="Settings file [default: <Claude config dir>/settings.json].")
    ] = None,
    auto_memory: Annotated[Optional[str], typer.Option(
        "--auto-memory", metavar="on|off",
        help="Also turn Claude Code's native auto memory off (autoMemoryEnabled: false) or back on.")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Register them even while the sandman plugin is enabled (each hook then runs twice).")] = False,
    statusline: Annotated[bool, typer.Option(
        "--statusline", help="Also show the live shift in Claude Code's status line (sandman statusline).")] = False,
) -> None:
    """Register take --hook on SessionEnd, recall --hook and report --hook on SessionStart (idempotent)."""
    from sandman.claudecode.settings import settings_path
    from sandman.verbs import hooks as verb

    if auto_memory not in (None, "on", "off"):
        raise fail(f"--auto-memory {auto_memory!r}: give on or off", 2)
    path = run(lambda: settings_path(settings)) if settings else None
    _print_hooks_change(run(lambda: verb.install(path, force=force, statusline=statusline)))
    if auto_memory is not None:
        written = run(lambda: verb.set_auto_memory(auto_memory == "on", path))
        state = "off (autoMemoryEnabled: false)" if auto_memory == "off" else "back to its default, on"
        say(f"Claude Code's native auto memory: {state}{'' if written else ', already so'}")
    enabled, why = run(lambda: verb.auto_memory(path))
    if enabled:
        say(f"Claude Code's native auto memory is also on ({why}): sessions start with both memories. "
            "To keep sandman's alone: `sandman import claude-memory`, then "
            "`sandman hooks install --auto-memory off`.")


@hooks_app.command("uninstall")
def hooks_uninstall(
    settings: Annotated[
        Optional[str], typer.Option(help="Settings file [default: <Claude config dir>/settings.json].")
    ] = None,
) -> None:
    """Remove sandman's hooks from Claude Code's settings, keeping everything else."""
    from sandman.claudecode.settings import settings_path
    from sandman.verbs.hooks import uninstall

    _print_hooks_change(run(lambda: uninstall(settings_path(settings) if settings else None)))


@hooks_app.command("statusline")
def hooks_statusline(
    settings: Annotated[
        Optional[str], typer.Option(help="Settings file [default: <Claude config dir>/settings.json].")
    ] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Take sandman's status line away.")] = False,
) -> None:
    """Set Claude Code's status line to sandman's (the live shift), hooks untouched."""
    from sandman.claudecode.settings import settings_path
    from sandman.verbs import hooks as verb

    _print_hooks_change(run(lambda: verb.statusline(settings_path(settings) if settings else None, remove=remove)))
