"""take --all: the backfill over a whole history (guards, --project, bad files, one dream, the corpus)."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus_table import CASES, place
from dream_helpers import transcript_lines
from helpers import sandman
from sandman import config, journal
from sandman.archive import link as link_module, taking
from sandman.errors import InputError, TranscriptNotFound
from sandman.layout import Layout
from sandman.pointers import list_pointers
from sandman.store.runlock import RunLock
from sandman.transcripts import locate
from sandman.verbs import take as take_module
from sandman.verbs.take_all import backfill, parse_duration

DAY = 86_400


def _session(n: int) -> str:
    return f"5e55{n:04d}-0000-4000-8000-000000000000"


def _transcript(home: Path, sid: str, cwd: str = "/home/user/proj", age: float = 3 * DAY,
                folder: str | None = None, content: str | None = None) -> Path:
    """A Claude Code transcript of ``sid`` run in ``cwd``, last written ``age`` seconds ago."""
    slug = folder or "".join(c if c.isalnum() else "-" for c in cwd)
    path = home / ".claude" / "projects" / slug / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if content is not None else transcript_lines(sid, Path(cwd), "2026-11-01T10:00:00Z", "hi"))
    moment = time.time() - age
    os.utime(path, (moment, moment))
    return path


def _journal(layout: Layout) -> list[tuple[str, dict]]:
    path = layout.trace_file("take", journal.now_utc().strftime("%Y-%m-%d"))
    if not path.exists():
        return []
    return [journal.parse_line(line)[2:] for line in path.read_text().splitlines()]


def _tree(base: Path) -> dict[str, tuple[str, int]]:
    """Every path under ``base`` with its content hash (files) and modification time."""
    state = {}
    for path in sorted(base.rglob("*")):
        stat = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
        state[str(path.relative_to(base))] = (digest, stat.st_mtime_ns)
    return state


def _reasons(result) -> dict[str, str]:
    return {item.session or item.path.name: item.reason for item in result.items}


# -- durations -----------------------------------------------------------------


@pytest.mark.parametrize("text, seconds", [("90m", 5400), ("12h", 43_200), ("2d", 172_800), ("1w", 604_800),
                                           ("30s", 30), ("0d", 0), (" 3D ", 259_200)])
def test_durations_parse(text: str, seconds: int):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2", "d", "2x", "-1d", "1.5h", "2 days", "1h30m"])
def test_a_bad_duration_is_refused(text: str):
    with pytest.raises(InputError, match="is not a duration: give a whole number and a unit"):
        parse_duration(text)


def test_a_bad_duration_is_one_line_and_exit_2(isolated: Path):
    done = sandman("take", "--all", "--older-than", "2x")
    assert done.returncode == 2
    assert done.stderr.decode() == ("sandman: --older-than '2x' is not a duration: give a whole number and a unit "
                                    "(s, m, h, d or w), such as 90m, 12h, 2d or 1w\n")


@pytest.mark.parametrize("args, message", [
    (["take", "--dry-run"], "sandman: --older-than, --project and --dry-run go with --all\n"),
    (["take", "--older-than", "1d", "abc"], "sandman: --older-than, --project and --dry-run go with --all\n"),
    (["take", "--all", "abc"], "sandman: take --all takes no session id, --force, --transcript or --hook\n"),
    (["take", "--all", "--force"], "sandman: take --all takes no session id, --force, --transcript or --hook\n"),
])
def test_misused_flags_are_refused(isolated: Path, args: list[str], message: str):
    done = sandman(*args)
    assert (done.returncode, done.stderr.decode()) == (2, message)


# -- the guards ----------------------------------------------------------------


def test_a_dry_run_changes_nothing(isolated: Path, tmp_path: Path, layout: Layout):
    old, young = _transcript(isolated, _session(1)), _transcript(isolated, _session(2), age=60)
    _transcript(isolated, _session(3), cwd=str(layout.root / ".dream"))
    before = _tree(tmp_path)
    done = sandman("take", "--all", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert _tree(tmp_path) == before, "a dry run wrote, moved or touched something"
    assert not layout.root.exists()
    out = done.stdout.decode()
    assert f"would take  {_session(1)}  claude, 3.0 d old" in out
    assert f"skip live  {young}" in out and "skip mind-session  " in out
    assert re.search(r"│ would take\s+│\s+1 │\s+468 B │", out), out
    assert re.search(r"│ skipped: live\s+│\s+1 │\s+│ written in the last 120 s", out), out
    assert "dry run: nothing was taken" in out
    assert old.exists() and young.exists()


def test_take_all_reports_a_transcript_from_the_future_as_future_not_live(isolated: Path, layout: Layout):
    ahead = _transcript(isolated, _session(1), age=-3600)
    done = sandman("take", "--all", "--dry-run")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert f"skip future  {ahead}" in out and "skip live" not in out, out
    assert re.search(r"│ skipped: future\s+│\s+1 │\s+│ written in the future by this", out), out
    assert ahead.exists()


def test_the_window_and_the_live_window_are_respected(isolated: Path, layout: Layout):
    _transcript(isolated, _session(1), age=3 * DAY)
    _transcript(isolated, _session(2), age=DAY)
    _transcript(isolated, _session(3), age=90)
    _transcript(isolated, _session(4), age=5)
    result = backfill(layout)  # the default window: 2 days
    assert _reasons(result) == {_session(1): None, _session(2): "recent", _session(3): "live", _session(4): "live"}
    assert [p.session for p in list_pointers(layout)] == [_session(1)]
    result = backfill(layout, older_than="12h")  # what was taken stays for --resume, passed over
    assert _reasons(result) == {_session(1): "taken", _session(2): None, _session(3): "live", _session(4): "live"}
    result = backfill(layout, older_than="1m")  # shorter than the live window: 120 s still guards
    assert _reasons(result) == {_session(1): "taken", _session(2): "taken", _session(3): "live",
                                _session(4): "live"}
    decisions = [(d, f.get("reason"), f.get("session")) for d, f in _journal(layout)]
    assert ("skipped", "recent", _session(2)) in decisions and ("skipped", "live", _session(4)) in decisions
    assert decisions[-1][0] == "backfilled"


def test_a_session_a_live_job_would_resume_is_left(isolated: Path, layout: Layout):
    kept = _transcript(isolated, _session(1))
    _transcript(isolated, _session(2))
    job = isolated / ".claude" / "jobs" / "3f219846"
    job.mkdir(parents=True)
    (job / "state.json").write_text(json.dumps({"resumeSessionId": _session(1), "state": "stopped"}))
    result = backfill(layout)
    assert _reasons(result) == {_session(1): "live-job", _session(2): None}
    assert result.skipped[0].detail == "job 3f219846"
    assert kept.exists() and not layout.pointer(_session(1)).exists()
    assert not layout.pending_take(_session(1)).exists(), "a backfill is not a SessionEnd: it owes no debt"


def test_project_selects_by_the_transcripts_cwd_not_the_slug(isolated: Path, layout: Layout):
    # /a/my_app and /a/my-app share Claude Code's project folder -a-my-app.
    mine = _transcript(isolated, _session(1), cwd="/a/my_app", folder="-a-my-app")
    other = _transcript(isolated, _session(2), cwd="/a/my-app", folder="-a-my-app")
    below = _transcript(isolated, _session(3), cwd="/a/my_app/api")
    prefix = _transcript(isolated, _session(4), cwd="/a/my_app2")
    result = backfill(layout, project="/a/my_app/")
    assert _reasons(result) == {_session(1): None, _session(2): "other-project", _session(3): None,
                                _session(4): "other-project"}
    assert mine.stat().st_nlink == below.stat().st_nlink == 2  # taken: archived, and still resumable
    assert other.stat().st_nlink == prefix.stat().st_nlink == 1
    assert not any(f.get("reason") == "other-project" for _, f in _journal(layout)), "counted, not journaled"


def test_regression_take_all_project_counted_every_projects_taken_sessions_and_orphans(isolated: Path,
                                                                                      layout: Layout):
    from sandman.verbs.take_all import listing

    _transcript(isolated, _session(1), cwd="/a/app")
    _transcript(isolated, _session(2), cwd="/b/other")
    _transcript(isolated, _session(3), cwd="/b/other")
    assert len(backfill(layout).taken) == 3  # every project taken once
    for cwd, sid, line in (("/a/app", _session(7), '{"cwd": "/a/app/api"}'),  # its subagents say where
                           ("/b/other", _session(8), '{"cwd": "/b/other"}'),
                           ("/b/other", _session(9), "{}")):  # nothing says: its folder's name does
        folder = isolated / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in cwd) / sid
        (folder / "subagents").mkdir(parents=True)
        (folder / "subagents" / "agent-a1.jsonl").write_text(line + "\n")
    result = backfill(layout, project="/a/app")
    assert result.reasons() == {"taken": 1, "other-project": 2, "orphan-folder": 1}
    assert [line.split()[:2] for line in listing(result)] == [
        ["skip", "orphan-folder"]] and _session(7) in listing(result)[0]
    assert backfill(layout).reasons() == {"taken": 3, "orphan-folder": 3}


def test_project_may_be_relative(isolated: Path, layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    _transcript(isolated, _session(1), cwd=str(work / "sub"))
    _transcript(isolated, _session(2), cwd=str(tmp_path))
    monkeypatch.chdir(work)
    assert _reasons(backfill(layout, project=".")) == {_session(1): None, _session(2): "other-project"}


def test_files_that_cannot_be_taken_are_reported_and_the_batch_goes_on(isolated: Path, layout: Layout,
                                                                       monkeypatch: pytest.MonkeyPatch):
    good = _transcript(isolated, _session(1))
    locked = _transcript(isolated, _session(2))
    link = locked.parent / f"{_session(3)}.jsonl"
    link.symlink_to(good)
    summary_only = _transcript(isolated, _session(4), content=json.dumps(
        {"type": "summary", "summary": "Old work", "leafUuid": "x"}) + "\n")
    agent = _transcript(isolated, "agent-a881341")
    orphan = locked.parent / _session(5) / "subagents"
    orphan.mkdir(parents=True)
    (orphan / "agent-a1.jsonl").write_text("{}\n")
    copy = _transcript(isolated, _session(1), folder="-elsewhere")
    real_sniff = locate.sniff

    def sniff(path: Path):  # reading the file fails as it would without permission (the tests run as root)
        if path == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_sniff(path)

    monkeypatch.setattr(locate, "sniff", sniff)
    result = backfill(layout)
    by_path = {item.path: (item.reason, item.detail) for item in result.items}
    assert by_path[locked] == ("unreadable", "Permission denied")
    assert by_path[link][0] == "refused" and "symbolic link" in by_path[link][1]
    assert by_path[summary_only] == ("no-cwd", None)
    assert by_path[agent] == ("subagent", None)
    assert by_path[orphan.parent] == ("orphan-folder", None)
    assert by_path[good] == ("duplicate", str(copy)) and by_path[copy] == ("duplicate", str(good))
    assert all(path.exists() for path in (good, locked, summary_only, agent, orphan, copy))
    assert result.taken == []
    skipped = {f["path"]: f["reason"] for d, f in _journal(layout) if d == "skipped"}
    assert skipped[str(locked)] == "unreadable" and skipped[str(orphan.parent)] == "orphan-folder"
    # Without the clash and the bad read, the good ones are taken.
    copy.unlink()
    monkeypatch.setattr(locate, "sniff", real_sniff)
    assert {i.session for i in backfill(layout).taken} == {_session(1), _session(2)}


def test_regression_a_transcript_moved_while_sniffed_is_gone_not_unreadable(isolated: Path, layout: Layout,
                                                                          monkeypatch: pytest.MonkeyPatch):
    # Two takes of one session raced: the loser's sniff opened a file the winner had just moved,
    # and take by hand failed with "No such file or directory" (exit 1) instead of "already gone".
    path = _transcript(isolated, _session(1))
    real_sniff = locate.sniff

    def sniff(target: Path):
        target.unlink()  # the other take wins between source()'s checks and its read
        return real_sniff(target)

    monkeypatch.setattr(locate, "sniff", sniff)
    with pytest.raises(TranscriptNotFound, match="already gone"):
        locate.source(path)
    _transcript(isolated, _session(1))
    assert _reasons(backfill(layout)) == {f"{_session(1)}.jsonl": "gone"}


def test_regression_a_take_that_loses_the_link_race_reports_the_session_gone(isolated: Path, layout: Layout,
                                                                            monkeypatch: pytest.MonkeyPatch):
    # The winner linked the archive name first (EEXIST for the loser) and the source vanished
    # between the loser's exists() and samefile(): samefile's FileNotFoundError escaped as exit 1.
    path = _transcript(isolated, _session(1))

    def lost(src: Path, dst: Path) -> None:
        raise FileExistsError(17, "File exists", str(dst))

    def unlinked(a, b) -> bool:
        raise FileNotFoundError(2, "No such file or directory", str(a))

    monkeypatch.setattr(link_module, "link_no_replace", lost)
    monkeypatch.setattr(os.path, "samefile", unlinked)
    with pytest.raises(TranscriptNotFound, match="another take linked it"):
        take_module.take_source(layout, _session(1), locate.source(path), force=False)


def test_a_take_that_fails_midway_is_reported_and_the_rest_are_taken(isolated: Path, layout: Layout,
                                                                      monkeypatch: pytest.MonkeyPatch):
    for n in range(3):
        _transcript(isolated, _session(n), age=(5 - n) * DAY)
    real = taking.archive

    def archive(layout_, source, taken, *rest, **options):
        if source.path.stem == _session(1):
            raise OSError(28, "No space left on device")
        return real(layout_, source, taken, *rest, **options)

    monkeypatch.setattr(taking, "archive", archive)
    result = backfill(layout)
    assert _reasons(result) == {_session(0): None, _session(1): "failed", _session(2): None}
    assert "No space left on device" in result.skipped[0].detail


def test_a_mind_session_left_in_the_projects_folder_is_not_taken(isolated: Path, layout: Layout):
    mind = _transcript(isolated, _session(1), cwd=str(layout.root / ".dream"))
    assert _reasons(backfill(layout)) == {_session(1): "mind-session"} and mind.exists()


# -- the dream ------------------------------------------------------------------


def _stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point dream's spawn at a script that appends one line per start."""
    marker = tmp_path / "dreams.txt"
    script = f"open({str(marker)!r}, 'a').write('started\\n')"
    monkeypatch.setattr(take_module, "dream_command", lambda: [sys.executable, "-c", script])
    return marker


