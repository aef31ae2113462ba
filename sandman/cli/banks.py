"""``sandman banks merge``: work on whole banks.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

from typing import Annotated

import typer

from sandman.cli.common import layout, run, say

banks_app = typer.Typer(help="Work on whole banks.", no_args_is_help=True)


@banks_app.command("merge")
def banks_merge(
    source: Annotated[str, typer.Argument(metavar="FROM", help="The bank folded in: its name or its directory.")],
    target: Annotated[str, typer.Argument(metavar="INTO", help="The bank that keeps the memories: its name or directory.")],
) -> None:
    """Fold every memory of one bank into another, one commit (the old files go to _archive/)."""
    from sandman.verbs.banks import merge

    root = layout()
    merged = run(lambda: merge(root, source, target))
    for path in merged.written:
        say(f"merged: {path}")
    for name in merged.duplicates:
        say(f"already in {merged.target}: {name}")
    for name in merged.unreadable:
        say(f"left in place, unreadable: {name}")
    say(f"banks merge: {len(merged.moved)} moved, {len(merged.duplicates)} already there"
        + (f", commit {merged.commit[:12]}" if merged.commit else ", nothing to commit"))
