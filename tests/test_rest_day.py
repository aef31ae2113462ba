"""The rest day's self-pass (sandman/machine/rest.py, docs/shift.md "The rest day"): the week as it
was (revocations shown), the reweight, the week's voyage entry, the ablation week, and targets that
every brief until the next rest day reads."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from helpers import git
from test_shift import SATURDAY_NIGHT, TUESDAY_NIGHT, world, write_machine  # noqa: F401 (fixture)

from sandman import config
from sandman.errors import InputError
from sandman.machine import breath, proposals, rest
from sandman.machine import shift as shifts
from sandman.machine import trail as trails

SUNDAY_NIGHT = SATURDAY_NIGHT + timedelta(days=1)  # 2026-12-06, still ISO week 49
LAST_SATURDAY = SATURDAY_NIGHT - timedelta(days=7)  # 2026-11-28, ISO week 48


def _rest_pass(layout, now, targets: str | None = None, handoff: str = "planned") -> shifts.Opened:
    opened = shifts.open_shift(layout, now=now)
    if targets is not None:
        shifts.write_targets(layout, targets, now=now)
    shifts.handoff(layout, handoff)
    return opened


def _trailer(layout, name: str) -> str:
    return git(layout.root, "log", "-1", f"--format=%(trailers:key={name},valueonly)").strip()


@pytest.mark.calendar
def test_regression_the_day_after_the_rest_day_read_eight_day_old_targets(layout, world):
    """Issue 32: the rest day wrote targets for the next ISO week (from Monday), so the Sunday
    after a Saturday rest day read the targets set eight days before. Every brief until the next
    rest day now reads the targets the latest rest day wrote."""
    beta = world["beta"]
    _rest_pass(layout, LAST_SATURDAY, f"## {beta}\nthe old plan\n")
    saturday = _rest_pass(layout, SATURDAY_NIGHT, f"## {beta}\nsplit the parser\n")
    assert "the old plan" in (saturday.folder / "brief.md").read_text()  # the targets set last rest day

    sunday = shifts.open_shift(layout, path=str(beta), now=SUNDAY_NIGHT)
    text = (sunday.folder / "brief.md").read_text()
    assert "split the parser" in text and "the old plan" not in text
    assert "score/2026-W50-targets.md" in text
    assert trails.find(layout, shifts.read_meta(layout, sunday.id)["start_event"]).data["targets_week"] == "2026-W50"
    shifts.handoff(layout, "done")
    friday = shifts.open_shift(layout, path=str(beta), now=SATURDAY_NIGHT + timedelta(days=6))
    assert "split the parser" in (friday.folder / "brief.md").read_text()


@pytest.mark.calendar
def test_targets_week_follows_the_rest_day_wherever_it_falls(layout, tmp_path):
    layout.root.mkdir(parents=True, exist_ok=True)
    write_machine(layout, roots=[str(tmp_path)], time_zone="UTC", rest_day="Saturday")
    on_saturday = config.machine(layout)
    assert rest.targets_week(on_saturday, date(2026, 12, 6)) == "2026-W50"  # Sunday after Saturday W49
    assert rest.targets_week(on_saturday, date(2026, 12, 11)) == "2026-W50"  # Friday
    assert rest.targets_week(on_saturday, date(2026, 12, 12)) == "2026-W50"  # the next rest day's previous
    write_machine(layout, roots=[str(tmp_path)], time_zone="UTC", rest_day="Sunday")
    on_sunday = config.machine(layout)
    assert rest.targets_week(on_sunday, date(2026, 12, 7)) == "2026-W50"  # Monday after Sunday W49
    assert rest.targets_week(on_sunday, date(2026, 12, 12)) == "2026-W50"  # Saturday


@pytest.mark.calendar
def test_the_targets_and_the_voyage_commits_carry_their_events(layout, world):
    opened = shifts.open_shift(layout, now=SATURDAY_NIGHT)
    start = shifts.read_meta(layout, opened.id)["start_event"]
    shifts.write_targets(layout, f"## {world['alpha']}\nadd tests\n", now=SATURDAY_NIGHT)
    event = trails.find(layout, _trailer(layout, "Event"))
    assert event.kind == "shift.targets" and event.parent == start and event.shift == opened.id
    assert _trailer(layout, "Shift") == opened.id
    path = shifts.write_voyage(layout, "# A week of small fixes\n\nThree repositories moved.", now=SATURDAY_NIGHT)
    assert path == layout.week_voyage("2026-W49")
    assert path.read_text() == "# A week of small fixes\n\nThree repositories moved.\n"
    event = trails.find(layout, _trailer(layout, "Event"))
    assert event.kind == "shift.voyage" and event.data == {"file": "score/2026-W49-voyage.md"}
    assert git(layout.root, "status", "--porcelain").strip() == ""


@pytest.mark.calendar
@pytest.mark.parametrize("text, message", [
    ("no title line", "starts with a `# <title>` line"),
    ("# " + "t" * 90, "starts with a `# <title>` line"),
    ("# fine\n" + "x" * 5000, "at most 4,000"),
])
def test_a_bad_voyage_entry_is_refused_and_writes_nothing(layout, world, text, message):
    shifts.open_shift(layout, now=SATURDAY_NIGHT)
    head = git(layout.root, "rev-parse", "HEAD")
    with pytest.raises(InputError, match=message):
        shifts.write_voyage(layout, text)
    assert git(layout.root, "rev-parse", "HEAD") == head and not layout.week_voyage("2026-W49").exists()


@pytest.mark.calendar
def test_the_voyage_entry_is_written_by_an_open_rest_day_only(layout, world):
    shifts.open_shift(layout, path=str(world["alpha"]), now=TUESDAY_NIGHT)
    with pytest.raises(InputError, match="the week's voyage entry is written by an open rest day shift only"):
        shifts.write_voyage(layout, "# a title\n")


@pytest.mark.calendar
def test_the_rest_day_sees_a_revoked_shift_and_its_proposal_as_revoked(layout, world):
    """Issue 32: a revoked shift read "handed-off" in the rest day's brief, its handoff was the one
    carried, and its revoked proposal vanished."""
    tuesday = shifts.open_shift(layout, path=str(world["alpha"]), now=TUESDAY_NIGHT)
    proposals.propose(layout, "Rewrite the parser", "Too large for one night.")
    shifts.handoff(layout, "I force-rewrote the parser")
    wednesday = shifts.open_shift(layout, path=str(world["beta"]), now=TUESDAY_NIGHT + timedelta(days=1))
    proposals.propose(layout, "Add a cache", "Measured.")
    shifts.handoff(layout, "beta is fine")
    trails.revoke(layout, tuesday.id, "it rewrote history")

    saturday = shifts.open_shift(layout, now=SATURDAY_NIGHT)
    brief = (saturday.folder / "brief.md").read_text()
    shift_line = next(line for line in brief.splitlines() if line.startswith(tuesday.id))
    assert "revoked (it rewrote history; was handed-off)" in shift_line
    assert next(line for line in brief.splitlines() if line.startswith(wednesday.id)).endswith("handed-off")
    assert "I force-rewrote the parser" not in brief and "beta is fine" in brief
    assert any(line.startswith("revoked ") and "Rewrite the parser" in line for line in brief.splitlines())
    assert any(line.startswith("open ") and "Add a cache" in line for line in brief.splitlines())
    assert "[revoked by ev-" in brief


@pytest.mark.calendar
def test_the_rest_day_reweights_the_research_sources(layout, world):
    breath.init(layout, now=LAST_SATURDAY)
    filed = breath.file_breath(layout, {
        "title": "Hook matchers", "address": "https://example.org/n/1", "source": "python-insider",
        "repo": str(world["alpha"]), "scores": {"bearing": 0.8, "novelty": 0.5, "provenance": 0.9},
        "body": "an idea"}, now=LAST_SATURDAY)
    breath.move(layout, filed.id, "adopt", now=TUESDAY_NIGHT)
    opened = shifts.open_shift(layout, now=SATURDAY_NIGHT)
    brief = (opened.folder / "brief.md").read_text()
    assert "- python-insider: 0.50 -> 0.60" in brief
    moved = [e for e in trails.read(layout).events if e.kind == "breath.reweight"]
    assert len(moved) == 1 and moved[0].data["moved"] == {"python-insider": [0.5, 0.6]}


@pytest.mark.calendar
def test_the_rest_day_brief_carries_the_voyage_log_of_the_week(layout, world):
    layout.log.mkdir(parents=True, exist_ok=True)
    layout.log_entry("2026-12-03").write_text(
        "---\nday: 2026-12-03\nkind: passage\ntitle: The parser learned to stream\nnext: watch memory\n---\n\n"
        "Two banks learned how the parser streams.\n")
    layout.log_entry("2026-12-04").write_text("---\nday: 2026-12-01\nkind: passage\ntitle: x\n---\n\nwrong day\n")
    git(layout.root, "add", "log")
    git(layout.root, "commit", "-q", "-m", "log")
    brief = (shifts.open_shift(layout, now=SATURDAY_NIGHT).folder / "brief.md").read_text()
    assert "2026-12-03 · passage — The parser learned to stream\nTwo banks learned" in brief
    assert "next: watch memory" in brief
    assert "2026-12-04: unreadable" in brief and "2026-11-29: no entry" in brief
    assert "sandman shift voyage" in brief


@pytest.mark.calendar
def test_every_seventh_week_the_rest_day_runs_the_ablation(layout, world):
    ordinary = _rest_pass(layout, LAST_SATURDAY)  # 2026-W48
    text = (ordinary.folder / "brief.md").read_text()
    assert "the self-pass" in text and "ablation" not in text
    seventh = shifts.open_shift(layout, now=SATURDAY_NIGHT)  # 2026-W49: 49 = 7 × 7
    text = (seventh.folder / "brief.md").read_text()
    assert "the ablation week" in text and "## Ablation" in text and "sandman shift targets" in text
    start = trails.find(layout, shifts.read_meta(layout, seventh.id)["start_event"])
    assert start.data["ablation"] is True and "ablation" not in (trails.find(
        layout, shifts.read_meta(layout, ordinary.id)["start_event"]).data)
    assert [rest.is_ablation(f"2027-W{n:02d}") for n in (6, 7, 14, 49, 52)] == [False, True, True, True, False]
