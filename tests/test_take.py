"""take by hand: the corpus into the archive, the guards, the race, the drain, the dream trigger."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from corpus_table import CASES, Case, place
from helpers import git, sandman
from sandman import config, journal
from sandman.errors import CrossDeviceError, InputError, TranscriptLive, TranscriptNotFound, UnrecognisedTranscript
from sandman.layout import Layout
from sandman.pointers import write_pointer
from sandman.store.runlock import RunLock
from sandman.verbs import take as take_module
from sandman.verbs.take import drain, take

SID = "9b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6e"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dirs(home: Path) -> tuple[Path, Path]:
    return home / ".claude", home / ".codex"


def _journal(layout: Layout, verb: str = "take") -> list[tuple[str, dict]]:
    lines = []
    for log in sorted(layout.trace.glob(f"{verb}-*.log")):
        lines += [journal.parse_line(line)[2:] for line in log.read_text().splitlines()]
    return lines


def _live(home: Path, session: str = SID, content: bytes | None = None, age: float = 600) -> Path:
    """A Claude Code transcript under the projects folder, last written ``age`` seconds ago.

    A new file each time (as Claude Code creates one): a taken transcript's
    live name is a second name of the archived file, which writing in place
    would change too.
    """
    path = home / ".claude" / "projects" / "-home-user-proj" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if content is None:
        content = (json.dumps({"type": "user", "sessionId": session, "cwd": "/home/user/proj",
                               "timestamp": "2026-11-30T10:00:00.000Z",
                               "message": {"role": "user", "content": "Fix the upload test"}}) + "\n").encode()
    path.write_bytes(content)
    moment = time.time() - age
    os.utime(path, (moment, moment))
    return path


# -- the corpus ---------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)


def test_every_corpus_transcript_is_archived_byte_identical(corpus: Path, isolated: Path, layout: Layout,
                                                           case: Case):
    claude_dir, codex_home = _dirs(isolated)
    live = place(case, corpus, claude_dir, codex_home)
    digest = _sha(live)
    companion_files = {p.relative_to(live.with_suffix("")): _sha(p) for p in live.with_suffix("").rglob("*") if p.is_file()}
    taken = take(layout, case.session, force=True)
    assert os.path.samefile(live, taken.archived)  # one file, two names: Claude Code's stays for --resume
    assert _sha(taken.archived) == digest
    relative = taken.archived.relative_to(layout.archive / case.host)
    year, month, day, first = relative.parts[:4]
    assert (len(year), len(month), len(day)) == (4, 2, 2) and first[:6].isdigit() and first[6] == "-"
    assert relative.name == live.name
    pointer = json.loads(taken.pointer.read_text())
    assert (pointer["session"], pointer["host"], pointer["cwd"], pointer["ended"], pointer["title"]) == (
        case.session, case.host, case.cwd, case.ended, case.title)
    assert pointer["archived"] == taken.archived.relative_to(layout.root).as_posix()
    assert pointer["highlights"] == [] and pointer["origin"] == str(live)
    assert (pointer["offset"], pointer["bytes"], pointer["sha256"]) == (0, live.stat().st_size, digest)
    if case.companion:
        assert live.with_suffix("").is_dir()  # left where Claude Code keeps it; the archive links its files
        assert {p.relative_to(taken.companion): _sha(p) for p in taken.companion.rglob("*") if p.is_file()} == companion_files
        assert taken.companion.parent == taken.archived.parent
    assert _journal(layout)[-1][0] == "archived"


def test_codex_rollout_archives_under_its_date_path(corpus: Path, isolated: Path, layout: Layout):
    case = next(c for c in CASES if c.file.endswith("crud.jsonl"))
    live = place(case, corpus, *_dirs(isolated))
    taken = take(layout, case.session, force=True)
    rel = taken.archived.relative_to(layout.archive).as_posix()
    assert rel.startswith("codex/") and rel.endswith(f"-2026/01/25/{live.name}")


def test_transcript_outside_the_host_folders_is_taken_by_path(corpus: Path, tmp_path: Path, layout: Layout):
    case = next(c for c in CASES if c.file.endswith("short.jsonl"))
    loose = tmp_path / "exports" / "short.jsonl"
    loose.parent.mkdir()
    loose.write_bytes((corpus / "transcripts" / case.file).read_bytes())
    taken = take(layout, case.session, force=True, transcript=loose)
    assert taken.archived.name == "short.jsonl" and taken.archived.parent.name.endswith("-exports")


def test_highlights_reach_the_pointer(isolated: Path, layout: Layout):
    call = {"type": "assistant", "sessionId": SID, "timestamp": "2026-11-30T10:01:00.000Z", "message": {
        "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                          "input": {"command": 'sandman remember "Uploads go through S3"'}}]}}
    result = {"type": "user", "sessionId": SID, "timestamp": "2026-11-30T10:01:01.000Z", "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": False,
                                     "content": "/home/u/.sandman/memories/-p/project_uploads_go_through_s3.md"}]}}
    path = _live(isolated)
    path.write_bytes(path.read_bytes() + json.dumps(call).encode() + b"\n" + json.dumps(result).encode() + b"\n")
    os.utime(path, (time.time() - 600,) * 2)
    pointer = json.loads(take(layout, SID).pointer.read_text())
    assert pointer["highlights"] == ["Uploads go through S3"]
    assert (pointer["started"], pointer["ended"]) == ("2026-11-30T10:00:00Z", "2026-11-30T10:01:01Z")


# -- guards -------------------------------------------------------------------


def test_a_transcript_written_in_the_live_window_is_refused_unless_forced(isolated: Path, layout: Layout):
    live = _live(isolated, age=5)
    with pytest.raises(TranscriptLive, match=r"written \d+ s ago: the session may still be live; wait \d+ s or pass --force"):
        take(layout, SID)
    assert live.exists() and not layout.pointer(SID).exists()
    taken = take(layout, SID, force=True)
    assert os.path.samefile(live, taken.archived)


def test_a_transcript_written_in_the_future_says_the_clock_is_off_not_wait(isolated: Path, layout: Layout):
    """Issue 20, fault 6: an mtime in the future was refused with 'written 0 s ago ... wait 121 s'."""
    live = _live(isolated, age=-3600)
    result = sandman("take", SID)
    assert result.returncode == 1
    assert re.fullmatch(
        rf"sandman: transcript {re.escape(str(live))} was written 35\d\d s in the future by this machine's clock: "
        r"the clock \(or the file's time\) is off, so waiting will not help; pass --force to take it now\n",
        result.stderr.decode())
    assert live.exists()
    assert sandman("take", SID, "--force").returncode == 0 and live.stat().st_nlink == 2


def test_an_old_transcript_needs_no_force(isolated: Path, layout: Layout):
    _live(isolated, age=config.TAKE_LIVE_WINDOW_S + 5)
    assert take(layout, SID).archived.exists()


@pytest.mark.parametrize("bad", ["a/b", "..", "a..b", "x\0y", "s" * 129, "", "-lead"])


def test_unsafe_session_ids_are_refused(layout: Layout, bad: str):
    with pytest.raises(InputError):
        take(layout, bad)


def test_unknown_session_is_not_found(layout: Layout):
    with pytest.raises(TranscriptNotFound, match="no live transcript of session nope"):
        take(layout, "nope")


def test_transcript_of_another_session_is_refused(isolated: Path, layout: Layout):
    live = _live(isolated)
    with pytest.raises(InputError, match=f"belongs to session {SID}, not other-session"):
        take(layout, "other-session", transcript=live)
    assert live.exists()


def test_transcript_path_must_be_a_regular_file(tmp_path: Path, isolated: Path, layout: Layout):
    with pytest.raises(InputError, match="is not a regular file"):
        take(layout, SID, transcript=tmp_path)
    link = tmp_path / "link.jsonl"
    link.symlink_to(_live(isolated))
    with pytest.raises(InputError, match="is a symbolic link"):
        take(layout, SID, transcript=link)


def test_an_unrecognised_file_outside_the_host_folders_is_refused(tmp_path: Path, layout: Layout):
    odd = tmp_path / "notes.jsonl"
    odd.write_text('{"hello": "world"}\n')
    with pytest.raises(UnrecognisedTranscript):
        take(layout, SID, transcript=odd, force=True)
    assert odd.exists()


@pytest.mark.parametrize("call", ["link", "rename"])


def test_cross_device_archive_is_an_error_never_a_copy(isolated: Path, layout: Layout,
                                                       monkeypatch: pytest.MonkeyPatch, call: str):
    live = _live(isolated)

    def exdev(*args, **kwargs):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    if call == "link":
        monkeypatch.setattr(os, "link", exdev)
    else:  # a filesystem without hard links falls back to rename
        monkeypatch.setattr(os, "link", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EPERM, "no links")))
        monkeypatch.setattr(os, "rename", exdev)
    with pytest.raises(CrossDeviceError, match="different filesystems"):
        take(layout, SID)
    assert live.exists()
    assert not layout.pointer(SID).exists()
    assert not any(p.is_file() for p in layout.archive.rglob("*"))


def test_the_loser_of_a_same_second_race_reports_the_session_gone(isolated: Path, layout: Layout,
                                                                  monkeypatch: pytest.MonkeyPatch):
    """The other take has linked the archive name and not yet written its pointer."""
    live = _live(isolated)
    moment = journal.now_utc()
    monkeypatch.setattr(journal, "now_utc", lambda: moment)
    rel = f"-home-user-proj/{SID}.jsonl"
    winner = layout.archive_path("claude", moment, rel)
    winner.parent.mkdir(parents=True)
    os.link(live, winner)
    with pytest.raises(TranscriptNotFound, match="already archived: another take linked it"):
        take(layout, SID)
    assert live.exists() and winner.exists() and not layout.pointer(SID).exists()


def test_concurrent_takes_archive_once(isolated: Path, layout: Layout):
    for attempt in range(5):
        session = f"race-{attempt}"
        live = _live(isolated, session)
        digest = _sha(live)
        procs = [subprocess.Popen([sys.executable, "-m", "sandman", "take", session], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(2)]
        results = [(p.wait(timeout=60), p.stderr.read().decode()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        codes = sorted(code for code, _ in results)
        assert codes == [0, 2], results
        loser = next(err for code, err in results if code == 2)
        assert "already archived" in loser or "nothing new since its take" in loser
        copies = [p for p in layout.archive.rglob(f"{session}.jsonl")]
        assert len(copies) == 1 and _sha(copies[0]) == digest
        assert os.path.samefile(live, copies[0])


def test_a_take_that_plans_while_another_is_linking_keeps_one_archive_name(isolated: Path, layout: Layout,
                                                                          monkeypatch: pytest.MonkeyPatch):
    """Four SessionEnd hooks and a take by hand at once once archived a session twice (1 run in ~10):
    two takes both planned from the absent take record and linked names a second apart, a third
    hard link the pointer and the record never named. Made deterministic here with two threads: A
    stops after its plan; B runs until it would wait for A (the session's lock) or, without the
    lock, until it has planned too; then A links at second t and B at t+1. Before the lock B
    linked a second name; now B plans after A's record and finds nothing new."""
    from sandman.archive import parts, taking
    from sandman.errors import NothingNew
    from sandman.transcripts import locate

    live = _live(isolated)
    source = locate.source(live)
    moment = journal.now_utc()
    monkeypatch.setattr(journal, "now_utc", lambda: moment + timedelta(seconds=threading.current_thread().name == "B"))
    a_planned, go, a_done = threading.Event(), threading.Event(), threading.Event()
    real_plan = parts.plan

    def plan(*args, **kwargs):
        if threading.current_thread().name == "A":
            part = real_plan(*args, **kwargs)
            a_planned.set()
            assert go.wait(60), "B neither planned nor reached the session's lock"
            return part
        try:
            return real_plan(*args, **kwargs)
        finally:  # without the lock: B has planned from no record; A links first, then B
            go.set()
            assert a_done.wait(60)

    monkeypatch.setattr(parts, "plan", plan)
    real_held = getattr(taking, "held", None)
    if real_held is not None:
        def held(path):
            if threading.current_thread().name == "B":
                go.set()  # B is about to wait for the lock A holds
            return real_held(path)

        monkeypatch.setattr(taking, "held", held)
    outcome: dict[str, object] = {}

    def run(name: str) -> None:
        try:
            outcome[name] = taking.take_source(layout, SID, source, force=True, hook=True)
        except Exception as error:  # noqa: BLE001 - asserted below
            outcome[name] = error
        finally:
            if name == "A":
                a_done.set()

    a = threading.Thread(target=run, args=("A",), name="A")
    a.start()
    assert a_planned.wait(60)
    b = threading.Thread(target=run, args=("B",), name="B")
    b.start()
    a.join()
    b.join()
    assert not isinstance(outcome["A"], Exception), outcome
    names = sorted(p.relative_to(layout.root).as_posix() for p in layout.archive.rglob(f"{SID}.jsonl"))
    assert names == [outcome["A"].archived.relative_to(layout.root).as_posix()]
    assert isinstance(outcome["B"], NothingNew), outcome
    assert live.stat().st_nlink == 2  # the live name and one archive name
    assert parts.read_record(layout, SID).archived == names[0]
    assert [fields["archived"] for event, fields in _journal(layout) if event == "archived"] == names
    assert not list(layout.taking.iterdir())  # no intent left, and the lock file goes with its holding


def test_take_by_hand_prints_and_exits(isolated: Path):
    _live(isolated)
    done = sandman("take", SID)
    assert done.returncode == 0, done.stderr
    assert b"archived: " in done.stdout and b"pointer: " in done.stdout
    again = sandman("take", SID)
    assert again.returncode == 2
    assert again.stderr.decode().startswith(f"sandman: session {SID} has nothing new since its take: its ")
    live = _live(isolated, age=1)
    refused = sandman("take", SID)
    assert refused.returncode == 1 and b"pass --force" in refused.stderr and live.exists()
    assert sandman("take").returncode == 2


# -- the pending-take ledger -------------------------------------------------


def _job(home: Path, job: str, **state) -> Path:
    folder = home / ".claude" / "jobs" / job
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.json").write_text(json.dumps(state))
    return folder


def _pending(layout: Layout, session: str, transcript: Path | None, job: str = "abcd1234") -> Path:
    entry = {"declined": "2026-11-30T10:00:00Z", "job": job, "session": session}
    if transcript is not None:
        entry["transcript"] = str(transcript)
    path = layout.pending_take(session)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entry))
    return path


