"""Issue 35: the suite gives one verdict on every weekday, at every hour, in any TZ.

The tests marked ``calendar`` run again under libfaketime at each of the seven weekdays, at
23:59 and 00:01 local time and on a DST edge (tests/calendar_sweep.py says how and why).
"""

from __future__ import annotations

import re
from datetime import date, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from calendar_sweep import DST_ZONE, MARK, clocks, dst_change, faketime, marked_files, sweep


@pytest.mark.parametrize("today", [date(2026, 12, 5), date(2027, 3, 13), date(2027, 11, 6), date(2028, 2, 29)])
def test_the_clocks_are_seven_weekdays_both_sides_of_midnight_and_a_dst_edge(today):
    found = clocks(today)
    weekdays = [clock.local.strftime("%A") for clock in found[:7]]
    assert sorted(weekdays) == sorted(["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"])
    assert all(today < clock.local.date() <= today + timedelta(days=8) for clock in found[:9])
    assert {clock.local.strftime("%H:%M") for clock in found[7:9]} == {"23:59", "00:01"}
    edge = found[9].local  # 01:59:30 local: the clocks change within the next hour
    hour_later = (edge.astimezone(timezone.utc) + timedelta(hours=1)).astimezone(ZoneInfo(DST_ZONE))
    assert edge.tzinfo == ZoneInfo(DST_ZONE) and (edge.hour, edge.minute) == (1, 59)
    assert hour_later.utcoffset() != edge.utcoffset() and edge.date() > today
    assert len({clock.label for clock in found}) == len(found) == 10


def test_a_zone_without_dst_has_no_edge_to_sweep():
    with pytest.raises(LookupError, match="changes no clocks"):
        dst_change("Pacific/Kiritimati", date(2026, 12, 5))


def test_the_marked_tests_are_collected_from_their_files_only():
    names = {path.name for path in marked_files()}
    assert "test_shift.py" in names and "test_score.py" in names
    assert "test_calendar_sweep.py" not in names  # the sweep never runs itself


def test_every_calendar_test_passes_at_every_clock(tmp_path):
    """The sweep (about 10 child runs of the marked tests, two at a time on two CPUs)."""
    reason = faketime()
    if reason:
        pytest.skip(reason)
    verdicts = sweep(tmp_path)
    report = "\n".join(verdict.line() for verdict in verdicts)
    print(f"\ncalendar sweep (-m {MARK}):\n{report}")
    failed = [verdict for verdict in verdicts if verdict.code != 0]
    assert not failed, "\n\n".join(
        f"{verdict.line()}\n  TZ={verdict.clock.zone} {' '.join(verdict.argv)}\n" + "\n".join(
            line for line in verdict.output.splitlines() if line.startswith(("FAILED", "ERROR", "E ")))
        for verdict in failed)
    counts = {re.match(r"(\d+) passed", verdict.summary) and int(verdict.summary.split()[0]) for verdict in verdicts}
    assert len(counts) == 1 and counts.pop(), report  # every clock ran the same tests, some
