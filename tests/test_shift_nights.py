"""Whole nights (docs/shift.md, "Whole nights"; issue 32): the tick opens shifts one after another
while the clock, the budget and ``[machine] shifts_per_night`` allow, each on its own worktree, and a
week covers every pickable repository. Every tick here runs at an injected moment; the tests whose
verdict names a weekday or a night carry the ``calendar`` marker."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest
from helpers import git
from test_shift import SHIFT_WORK, TUESDAY_NIGHT, journal_text, make_repo, trust, write_machine

from sandman import config
from sandman.errors import ConfigError
from sandman.machine import score as scoring
from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails
from sandman.verbs.init import init

MONDAY_NIGHT = datetime(2026, 11, 30, 22, 0, tzinfo=timezone.utc)  # ISO week 2026-W49 starts that Monday


@pytest.fixture
def code(layout, isolated, tmp_path, monkeypatch, fake_claude):
    """A memory root and the folder the machine's repositories go in; the fake claude answers at once."""
    (isolated / ".gitconfig").write_text("[user]\n\tname = Owner\n\temail = owner@example.invalid\n")
    init(layout)
    monkeypatch.setenv("FAKE_SHIFT_SANDMAN", os.sys.executable)
    fake_claude.answer("default", "Looked around; nothing to change tonight.")
    return tmp_path / "code"


def repositories(isolated, code, names) -> dict:
    repos = {name: make_repo(code / name) for name in names}
    trust(isolated, *repos.values())
    return repos


def settle(layout) -> None:
    """Wait for the session the last tick started (a child of this process) to exit."""
    current = shifts.read_current(layout)
    if current and current.get("pid"):
        os.waitpid(current["pid"], 0)


def shift_ids(layout) -> list[str]:
    return sorted(p.name for p in layout.shifts.iterdir() if trails.is_shift_id(p.name))


@pytest.mark.calendar
def test_a_night_of_four_repositories_and_a_window_for_three_shifts_opens_three_one_after_another(
        layout, isolated, code, fake_claude, tmp_path):
    repos = repositories(isolated, code, ("alpha", "beta", "delta", "gamma"))
    fake_claude.rules("default", {"program": [str(SHIFT_WORK)]})  # each session commits in its worktree
    window = tmp_path / "window.json"  # the usage window resets three hours in: room for three hourly ticks
    window.write_text(json.dumps({"resets_at": shifts.journal.iso(TUESDAY_NIGHT + timedelta(hours=3)),
                                  "used_percentage": 10}))
    write_machine(layout, roots=[str(code)], time_zone="UTC", window_file=str(window), shifts_per_night=10)

    ticks = []
    for minutes in (0, 60, 120, 150):  # 180, 120, 60 and 30 minutes left on the window
        ticks.append(tick.run(layout, now=TUESDAY_NIGHT + timedelta(minutes=minutes)))
        settle(layout)

    assert [t.decision for t in ticks] == ["started", "started", "started", "skipped"], ticks
    assert "the clock is short" in ticks[3].reason
    opened = [t.shift for t in ticks[:3]]
    assert [t.closed for t in ticks[1:]] == opened  # each tick closed the last before it opened the next
    assert shift_ids(layout) == opened
    metas = [shifts.read_meta(layout, ident) for ident in opened]
    assert all(meta["outcome"] == "finished" for meta in metas)
    for earlier, later in zip(metas, metas[1:]):
        assert earlier["closed_at"] <= later["opened_at"]  # one after another, never two at once
    assert len({meta["repo"] for meta in metas}) == 3  # three repositories, least recently shifted first
    assert {meta["repo"] for meta in metas} < {str(path) for path in repos.values()}
    cwds = [call["cwd"] for call in fake_claude.calls()]
    for meta in metas:
        worktree = os.path.join(meta["repo"], ".claude", "worktrees", meta["id"])
        assert worktree in cwds  # its own worktree, on its own branch, holding its own commit
        assert git(worktree, "rev-parse", "--abbrev-ref", "HEAD").strip() == f"shift/{meta['id']}"
        assert len(meta["commits"]) == 1 and meta["commits"][0]["resolves"]
    assert [t.reason for t in ticks[:3]] == [
        f"shift {n} of the night of Tuesday 2026-12-01 (21:00-07:00 UTC)" for n in (1, 2, 3)]


