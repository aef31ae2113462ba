"""``sandman score [--week yyyy-Www] [--json]``: the week's numbers, worst three first (docs/score.md).

Thin over sandman.machine.score: the week defaults to the current ISO week in
``[machine] time_zone`` (the local zone when unset); the page and its JSON are
committed together (``Verb: score``), and the caller prints the page or the
JSON, which hold the same numbers.
"""

from __future__ import annotations

from datetime import datetime

from sandman.layout import Layout
from sandman.machine import score as scoring


def score(layout: Layout, week: str | None = None, *, json_: bool = False,
          now: datetime | None = None) -> tuple[str, str | None]:
    """Score ``week`` (default: this week), commit ``score/<week>.md`` and ``.json``; return
    ``(the page or the JSON text, commit id or None when unchanged)``; a week after the current one
    with nothing measured is computed and returned but not committed (nothing exists to score). A missing memory root is
    created by the commit, as every writing verb does (banks.commit.bank_transaction); its week is
    then empty. Raises InputError (a bad week), ConfigError, LockBusy, RepositoryError,
    ForeignRepository."""
    current = scoring.current_week(layout, now)
    chosen = current if week is None else week
    monday = scoring.parse_week(chosen)  # a bad week is refused before anything is read
    computed = scoring.compute(layout, chosen)
    if computed.empty and monday > scoring.parse_week(current):
        commit = None  # a week still to come with nothing measured: shown, never committed
    else:
        commit = scoring.commit(layout, computed)
    return (scoring.json_text(computed) if json_ else scoring.render(computed)), commit
