"""``sandman trail append|log|show|today|trailers|revoke``: the event log of machine decisions.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from sandman.cli.common import PlainUsage, layout, run, say

trail_app = typer.Typer(
    help="The event log of machine decisions.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _print_skipped(skipped: list[str]) -> None:
    if skipped:
        shown = ", ".join(skipped[:5]) + (", …" if len(skipped) > 5 else "")
        say(f"sandman: {len(skipped)} trail line(s) skipped, not events: {shown}", file=sys.stderr)


@trail_app.command("append", cls=PlainUsage)
def trail_append(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="<family>.<what>: shift.commit, breath.file, …")],
    summary: Annotated[str, typer.Argument(metavar="SUMMARY", help="One line: what was decided.")],
    parent: Annotated[Optional[str], typer.Option(metavar="ID", help="The event this one follows from.")] = None,
    shift: Annotated[Optional[str], typer.Option(metavar="SHIFT", help="The shift id [default: $SANDMAN_SHIFT].")] = None,
    repo: Annotated[Optional[str], typer.Option(metavar="DIR", help="The repository it touched (absolute).")] = None,
    model: Annotated[Optional[str], typer.Option(metavar="MODEL", help="The model that decided.")] = None,
    cost: Annotated[Optional[float], typer.Option("--cost", metavar="USD", help="What it cost, in US dollars.")] = None,
    data: Annotated[Optional[str], typer.Option(metavar="JSON", help="A JSON object of further facts.")] = None,
) -> None:
    """Append one event, commit it, and print its id."""
    from sandman.verbs import trail as verb

    root = layout()
    event = run(lambda: verb.append(root, kind, summary, parent=parent, shift=shift, repo=repo, model=model,
                                    cost_usd=cost, data=data))
    say(event.id)


def _print_events(found, whole, json_: bool) -> None:
    from sandman.verbs import trail as verb

    for event in found.events:
        if json_:
            say(verb.as_json(event, whole))
        else:
            say(verb.line(event, whole))
    _print_skipped(found.skipped)


@trail_app.command("log")
def trail_log(
    since: Annotated[Optional[str], typer.Option(metavar="YYYY-MM-DD", help="Only events of that UTC day and later.")] = None,
    kind: Annotated[Optional[str], typer.Option(metavar="KIND", help="Only this kind, or family (dream, dream.commit).")] = None,
    repo: Annotated[Optional[str], typer.Option(metavar="DIR", help="Only events naming this repository.")] = None,
    shift: Annotated[Optional[str], typer.Option(metavar="SHIFT", help="Only events of this shift.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List events, oldest first, revoked ones marked."""
    from sandman.verbs import trail as verb

    root = layout()
    found, whole = run(lambda: verb.log(root, since=since, kind=kind, repo=repo, shift=shift))
    _print_events(found, whole, json_)


@trail_app.command("show", cls=PlainUsage)
def trail_show(
    event_id: Annotated[str, typer.Argument(metavar="ID", help="The event id.")],
    json_: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Show an event, its descendants, revocation and commits."""
    import json

    from sandman.verbs import trail as verb

    root = layout()
    shown = run(lambda: verb.show(root, event_id))
    if json_:
        say(json.dumps({
            "event": shown.event.to_json(),
            "revoked_by": shown.revoked_by.id if shown.revoked_by else None,
            "descendants": [event.to_json() for event in shown.descendants],
            "commits": [{"repo": repo, "commit": commit, "subject": subject}
                        for repo, commit, subject in shown.commits],
            "unreadable": [{"repo": repo, "error": why} for repo, why in shown.unreadable],
        }, ensure_ascii=False, indent=2), lines=True)
        return
    say(shown.event.line())
    say(f"revoked: by {shown.revoked_by.id} ({shown.revoked_by.summary})" if shown.revoked_by else "revoked: no")
    for event in shown.descendants:
        say(f"descendant: {event.id} {event.kind} — {event.summary}")
    for repo, commit, subject in shown.commits:
        say(f"commit: {repo} {commit[:12]} {subject}")
    if not shown.commits:
        say("commit: none found in the known repositories")
    for repo, why in shown.unreadable:
        say(f"unreadable: {repo}: {why}")


@trail_app.command("today")
def trail_today(
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List today's events (the machine's day, in its time zone)."""
    from sandman.verbs import trail as verb

    root = layout()
    found, whole = run(lambda: verb.today(root))
    _print_events(found, whole, json_)


@trail_app.command("trailers", cls=PlainUsage)
def trail_trailers(
    event_id: Annotated[str, typer.Argument(metavar="ID", help="The event id.")],
) -> None:
    """Print the trailer lines to hand to git commit --trailer."""
    from sandman.verbs import trail as verb

    root = layout()
    for text in run(lambda: verb.trailers(root, event_id)):
        say(text)


@trail_app.command("revoke", cls=PlainUsage)
def trail_revoke(
    target: Annotated[str, typer.Argument(metavar="ID|SHIFT", help="The event id or shift id to revoke.")],
    why: Annotated[str, typer.Option("--why", metavar="TEXT", help="One line: what was wrong.")],
) -> None:
    """Revoke an event or a shift: append a revoke event."""
    from sandman.verbs import trail as verb

    root = layout()
    event, appended = run(lambda: verb.revoke(root, target, why))
    say(event.id if appended else f"{target} is already revoked by {event.id}")
    say(f"next: sandman reconcile {target} --dry-run")
