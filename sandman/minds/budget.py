"""The day's recorded spend on minds, read back from the journal (docs/BANK-FORMAT.md, "Dream journal").

Every verb that runs a mind journals its cost as ``cost_<mind>=<US dollars>``
(``unknown`` when the CLI reported none). The spend of a UTC day is the sum of
those facts over every journal file of that day; the day's budget
(config.day_budget_usd, ``[machine] budget_usd_day``) is compared against it. The journal is the only record: nothing else counts
money, so the figure survives crashes and is the one an operator can audit.
Standard library only.
"""

from __future__ import annotations

import math

from sandman import journal
from sandman.layout import Layout

COST_PREFIX = "cost_"


def cost_fact(cost_usd: float | None) -> float | str:
    """Return the journal value of a mind's cost: the number, or ``unknown`` (never 0 for unknown)."""
    return "unknown" if cost_usd is None else cost_usd


def spent(layout: Layout, day: str) -> float:
    """Return the US dollars journaled as ``cost_*`` facts on UTC day ``day`` (``YYYY-MM-DD``).

    Lines that are not journal lines (a detached run's stray output) and
    values that are not finite non-negative numbers (``unknown``) are skipped.
    """
    total = 0.0
    for path in layout.trace_files(day):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            try:
                facts = journal.parse_line(line)[3]
            except ValueError:
                continue
            for key, value in facts.items():
                if key.startswith(COST_PREFIX):
                    total += _dollars(value)
    return total


def _dollars(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        return 0.0
    return number if math.isfinite(number) and number >= 0 else 0.0


def exhausted(layout: Layout, budget_usd: float | None, day: str) -> tuple[bool, float]:
    """Return ``(reached, spent)``: whether the day's spend has reached ``budget_usd`` (None: no cap)."""
    if budget_usd is None:
        return False, 0.0
    so_far = spent(layout, day)
    return so_far >= budget_usd, so_far