@pytest.mark.calendar
def test_the_night_stops_at_shifts_per_night_naming_the_night_and_force_opens_another(layout, isolated, code):
    repositories(isolated, code, ("alpha", "beta", "delta"))
    write_machine(layout, roots=[str(code)], time_zone="UTC", shifts_per_night=2)
    first = tick.run(layout, now=TUESDAY_NIGHT)
    settle(layout)
    second = tick.run(layout, now=TUESDAY_NIGHT + timedelta(minutes=5))
    settle(layout)

    done = tick.run(layout, now=TUESDAY_NIGHT + timedelta(hours=2))  # past midnight: the same night

    assert (first.decision, second.decision) == ("started", "started")
    assert done.decision == "skipped" and done.closed == second.shift
    assert done.reason == (f"night-done: 2 shift(s) opened in the night of Tuesday 2026-12-01 (21:00-07:00 UTC) "
                           f"({first.shift}, {second.shift}); machine.shifts_per_night is 2 "
                           "(`sandman shift run --force` opens another)")
    assert "night-done" in journal_text(layout)
    forced = tick.run(layout, now=TUESDAY_NIGHT + timedelta(hours=2, minutes=5), force=True)
    assert forced.decision == "started" and forced.reason.startswith("forced: shift 3 of the night of Tuesday")
    settle(layout)
    tomorrow = tick.run(layout, now=TUESDAY_NIGHT + timedelta(days=1))
    assert tomorrow.decision == "started", tomorrow.reason  # the next night starts again
    settle(layout)


@pytest.mark.calendar
def test_force_opens_a_shift_outside_the_night_window_with_the_days_theme(layout, isolated, code):
    repositories(isolated, code, ("alpha",))
    write_machine(layout, roots=[str(code)], time_zone="UTC")
    noon = TUESDAY_NIGHT.replace(hour=12)

    refused = tick.run(layout, now=noon)
    forced = tick.run(layout, now=noon, force=True)

    assert refused.decision == "skipped" and "`sandman shift run --force` opens a shift now" in refused.reason
    assert forced.decision == "started", forced.reason
    assert forced.reason == "forced outside the night window: Tuesday 2026-12-01's theme"
    assert shifts.read_meta(layout, forced.shift)["theme"] == "Refactor"
    settle(layout)


@pytest.mark.calendar
def test_a_shift_ends_with_the_night_and_none_opens_in_its_last_minutes(layout, isolated, code):
    repositories(isolated, code, ("alpha", "beta"))
    write_machine(layout, roots=[str(code)], time_zone="UTC", night="21:00-07:00", shift_hours=5)
    late = datetime(2026, 12, 2, 4, 0, tzinfo=timezone.utc)  # Tuesday's night, three hours before its end

    started = tick.run(layout, now=late)
    settle(layout)
    last = tick.run(layout, now=datetime(2026, 12, 2, 6, 30, tzinfo=timezone.utc))

    assert shifts.read_meta(layout, started.shift)["deadline"] == "2026-12-02T07:00:00Z"  # not 09:00
    assert last.decision == "skipped" and last.reason == (
        "the night is nearly over: 30 minute(s) left of the night of Tuesday 2026-12-01 (21:00-07:00 UTC) (min 60)")


@pytest.mark.calendar
def test_the_rest_day_holds_one_self_pass_whatever_the_cap(layout, isolated, code):
    repositories(isolated, code, ("alpha", "beta"))
    write_machine(layout, roots=[str(code)], time_zone="UTC", shifts_per_night=5)
    saturday = datetime(2026, 12, 5, 22, 0, tzinfo=timezone.utc)
    first = tick.run(layout, now=saturday)
    settle(layout)

    again = tick.run(layout, now=saturday + timedelta(minutes=5))
    forced = tick.run(layout, now=saturday + timedelta(minutes=10), force=True)

    assert first.decision == "started" and shifts.read_meta(layout, first.shift)["rest"]
    for refused in (again, forced):
        assert refused.decision == "skipped"
        assert refused.reason == (f"night-done: the rest day's self-pass {first.shift} already ran in the night "
                                  "of Saturday 2026-12-05 (21:00-07:00 UTC); one a rest day")