def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.02)


def test_a_deep_queue_gets_one_dream_not_one_per_take(isolated: Path, tmp_path: Path, layout: Layout,
                                                      monkeypatch: pytest.MonkeyPatch):
    marker = _stand_in(monkeypatch, tmp_path)
    for n in range(config.DREAM_DUE_POINTERS + 5):
        _transcript(isolated, _session(n))
    result = backfill(layout)
    assert len(result.taken) == 15 and result.queued == 15 and result.dream_pid is not None
    os.waitpid(result.dream_pid, 0)
    _wait_for(marker)
    assert marker.read_text() == "started\n"
    assert [d for d, _ in _journal(layout) if d.startswith("dream")] == ["dream-spawned"]


def test_a_shallow_queue_gets_no_dream(isolated: Path, tmp_path: Path, layout: Layout,
                                       monkeypatch: pytest.MonkeyPatch):
    marker = _stand_in(monkeypatch, tmp_path)
    for n in range(3):
        _transcript(isolated, _session(n))
    result = backfill(layout)
    assert result.dream_pid is None and result.queued == 3 and not marker.exists()


def test_the_batch_drains_the_pending_take_ledger(isolated: Path, layout: Layout):
    owed = _transcript(isolated, _session(1), age=DAY)  # too young for the window, but a debt
    entry = {"declined": "2026-11-30T10:00:00Z", "job": "gone", "session": _session(1), "transcript": str(owed)}
    layout.pending_takes.mkdir(parents=True)
    layout.pending_take(_session(1)).write_text(json.dumps(entry))
    result = backfill(layout)
    assert _reasons(result) == {_session(1): "recent"} and result.reclaimed == [_session(1)]
    assert owed.stat().st_nlink == 2


