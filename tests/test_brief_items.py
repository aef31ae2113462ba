"""The weekday brief's items (sandman/machine/items.py, docs/BANK-FORMAT.md § shifts "Items"):
memories of the repository's banks ranked by bearing within a budget, open findings, the week's
branches, the usage window, a fingerprint per item in shift.start, and the score's count of the
items later shifts used."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from test_shift import TUESDAY_NIGHT, world  # noqa: F401 (fixture)

from sandman.machine import items as gathering
from sandman.machine import score as scoring
from sandman.machine import shift as shifts
from sandman.machine import trail as trails
from sandman.verbs.remember import remember
from sandman.verbs.score import score as run_score


def _fenced(brief: str, slot: str) -> str:
    match = re.search(rf"\[data: {slot} from [^\n]*\n(`{{3,}})text\n(.*?)\n\1", brief, re.S)
    assert match, f"no {slot} slot"
    return match.group(2)


def _start(layout, opened) -> trails.Event:
    return trails.find(layout, shifts.read_meta(layout, opened.id)["start_event"])


@pytest.mark.calendar
def test_the_brief_carries_the_repositorys_memories_most_relevant_first(layout, world):
    alpha = world["alpha"]
    for n in range(3):
        remember(layout, f"The release checklist step {n} is written down in RELEASE.md.", cwd=str(alpha),
                 name=f"release step {n}", description=f"release step {n}")
    remember(layout, "The parser streams its input in chunks of 64 KiB; never read the whole file.",
             cwd=str(alpha), name="parser streams input", description="how the parser reads input")
    remember(layout, "Every repository under code uses pytest.", cwd=str(alpha.parent),
             name="code uses pytest", description="the test runner of every repository")
    remember(layout, "The owner prefers short commit subjects.", cwd=str(alpha), memory_type="user",
             name="short subjects", description="commit style")
    plan = alpha / "docs" / "plan.md"
    plan.parent.mkdir()
    plan.write_text("# Plan\n\n## Next\n\n- make the parser stream its input\n")
    opened = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT)
    inside = _fenced((opened.folder / "brief.md").read_text(), "memories")
    first = inside.splitlines()[0]
    assert "parser streams input" in first and "chunks of 64 KiB" in inside  # ranked: its body carried
    assert "release step 0" in inside and "code uses pytest" in inside and "short subjects" in inside
    assert "short subjects" in inside.splitlines()[-1]  # unranked, and the user-wide bank comes last
    ids = [i["id"] for i in _start(layout, opened).data["items"] if i["slot"] == "memories"]
    assert len(ids) == 6 and all(re.fullmatch(r"[^/]+/[^/]+\.md", ident) for ident in ids)
    assert ids[0].endswith("parser_streams_input.md") or "parser" in ids[0]


@pytest.mark.calendar
def test_the_memories_slot_keeps_within_its_budget(layout, world):
    alpha = world["alpha"]
    for n in range(6):
        remember(layout, f"Fact number {n} about the build: " + "detail " * 30, cwd=str(alpha),
                 name=f"build fact {n}", description=f"build fact {n} " + "words " * 20)
    found, note = gathering.memories(layout, str(alpha), "nothing relevant here", budget=400)
    assert sum(len(text) + 1 for _, text in found) <= 400 + 1 and 0 < len(found) < 6
    assert note.endswith("cut at 400 characters")


def test_a_repository_with_no_bank_gets_no_memories(layout, world):
    assert gathering.memories(layout, str(world["gamma"]), "x") == ([], "no bank for this repository or its "
                                                                       "ancestors")


@pytest.mark.calendar
def test_open_findings_are_carried_until_a_later_shift_names_them_and_the_score_counts_the_use(layout, world):
    alpha = world["alpha"]
    first = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT)
    shifts.handoff(layout, "left a flaky test")
    shifts.update_meta(layout, first.id, {"findings": ["tests/test_io.py::test_read is flaky"]}, "finding")
    finding = gathering.finding_id(first.id, "tests/test_io.py::test_read is flaky")

    second = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT + timedelta(hours=1))
    inside = _fenced((second.folder / "brief.md").read_text(), "findings")
    assert inside == f"- {finding} (from {first.id} on 2026-12-01): tests/test_io.py::test_read is flaky"
    assert {"slot": "findings", "id": finding} in [
        {k: i[k] for k in ("slot", "id")} for i in _start(layout, second).data["items"]]
    shifts.handoff(layout, f"fixed {finding}: the test waited on a real clock")

    third = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT + timedelta(hours=2))
    assert finding not in _fenced((third.folder / "brief.md").read_text(), "findings")
    shifts.handoff(layout, "nothing")
    week = scoring.compute(layout, "2026-W49")
    used = next(n for n in week.numbers if n.key == "brief.used")
    assert used.value is not None and "were named by the shift" in used.detail
    table = next(t for t in week.tables if t.key == "brief.used")
    assert ["findings", finding, second.id, second.id] in table.rows


@pytest.mark.calendar
def test_a_revoked_shifts_findings_are_not_carried(layout, world):
    alpha = world["alpha"]
    first = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT)
    shifts.handoff(layout, "x")
    shifts.update_meta(layout, first.id, {"findings": ["a wrong finding"]}, "finding")
    trails.revoke(layout, first.id, "it was wrong")
    second = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT + timedelta(hours=1))
    assert _fenced((second.folder / "brief.md").read_text(), "findings") == "(nothing)"


@pytest.mark.calendar
def test_ship_sees_this_weeks_branches_and_every_brief_the_usage_window(layout, world):
    alpha, beta = world["alpha"], world["beta"]
    tuesday = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT)
    shifts.handoff(layout, "one")
    other = shifts.open_shift(layout, path=str(beta), now=TUESDAY_NIGHT + timedelta(hours=1))
    shifts.handoff(layout, "two")
    wednesday = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT + timedelta(days=1))
    shifts.handoff(layout, "three")
    trails.revoke(layout, wednesday.id, "bad")
    friday = shifts.open_shift(layout, path=str(alpha), now=TUESDAY_NIGHT + timedelta(days=3))
    brief = (friday.folder / "brief.md").read_text()
    assert "GO/NO-GO on this week's shift branches of this repository (listed under Context)" in brief
    assert "CI green" not in brief
    inside = _fenced(brief, "branches")
    assert f"- shift/{tuesday.id} — Tuesday Refactor, handed-off, 0 commit(s)" in inside
    assert f"shift/{wednesday.id} — Wednesday Measure, revoked" in inside and other.id not in inside
    assert "the model's usage window: unknown: no machine.window_file" in brief


def test_every_themes_job_names_only_what_the_brief_supplies():
    from sandman.config import WEEK_THEMES

    jobs = " ".join(job for _, job in WEEK_THEMES.values())
    for phrase in ("worst-scored", "CI green", "standing proposals", "where the rest day reads them"):
        assert phrase not in jobs


# --- the score's fixes ------------------------------------------------------------------------


@pytest.mark.calendar
def test_regression_a_brief_with_empty_slots_was_scored_as_no_shift_brief(layout, world):
    trails.append_event(layout, trails.new_event("shift.start", "a brief with nothing in it", shift="s-20261201T2300Z",
                                                 data={"items": []}, now=TUESDAY_NIGHT))
    stale = next(n for n in scoring.compute(layout, "2026-W49").numbers if n.key == "context.stale")
    assert stale.detail == "1 shift brief(s) this week, every slot of them empty"


@pytest.mark.calendar
def test_regression_a_met_target_was_listed_among_the_worst_three(layout, world):
    trails.append_event(layout, trails.new_event("shift.start", "a brief", shift="s-20261201T2300Z", data={
        "items": [{"slot": "plan", "id": "plan", "fingerprint": "sha256:000000000000"}]}, now=TUESDAY_NIGHT))
    week = scoring.compute(layout, "2026-W49")
    assert next(n for n in week.numbers if n.key == "context.stale").distance == 0  # met, and measured
    assert all(number.distance for number in week.worst)
    if not week.worst:
        assert scoring.render(week).startswith("every number measured this week meets its target\n")


def test_regression_a_future_week_committed_an_empty_page(layout, world):
    from helpers import git

    head = git(layout.root, "rev-parse", "HEAD")
    text, commit = run_score(layout, "2027-W10", now=TUESDAY_NIGHT)
    assert text.startswith("no data this week: 2027-W10") and commit is None
    assert not layout.week_score("2027-W10").exists() and git(layout.root, "rev-parse", "HEAD") == head
    _, this_week = run_score(layout, "2026-W49", now=TUESDAY_NIGHT)  # the current week is still written
    assert layout.week_score("2026-W49").exists()
