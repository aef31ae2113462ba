"""The week's score (sandman/machine/score.py, docs/score.md): real shifts and dreams with the fake claude,
the worst three first, the JSON's same numbers, an empty week, bad weeks and bad data, breath movement,
and reflect scoring the week that ended."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from dream_helpers import archive_session, model, proposal
from helpers import git
from sandman import journal
from sandman.cli import app
from sandman.machine import score as scoring
from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails
from sandman.verbs.dream import dream
from sandman.verbs.init import init
from sandman.verbs.reflect import reflect
from test_shift import SHIFT_WORK, make_repo, trust, write_machine

pytestmark = pytest.mark.calendar  # issue 35's sweep runs them all at its clocks

# The week every test acts in: sandman's in-process clock is pinned at NOW (Wednesday of 2026-W49), so
# a test run across Sunday midnight UTC no longer scores a week its dreams and events missed (issue 35).
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc)
WEEK = scoring.weeks.iso_week(NOW.date())  # the tests' machine runs in UTC
MONDAY = datetime.combine(scoring.parse_week(WEEK), datetime.min.time(), tzinfo=timezone.utc)
SID_AGREED = "11111111-2222-4333-8444-555555555555"
SID_SPLIT = "66666666-7777-4888-8999-aaaaaaaaaaaa"


@pytest.fixture(autouse=True)
def _in_the_week(pinned_clock):
    pinned_clock(NOW)


def cli(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, list(args), input=stdin)


@pytest.fixture
def world(layout, isolated, tmp_path, fake_claude, monkeypatch):
    """A memory root, repositories alpha and beta (trusted) under one root, the machine on in UTC."""
    (isolated / ".gitconfig").write_text("[user]\n\tname = Owner\n\temail = owner@example.invalid\n")
    init(layout)
    code = tmp_path / "code"
    repos = {name: make_repo(code / name) for name in ("alpha", "beta")}
    trust(isolated, repos["alpha"], repos["beta"])
    write_machine(layout, roots=[str(code)], time_zone="UTC")
    monkeypatch.setenv("FAKE_SHIFT_SANDMAN", sys.executable)
    fake_claude.rules("default", {"program": [str(SHIFT_WORK)]})
    return repos


def _night(layout, at: datetime) -> str:
    """One shift through the real tick: started, its session run by the fake claude, closed."""
    started = tick.run(layout, now=at)
    assert started.decision == "started", started.reason
    os.waitpid(shifts.read_current(layout)["pid"], 0)
    layout.shift_pause.write_text("")
    closed = tick.run(layout, now=at + timedelta(minutes=30))
    layout.shift_pause.unlink()
    assert closed.closed == started.shift
    return started.shift


def _dreams(layout, fake_claude, cwd) -> None:
    """Two dreamt sessions: one two minds agree on, one only fable answers (no quorum)."""
    make = ("Build with make", "Run make build to build the project, never cmake")
    make_too = ("Build the project with make", "Use make build to build the project")
    archive_session(layout, SID_AGREED, cwd, ended="2026-11-30T10:00:00Z")
    for mind, said in (("fable", make), ("opus", make_too), ("sonnet", make)):
        fake_claude.answer(model(mind), {"memories": [proposal(cwd, *said)]})
    dream(layout, now=True)
    archive_session(layout, SID_SPLIT, cwd, ended="2026-11-30T11:00:00Z")
    fake_claude.mode(model("opus"), "fail")
    fake_claude.mode(model("sonnet"), "garbage", stdout="not json")
    dream(layout, now=True)


def test_a_week_of_shifts_and_dreams_puts_the_three_worst_first_and_the_json_holds_the_same_numbers(
        layout, world, fake_claude, tmp_path):
    first = _night(layout, MONDAY + timedelta(hours=23))
    second = _night(layout, MONDAY + timedelta(days=1, hours=23))
    cwd = tmp_path / "proj"
    cwd.mkdir()
    _dreams(layout, fake_claude, cwd)
    dreamt = [e for e in trails.read(layout).events if e.kind == "dream.commit"]
    trails.revoke(layout, dreamt[0].id, "the build note was wrong")

    page_run = cli("score", "--week", WEEK)
    json_run = cli("score", "--week", WEEK, "--json")

    assert page_run.exit_code == 0 and json_run.exit_code == 0, page_run.output + json_run.output
    page = layout.week_score(WEEK).read_text()
    assert page_run.output == page
    document = json.loads(json_run.output)
    assert json.loads(layout.week_score_json(WEEK).read_text()) == document
    assert document["schema"] == 1 and document["week"] == WEEK and document["empty"] is False
    numbers = {n["key"]: n for n in document["numbers"]}
    assert numbers["dream.quorum"]["value"] == 0.5  # the second session: one mind answered
    assert numbers["abstain.opus"]["value"] == 0.5 and numbers["abstain.sonnet"]["value"] == 0.5
    assert numbers["abstain.fable"]["value"] == 0.0 and numbers["abstain.fable"]["distance"] == 0
    assert numbers["abstain.opus"]["detail"] == "1 of 2 call(s): exit 1 (1)"
    assert numbers["memory.committed"]["value"] == 1 and numbers["memory.secrets"]["value"] == 0
    assert numbers["machine.coverage"]["value"] == 1.0  # alpha and beta, both shifted
    assert numbers["shift.outcomes"]["value"] == 1.0 and "finished (2)" in numbers["shift.outcomes"]["detail"]
    assert numbers["trail.revoked"]["value"] > 0
    shift_rows = next(t for t in document["tables"] if t["key"] == "shift.list")["rows"]
    assert [row[0] for row in shift_rows] == [first, second]

    measured = [n for n in document["numbers"] if n["value"] is not None]
    expected = sorted(measured, key=lambda n: -n["distance"])[:3]
    assert document["worst"] == [n["key"] for n in expected]
    assert {"abstain.opus", "abstain.sonnet"} <= set(document["worst"])
    head = page.splitlines()[:3]
    for n, (line, number) in enumerate(zip(head, expected), 1):
        assert line.startswith(f"{n}. {number['label']}: ") and f"(distance {number['distance']:.2f})" in line
    assert head[0].startswith("1. Abstentions of the opus mind: 50% against ≤ 10% (distance 0.80)")
    for number in document["numbers"]:  # the page shows every number the JSON holds
        assert f"| {number['label']} |" in page
    message = git(layout.root, "log", "-1", "--format=%B", "--", f"score/{WEEK}.md")
    assert message.startswith(f"score: {WEEK}\n") and "Verb: score" in message and "Event:" not in message
    assert git(layout.root, "status", "--porcelain") == ""


def test_an_empty_week_says_so_and_measures_nothing(layout):
    init(layout)
    result = cli("score", "--week", "2026-W10")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("no data this week: 2026-W10 (2026-03-02 to 2026-03-08")
    document = json.loads(layout.week_score_json("2026-W10").read_text())
    assert document["empty"] is True and document["worst"] == []
    assert all(n["value"] is None and n["distance"] is None for n in document["numbers"])
    assert "| 0 |" not in result.output and "| 0% |" not in result.output


@pytest.mark.parametrize("week, message", [
    ("2026-W54", "week '2026-W54' does not exist: 2026 has ISO weeks W01 to W53"),
    ("2025-W53", "week '2025-W53' does not exist: 2025 has ISO weeks W01 to W52"),
    ("banana", "week 'banana' is not yyyy-Www (an ISO week such as 2026-W49)"),
    ("2026-W1", "week '2026-W1' is not yyyy-Www (an ISO week such as 2026-W49)"),
])
def test_a_bad_week_is_one_line_and_writes_nothing(layout, week, message):
    init(layout)
    result = CliRunner().invoke(app, ["score", "--week", week])
    assert result.exit_code == 2
    assert result.output == f"sandman: {message}\n"
    assert not layout.score.exists()


@pytest.mark.parametrize("week", ["9999-W52", "0000-W01", "0001-W01"])
def test_a_week_at_the_calendar_edge_is_one_line_not_an_overflow_traceback(layout, week):
    init(layout)
    result = CliRunner().invoke(app, ["score", "--week", week])
    assert result.exit_code == 2
    assert result.output == f"sandman: week '{week}' is out of range: weeks from 0001-W02 to 9999-W51 are scored\n"
    assert not layout.score.exists()


def test_a_week_in_non_ascii_digits_is_refused_not_committed(layout):
    init(layout)
    result = CliRunner().invoke(app, ["score", "--week", "2026-W\u0664\u0669"])
    assert result.exit_code == 2
    assert "is not yyyy-Www" in result.output
    assert not layout.score.exists()


def test_a_malformed_meta_json_and_a_bad_trail_line_are_counted_never_a_traceback(layout, world):
    shift_id = f"s-{MONDAY:%Y%m%d}T2300Z"
    layout.shift_dir(shift_id).mkdir(parents=True)
    (layout.shift_dir(shift_id) / "meta.json").write_text("{not json")
    event = trails.append(layout, "shift.commit", "a real event")
    with layout.trail_day(event.day).open("a") as handle:
        handle.write('{"id": "ev-broken", "kind": 3}\n\x00garbage\n')
    stamp = journal.iso(NOW)
    layout.trace.mkdir(exist_ok=True)
    layout.trace_file("dream", NOW.strftime("%Y-%m-%d")).write_text(
        "a detached dream's stray output\n"
        f"{stamp} dream routed session=s1 fable=answered opus=answered cost_fable=nan cost_opus=-3 cost_sonnet=1e999\n")
    result = cli("score", "--week", WEEK)
    assert result.exit_code == 0, result.output
    assert f"shifts/{shift_id}/meta.json is not a shift record; not counted" in result.output
    assert "trail: 2 line(s) that are not events skipped" in result.output
    assert "journals: 1 line(s) that are not journal lines skipped" in result.output
    cost = json.loads(layout.week_score_json(WEEK).read_text())["numbers"]
    assert "3 call(s) reported no cost" in next(n for n in cost if n["key"] == "memory.cost")["detail"]


def test_a_week_before_the_breath_store_existed_has_no_breath_numbers(layout, world):
    assert cli("breathe", "init").exit_code == 0
    document = {"title": "Idea", "address": "https://example.org/idea", "source": "python-insider",
                "repo": str(world["alpha"]), "scores": {"bearing": 0.8, "novelty": 0.5, "provenance": 0.9},
                "body": "An idea."}
    assert cli("breathe", "file", stdin=json.dumps(document)).exit_code == 0
    old = json.loads(cli("score", "--week", "2026-W10", "--json").output)
    assert old["empty"] and not [n for n in old["numbers"] if n["family"] == "breath"]


def test_breath_movement_and_per_source_counts_come_from_real_breathe_calls(layout, world):
    assert cli("breathe", "init").exit_code == 0
    ids = []
    for n in range(3):
        document = {"title": f"Idea {n}", "address": f"https://example.org/idea/{n}",
                    "source": "claude-code-changelog" if n else "python-insider", "repo": str(world["alpha"]),
                    "scores": {"bearing": 0.8, "novelty": 0.5, "provenance": 0.9}, "body": f"Idea number {n}."}
        filed = cli("breathe", "file", stdin=json.dumps(document))
        assert filed.exit_code == 0, filed.output
        ids.append(filed.output.split()[0])
    assert cli("breathe", "spike", ids[0]).exit_code == 0
    assert cli("breathe", "adopt", ids[0]).exit_code == 0
    assert cli("breathe", "drop", ids[1]).exit_code == 0

    document = json.loads(cli("score", "--week", WEEK, "--json").output)

    numbers = {n["key"]: n for n in document["numbers"]}
    assert numbers["breath.filed"]["value"] == 3 and numbers["breath.adoption"]["value"] == 0.5
    tables = {t["key"]: t for t in document["tables"]}
    assert tables["breath.movement"]["rows"] == [[3, 1, 1, 1]]
    rows = {row[0]: row[1:] for row in tables["breath.sources"]["rows"]}
    assert rows["python-insider"] == [1, 1, 1, 0, 0, 0, 1, 0]  # filed, spiked, adopted this week; adopted now
    assert rows["claude-code-changelog"] == [2, 0, 0, 1, 1, 0, 0, 1]


def _past_event(layout, at: datetime) -> None:
    trails.append_event(layout, trails.new_event("shift.commit", "last week's work", now=at))


def test_reflect_scores_the_week_that_ended_once_and_again_only_when_its_data_changed(layout, world):
    last_week = scoring.weeks.iso_week((MONDAY - timedelta(days=3)).date())
    _past_event(layout, MONDAY - timedelta(days=3))
    summary = reflect(layout, now=NOW)
    assert f"score {last_week}: written" in summary.lines()
    assert "trail.revoked" in layout.week_score_json(last_week).read_text()
    again = reflect(layout, now=NOW)
    assert f"score {last_week}: up to date" in again.lines()
    _past_event(layout, MONDAY - timedelta(days=2))
    assert f"score {last_week}: written" in reflect(layout, now=NOW).lines()


def test_reflect_writes_no_page_for_a_week_with_no_data_and_a_score_error_never_breaks_it(layout, world):
    summary = reflect(layout, now=NOW)
    assert not summary.errors and not layout.score.exists()
    write_machine(layout, roots=[str(world["alpha"].parent)], time_zone="Mars/Olympus_Mons")
    broken = reflect(layout, now=NOW)
    assert any(error.startswith("reflect score: ") for error in broken.errors)
    lines = "".join(p.read_text() for p in layout.trace.glob("reflect-*.log"))
    assert "failed step=score" in lines and "finished" in lines


def test_the_rest_day_brief_writes_the_full_score_of_its_week(layout, world):
    saturday = MONDAY + timedelta(days=5, hours=23)
    opened = shifts.open_shift(layout, now=saturday)
    brief = (opened.folder / "brief.md").read_text()
    assert f"# Score {WEEK}" in brief
    document = json.loads(layout.week_score_json(WEEK).read_text())
    assert document["week"] == WEEK and layout.week_score(WEEK).read_text().splitlines()[0] in brief


@pytest.mark.parametrize("value, target, direction, expected", [
    (0.5, 0.9, "up", 1 - 0.5 / 0.9), (0.95, 0.9, "up", 0.0), (0, 1, "up", 1.0),
    (0.5, 0.1, "down", 0.8), (0.05, 0.1, "down", 0.0), (2, 0, "down", 1.0), (0, 0, "down", 0.0),
    (None, 0.9, "up", None),
])
def test_distance_is_the_relative_shortfall_on_the_wrong_side_of_the_target(value, target, direction, expected):
    found = scoring.distance(value, target, direction)
    assert found == (None if expected is None else pytest.approx(expected))


def test_a_week_whose_runs_carry_no_cost_says_cost_not_measured_not_zero(layout):
    """Two shifts whose sessions reported no cost printed 0% and $0.00 beside "2 of 2 carry no cost",
    the events table USD 0.0, and ten-second shifts a mean length of 0.00 h."""
    init(layout)
    write_machine(layout, roots=[str(layout.root.parent / "code")], time_zone="UTC", budget_usd_day=5.0)
    at = MONDAY + timedelta(hours=23)
    for n in range(2):
        shift_id = f"s-{at + timedelta(hours=n):%Y%m%dT%H%M}Z"
        folder = layout.shift_dir(shift_id)
        folder.mkdir(parents=True)
        opened = at + timedelta(hours=n)
        (folder / "meta.json").write_text(json.dumps({
            "id": shift_id, "week": WEEK, "repo": "/code/alpha", "outcome": "finished",
            "opened_at": journal.iso(opened), "closed_at": journal.iso(opened + timedelta(seconds=12))}))
        trails.append(layout, "shift.handoff", "done", shift=shift_id, model="claude-x")
    result = cli("score", "--week", WEEK, "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    numbers = {n["key"]: n for n in document["numbers"]}
    assert numbers["machine.uncosted"]["value"] == 1.0
    assert numbers["machine.cost"]["value"] is None
    assert numbers["machine.cost"]["detail"].startswith("not measured")
    assert "$0.00" not in numbers["machine.cost"]["detail"]
    assert "mean length 12 s" in numbers["shift.outcomes"]["detail"]
    kinds = next(t for t in document["tables"] if t["key"] == "events.kind")["rows"]
    assert kinds == [["shift.handoff", 2, None, 2]]
    page = layout.week_score(WEEK).read_text()
    assert "| shift.handoff | 2 |  | 2 |" in page and "0.00 h" not in page


def test_score_creates_a_missing_memory_root_like_every_writing_verb_not_run_init_first(layout):
    assert not layout.root.exists()
    result = cli("score", "--week", "2026-W10")
    assert result.exit_code == 0, result.output
    assert "sandman init" not in result.output
    assert result.output.startswith("no data this week: 2026-W10")
    assert layout.week_score("2026-W10").is_file()
    assert git(layout.root, "status", "--porcelain") == ""


def test_the_shifts_table_orders_by_opened_at_not_the_id_string_whose_minute_and_second_forms_mix(layout):
    """`s-…T1144Z` sorted after `s-…T114448Z` as strings though it opened first."""
    init(layout)
    write_machine(layout, roots=[str(layout.root.parent / "code")], time_zone="UTC")
    at = MONDAY + timedelta(hours=11, minutes=44)
    for shift_id, opened in ((f"s-{at:%Y%m%dT%H%M}Z", at), (f"s-{at:%Y%m%dT%H%M}48Z", at + timedelta(seconds=48)),
                             (f"s-{at:%Y%m%dT%H}45Z", at + timedelta(minutes=1))):
        folder = layout.shift_dir(shift_id)
        folder.mkdir(parents=True)
        (folder / "meta.json").write_text(json.dumps({
            "id": shift_id, "week": WEEK, "repo": "/code/alpha", "outcome": "finished",
            "opened_at": journal.iso(opened), "closed_at": journal.iso(opened + timedelta(seconds=5))}))
    result = cli("score", "--week", WEEK, "--json")
    assert result.exit_code == 0, result.output
    rows = next(t for t in json.loads(result.output)["tables"] if t["key"] == "shift.list")["rows"]
    assert [row[0] for row in rows] == [f"s-{at:%Y%m%dT%H%M}Z", f"s-{at:%Y%m%dT%H%M}48Z", f"s-{at:%Y%m%dT%H}45Z"]
