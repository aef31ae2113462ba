"""The backstop for missed endings (issue 17): SessionStart and reflect take what SessionEnd never did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dream_helpers import transcript_lines
from helpers import sandman
from sandman import config, journal
from sandman.layout import Layout
from sandman.pointers import list_pointers
from sandman.verbs import take_missed as backstop
from sandman.verbs.remember import remember

MINUTE = 60


def _sid(n: int) -> str:
    return f"b5b5{n:04d}-0000-4000-8000-000000000000"


def _transcript(home: Path, sid: str, age: float, cwd: str = "/home/user/proj") -> Path:
    """A Claude Code transcript of ``sid`` last written ``age`` seconds ago."""
    path = home / ".claude" / "projects" / "-home-user-proj" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(transcript_lines(sid, Path(cwd), "2026-11-01T10:00:00Z", "hi"))
    moment = time.time() - age
    os.utime(path, (moment, moment))
    return path


def _lines(layout: Layout, decision: str | None = None) -> list[dict]:
    path = layout.trace_file("take", journal.now_utc().strftime("%Y-%m-%d"))
    if not path.exists():
        return []
    parsed = [journal.parse_line(line) for line in path.read_text().splitlines()]
    return [{"decision": p[2], **p[3]} for p in parsed if decision is None or p[2] == decision]


def _taken(layout: Layout) -> set[str]:
    return {pointer.session for pointer in list_pointers(layout)}


@pytest.fixture
def root(layout: Layout) -> Layout:
    remember(layout, "The project builds with make.", cwd="/home/user/proj")
    return layout


@pytest.fixture
def live_process():
    """A running process standing for a Claude Code session that is still open."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    yield child.pid
    child.stdin.close()
    child.wait()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _start_payload(sid: str, source: str = "startup") -> bytes:
    return json.dumps({"session_id": sid, "transcript_path": f"/x/{sid}.jsonl", "cwd": "/home/user/proj",
                       "hook_event_name": "SessionStart", "source": source}).encode()


