"""``sandman curate rot|merge|split|lint|review|apply``: bank changes proposed with evidence, reviewed, applied.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from sandman.cli.common import layout, run, say

curate_app = typer.Typer(
    help="Propose bank changes with evidence; review; apply.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
_BANK_HELP = "Only this bank (its name or absolute directory) [default: every bank]."


def _curate(curator: str, bank: Optional[str], model: bool = True) -> None:
    from sandman.verbs import curate as verb

    root = layout()
    result = run(lambda: verb.curate(root, curator, bank=bank, model=model))
    for line in verb.run_lines(result):
        say(line)


@curate_app.command("rot")
def curate_rot(bank: Annotated[Optional[str], typer.Option(metavar="BANK", help=_BANK_HELP)] = None) -> None:
    """Propose fixes for memories that are no longer true."""
    _curate("rot", bank)


@curate_app.command("merge")
def curate_merge(bank: Annotated[Optional[str], typer.Option(metavar="BANK", help=_BANK_HELP)] = None) -> None:
    """Propose merging memories that say one thing."""
    _curate("merge", bank)


@curate_app.command("split")
def curate_split(bank: Annotated[Optional[str], typer.Option(metavar="BANK", help=_BANK_HELP)] = None) -> None:
    """Propose splitting memories that bundle concerns."""
    _curate("split", bank)


@curate_app.command("lint")
def curate_lint(
    bank: Annotated[Optional[str], typer.Option(metavar="BANK", help=_BANK_HELP)] = None,
    model: Annotated[bool, typer.Option("--model/--no-model", help="Also ask a mind [default: yes]; --no-model runs the checks alone.")] = True,
) -> None:
    """Check index, duplicates, archives (and ask a mind)."""
    _curate("lint", bank, model)


@curate_app.command("review")
def curate_review(
    set_id: Annotated[Optional[str], typer.Argument(metavar="SET", help="A proposal set [default: list the sets].")] = None,
) -> None:
    """List the sets, or one set's proposals and evidence."""
    from sandman.verbs import curate as verb

    root = layout()
    for line in run(lambda: verb.review(root, set_id)):
        say(line)


@curate_app.command("apply")
def curate_apply(
    set_id: Annotated[str, typer.Argument(metavar="SET", help="The proposal set to apply.")],
    accept: Annotated[Optional[list[str]], typer.Option(metavar="IDS", help="Also accept these proposals (p1,p2).")] = None,
    reject: Annotated[Optional[list[str]], typer.Option(metavar="IDS", help="Reject these proposals, high confidence or not.")] = None,
) -> None:
    """Commit a set's accepted proposals as one commit."""
    from sandman.verbs import curate as verb

    root = layout()
    result = run(lambda: verb.apply(root, set_id, accept=accept, reject=reject))
    for line in verb.applied_lines(result):
        say(line)