def test_drain_keeps_an_entry_whose_job_lives(isolated: Path, layout: Layout):
    live = _live(isolated)
    _job(isolated, "abcd1234", sessionId=SID, state="done")
    entry = _pending(layout, SID, live)
    assert drain(layout) == []
    assert entry.exists() and live.exists()
    assert ("kept", {"session": SID, "reason": "job-live", "job": "abcd1234"}) in _journal(layout)


def test_drain_takes_a_session_whose_job_is_gone(isolated: Path, layout: Layout):
    live = _live(isolated)
    entry = _pending(layout, SID, live)
    assert drain(layout) == [SID]
    assert not entry.exists() and live.stat().st_nlink == 2 and layout.pointer(SID).exists()
    assert _journal(layout)[-1][0] == "reclaimed"


def test_drain_drops_an_entry_whose_transcript_is_gone(isolated: Path, layout: Layout):
    entry = _pending(layout, SID, isolated / "gone.jsonl")
    assert drain(layout) == []
    assert not entry.exists()
    assert ("dropped", {"session": SID, "reason": "transcript-gone"}) in _journal(layout)


def test_drain_keeps_a_session_written_in_the_live_window(isolated: Path, layout: Layout):
    live = _live(isolated, age=3)  # resumed by hand since the decline
    entry = _pending(layout, SID, live)
    assert drain(layout) == []
    assert entry.exists() and live.exists()
    assert ("kept", {"session": SID, "reason": "live"}) in _journal(layout)


