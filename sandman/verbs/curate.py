"""``sandman curate``: curators propose, a person reviews, apply commits (docs/curate.md).

``curate rot|merge|split|lint [--bank B]`` writes a proposal set and changes no
memory (sandman.curators.propose); ``curate review [<set>]`` lists the sets,
or one set's proposals; ``curate apply <set> [--accept ids] [--reject ids]``
commits the accepted ones (sandman.curators.apply). This module shapes their
output.
"""

from __future__ import annotations

from sandman.banks.memory import one_line
from sandman.curators.apply import Applied, apply, choose
from sandman.curators.propose import Run, curate
from sandman.curators.proposals import list_sets, read_set
from sandman.errors import FormatError
from sandman.layout import Layout

__all__ = ["apply", "curate", "review", "run_lines", "applied_lines"]


def run_lines(run: Run) -> list[str]:
    """What a curator run says: the set written and the refused replies."""
    lines = [f"curate {run.curator}: {item['bank']}: {item['reason']}" for item in run.refused]
    if run.set_id is None and not run.banks:
        return lines + [f"curate {run.curator}: no bank holds a memory; nothing to curate"]
    if run.set_id is None:
        return lines + [f"curate {run.curator}: nothing to propose in {len(run.banks)} bank(s); no set written"]
    return lines + [f"curate {run.curator}: {run.proposals} proposal(s) in set {run.set_id}; "
                    f"no memory changed. Review: sandman curate review {run.set_id}"]


def review(layout: Layout, set_id: str | None) -> list[str]:
    """Lines listing every set (newest first) or one set's proposals. Raises InputError, FormatError."""
    if set_id is None:
        lines = []
        for found in list_sets(layout):
            try:
                data = read_set(layout, found)
            except FormatError as error:
                lines.append(f"{found}: unreadable ({error})")
                continue
            state = f"applied {data.get('applied')}" if data.get("decisions") else "open"
            lines.append(f"{found}: {data['curator']}, {len(data['proposals'])} proposal(s), {state}")
        return lines or [f"no proposal sets under {layout.curation}/; run `sandman curate rot` (or merge, split, lint)"]
    data = read_set(layout, set_id)
    decisions = data.get("decisions") or {}
    accepted = choose(data, None, None) if not decisions else set()
    lines = [f"set {data['set']} ({data['curator']}, created {data['created']}): "
             f"{len(data['proposals'])} proposal(s)" + (f", applied {data.get('applied')}" if decisions else "")]
    for proposal in data["proposals"]:
        pid = proposal["id"]
        state = decisions.get(pid, {}).get("decision") or ("accepted by default" if pid in accepted else "needs --accept")
        lines.append(f"{pid} [{state}] {proposal['action']} {', '.join(proposal['targets'])} in {proposal['bank']} "
                     f"({proposal['confidence']}{', ' + proposal['check'] if proposal.get('check') else ''})")
        lines.append(f"    {one_line(proposal['reasoning'])}")
        lines += [f"    evidence: {one_line(item)}" for item in proposal["evidence"]]
    for item in data.get("refused") or []:
        lines.append(f"refused: {item['bank']}: {item['reason']}")
    return lines


def applied_lines(result: Applied) -> list[str]:
    """What an apply says: the decisions and the commit."""
    parts = [f"{len(result.applied)} applied", f"{len(result.noted)} noted", f"{len(result.rejected)} rejected"]
    if result.conflicts:
        parts.append(f"{len(result.conflicts)} skipped on conflict ({', '.join(result.conflicts)})")
    lines = [f"curate apply {result.set_id}: " + ", ".join(parts)]
    if result.commit:
        lines.append(f"commit {result.commit[:12]}" + (f", event {result.event}" if result.event else ""))
    return lines
