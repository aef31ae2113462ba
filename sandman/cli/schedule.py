"""``sandman schedule install|uninstall|show``: the nightly reflect and the site service on this platform's scheduler.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from sandman.cli.common import layout, run, say

schedule_app = typer.Typer(help="Schedule the nightly reflect and the site service.",
                           no_args_is_help=True)
_KIND = typer.Option("--kind", metavar="systemd|launchd|cron", help="The scheduler [default: this platform's].")


def _print_schedule(change) -> None:
    for path in change.written:
        say(f"written: {path}")
    for path in change.removed:
        say(f"removed: {path}")
    for path in change.unchanged:
        say(f"installed: {path}")
    for path in change.missing:
        say(f"not installed: {path}")
    for note in change.notes:
        say(note)
    if getattr(change, "failed", None):
        raise typer.Exit(1)  # a scheduler command failed: the notes say which and what to run


@schedule_app.command("install")
def schedule_install(
    kind: Annotated[Optional[str], _KIND] = None,
    at: Annotated[str, typer.Option(metavar="HH:MM", help="When reflect runs, local time.")] = "03:30",
    no_enable: Annotated[bool, typer.Option("--no-enable", help="Write the files; do not ask the scheduler to load them.")] = False,
) -> None:
    """Write the nightly reflect and the report serve service for the user's scheduler (idempotent)."""
    from sandman.verbs import schedule

    root = layout()
    _print_schedule(run(lambda: schedule.install(root, kind=kind, at=at, enable=not no_enable)))


@schedule_app.command("uninstall")
def schedule_uninstall(
    kind: Annotated[Optional[str], _KIND] = None,
    no_enable: Annotated[bool, typer.Option("--no-enable", help="Remove the files; do not ask the scheduler first.")] = False,
) -> None:
    """Disable and remove exactly the files schedule install writes."""
    from sandman.verbs import schedule

    root = layout()
    _print_schedule(run(lambda: schedule.uninstall(root, kind=kind, enable=not no_enable)))


@schedule_app.command("show")
def schedule_show(kind: Annotated[Optional[str], _KIND] = None) -> None:
    """List the schedule's files and whether each is installed."""
    from sandman.verbs import schedule

    root = layout()
    _print_schedule(run(lambda: schedule.show(root, kind=kind)))
