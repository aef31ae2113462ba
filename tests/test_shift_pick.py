"""shift pick weighs local signals (docs/shift.md, "pick"; issue 32, point 2): breaths filed against a
repository, its open proposals and findings, a failing ``[machine] check``, the time since its last
shift; each printed in its reasons. Every moment here is injected (UTC): no verdict reads the real clock."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from helpers import git
from test_shift import cli, make_repo, trust, write_machine

from sandman import config
from sandman.errors import ConfigError
from sandman.machine import breath
from sandman.machine import pick
from sandman.machine import proposals as proposing
from sandman.machine import trail as trails
from sandman.verbs.init import init

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)  # a Thursday of ISO week 2026-W49


@pytest.fixture
def repos(layout, isolated, tmp_path):
    (isolated / ".gitconfig").write_text("[user]\n\tname = Owner\n\temail = owner@example.invalid\n")
    init(layout)
    code = tmp_path / "code"
    found = {name: make_repo(code / name) for name in ("alpha", "beta")}
    trust(isolated, *found.values())
    write_machine(layout, roots=[str(code)], time_zone="UTC")
    return found


def order(layout, now=NOW) -> list[pick.Candidate]:
    return [c for c in pick.candidates(layout, trails.read(layout), now=now) if c.pickable]


def shifted(layout, repo, at: datetime) -> None:
    """A weekday shift.start on ``repo`` at ``at``, as the brief writes it (its ISO week in ``data``)."""
    year, week, _ = at.date().isocalendar()
    trails.append_event(layout, trails.new_event(
        "shift.start", "Refactor on it", shift=f"s-{at:%Y%m%dT%H%M}Z", repo=str(repo), now=at,
        data={"theme": "Refactor", "rest": False, "week": f"{year}-W{week:02d}"}))


def file_breath(layout, repo, n: int = 1) -> breath.Breath:
    if not layout.breath_sources.exists():
        breath.init(layout, now=NOW - timedelta(days=1))
    return breath.file_breath(layout, {
        "title": "Try the new hook event", "address": f"https://example.org/changelog#2.{n}",
        "source": "claude-code-changelog", "repo": str(repo),
        "scores": {"bearing": 0.8, "novelty": 0.5, "provenance": 0.9}, "body": "It would help."},
        now=NOW - timedelta(hours=1))


def test_a_breath_filed_against_a_repository_moves_it_up_with_the_reason_shown(layout, repos):
    alpha, beta = repos["alpha"], repos["beta"]
    shifted(layout, alpha, NOW - timedelta(days=6))  # both last week; alpha less recently
    shifted(layout, beta, NOW - timedelta(days=5, hours=12))
    assert [c.path for c in order(layout)] == [str(alpha), str(beta)]

    filed = file_breath(layout, beta)

    first, second = order(layout)
    assert first.path == str(beta) and second.path == str(alpha)
    assert f"1 breath(s) filed against it: {filed.id} (+1)" in first.reasons
    assert "last shifted 2026-11-28T00:00:00Z, 5.5 day(s) ago (+5.5)" in first.reasons
    assert first.signals == {"days": 5.5, "breaths": 1.0} and first.weight == 6.5
    assert second.weight == 6.0 and "breaths" not in second.signals
    printed = cli("shift", "pick")
    assert printed.returncode == 0, printed.stderr
    line = printed.stdout.splitlines()[0]
    assert line.startswith(f"pick {beta} (weight ") and f"1 breath(s) filed against it: {filed.id} (+1)" in line


def test_the_rotation_still_comes_first_a_repository_shifted_this_week_waits_whatever_its_signals(layout, repos):
    alpha, beta = repos["alpha"], repos["beta"]
    shifted(layout, alpha, NOW - timedelta(days=2))  # this week (W49)
    shifted(layout, beta, NOW - timedelta(days=4))  # the Sunday of last week (W48)
    for n in range(3):
        file_breath(layout, alpha, n)

    first, second = order(layout)

    assert (first.path, first.due) == (str(beta), True) and "not shifted this week (2026-W49): due" in first.reasons
    assert (second.path, second.due) == (str(alpha), False)
    assert "already shifted this week (2026-W49)" in second.reasons
    assert second.weight > first.weight  # the signals weigh, the week's promise decides


def test_open_proposals_and_the_last_shifts_findings_weigh_and_are_named(layout, repos):
    alpha, beta = repos["alpha"], repos["beta"]
    opened = trails.new_event(proposing.OPEN, "Split the parser", shift="s-20261201T2300Z", repo=str(beta),
                              now=NOW - timedelta(days=2), data={"title": "Split the parser", "body": ""})
    trails.append_event(layout, opened)
    folder = layout.shift_dir("s-20261130T2300Z")
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({
        "id": "s-20261130T2300Z", "repo": str(beta), "outcome": "finished", "rest": False,
        "findings": ["commit abc “stray” on shift/s-20261130T2300Z: no Event: trailer", "another"]}))

    first, second = order(layout)

    assert first.path == str(beta) and second.path == str(alpha)  # both never shifted: beta's signals decide
    assert f"1 open proposal(s) the owner has not decided: {opened.id} (+0.5)" in first.reasons
    assert "2 open finding(s) in its last shift's report (+1)" in first.reasons
    assert "never shifted (+14)" in first.reasons and first.weight == 15.5


def test_a_failing_check_weighs_a_repository_up_runs_once_per_head_and_is_bounded(layout, repos, tmp_path):
    alpha, beta = repos["alpha"], repos["beta"]
    (alpha / "OK").write_text("")
    runs = tmp_path / "runs"
    command = f"echo ran >> {runs}; test -f OK || {{ echo 3 tests failed; exit 1; }}"
    write_machine(layout, roots=[str(alpha.parent)], time_zone="UTC", check=command)

    first, second = order(layout)
    order(layout, NOW + timedelta(hours=1))  # nothing changed: remembered, not rerun

    assert first.path == str(beta)
    assert f"the check `{command}` fails (exit 1: 3 tests failed) (+3)" in first.reasons
    assert f"the check `{command}` passes" in second.reasons
    assert runs.read_text().count("ran") == 2
    assert json.loads(layout.shift_checks.read_text())[str(beta)]["exit"] == 1
    git(beta, "commit", "-q", "--allow-empty", "-m", "a fix")
    order(layout, NOW + timedelta(hours=2))
    assert runs.read_text().count("ran") == 3  # beta's HEAD moved: its check ran again, alpha's did not
    order(layout, NOW + timedelta(days=2))
    assert runs.read_text().count("ran") == 5  # a day on, both again

    write_machine(layout, roots=[str(alpha.parent)], time_zone="UTC", check="sleep 30", check_timeout_seconds=0.2)
    slow = order(layout)
    assert "the check `sleep 30` was not weighed: timed out after 0.2 s (machine.check_timeout_seconds)" \
        in slow[0].reasons
    assert all("check" not in c.signals for c in slow)


def test_doctor_and_the_score_list_what_is_pickable_without_running_the_check(layout, repos, tmp_path):
    runs = tmp_path / "runs"
    write_machine(layout, roots=[str(repos["alpha"].parent)], time_zone="UTC", check=f"echo ran >> {runs}")
    found = pick.candidates(layout, trails.read(layout), signals=False)
    assert [c.pickable for c in found] == [True, True] and all(c.weight is None for c in found)
    assert not runs.exists()


@pytest.mark.parametrize("key, value, words", [
    ("check", "", "machine.check must be a non-empty string"),
    ("check", ["make", "test"], "machine.check must be a non-empty string"),
    ("check_timeout_seconds", 0, "machine.check_timeout_seconds must be a number above 0 and at most 3600"),
    ("check_timeout_seconds", 7200, "machine.check_timeout_seconds must be a number above 0 and at most 3600"),
])
def test_a_bad_check_setting_is_named(layout, key, value, words):
    layout.root.mkdir(parents=True, exist_ok=True)
    write_machine(layout, roots=["/tmp"], **{key: value})
    with pytest.raises(ConfigError, match=words):
        config.machine(layout)