def _wait_for(condition, what: str, limit: float = 60.0) -> None:
    """Wait for a detached process's visible result (a condition, never a fixed sleep)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_transcript_left_without_session_end_is_taken_by_the_next_session_start(root, isolated, corpus,
                                                                                   live_process):
    missed = _sid(1)
    _transcript(isolated, missed, age=10 * MINUTE)
    fresh = _sid(2)
    _transcript(isolated, fresh, age=5)  # written within the live window
    starting = _sid(3)
    _transcript(isolated, starting, age=30 * MINUTE)  # a resume of an old session: the one starting
    data = json.loads((corpus / "hooks" / "session-start.resume.live-2.1.332.json").read_text())
    data.update(session_id=starting, cwd="/home/user/proj")
    done = sandman("recall", "--hook", stdin=json.dumps(data).encode(), env={"CLAUDE_PID": str(live_process)})
    assert done.returncode == 0 and done.stderr == b""
    assert json.loads(done.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    _wait_for(lambda: _lines(root, "missed"), "the backstop's missed line")
    assert _taken(root) == {missed}
    line = _lines(root, "missed")[0]
    assert line["taken"] == "1" and line["sessions"] == missed and line["starting"] == starting
    assert "live:1" in line["reasons"] and "starting:1" in line["reasons"]
    assert [entry["session"] for entry in _lines(root, "archived")] == [missed]
    record = json.loads(root.started_record(starting).read_text())
    assert record["pid"] == live_process


def test_concurrent_sessions_are_never_taken_and_two_backstops_take_each_missed_one_once(root, isolated,
                                                                                       live_process):
    idle = _sid(1)  # a live session nobody typed in for half an hour
    _transcript(isolated, idle, age=30 * MINUTE)
    backstop.record_start(root, idle, live_process)
    starting = _sid(2)
    _transcript(isolated, starting, age=20 * MINUTE)
    writing = _sid(3)
    _transcript(isolated, writing, age=1)
    crashed = _sid(4)  # its Claude Code died: the record names a dead process
    _transcript(isolated, crashed, age=15 * MINUTE)
    backstop.record_start(root, crashed, _dead_pid())
    killed = _sid(5)  # started before sandman was installed: no record
    _transcript(isolated, killed, age=15 * MINUTE)

    runs = [subprocess.Popen([sys.executable, "-m", "sandman", "take", "--missed", "--except", starting],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs

    assert _taken(root) == {crashed, killed}
    archived = [entry["session"] for entry in _lines(root, "archived")]
    assert sorted(archived) == sorted([crashed, killed])  # each taken once
    assert not _lines(root, "failed")
    for sid in (idle, starting, writing):
        assert (isolated / ".claude" / "projects" / "-home-user-proj" / f"{sid}.jsonl").exists()
    assert not root.started_record(crashed).exists()  # the dead session's record is gone
    assert root.started_record(idle).exists()


def test_a_session_older_than_the_lookback_is_left_to_take_all(root, isolated):
    old = _sid(1)
    _transcript(isolated, old, age=config.BACKSTOP_LOOKBACK_S + 3600)
    result = backstop.take_missed(root)
    assert result.items == [] and _taken(root) == set()
    assert _lines(root, "missed") == []


def test_a_dry_run_changes_nothing(root, isolated):
    _transcript(isolated, _sid(1), age=10 * MINUTE)
    done = sandman("take", "--missed", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"would take  {_sid(1)}" in done.stdout.decode()
    assert _taken(root) == set() and _lines(root) == []


def test_a_compaction_starts_no_backstop_and_starts_close_together_start_one(root, isolated, corpus):
    compact = json.loads((corpus / "hooks" / "session-start.compact.json").read_text())
    compact.update(cwd="/home/user/proj")
    assert sandman("recall", "--hook", stdin=json.dumps(compact).encode()).returncode == 0
    assert _lines(root, "missed-spawned") == []
    _transcript(isolated, _sid(1), age=10 * MINUTE)  # something to take: a start spawns the backstop
    for n in range(2):
        assert sandman("recall", "--hook", stdin=_start_payload(_sid(10 + n))).returncode == 0
    spawned = _lines(root, "missed-spawned")
    assert len(spawned) == 1 and spawned[0]["starting"] == _sid(10)


def test_a_start_with_nothing_missed_spawns_no_backstop(root, isolated):
    # Issue 29: the backstop was spawned at every start a minute after the last, a whole sandman
    # process (22 x python -c pass) that found nothing; the stat data now says so first.
    _transcript(isolated, _sid(1), age=30)  # live: written half a minute ago
    _transcript(isolated, _sid(2), age=config.BACKSTOP_LOOKBACK_S + 3600)  # take --all's
    taken = _transcript(isolated, _sid(3), age=10 * MINUTE)
    assert sandman("take", _sid(3)).returncode == 0  # taken, and nothing written since
    assert sandman("recall", "--hook", stdin=_start_payload(_sid(10))).returncode == 0
    assert _lines(root, "missed-spawned") == []
    assert root.backstop_stamp.exists()  # checked: the next start within a minute does not ask again

    from sandman.archive.missed import anything_missed

    projects = str(isolated / ".claude" / "projects")
    later = time.time() + 10 * MINUTE  # the live one (the starting session then) is old enough by then
    assert not anything_missed(str(root.root), projects, _sid(1), later)
    with taken.open("a") as stream:  # resumed after its take, and its ending missed: more to take
        stream.write("{}\n")
    assert anything_missed(str(root.root), projects, _sid(1), later)
    root.backstop_stamp.unlink()
    assert sandman("recall", "--hook", stdin=_start_payload(_sid(11))).returncode == 0
    assert _lines(root, "missed-spawned") == []  # written just now: live, not missed yet


@pytest.mark.parametrize("case", ["none", "missed", "starting", "subagent", "live-pid", "dead-pid", "pending",
                                  "taking", "young", "old"])
def test_the_backstops_check_errs_towards_spawning(root, isolated, case):
    from sandman.archive.missed import anything_missed

    sid = _sid(1)
    if case not in ("none", "pending", "taking"):
        age = {"young": 30, "old": config.BACKSTOP_LOOKBACK_S + 60}.get(case, 10 * MINUTE)
        path = _transcript(isolated, sid, age=age)
        if case == "subagent":
            path.rename(path.with_name("agent-a1b2.jsonl"))
    if case in ("live-pid", "dead-pid"):
        backstop.record_start(root, sid, os.getpid() if case == "live-pid" else _dead_pid())
    if case == "pending":
        root.pending_take(sid).parent.mkdir(parents=True, exist_ok=True)
        root.pending_take(sid).write_text("{}")
    if case == "taking":
        (root.root / ".taking").mkdir()
        (root.root / ".taking" / f"{sid}.1.json").write_text("{}")
    expected = case in ("missed", "dead-pid", "pending", "taking")
    projects = str(isolated / ".claude" / "projects")
    assert anything_missed(str(root.root), projects, sid if case == "starting" else None, time.time()) is expected


def test_no_record_is_written_without_a_claude_pid(root):
    backstop.start(root, _sid(1))
    assert not root.started_record(_sid(1)).exists()


@pytest.mark.parametrize("session", ["../evil", "a/b", ""])
def test_an_unsafe_session_id_is_never_a_record_path(root, session, monkeypatch):
    monkeypatch.setenv("CLAUDE_PID", str(os.getpid()))
    backstop.start(root, session)
    assert not root.started.exists() or list(root.started.iterdir()) == []


def test_an_unreadable_record_counts_as_live_for_a_day(root, isolated):
    sid = _sid(1)
    _transcript(isolated, sid, age=10 * MINUTE)
    root.started.mkdir(parents=True, exist_ok=True)
    root.started_record(sid).write_text("{not json")
    assert backstop.take_missed(root).reasons()["live-session"] == 1
    old = time.time() - 2 * 86_400
    os.utime(root.started_record(sid), (old, old))
    assert _taken(root) == set()
    backstop.take_missed(root)
    assert _taken(root) == {sid} and not root.started_record(sid).exists()


def test_reflect_takes_a_missed_ending(root, isolated, fake_claude):
    from sandman.verbs.reflect import reflect

    sid = _sid(1)
    _transcript(isolated, sid, age=10 * MINUTE)
    summary = reflect(root)
    assert summary.missed == [sid] and _taken(root) == {sid}
    assert f"missed endings: 1 session(s) taken" in summary.lines()


def test_missed_refuses_the_options_of_other_takes(root):
    done = sandman("take", "--missed", "--all")
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "sandman: take --missed takes only --except, --dry-run and --background"
    done = sandman("take", "--except", _sid(1))
    assert done.returncode == 2 and done.stderr.decode().strip() == "sandman: --except and --background go with --missed"


def test_without_a_root_missed_creates_it(layout):
    done = sandman("take", "--missed")
    assert (done.returncode, done.stdout.decode()) == (0, "missed endings: 0 taken, 0 skipped\n"), done.stderr
    assert layout.memories.is_dir()