def test_drain_keeps_an_unreadable_entry_and_never_raises(layout: Layout):
    layout.pending_takes.mkdir(parents=True)
    (layout.pending_takes / "broken.json").write_text("{not json")
    (layout.pending_takes / "bad-id.json").write_text(json.dumps({"session": "../escape"}))
    assert drain(layout) == []
    assert (layout.pending_takes / "broken.json").exists() and (layout.pending_takes / "bad-id.json").exists()


def test_drain_finds_the_transcript_by_id_when_the_entry_names_none(isolated: Path, layout: Layout):
    live = _live(isolated)
    _pending(layout, SID, None)
    assert drain(layout) == [SID] and live.stat().st_nlink == 2


def test_a_take_by_hand_pays_its_own_debt_and_drains_the_rest(isolated: Path, layout: Layout):
    mine, other = _live(isolated), _live(isolated, "other-session")
    _pending(layout, SID, mine)
    _pending(layout, "other-session", other)
    taken = take(layout, SID)
    assert taken.reclaimed == ["other-session"]
    assert not layout.pending_take(SID).exists() and not layout.pending_take("other-session").exists()


# -- the dream trigger -------------------------------------------------------


def _queue(layout: Layout, count: int) -> None:
    for index in range(count):
        write_pointer(layout, f"queued-{index}", {"archived": "x", "ended": "2026-11-30T09:00:00Z"})


