"""``sandman import claude-memory``: bring memories kept by another system into the banks.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from sandman.cli.common import layout, run, say

import_app = typer.Typer(help="Bring memories kept by another system into the banks.", no_args_is_help=True)


@import_app.command("claude-memory")
def import_claude_memory(
    project: Annotated[Optional[str], typer.Option(
        metavar="DIR", help="Only the auto memory of this directory's project folder (and it names the bank).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be imported; write nothing.")] = False,
) -> None:
    """Import Claude Code's native auto memory into the matching banks (idempotent)."""
    from sandman.verbs import import_memory

    root = layout()
    result = run(lambda: import_memory.import_claude_memory(root, project=project, dry_run=dry_run))
    for line in import_memory.lines(result):
        say(line)
    if result.commit:
        say(f"commit: {result.commit[:12]}")
