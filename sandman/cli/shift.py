"""``sandman shift pick|brief|attach|status|clock|handoff|profile|run|targets|voyage``: the machine's shifts.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from sandman.cli.common import BodyArgument, PlainUsage, fail, layout, run, say

shift_app = typer.Typer(
    help="Unattended night sessions on picked repositories.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _text_or_stdin(text: str, what: str) -> str:
    if text != "-":
        return text
    data = sys.stdin.buffer.read(256 * 1024 + 1)
    if len(data) > 256 * 1024:
        raise fail(f"the {what} on stdin is over 256 KiB", 2)
    return data.decode("utf-8", "replace")


@shift_app.command("pick")
def shift_pick(
    path: Annotated[bool, typer.Option("--path", help="Print only the picked repository's path.")] = False,
    untrusted: Annotated[bool, typer.Option("--untrusted", help="List the repositories Claude Code does not trust.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print a JSON array of candidates.")] = False,
) -> None:
    """Show the rotation: the repository the next shift works, and why."""
    import json

    from sandman.verbs import shift as verb

    root = layout()
    found = run(lambda: verb.pick(root, untrusted=untrusted))
    if json_:
        say(json.dumps([c.to_json() for c in found], ensure_ascii=False, indent=2), lines=True)
        return
    if path:
        chosen = next((c for c in found if c.pickable and not untrusted), None)
        if chosen is None:
            raise fail("no repository to pick (`sandman shift pick` says why)", 1)
        say(chosen.path)
        return
    if not found:
        say("no repositories" + (" Claude Code does not trust" if untrusted else " under machine.roots"))
    for n, item in enumerate(found, 1):
        mark = "pick" if n == 1 and item.pickable and not untrusted else ("ok  " if item.pickable else "no  ")
        weight = f" (weight {item.weight:g})" if item.weight is not None else ""
        say(f"{mark} {item.path}{weight} — {'; '.join(item.reasons)}")


@shift_app.command("brief")
def shift_brief(
    path: Annotated[Optional[str], typer.Option(metavar="DIR", help="Work this repository instead of the pick.")] = None,
) -> None:
    """Open a shift: write its brief, meta and shift.start; print the brief's path."""
    from sandman.verbs import shift as verb

    root = layout()
    opened, worktree = run(lambda: verb.brief(root, path=path))
    say(opened.folder / "brief.md")
    if worktree:
        say(f"worktree: {worktree} (branch shift/{opened.id}); start a session there with SANDMAN_SHIFT={opened.id}, "
            "then `sandman shift attach <session>`")
    say(f"shift {opened.id} on {opened.repo}: {opened.characters:,} characters"
        + (f", cut: {', '.join(f'{k} {v:,}' for k, v in opened.cuts.items())}" if opened.cuts else ""))


@shift_app.command("attach", cls=PlainUsage)
def shift_attach(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The Claude Code session id working the shift.")],
) -> None:
    """Record the session id of the open shift."""
    from sandman.verbs import shift as verb

    root = layout()
    say(f"attached {session} to {run(lambda: verb.attach(root, session))}")