# -- the real corpus -------------------------------------------------------------


def test_the_corpus_is_backfilled_byte_identical(corpus: Path, isolated: Path, layout: Layout):
    sources = {}
    for case in CASES:
        live = place(case, corpus, isolated / ".claude", isolated / ".codex")
        moment = time.time() - 3 * DAY
        os.utime(live, (moment, moment))
        sources[case.session] = hashlib.sha256(live.read_bytes()).hexdigest()
    dry = sandman("take", "--all", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.decode().count("would take  ") == len(CASES)
    lock = RunLock(layout.dream_lock)  # a dream "runs": the due queue must start no second one
    assert lock.acquire()
    try:
        done = sandman("take", "--all")
    finally:
        lock.release()
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "│ taken   │       11 │" in out and "skip" not in out
    assert "11 session(s) queued for dream" in out
    pointers = {p.session: p for p in list_pointers(layout)}
    for case in CASES:
        pointer = pointers[case.session].data
        assert (pointer["host"], pointer["cwd"], pointer["title"]) == (case.host, case.cwd, case.title)
        archived = layout.root / pointer["archived"]
        assert hashlib.sha256(archived.read_bytes()).hexdigest() == sources[case.session]
    again = backfill(layout)  # every transcript stays for --resume; none is taken twice
    assert not again.taken and {item.reason for item in again.skipped} == {"taken"}



def test_a_progress_bar_shows_on_a_terminal_only(isolated: Path):
    for n in range(3):
        _transcript(isolated, _session(n))
    piped = sandman("take", "--all", "--dry-run")
    assert piped.returncode == 0 and piped.stderr == b""
    # stderr on a pseudo-terminal: the bar is drawn there, never into stdout.
    master, slave = pty.openpty()
    done = subprocess.run([sys.executable, "-m", "sandman", "take", "--all"], stdout=subprocess.PIPE,
                          stderr=slave, env=os.environ, timeout=60)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other end is closed and drained
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    assert done.returncode == 0
    assert b"taking" in drawn and b"\x1b[" in drawn, drawn
    assert b"taking" not in done.stdout and b"taken" in done.stdout
