"""The research runner (sandman/machine/reading.py, docs/breathe.md "The runner"): a scheduled
pass starts one bounded reading session with the fake claude, in a reading profile whose guard
lets through only ``breathe file|close`` and reads; a shift that adopts a breath moves its source."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from test_shift import SHIFT_WORK, TUESDAY_NIGHT, make_repo, trust, wait_for_session, write_machine

from sandman.layout import Layout
from sandman.machine import breath, reading, tick
from sandman.machine import guard
from sandman.machine import trail as trails
from sandman.schedule import jobs as schedule
from sandman.verbs.init import init

READING_WORK = Path(__file__).resolve().parent / "fakes" / "reading_work.py"
SOURCES = '''\
[[source]]
name = "hourly-notes"
address = "https://notes.example.org/feed"
kind = "feed"
cadence = "hourly"
weight = 0.5

[[source]]
name = "daily-paper"
address = "https://papers.example.net/rss"
kind = "paper"
cadence = "daily"
weight = 0.7
'''


@pytest.fixture
def reading_world(layout, isolated, tmp_path, fake_claude, monkeypatch):
    """A memory root with the machine on (UTC), one repository, two sources (one hourly, one daily)
    and the fake claude doing a reading session's work."""
    (isolated / ".gitconfig").write_text("[user]\n\tname = Owner\n\temail = owner@example.invalid\n")
    init(layout)
    code = tmp_path / "code"
    repo = make_repo(code / "app")
    trust(isolated, repo)
    write_machine(layout, roots=[str(code)], time_zone="UTC")
    breath.init(layout)
    layout.breath_sources.write_text(SOURCES)
    monkeypatch.setenv("FAKE_SHIFT_SANDMAN", sys.executable)
    monkeypatch.setenv("FAKE_READING_REPO", str(repo))
    fake_claude.rules("default", {"program": [str(READING_WORK)], "cost": 0.25})
    return repo


def test_a_scheduled_skim_starts_one_reading_session_whose_breaths_land_with_trail_events(
        layout, reading_world, fake_claude, isolated):
    """Must show (issue 32): the systemd unit `schedule install` writes for the skim, run as the
    scheduler runs it, starts one bounded `claude -p` on the pass's prompt; the breath it files is in
    the store with its trail event, and the session's cost is on the trail."""
    units = {unit.path.name: unit for unit in schedule.units(layout, "systemd")}
    exec_line = next(line for line in units["sandman-skim.service"].text.splitlines() if line.startswith("ExecStart="))
    argv = shlex.split(exec_line.removeprefix("ExecStart="))
    done = subprocess.run(argv, env={**os.environ, "SANDMAN_ROOT": str(layout.root)}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 breath(s) filed, cost $0.2500" in done.stdout

    calls = fake_claude.calls()
    assert len(calls) == 1
    call = calls[0]
    assert call["cwd"] == str(layout.root)
    flags = call["argv"]
    assert flags[flags.index("--max-turns") + 1] == str(reading.BOUNDS["skim"][1])
    settings = json.loads(flags[flags.index("--settings") + 1])
    assert settings["sandbox"]["enabled"] and settings["sandbox"]["failIfUnavailable"]
    assert settings["sandbox"]["network"]["allowedDomains"] == ["notes.example.org"]  # the skim's source only
    assert settings["sandbox"]["filesystem"]["allowWrite"] == [str(layout.root)]
    assert "WebFetch(domain:notes.example.org)" in settings["permissions"]["allow"]
    assert "Write" in settings["permissions"]["deny"] and "Edit" in settings["permissions"]["deny"]
    assert "--pass" in settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]

    filed = breath.list_breaths(layout)
    assert [(b.source, b.repo, b.state) for b in filed] == [("hourly-notes", str(reading_world), "filed")]
    pass_id = filed[0].pass_id
    record = json.loads((layout.breath_pass(pass_id) / "pass.json").read_text())
    assert record["depth"] == "skim" and [s["name"] for s in record["sources"]] == ["hourly-notes"]
    assert record["closed_at"] and record["cost_usd"] == 0.25
    events = trails.read(layout).events
    kinds = [e.kind for e in events if (e.data or {}).get("pass") == pass_id or e.kind == "breath.file"]
    assert kinds == ["breath.pass", "breath.attach", "breath.file", "breath.close", "breath.cost"]
    assert next(e for e in events if e.kind == "breath.file").data["breath"] == filed[0].id
    assert sum(e.cost_usd or 0 for e in events) == 0.25  # counted once, against the day's budget
    assert (layout.breath_session_log(pass_id)).is_file()