def _stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point the spawn at a tiny script that reports how it was started."""
    marker = tmp_path / "dream-ran.json"
    script = ("import json, os, sys; json.dump({'sid': os.getsid(0), 'pid': os.getpid(), "
              f"'stdin': sys.stdin.read()}}, open({str(marker)!r}, 'w')); print('dream stand-in output')")
    monkeypatch.setattr(take_module, "dream_command", lambda: [sys.executable, "-c", script])
    return marker


def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.02)


def test_the_tenth_queued_pointer_spawns_a_detached_dream(isolated: Path, tmp_path: Path, layout: Layout,
                                                         monkeypatch: pytest.MonkeyPatch):
    marker = _stand_in(monkeypatch, tmp_path)
    _queue(layout, config.DREAM_DUE_POINTERS - 1)
    _live(isolated)
    taken = take(layout, SID)
    assert taken.dream_pid is not None
    _wait_for(marker)
    ran = json.loads(marker.read_text())
    os.waitpid(taken.dream_pid, 0)
    assert ran["pid"] == taken.dream_pid and ran["sid"] == ran["pid"], "not the leader of a new session"
    assert ran["stdin"] == ""
    log = layout.trace_file("dream", journal.now_utc().strftime("%Y-%m-%d"))
    assert "dream stand-in output" in log.read_text()
    assert _journal(layout)[-1] == ("dream-spawned", {"queued": "10", "pid": str(taken.dream_pid), "due": "queue"})


def test_no_dream_below_the_threshold_or_while_one_runs(isolated: Path, tmp_path: Path, layout: Layout,
                                                         monkeypatch: pytest.MonkeyPatch):
    marker = _stand_in(monkeypatch, tmp_path)
    _queue(layout, config.DREAM_DUE_POINTERS - 2)
    _live(isolated)
    assert take(layout, SID).dream_pid is None
    lock = RunLock(layout.dream_lock)
    assert lock.acquire()
    try:
        _live(isolated, "another-session")
        assert take(layout, "another-session").dream_pid is None
    finally:
        lock.release()
    assert _journal(layout)[-1] == ("dream-running", {"queued": "10"})
    assert not marker.exists()


def test_a_reclaimed_take_spawns_no_dream(isolated: Path, tmp_path: Path, layout: Layout,
                                          monkeypatch: pytest.MonkeyPatch):
    marker = _stand_in(monkeypatch, tmp_path)
    _queue(layout, config.DREAM_DUE_POINTERS - 1)
    _pending(layout, SID, _live(isolated))
    assert drain(layout) == [SID]
    assert not marker.exists() and not any(d.startswith("dream") for d, _ in _journal(layout))


def test_a_session_taken_twice_keeps_its_earlier_part(isolated: Path, layout: Layout):
    _live(isolated)
    first = take(layout, SID, force=True)
    # Claude Code wrote the session anew after the take: another file, which does not begin with the first
    _live(isolated, content=b'{"type": "user", "sessionId": "%s", "cwd": "/home/user/proj"}\n' % SID.encode())
    second = take(layout, SID, force=True)
    pointer = json.loads(second.pointer.read_text())
    assert pointer["archived"] == second.archived.relative_to(layout.root).as_posix()
    assert pointer["earlier"] == [first.archived.relative_to(layout.root).as_posix()]
    assert first.archived.exists() and second.archived.exists()


def test_drain_drops_an_entry_whose_transcript_vanishes_mid_drain(isolated: Path, layout: Layout,
                                                                  monkeypatch: pytest.MonkeyPatch):
    live = _live(isolated)
    entry = _pending(layout, SID, live)
    real = take_module.locate.source

    def source_then_vanish(path: Path):
        found = real(path)
        path.unlink()  # resumed and removed by hand between the lookup and the take
        return found

    monkeypatch.setattr(take_module.locate, "source", source_then_vanish)
    assert drain(layout) == []
    assert not entry.exists()
    assert _journal(layout)[-1] == ("dropped", {"session": SID, "reason": "transcript-gone"})


def test_the_first_take_sets_up_the_root_as_a_repository(isolated: Path, layout: Layout):
    """A new user's `take --all` then `doctor` must not find a root that is not a repository."""
    path = _live(isolated)
    os.utime(path, (time.time() - 600,) * 2)
    take(layout, SID)
    assert (layout.root / ".git").is_dir()
    assert git(layout.root, "status", "--porcelain") == ""


