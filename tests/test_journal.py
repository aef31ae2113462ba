"""The journal: one line per decision (docs/BANK-FORMAT.md, "The journal")."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, strategies as st

from sandman import journal
from sandman.layout import Layout

_facts = st.dictionaries(
    st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
    st.one_of(st.text(max_size=30), st.integers()),
    max_size=5,
)


@given(_facts)
def test_every_line_is_one_line_and_parses_back(facts: dict) -> None:
    moment = datetime(2026, 11, 30, 16, 1, 12, tzinfo=timezone.utc)
    line = journal.format_line("take", "declined", moment, facts)
    assert "\n" not in line
    assert journal.parse_line(line) == ("2026-11-30T16:01:12Z", "take", "declined", {k: str(v) for k, v in facts.items()})


@pytest.mark.calendar
def test_write_appends_to_the_verbs_daily_file(layout: Layout, pinned_clock) -> None:
    pinned_clock(datetime(2026, 12, 6, 12, 0, tzinfo=timezone.utc))  # both lines on that day, whatever the hour
    path = journal.write(layout, "remember", "committed", file="memories/x/y.md", reason="two words")
    journal.write(layout, "remember", "refused", kinds="GitHub Token")
    lines = path.read_text().splitlines()
    assert path.name == "remember-2026-12-06.log"
    assert lines[0].startswith("2026-12-06T12:00:") and " remember committed " in lines[0]
    assert [journal.parse_line(line)[2] for line in lines] == ["committed", "refused"]
    assert journal.parse_line(lines[0])[3] == {"file": "memories/x/y.md", "reason": "two words"}


def test_write_never_raises(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert journal.write(Layout(blocker), "take", "declined") is None
