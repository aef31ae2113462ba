"""``sandman breathe init|sources|file|list|spike|adopt|drop|pass|attach|close|run|reweight``: the breath store.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from sandman import config
from sandman.cli.common import PlainUsage, fail, layout, run, say

breathe_app = typer.Typer(
    help="The research store: feeds, breaths, reading passes and weights.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

_AT_HELP = "The time to act as of, ISO with a zone, not in the future [default: now]."


@breathe_app.command("init")
def breathe_init() -> None:
    """Write an example breath/sources.toml."""
    from sandman.machine import breath

    root = layout()
    say(run(lambda: breath.init(root)))


@breathe_app.command("sources")
def breathe_sources(
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Check sources.toml and list the feeds with their weights."""
    import json

    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    for row in run(lambda: breath.sources(root)):
        say(json.dumps(row, ensure_ascii=False) if json_ else verb.source_line(row))


@breathe_app.command("file")
def breathe_file(
    title: Annotated[Optional[str], typer.Option(metavar="TEXT", help="One line naming the idea.")] = None,
    address: Annotated[Optional[str], typer.Option(metavar="URL", help="Where the idea was read.")] = None,
    source: Annotated[Optional[str], typer.Option(metavar="NAME", help="The source of sources.toml it came from.")] = None,
    repo: Annotated[Optional[str], typer.Option(metavar="DIR", help="The repository it bears on (absolute).")] = None,
    bearing: Annotated[Optional[float], typer.Option(metavar="0..1", help="The judge's bearing score.")] = None,
    novelty: Annotated[Optional[float], typer.Option(metavar="0..1", help="The judge's novelty score.")] = None,
    provenance: Annotated[Optional[float], typer.Option(metavar="0..1", help="The judge's provenance score.")] = None,
    body: Annotated[Optional[str], typer.Option(metavar="TEXT", help="What it is and how a shift could try it.")] = None,
    pass_: Annotated[Optional[str], typer.Option("--pass", metavar="PASS", help="The pass it was read in.")] = None,
) -> None:
    """File a breath from flags or a JSON document on stdin."""
    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    flags = {"title": title, "address": address, "source": source, "repo": repo, "bearing": bearing,
             "novelty": novelty, "provenance": provenance, "body": body, "pass": pass_}
    stdin_text = None
    if not any(value is not None for value in flags.values()):
        stdin_text = run(lambda: sys.stdin.read())
    filed = run(lambda: breath.file_breath(root, verb.document(flags, stdin_text)))
    say(filed.id)


@breathe_app.command("list")
def breathe_list(
    repo: Annotated[Optional[str], typer.Option(metavar="DIR", help="Only breaths bearing on this repository.")] = None,
    state: Annotated[Optional[str], typer.Option(metavar="STATE", help="Only filed, spiked, adopted or dropped.")] = None,
    source: Annotated[Optional[str], typer.Option(metavar="NAME", help="Only breaths from this source.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List breaths, oldest filed first."""
    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    for found in run(lambda: breath.list_breaths(root, repo=repo, state=state, source=source)):
        say(verb.as_json(found) if json_ else verb.line(found))


def _move(action: str, breath_id: str, why: str | None) -> None:
    from sandman.machine import breath

    root = layout()
    moved = run(lambda: breath.move(root, breath_id, action, why=why, shift=config.current_shift()))
    say(f"{moved.id} {moved.state}")


_WHY = Annotated[Optional[str], typer.Option("--why", metavar="TEXT", help="One line: why.")]
_BREATH = Annotated[str, typer.Argument(metavar="BREATH", help="The breath id, or a unique suffix of it (4+ characters).")]


@breathe_app.command("spike", cls=PlainUsage)
def breathe_spike(breath_id: _BREATH, why: _WHY = None) -> None:
    """Mark a breath spiked: a shift will try it."""
    _move("spike", breath_id, why)


@breathe_app.command("adopt", cls=PlainUsage)
def breathe_adopt(breath_id: _BREATH, why: _WHY = None) -> None:
    """Mark a breath adopted: its source rises on the next reweight."""
    _move("adopt", breath_id, why)


@breathe_app.command("drop", cls=PlainUsage)
def breathe_drop(breath_id: _BREATH, why: _WHY = None) -> None:
    """Mark a breath dropped."""
    _move("drop", breath_id, why)


@breathe_app.command("pass")
def breathe_pass(
    at: Annotated[Optional[str], typer.Option("--at", metavar="TIME", help=_AT_HELP)] = None,
) -> None:
    """Compose the prompt of a reading pass from the due sources."""
    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    made = run(lambda: breath.compose_pass(root, now=verb.parse_time(at)))
    say(made.id)
    say(root.breath_pass(made.id) / "prompt.md")


@breathe_app.command("attach", cls=PlainUsage)
def breathe_attach(
    pass_id: Annotated[str, typer.Argument(metavar="PASS", help="The pass id.")],
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The reading session's id.")],
) -> None:
    """Record the session a pass runs in."""
    from sandman.machine import breath

    root = layout()
    run(lambda: breath.attach(root, pass_id, session))
    say(f"{pass_id} attached to {session}")


@breathe_app.command("close", cls=PlainUsage)
def breathe_close(
    pass_id: Annotated[str, typer.Argument(metavar="PASS", help="The pass id.")],
    cost: Annotated[Optional[float], typer.Option("--cost", metavar="USD", help="What the pass cost, in US dollars.")] = None,
) -> None:
    """Close a pass, with what it cost."""
    from sandman.machine import breath

    root = layout()
    data = run(lambda: breath.close(root, pass_id, cost_usd=cost))
    say(f"{pass_id} closed at {data['closed_at']}")


@breathe_app.command("run", cls=PlainUsage)
def breathe_run(
    depth: Annotated[str, typer.Argument(metavar="skim|deep", help="The skim reads the due hourly sources; "
                                         "the deep pass every due source.")],
) -> None:
    """Run one bounded reading session on a new pass (the scheduler's job)."""
    from sandman.machine import reading

    root = layout()
    done = run(lambda: reading.run(root, depth))
    if done.decision == "skipped":
        say(f"skipped: {done.reason}")
        return
    cost = "unknown" if done.cost_usd is None else f"${done.cost_usd:.4f}"
    if done.failed:
        raise fail(f"the reading session of {done.pass_id} failed ({done.failed}): {done.filed} breath(s) "
                   f"filed, cost {cost}; its sources stay due (see {root.breath_session_log(done.pass_id)})")
    say(f"{done.pass_id}: {done.filed} breath(s) filed, cost {cost}, session exit {done.exit}")


@breathe_app.command("reweight")
def breathe_reweight(
    at: Annotated[Optional[str], typer.Option("--at", metavar="TIME", help=_AT_HELP)] = None,
) -> None:
    """Raise sources by adoption, lower them by silence."""
    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    moved = run(lambda: breath.reweight(root, now=verb.parse_time(at)))
    for name, (old, new) in moved.items():
        say(f"{name} {old:.2f} -> {new:.2f}")
    if not moved:
        say("no source moved")
