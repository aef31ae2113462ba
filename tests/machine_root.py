"""A memory root with a machine's week, made through the real verbs, for the site's machine pages.

``build_machine_root`` fills a root with a week of trail events (one revoked), two
shifts run and closed by the tick with the fake claude (tests/fakes/shift_work.py),
breaths filed, spiked and adopted, three scored weeks, and the bad inputs the
pages must survive: a hostile report and breath, a shift whose ``meta.json`` is
not JSON, and a trail line that is not an event.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sandman.banks.commit import bank_transaction
from sandman.layout import Layout
from sandman.machine import breath, proposals
from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails
from sandman.verbs.init import init
from test_shift import SHIFT_WORK, TUESDAY_NIGHT, make_repo, trust, write_machine

HOSTILE_REPORT = (
    "# Shift report\n\nHostile <script>window.__pwned = 1</script> text.\n\n"
    "[click me](javascript:window.__pwned=3) and <img src=x onerror=\"window.__pwned = 2\">\n"
)
HOSTILE_BREATH_ADDRESS = "javascript:window.__pwned=5"
PROPOSAL_TITLE = "Split <script>window.__pwned = 8</script> the parser"
PROPOSAL_BODY = "A [plan](javascript:window.__pwned=9) in <b>three</b> steps."
BROKEN_SHIFT = "s-20261125T2300Z"  # no tick runs that night
WEEKS = ("2026-W47", "2026-W48", "2026-W49")


@dataclass
class MachineRoot:
    shifts: list[str]  # the two shifts the tick ran, oldest first
    revoked: trails.Event  # the event revoked
    revoke: trails.Event
    days: list[str]  # the UTC days with events
    breaths: list[str]
    repos: dict[str, Path]


def _event(layout: Layout, kind: str, summary: str, moment: datetime, **fields) -> trails.Event:
    event = trails.new_event(kind, summary, now=moment, **fields)
    trails.append_event(layout, event)
    return event


def _score(week: str, values: dict[str, float | None]) -> dict:
    numbers = []
    targets = {"quorum": (0.8, "up", "share"), "cost": (2.0, "down", "USD"), "trims": (0.0, "down", "count"),
               "covered": (3.0, "up", "count")}
    for key, value in values.items():
        target, direction, unit = targets[key]
        distance = None if value is None else max(0.0, (target - value) if direction == "up" else (value - target))
        numbers.append({"key": key, "label": f"The {key} <number>", "family": "memory", "value": value, "unit": unit,
                        "target": target, "direction": direction, "distance": distance, "detail": f"{key} detail"})
    measured = [n for n in numbers if n["distance"] is not None]
    worst = [n["key"] for n in sorted(measured, key=lambda n: -n["distance"])[:3]]
    return {"schema": 1, "week": week, "empty": not measured, "numbers": numbers, "worst": worst}


def write_scores(layout: Layout) -> None:
    """Three weeks of ``score/<week>.json`` as the shared contract gives them; ``None`` is a gap."""
    weeks = {
        WEEKS[0]: {"quorum": 0.5, "cost": 3.0, "trims": 2.0, "covered": None},
        WEEKS[1]: {"quorum": None, "cost": 2.5, "trims": 0.0, "covered": 1.0},
        WEEKS[2]: {"quorum": 0.7, "cost": 1.0, "trims": 4.0, "covered": 2.0},
    }
    with bank_transaction(layout, verb="score", subject="three weeks of scores") as tx:
        for week, values in weeks.items():
            tx.write_file(layout.score / f"{week}.json", json.dumps(_score(week, values), indent=2) + "\n")


def build_machine_root(layout: Layout, isolated: Path, tmp_path: Path, fake_claude, monkeypatch) -> MachineRoot:
    (isolated / ".gitconfig").write_text("[user]\n\tname = Owner\n\temail = owner@example.invalid\n")
    init(layout)
    code = tmp_path / "code"
    repos = {name: make_repo(code / name) for name in ("alpha", "beta")}
    trust(isolated, *repos.values())
    write_machine(layout, roots=[str(code)], time_zone="UTC", shifts_per_night=1)  # one shift each of two nights
    monkeypatch.setenv("FAKE_SHIFT_SANDMAN", sys.executable)
    fake_claude.rules("default", {"program": [str(SHIFT_WORK)]})

    # A week of events before the shifts, one a day, with models and costs.
    start = TUESDAY_NIGHT - timedelta(days=6)
    events = []
    for n in range(6):
        moment = start + timedelta(days=n, hours=n)
        events.append(_event(layout, "curate.apply", f"curated day {n} <b>bold</b>", moment,
                             repo=str(repos["alpha"]), model="claude-opus-4", cost_usd=0.1 * (n + 1),
                             parent=events[-1].id if events else None))
    revoked = events[2]
    revoke, _ = trails.revoke(layout, revoked.id, "the curation was <wrong>")

    breath.init(layout, now=start)
    filed = breath.file_breath(layout, {
        "title": "A hostile <script>alert(1)</script> idea", "address": HOSTILE_BREATH_ADDRESS,
        "source": "claude-code-changelog", "repo": str(repos["alpha"]),
        "scores": {"bearing": 0.7, "novelty": 0.5, "provenance": 0.9},
        "body": "Body with <script>window.__pwned = 4</script> and [x](javascript:window.__pwned=6).",
    }, now=start + timedelta(hours=1))
    adopted = breath.file_breath(layout, {
        "title": "A good idea", "address": "https://example.org/changelog#2.1",
        "source": "claude-code-changelog", "repo": str(repos["beta"]),
        "scores": {"bearing": 0.9, "novelty": 0.4, "provenance": 1.0}, "body": "Read the *changelog*.",
    }, now=start + timedelta(hours=2))
    breath.move(layout, adopted.id, "spike", now=start + timedelta(hours=3))
    breath.move(layout, adopted.id, "adopt", now=start + timedelta(hours=4))

    # Two shifts run by the tick with the fake claude, each closed by the next tick.
    ran = []
    for night in (TUESDAY_NIGHT - timedelta(days=1), TUESDAY_NIGHT):
        if not ran:  # the first night's session files a proposal, approved before the second night
            fake_claude.rules("default", {"program": [str(SHIFT_WORK), "--propose", PROPOSAL_TITLE,
                                                      "--propose-body", PROPOSAL_BODY]})
        else:
            (proposal,) = proposals.proposals(layout)
            proposals.approve(layout, proposal.id, "worth a night")
            fake_claude.rules("default", {"program": [str(SHIFT_WORK)]})
        started = tick.run(layout, now=night)
        assert started.decision == "started", started.reason
        os.waitpid(shifts.read_current(layout)["pid"], 0)
        closed = tick.run(layout, now=night + timedelta(minutes=30))
        assert closed.closed == started.shift, closed
        ran.append(started.shift)

    # The bad inputs: a hand-edited hostile report, a meta.json that is not JSON, a line that is not an event.
    with bank_transaction(layout, verb="shift", subject="hand edits") as tx:
        tx.write_file(layout.shift_dir(ran[0]) / "report.md",
                      layout.shift_dir(ran[0]).joinpath("report.md").read_text() + "\n" + HOSTILE_REPORT)
        tx.write_file(layout.shift_dir(BROKEN_SHIFT) / "meta.json", "{not json")
        tx.write_file(layout.shift_dir(BROKEN_SHIFT) / "report.md", "A report whose meta is broken.\n")
        day_file = layout.trail_day(events[0].day)
        tx.write_file(day_file, day_file.read_text() + "{\"id\": \"not an event\"}\n")
    write_scores(layout)
    days = sorted({event.day for event in trails.read(layout).events})
    return MachineRoot(ran, revoked, revoke, days, [filed.id, adopted.id], repos)