def run_week(layout, monday_night: datetime) -> list[str]:
    """Tick every half hour through each night of the ISO week starting ``monday_night``'s Monday."""
    opened = []
    for day in range(7):
        for half_hours in range(8):
            done = tick.run(layout, now=monday_night + timedelta(days=day, minutes=30 * half_hours))
            settle(layout)
            if done.decision == "started":
                opened.append(done.shift)
    layout.shift_pause.write_text("")
    tick.run(layout, now=monday_night + timedelta(days=7))  # closes the last one
    layout.shift_pause.unlink()
    return opened


@pytest.mark.calendar
def test_a_week_with_seven_repositories_covers_all_seven(layout, isolated, code):
    repos = repositories(isolated, code, [f"repo{n}" for n in range(7)])
    write_machine(layout, roots=[str(code)], time_zone="UTC")  # the default cap

    opened = run_week(layout, MONDAY_NIGHT)

    worked = {shifts.read_meta(layout, ident)["repo"] for ident in opened
              if not shifts.read_meta(layout, ident)["rest"]}
    assert worked == {str(path) for path in repos.values()}
    score = scoring.compute(layout, "2026-W49")
    coverage = next(n for n in score.numbers if n.key == "machine.coverage")
    assert coverage.value == 1.0 and "missed" not in coverage.detail
    assert not [finding for finding in score.findings if finding.startswith("coverage")]


@pytest.mark.calendar
def test_a_week_that_misses_a_repository_says_so_as_a_finding_in_the_score(layout, isolated, code):
    repos = repositories(isolated, code, [f"repo{n}" for n in range(7)])
    write_machine(layout, roots=[str(code)], time_zone="UTC", shifts_per_night=1)  # six working nights, 7 repos

    opened = run_week(layout, MONDAY_NIGHT)

    (rest,) = [ident for ident in opened if shifts.read_meta(layout, ident)["rest"]]
    brief = (layout.shift_dir(rest) / "brief.md").read_text()  # Saturday's: Sunday's shift is still to come
    assert "## Findings" in brief and f"coverage: {repos['repo6']} was not shifted this week" in brief
    score = scoring.compute(layout, "2026-W49")
    missed = [finding for finding in score.findings if finding.startswith("coverage")]
    assert len(missed) == 1 and str(repos["repo6"]) in missed[0]
    assert "shifts_per_night" in missed[0]
    page = scoring.render(score)
    assert "## Findings" in page and str(repos["repo6"]) in page.split("## Findings", 1)[1]
    assert scoring.as_json(score)["findings"] == score.findings


@pytest.mark.parametrize("value", [0, 49, 1.5, "3", True])
def test_a_bad_shifts_per_night_is_named(layout, value):
    layout.root.mkdir(parents=True, exist_ok=True)
    write_machine(layout, roots=["/tmp"], shifts_per_night=value)
    with pytest.raises(ConfigError, match="machine.shifts_per_night must be a whole number from 1 to 48"):
        config.machine(layout)


def test_shifts_per_night_defaults_to_three(layout):
    layout.root.mkdir(parents=True, exist_ok=True)
    write_machine(layout, roots=["/tmp"])
    assert config.machine(layout).shifts_per_night == config.MACHINE_SHIFTS_PER_NIGHT == 3


def test_doctor_warns_when_the_nights_cannot_hold_every_repository_once_a_week(layout, isolated, code):
    from sandman.doctor.checks import _machine

    repositories(isolated, code, [f"repo{n}" for n in range(7)])
    write_machine(layout, roots=[str(code)], time_zone="UTC", shifts_per_night=1, budget_usd_day=5.0)
    check = _machine(layout)
    assert check.status == "warn"
    assert ("; 7 pickable repositories, but six working nights of machine.shifts_per_night 1 hold 6 shifts: not "
            "every repository can be shifted once a week; raise shifts_per_night") in check.message
    write_machine(layout, roots=[str(code)], time_zone="UTC", shifts_per_night=2, budget_usd_day=5.0)
    assert "pickable repositories, but" not in _machine(layout).message