@shift_app.command("status")
def shift_status(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Show the open shift and the latest ones."""
    import json

    from sandman.verbs import shift as verb

    root = layout()
    found = run(lambda: verb.status(root))
    if json_:
        say(json.dumps(found, ensure_ascii=False, indent=2), lines=True)
        return
    def word(value: object, missing: str = "-") -> str:
        return value if isinstance(value, str) and value else missing

    current = found["current"]
    if current and current.get("state") == "broken":
        say("open: unreadable: shifts/.current.json is not JSON or not an object")
    elif current:
        say(f"open: {word(current.get('shift'))} ({word(current.get('state'))}) on {word(current.get('repo'))}; "
            f"session {word(current.get('session'), 'not attached')}; "
            f"{'running' if found['alive'] else 'no live process'}")
    else:
        say("no shift is open")
    if found["paused"]:
        say("paused: shifts/PAUSE exists")
    for item in found["recent"]:
        if item["problem"]:
            say(f"{item['id']} unreadable: {item['problem']}")
        else:
            say(f"{item['id']} {word(item['repo'])} {word(item['theme'])} {word(item['outcome'], 'open')}"
                + (f" REVOKED by {item['revoked']}" if item.get("revoked") else ""))


@shift_app.command("clock")
def shift_clock(
    check: Annotated[bool, typer.Option("--check", help="Exit 1 when under machine.min_window_minutes remain.")] = False,
) -> None:
    """How long the model's usage window has left (exit 3: unreadable window file)."""
    from sandman import config as cfg
    from sandman.verbs import shift as verb

    root = layout()
    found = run(lambda: verb.clock(root))
    say(found.note)
    if check:
        minimum = run(lambda: cfg.machine(root)).min_window_minutes
        if not found.room(minimum):
            raise typer.Exit(1)


@shift_app.command("handoff", cls=BodyArgument)
def shift_handoff(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The handoff (at most 2,000 characters); '-' reads stdin.")] = "",
    abandoned: Annotated[bool, typer.Option("--abandoned", help="Record a shift that died without a handoff.")] = False,
    truncate: Annotated[bool, typer.Option("--truncate", help="Cut a handoff over 2,000 characters instead of refusing.")] = False,
) -> None:
    """Close the open shift: handoff.md, report.md, the outcome, shift.handoff."""
    from sandman.verbs import shift as verb

    root = layout()
    body = _text_or_stdin(text, "handoff")
    closed = run(lambda: verb.handoff(root, body, abandoned=abandoned, truncate=truncate))
    say(f"{closed.id} {closed.outcome}: {len(closed.commits)} commit(s), {len(closed.findings)} finding(s); "
        f"report: {root.shift_dir(closed.id) / 'report.md'}")
    for finding in closed.findings:
        say(f"finding: {finding}")


@shift_app.command("profile")
def shift_profile(
    shift: Annotated[Optional[str], typer.Argument(
        metavar="SHIFT", help="A shift's id: its profile as `shift run` passes it [default: a shift on no repository].")] = None,
) -> None:
    """Print the Claude Code settings and environment a shift session runs with (JSON)."""
    import json

    from sandman.verbs import shift as verb

    root = layout()
    say(json.dumps(run(lambda: verb.profile(root, shift)), ensure_ascii=False, indent=2), lines=True)


@shift_app.command("run")
def shift_run(
    force: Annotated[bool, typer.Option("--force", help="Start a shift now, even outside the night window or "
                                        "past machine.shifts_per_night.")] = False,
) -> None:
    """The tick: close a finished shift, then start one if the night allows."""
    from sandman.verbs import shift as verb

    root = layout()
    done = run(lambda: verb.run(root, force=force))
    if done.closed:
        say(f"closed {done.closed}")
    if done.decision == "started":
        say(f"started {done.shift}: {done.reason}")
    else:
        say(f"{done.decision}: {done.reason}")
    if done.decision == "failed":
        raise typer.Exit(1)


@shift_app.command("targets", cls=BodyArgument)
def shift_targets(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Markdown, one '## <repository>' each; '-' reads stdin.")],
) -> None:
    """Write next week's targets (the rest day's self-pass only)."""
    from sandman.verbs import shift as verb

    root = layout()
    say(run(lambda: verb.targets(root, _text_or_stdin(text, "targets"))))


@shift_app.command("voyage", cls=BodyArgument)
def shift_voyage(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Markdown: a '# <title>' line, then the body; '-' reads stdin.")],
) -> None:
    """Write the week's voyage entry (the rest day's self-pass only)."""
    from sandman.verbs import shift as verb

    root = layout()
    say(run(lambda: verb.voyage(root, _text_or_stdin(text, "voyage"))))