def test_drain_drops_a_pending_take_whose_transcript_names_another_session(isolated: Path, layout: Layout):
    other = "9b0c1d2e-8f7a-4b6c-9d0e-000000000002"
    live = _live(isolated)  # its lines say SID
    entry = _pending(layout, other, live)
    assert drain(layout) == []
    assert not entry.exists() and live.exists()
    verdict, facts = _journal(layout)[-1]
    assert (verdict, facts["reason"]) == ("dropped", "refused")
    assert facts["error"] == f"transcript {live} belongs to session {SID}, not {other}"


@pytest.mark.parametrize("kind", ["fifo", "folder"])


def test_hand_take_of_a_fifo_says_it_is_not_a_regular_file_not_already_taken(isolated: Path, layout: Layout,
                                                                               kind: str):
    path = isolated / ".claude" / "projects" / "-home-user-proj" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    done = sandman("take", SID)
    assert done.returncode == 2
    assert done.stderr.decode() == (f"sandman: transcript {path} is not a regular file "
                                    "(a FIFO, device, socket or folder); nothing was taken\n")
    assert not layout.pointer(SID).exists()


# -- the secrets ban on what a pointer carries (issue 22) -----------------------


def _remember_hidden_refusal(isolated: Path, body: str, title: str) -> Path:
    """A session whose ``sandman remember`` was refused but ran under ``2>/dev/null || true``."""
    first = {"type": "user", "sessionId": SID, "cwd": "/home/user/proj", "timestamp": "2026-11-30T10:00:00.000Z",
             "message": {"role": "user", "content": title}}
    call = {"type": "assistant", "sessionId": SID, "timestamp": "2026-11-30T10:01:00.000Z", "message": {
        "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {
            "command": f"sandman remember {json.dumps(body)} 2>/dev/null || true"}}]}}
    result = {"type": "user", "sessionId": SID, "timestamp": "2026-11-30T10:01:01.000Z", "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": False,
                                     "content": "/home/u/.sandman/memories/-p/project_deploy.md"}]}}
    return _live(isolated, content=b"".join(json.dumps(line).encode() + b"\n" for line in (first, call, result)))