def test_a_second_skim_within_the_hour_starts_no_session(layout, reading_world, fake_claude):
    first = reading.run(layout, "skim", now=datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc))
    assert first.decision == "ran" and first.filed == 1
    again = reading.run(layout, "skim", now=datetime(2026, 12, 1, 12, 30, tzinfo=timezone.utc))
    assert again.decision == "skipped" and "no source is due; the next is hourly-notes" in again.reason
    assert len(fake_claude.calls()) == 1


def test_the_deep_pass_reads_every_due_source_and_the_runner_closes_a_pass_the_session_left_open(
        layout, reading_world, fake_claude):
    fake_claude.rules("default", {"program": [str(READING_WORK), "--no-close"], "cost": 0.5})
    done = reading.run(layout, "deep", now=datetime(2026, 12, 1, 13, 7, tzinfo=timezone.utc))
    assert done.decision == "ran" and done.cost_usd == 0.5
    record = json.loads((layout.breath_pass(done.pass_id) / "pass.json").read_text())
    assert [s["name"] for s in record["sources"]] == ["daily-paper", "hourly-notes"]  # heaviest first
    closing = [e for e in trails.read(layout).events if e.kind == "breath.close"]
    assert len(closing) == 1 and closing[0].cost_usd == 0.5


def test_a_reading_session_over_its_time_bound_is_killed_and_its_pass_closed(layout, reading_world, fake_claude,
                                                                             monkeypatch):
    monkeypatch.setitem(reading.BOUNDS, "skim", (1, 5))
    fake_claude.mode("default", "hang")
    done = reading.run(layout, "skim", now=datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc))
    assert done.decision == "ran" and done.exit is None and done.filed == 0
    record = json.loads((layout.breath_pass(done.pass_id) / "pass.json").read_text())
    assert record["closed_at"] and record["cost_usd"] is None
    assert done.failed == "killed at its 1 s bound"
    assert {s["name"]: s["due"] for s in breath.sources(layout, now=datetime(2026, 12, 1, 12, 1, tzinfo=timezone.utc))
            }["hourly-notes"]  # a killed session read nothing: its source stays due


@pytest.mark.parametrize("mode", ["is_error", "fail"])
def test_a_failed_reading_session_leaves_its_sources_due_and_exits_non_zero_with_one_line(
        layout, reading_world, fake_claude, mode):
    """`FAKE_CLAUDE_MODE=is_error sandman breathe run deep` printed `0 breath(s) filed, cost unknown,
    session exit 1`, exit 0, and every source said `not due` for its whole cadence."""
    from helpers import sandman

    fake_claude.mode("default", mode)
    before = {s["name"]: s["last_read"] for s in breath.sources(layout)}

    done = sandman("breathe", "run", "deep")

    stderr = done.stderr.decode()
    assert done.returncode == 1 and stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith("sandman: the reading session of p-") and "its sources stay due" in stderr
    assert len(fake_claude.calls()) == 1
    after = breath.sources(layout)
    assert all(s["due"] for s in after) and {s["name"]: s["last_read"] for s in after} == before
    unread = [e for e in trails.read(layout).events if e.kind == "breath.unread"]
    assert len(unread) == 1 and sorted(unread[0].data["sources"]) == ["daily-paper", "hourly-notes"]
    lines = "".join(p.read_text() for p in layout.trace.glob("breathe-*.log"))
    assert " failed " in lines and "why=" in lines
    again = sandman("breathe", "run", "deep")  # still due: the next run reads them
    assert len(fake_claude.calls()) == 2 and again.returncode == 1


def test_the_runner_passes_what_the_day_has_left_and_refuses_a_spent_day(layout, reading_world, fake_claude):
    write_machine(layout, roots=[str(reading_world.parent)], time_zone="UTC", budget_usd_day=1.0)
    noon = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    trails.append_event(layout, trails.new_event("shift.start", "an earlier shift", cost_usd=0.75, now=noon))
    fake_claude.rules("default", {"program": [str(READING_WORK)], "cost": 0.25})
    assert reading.run(layout, "skim", now=noon).decision == "ran"
    argv = fake_claude.calls()[-1]["argv"]
    assert argv[argv.index("--max-budget-usd") + 1] == "0.25"
    spent = reading.run(layout, "deep", now=datetime(2026, 12, 1, 13, 7, tzinfo=timezone.utc))
    assert spent.decision == "skipped" and "the day's budget is spent: $1.00" in spent.reason
    assert len(fake_claude.calls()) == 1


