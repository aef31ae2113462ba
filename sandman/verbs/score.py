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
    ``(the page or the JSON text, commit id or None when unchanged)``. A missing memory root is
    created by the commit, as every writing verb does (banks.commit.bank_transaction); its week is
    then empty. Raises InputError (a bad week), ConfigError, LockBusy, RepositoryError,
    ForeignRepository."""
    chosen = scoring.current_week(layout, now) if week is None else week
    scoring.parse_week(chosen)  # a bad week is refused before anything is read
    computed = scoring.compute(layout, chosen)
    commit = scoring.commit(layout, computed)
    return (scoring.json_text(computed) if json_ else scoring.render(computed)), commit