def test_a_highlight_holding_a_secret_is_refused_and_a_title_masked(isolated: Path, layout: Layout):
    token = "ghp_" + "".join(secrets_corpus_token(36))
    _remember_hidden_refusal(isolated, f"Deploy with {token} from CI", f"push the tag with {token} please")
    pointer_path = take(layout, SID).pointer
    text = pointer_path.read_text()
    pointer = json.loads(text)
    assert token not in text and token[4:] not in text
    assert pointer["highlights"] == [] and "[secret]" in pointer["title"]
    (refused,) = [facts for decision, facts in _journal(layout) if decision == "highlight-refused"]
    assert refused["kinds"] == "github-pat" and token not in json.dumps(refused)


def secrets_corpus_token(n: int) -> str:
    import random
    import string

    rng = random.Random(2222)
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n - 2)) + "7Q"


def test_a_truncated_last_line_is_counted_by_take_and_by_dream(corpus: Path, isolated: Path, layout: Layout,
                                                               fake_claude):
    """Issue 20, fault 4: a transcript whose last line stops mid-JSON was archived byte-identical
    but take's journal said skipped_lines=0, and nothing downstream said a line was cut."""
    case = next(c for c in CASES if c.file.endswith("short.jsonl"))
    whole = (corpus / "transcripts" / case.file).read_bytes()
    last = whole.rstrip(b"\n").rsplit(b"\n", 1)[1]
    cut = whole[: len(whole) - len(last) - 1] + last[: len(last) // 2]  # the last line stops mid-JSON
    live = _live(isolated, case.session, cut)
    taken = take(layout, case.session, force=True)
    assert taken.archived.read_bytes() == cut and os.path.samefile(live, taken.archived)
    decision, facts = _journal(layout)[-1]
    assert decision == "archived" and facts["skipped_lines"] == "1"

    from dream_helpers import journal_lines as dream_journal
    from sandman.verbs.dream import dream

    dream(layout, now=True)  # the fake minds answer {"memories": []}
    (line,) = dream_journal(layout, "routed")
    assert line["skipped_lines"] == "1"


def test_a_cross_device_take_leaves_no_empty_archive_folder(isolated: Path):
    """Issue 20, fault 8: each cross-device attempt left an empty .archive/<host>/<date>/<project>/."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(isolated).st_dev:
        pytest.skip("needs /dev/shm on another filesystem than the test's folder")
    live = _live(isolated)
    with tempfile.TemporaryDirectory(dir=shm) as elsewhere:
        other = Layout(Path(elsewhere) / "root")  # a memory root on another filesystem
        for _ in range(2):
            with pytest.raises(CrossDeviceError, match="different filesystems"):
                take(other, SID, force=True)
        assert live.exists()
        assert not other.archive.exists() or not any(other.archive.rglob("*"))


def test_a_transcript_in_a_linked_project_folder_is_refused_like_a_linked_transcript(isolated: Path,
                                                                                     layout: Layout,
                                                                                     tmp_path: Path):
    """Issue 20, fault 8: a project folder that is a symbolic link was followed while a linked
    transcript was refused; both are refused now, and the transcript stays where it is."""
    real = tmp_path / "elsewhere" / "-home-user-proj"
    real.mkdir(parents=True)
    (real / f"{SID}.jsonl").write_text(json.dumps({"type": "user", "sessionId": SID, "cwd": "/home/user/proj",
                                                   "message": {"role": "user", "content": "x"}}) + "\n")
    projects = isolated / ".claude" / "projects"
    projects.mkdir(parents=True)
    (projects / "-home-user-proj").symlink_to(real)
    linked = projects / "-home-user-proj" / f"{SID}.jsonl"
    with pytest.raises(InputError, match="a symbolic link; pass the path of the folder it points to"):
        take(layout, SID, force=True, transcript=linked)
    payload = {"session_id": SID, "transcript_path": str(linked), "cwd": "/home/user/proj",
               "hook_event_name": "SessionEnd", "reason": "other"}
    assert sandman("take", "--hook", stdin=json.dumps(payload).encode()).returncode == 0
    assert (real / f"{SID}.jsonl").exists() and not layout.pointer(SID).exists()
    assert any("symbolic link" in facts.get("error", "") for _, facts in _journal(layout))


def test_a_cwd_holding_a_secret_is_masked_in_the_pointer_and_the_transcript_kept_whole(isolated: Path,
                                                                                       layout: Layout):
    """The pointer carried a cwd named after an AWS key to recall, the site and dream's banks."""
    key = "AKIA" + "UJZDE8GXD6NCF10E"
    content = (json.dumps({"type": "user", "sessionId": SID, "cwd": f"/tmp/{key}",
                           "timestamp": "2026-11-30T10:00:00.000Z",
                           "message": {"role": "user", "content": "Fix the upload test"}}) + "\n").encode()
    _live(isolated, content=content)
    taken = take(layout, SID)
    assert taken.archived.read_bytes() == content  # never lose data: the transcript is archived as it was
    text = taken.pointer.read_text()
    pointer = json.loads(text)
    assert key not in text
    assert pointer["cwd"] == "/tmp/[secret]" and pointer["cwd_masked"] is True
    (masked,) = [facts for decision, facts in _journal(layout) if decision == "cwd-masked"]
    assert masked["kinds"] == "aws-access-key-id" and key not in json.dumps(masked)


def test_a_pointer_whose_cwd_was_masked_is_routed_without_minds_not_retried_for_ever(isolated: Path,
                                                                                   layout: Layout, fake_claude):
    key = "AKIA" + "UJZDE8GXD6NCF10E"
    content = (json.dumps({"type": "user", "sessionId": SID, "cwd": f"/tmp/{key}",
                           "timestamp": "2026-11-30T10:00:00.000Z",
                           "message": {"role": "user", "content": "Fix the upload test"}}) + "\n").encode()
    _live(isolated, content=content)
    take(layout, SID)
    from dream_helpers import journal_lines as dream_journal
    from sandman.dreamqueue import queue
    from sandman.verbs.dream import dream

    dream(layout, now=True)
    assert fake_claude.calls() == [] and queue(layout) == []
    (line,) = dream_journal(layout, "routed")
    assert line["reason"] == "cwd held a secret (masked by take)"


def test_a_plain_cwd_is_not_marked_masked(isolated: Path, layout: Layout):
    _live(isolated)
    pointer = json.loads(take(layout, SID).pointer.read_text())
    assert pointer["cwd"] == "/home/user/proj" and "cwd_masked" not in pointer