def test_the_runner_starts_nothing_with_the_machine_off_or_a_bad_depth(layout, reading_world, fake_claude):
    from sandman.errors import InputError

    with pytest.raises(InputError, match="depth 'shallow'"):
        reading.run(layout, "shallow")
    layout.settings_file.write_text("")
    assert reading.run(layout, "skim").reason == "the machine is off: no [machine] roots"
    assert fake_claude.calls() == []


def test_breathe_run_by_hand_with_a_bad_depth_is_one_line_on_stderr(layout, reading_world):
    from helpers import sandman

    done = sandman("breathe", "run", "shallow")
    assert done.returncode != 0
    assert done.stderr.decode().strip().splitlines() == ["sandman: depth 'shallow' is not one of skim, deep"]


# --- the reading guard ------------------------------------------------------------------------


def _call(tool: str, **data: object) -> str:
    return json.dumps({"tool_name": tool, "tool_input": data, "cwd": "/tmp"})


@pytest.mark.parametrize("tool, data", [
    ("Bash", {"command": "sandman breathe file <<'JSON'\n{\"title\": \"x; rm -rf /\", \"body\": \"$(id)\"}\nJSON"}),
    ("Bash", {"command": "sandman breathe close p-20261201T120000Z-abcd"}),
    ("Bash", {"command": "sandman breathe list --repo /code/app | head -5"}),
    ("Read", {"file_path": "/etc/hosts"}),
    ("WebFetch", {"url": "https://notes.example.org/feed?page=2", "prompt": "read"}),
])
def test_the_reading_guard_lets_through_breaths_reads_and_its_sources(tmp_path, tool, data):
    root = _pass_root(tmp_path)
    assert guard.hook(_call(tool, **data), root, None, "p-20261201T120000Z-abcd") == ""


@pytest.mark.parametrize("tool, data, rule", [
    ("Bash", {"command": "git commit -m x"}, "reading-command"),
    ("Bash", {"command": "echo x > /tmp/out"}, "reading-write"),
    ("Bash", {"command": "sandman breathe adopt b-20261201-0123456789"}, "reading-command"),
    ("Bash", {"command": "sandman remember 'a note'"}, "reading-command"),
    ("Bash", {"command": "cat $(curl https://evil.example)"}, "reading-command"),
    ("Bash", {"command": "sandman breathe file <<JSON\n{}\nrm -rf ~"}, "reading-command"),  # never closed
    ("Write", {"file_path": "/tmp/x", "content": "x"}, "reading-tool"),
    ("WebFetch", {"url": "https://elsewhere.example.com/", "prompt": "read"}, "reading-network"),
])
def test_the_reading_guard_refuses_every_other_write_command_and_host(tmp_path, tool, data, rule):
    root = _pass_root(tmp_path)
    out = json.loads(guard.hook(_call(tool, **data), root, None, "p-20261201T120000Z-abcd"))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert out["hookSpecificOutput"]["permissionDecisionReason"].startswith("sandman reading guard: ")
    denied = [e for e in trails.read(Layout(root)).events if e.kind == "guard.deny"]
    assert denied[-1].data["rule"] == rule


def _pass_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    folder = root / "breath" / "passes" / "p-20261201T120000Z-abcd"
    folder.mkdir(parents=True)
    (folder / "pass.json").write_text(json.dumps({"sources": [{"address": "https://notes.example.org/feed"}]}))
    return root


# --- the loop closes: a shift adopts, the next reweight moves the source ------------------------


def test_a_shift_that_adopts_a_breath_moves_its_source_at_the_next_reweight(layout, reading_world, fake_claude):
    """Must show (issue 32): the breath a reading pass filed is in the shift's brief with the way to
    adopt it; the session adopts it; the next reweight raises its source by 0.1."""
    # The session adopts by the real clock (a subprocess): the pass is read by it too, and the
    # reweight runs a minute after the adoption the breath records.
    assert reading.run(layout, "skim", now=datetime.now(timezone.utc)).filed == 1
    idea = breath.list_breaths(layout)[0]
    fake_claude.rules("default", {"program": [str(SHIFT_WORK), "--adopt", idea.id]})
    started = tick.run(layout, now=TUESDAY_NIGHT)
    assert started.decision == "started"
    brief = (layout.shift_dir(started.shift) / "brief.md").read_text()
    assert idea.id in brief and "sandman breathe adopt <breath id>" in brief
    wait_for_session(layout)
    adopted = breath.list_breaths(layout)[0]
    assert adopted.state == "adopted"
    assert next(e for e in trails.read(layout).events if e.kind == "breath.adopt").shift == started.shift
    adopted_at = datetime.strptime(adopted.history[-1]["at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    moved = breath.reweight(layout, now=adopted_at + timedelta(minutes=1))
    assert moved == {"hourly-notes": (0.5, 0.6)}
