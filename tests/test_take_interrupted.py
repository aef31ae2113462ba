"""A take killed mid-way leaves its session in the pipeline (docs/BANK-FORMAT.md, "Takes in progress").

A take writes ``.taking/<sid>.<pid>.json`` before it links the transcript and
deletes it once the pointer is written; every drain (each take's, reflect's)
first finishes the takes a kill interrupted. Each kill here is real where it
can be (a driver process that imports take and calls ``os._exit`` at a
chosen point) and simulated at the function level where a process boundary
adds nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import sandman
from sandman import journal
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.archive import intents, taking
from sandman.verbs import take as take_module
from sandman.verbs.dream import queue
from sandman.verbs.take import drain, take

SID = "9b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6e"
OTHER = "4f1e0c7a-1111-4222-8333-944455556666"
KILLED = 9


def _live(home: Path, session: str = SID, age: float = 600, companion: bool = False) -> Path:
    """A Claude Code transcript under the projects folder, last written ``age`` seconds ago."""
    path = home / ".claude" / "projects" / "-home-user-proj" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "user", "sessionId": session, "cwd": "/home/user/proj", "timestamp": "2026-11-30T10:00:00.000Z",
              "message": {"role": "user", "content": "Fix the upload test"}},
             {"type": "assistant", "sessionId": session, "cwd": "/home/user/proj",
              "timestamp": "2026-11-30T10:05:00.000Z", "message": {"role": "assistant", "content": "Fixed."}}]
    path.write_bytes("".join(json.dumps(line) + "\n" for line in lines).encode())
    if companion:
        (path.with_suffix("") / "subagents").mkdir(parents=True)
        (path.with_suffix("") / "subagents" / "agent-1.jsonl").write_text("{}\n")
    moment = time.time() - age
    os.utime(path, (moment, moment))
    return path


def _payload(session: str, transcript: Path) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": "/home/user/proj",
                       "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}).encode()


def _journal(layout: Layout) -> list[tuple[str, dict]]:
    lines = []
    for log in sorted(layout.trace.glob("take-*.log")):
        lines += [journal.parse_line(line)[2:] for line in log.read_text().splitlines()]
    return lines


def _archived(layout: Layout, session: str = SID) -> list[Path]:
    return sorted(layout.archive.rglob(f"{session}.jsonl"))


def _intents(layout: Layout) -> list[Path]:
    """The intent records in ``.taking/`` (not a session's lock a killed take left there)."""
    folder = layout.root / ".taking"
    return sorted(p for p in folder.iterdir() if p.suffix != ".lock") if folder.is_dir() else []


# A driver that takes a session through the real hook and dies (os._exit) at one chosen point.
DRIVER = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from sandman import config
    from sandman.layout import Layout
    from sandman.archive import link, taking
    from sandman.verbs import take

    point, payload = sys.argv[1], sys.stdin.buffer.read()

    def die(*args, **kwargs):
        os._exit(9)

    if point == "before-pointer":        # the transcript is archived; the pointer is not written
        taking.write_pointer = die
    elif point == "before-link":         # the intent is written; nothing is archived
        link.link_no_replace = die
    elif point == "before-record":       # the pointer is written; the take record is not
        taking.parts.write_record = die
    elif point == "before-companion":    # the transcript is archived; its companion folder's files are not
        taking.parts.link_tree = die
    take.hook(Layout(config.root()), payload)
    sys.exit(0)
""")


def _killed_take(point: str, session: str, transcript: Path) -> None:
    """Run the hook take in a child process that dies at ``point``; assert it died there."""
    done = subprocess.run([sys.executable, "-c", DRIVER, point], input=_payload(session, transcript),
                          capture_output=True, timeout=120)
    assert done.returncode == KILLED, done.stderr.decode()


def _take_another(isolated: Path) -> None:
    """Any later session end: a real take --hook of another session, whose drain runs first."""
    other = _live(isolated, OTHER)
    done = sandman("take", "--hook", stdin=_payload(OTHER, other))
    assert done.returncode == 0 and done.stdout == b"", done.stderr.decode()


def _pointer_of_a_clean_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, companion: bool = False) -> dict:
    """The pointer an uninterrupted take of the same transcript writes (in another root)."""
    home = tmp_path / "clean"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    clean = Layout(home / ".sandman")
    take_module.take_source(clean, SID, take_module.locate.source(_live(home, companion=companion)), force=True,
                            cwd="/home/user/proj", hook=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home" / ".claude"))
    return read_pointer(clean.pointer(SID)).data


def _same_pointer(found: dict, clean: dict, isolated: Path, tmp_path: Path) -> None:
    """The recovered pointer says what the clean take's says, but for the moment and the paths."""
    def comparable(data: dict, home: Path) -> dict:
        data = dict(data)
        data["origin"] = data["origin"].replace(str(home), "<home>")
        data.pop("taken")  # the moment of each take
        for key in ("archived", "companion"):
            if key in data:
                data[key] = re.sub(r"^\.archive/claude/\d{4}/\d\d/\d\d/\d{6}-", "", data[key])
        return data

    assert comparable(found, isolated) == comparable(clean, tmp_path / "clean")


# --- the regression: a take killed between the archive move and the pointer --------------------


def test_take_killed_between_archive_move_and_pointer_is_recovered_by_the_next_drain(
        isolated: Path, layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    live = _live(isolated)
    _killed_take("before-pointer", SID, live)
    assert len(_archived(layout)) == 1 and os.path.samefile(live, _archived(layout)[0])
    assert read_pointer(layout.pointer(SID)) is None  # lost to the pipeline, until a drain runs

    _take_another(isolated)

    pointer = read_pointer(layout.pointer(SID))
    assert pointer is not None and pointer.data["archived"] == _archived(layout)[0].relative_to(layout.root).as_posix()
    assert SID in [p.session for p in queue(layout)]  # dream will see it
    assert _intents(layout) == []
    recovered = [facts for decision, facts in _journal(layout) if decision == "recovered"]
    assert [facts["session"] for facts in recovered] == [SID]
    _same_pointer(pointer.data, _pointer_of_a_clean_take(tmp_path, monkeypatch), isolated, tmp_path)


def test_take_killed_before_its_take_record_gets_it_from_the_next_drain(isolated: Path, layout: Layout) -> None:
    live = _live(isolated)
    _killed_take("before-record", SID, live)
    assert read_pointer(layout.pointer(SID)) is not None and not layout.take_record(SID).exists()

    _take_another(isolated)

    record = json.loads(layout.take_record(SID).read_text())
    pointer = read_pointer(layout.pointer(SID)).data
    assert (record["archived"], record["bytes"], record["sha256"]) == (pointer["archived"], pointer["bytes"],
                                                                        pointer["sha256"])
    assert ("intent-dropped", "pointer-written") in [(d, f.get("reason")) for d, f in _journal(layout)]


def test_take_killed_before_its_companion_linked_links_it_on_recovery(isolated: Path, layout: Layout) -> None:
    live = _live(isolated, companion=True)
    _killed_take("before-companion", SID, live)
    assert live.with_suffix("").is_dir() and os.path.samefile(live, _archived(layout)[0])

    _take_another(isolated)

    pointer = read_pointer(layout.pointer(SID)).data
    companion = layout.root / pointer["companion"]
    assert (companion / "subagents" / "agent-1.jsonl").is_file()
    assert (live.with_suffix("") / "subagents" / "agent-1.jsonl").is_file()  # still there for --resume
    assert companion == _archived(layout)[0].with_suffix("")


def test_take_killed_before_the_link_leaves_the_transcript_live_and_drops_the_intent(
        isolated: Path, layout: Layout) -> None:
    live = _live(isolated)
    _killed_take("before-link", SID, live)
    assert live.exists() and len(_intents(layout)) == 1
    assert layout.take_lock(SID).exists()  # the killed holder's lock: freed by the kernel, its file left

    _take_another(isolated)

    assert live.exists() and _archived(layout) == [] and read_pointer(layout.pointer(SID)) is None
    assert _intents(layout) == []
    assert not layout.take_lock(SID).exists()  # the drain held it to settle the intent, and removed it
    assert ("intent-dropped", "not-moved") in [(d, f.get("reason")) for d, f in _journal(layout)]


def test_a_retake_by_hand_after_the_kill_recovers_the_session(isolated: Path, layout: Layout) -> None:
    live = _live(isolated)
    _killed_take("before-pointer", SID, live)

    done = sandman("take", SID)  # what the tester tried: the drain first finishes the killed take

    assert done.returncode == 2 and b"has nothing new since its take" in done.stderr
    assert read_pointer(layout.pointer(SID)) is not None
    assert [f["session"] for d, f in _journal(layout) if d == "recovered"] == [SID]


# --- the function level: each state a drain can find -------------------------------------------


class Killed(BaseException):
    """Stands in for SIGKILL inside the test process: nothing after it runs."""


def _die(*args, **kwargs):
    raise Killed


def test_reflects_drain_recovers_an_interrupted_take(isolated: Path, layout: Layout,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from sandman.verbs.reflect import drain as reflect_drain

    live = _live(isolated)
    with monkeypatch.context() as patch:
        patch.setattr(taking, "write_pointer", _die)
        with pytest.raises(Killed):
            take(layout, SID)
    assert read_pointer(layout.pointer(SID)) is None

    reflect_drain(layout)

    assert read_pointer(layout.pointer(SID)).data["origin"] == str(live)


def test_an_intent_whose_pointer_was_written_is_dropped_and_the_pointer_kept(
        isolated: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    _live(isolated)
    with monkeypatch.context() as patch:
        patch.setattr(intents, "drop", _die)
        with pytest.raises(Killed):
            take(layout, SID)
    before = layout.pointer(SID).read_bytes()
    assert len(_intents(layout)) == 1

    drain(layout)

    assert layout.pointer(SID).read_bytes() == before and _intents(layout) == []
    assert ("intent-dropped", "pointer-written") in [(d, f.get("reason")) for d, f in _journal(layout)]


def test_a_second_take_killed_keeps_the_first_part_in_earlier(isolated: Path, layout: Layout,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    live = _live(isolated)
    first = take(layout, SID)
    live.unlink()  # the session id written again after its take: another file, other bytes
    live.write_text(json.dumps({"type": "user", "sessionId": SID, "cwd": "/home/user/proj"}) + "\n")
    with monkeypatch.context() as patch:
        patch.setattr(taking, "write_pointer", _die)
        with pytest.raises(Killed):
            take(layout, SID, force=True)

    drain(layout)

    data = read_pointer(layout.pointer(SID)).data
    assert data["archived"] != first.archived.relative_to(layout.root).as_posix()
    assert data["earlier"] == [first.archived.relative_to(layout.root).as_posix()]


def test_an_intent_of_a_take_still_running_is_left_alone(isolated: Path, layout: Layout,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    live = _live(isolated)
    with monkeypatch.context() as patch:
        patch.setattr(taking, "write_pointer", _die)
        with pytest.raises(Killed):
            take(layout, SID)
    intent = _intents(layout)[0]
    data = json.loads(intent.read_bytes())
    data["pid"] = os.getppid()  # a live process that is not this one: its take is in flight
    intent.write_text(json.dumps(data))

    drain(layout)

    assert read_pointer(layout.pointer(SID)) is None and intent.exists()
    assert ("intent-kept", "in-flight") in [(d, f.get("reason")) for d, f in _journal(layout)]
    assert live.stat().st_nlink == 2


@pytest.mark.parametrize("content", [b"not json", b"[]", b'{"session": "../x"}',
                                     b'{"session": "' + SID.encode() + b'", "archived": "../../etc/passwd"}'])
def test_an_unreadable_intent_is_dropped_with_a_journal_line_and_never_raises(layout: Layout, content: bytes) -> None:
    folder = layout.root / ".taking"
    folder.mkdir(parents=True)
    (folder / f"{SID}.1.json").write_bytes(content)

    assert drain(layout) == []

    assert _intents(layout) == []
    assert ("intent-dropped", "unreadable") in [(d, f.get("reason")) for d, f in _journal(layout)]


def test_a_finished_take_leaves_no_intent(isolated: Path, layout: Layout) -> None:
    _live(isolated)
    take(layout, SID)
    assert _intents(layout) == []


def test_temp_files_a_killed_take_left_go_once_stale_and_a_young_one_stays(layout: Layout) -> None:
    hexes = iter(f"{n:032x}" for n in range(1, 10))
    stale = [layout.taking / f".{SID}.1.json.{next(hexes)}.tmp", layout.recent / f".{SID}.json.{next(hexes)}.tmp"]
    young = layout.recent / f".{OTHER}.json.{next(hexes)}.tmp"  # a running take's, maybe
    foreign = layout.taking / "notes.tmp"  # not write_atomic's name: not sandman's to delete
    for path in [*stale, young, foreign]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    old = time.time() - 3600
    for path in [*stale, foreign]:
        os.utime(path, (old, old))

    drain(layout)

    assert [p.exists() for p in stale] == [False, False]
    assert young.exists() and foreign.exists()


# --- a kill sweep: a later take of the same session before the drain (found by a tester) -------

# The hook take at a chosen clock (seconds after a fixed moment, so two takes get two archive
# names without waiting for the clock), dying (os._exit) at a chosen point or not at all.
SWEEP_DRIVER = textwrap.dedent("""
    import os, sys
    from datetime import datetime, timedelta, timezone
    from sandman import config, journal
    from sandman.layout import Layout
    from sandman.archive import link, taking
    from sandman.verbs import take

    point, shift, payload = sys.argv[1], int(sys.argv[2]), sys.stdin.buffer.read()
    moment = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=shift)
    journal.now_utc = lambda: moment

    def die(*args, **kwargs):
        os._exit(9)

    if point == "before-pointer":
        taking.write_pointer = die
    elif point == "before-record":
        taking.parts.write_record = die
    elif point == "before-companion":
        taking.parts.link_tree = die
    elif point == "before-drop":
        taking.intents.drop = die
    take.hook(Layout(config.root()), payload)
    sys.exit(0)
""")
KILL_POINTS = ["before-pointer", "before-record", "before-companion", "before-drop"]


def _sweep_take(point: str, shift: int, transcript: Path) -> int:
    done = subprocess.run([sys.executable, "-c", SWEEP_DRIVER, point, str(shift)],
                          input=_payload(SID, transcript), capture_output=True, timeout=120)
    assert done.returncode in (0, KILLED), done.stderr.decode()
    return done.returncode


def _one_archive_name(layout: Layout, live: Path) -> None:
    """One archive name beside Claude Code's, the one the pointer and the take record name, and
    its companion folder's files linked once too."""
    (archived,) = _archived(layout)
    assert live.stat().st_nlink == 2 and os.path.samefile(live, archived)
    pointer = read_pointer(layout.pointer(SID)).data
    rel = archived.relative_to(layout.root).as_posix()
    assert pointer["archived"] == rel and json.loads(layout.take_record(SID).read_text())["archived"] == rel
    assert "earlier" not in pointer
    agent = live.with_suffix("") / "subagents" / "agent-1.jsonl"
    assert agent.stat().st_nlink == 2
    assert sorted(p.name for p in layout.archive.rglob("*") if p.is_dir() and p.name == SID) == [SID]
    assert _intents(layout) == []


@pytest.mark.parametrize("first", KILL_POINTS)
@pytest.mark.parametrize("second", [None, *KILL_POINTS])
def test_a_take_killed_then_taken_again_before_the_drain_leaves_one_archive_name(
        isolated: Path, layout: Layout, first: str, second: str | None) -> None:
    # Killing take --hook / take --all repeatedly left transcripts with two archive names (link
    # count 3): the next take of the session linked a second name before its drain ran, then
    # the drain "recovered" the killed take's name and pointed at it, orphaning the other.
    live = _live(isolated, companion=True)
    assert _sweep_take(first, 0, live) == KILLED
    if second is not None:
        _sweep_take(second, 2, live)
    _sweep_take("none", 4, live)  # a later ending of the session: taken, or nothing new
    _take_another(isolated)  # and any drain after
    _one_archive_name(layout, live)


@pytest.mark.parametrize("point", ["write_pointer", "drop"])
def test_recovery_after_a_later_take_linked_another_name_keeps_one_name(
        isolated: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    # The killed take's intent was still in flight when the next take started (so that take
    # did not finish it and linked a name of its own): the drain must not point back at the
    # killed take's name, and removes it (one file, no pointer or record naming it). Under the
    # session's lock a killed take's intent looks in flight only when its pid was reused at
    # once; a bank from before the lock may hold this state too.
    from datetime import timedelta

    live = _live(isolated, companion=True)
    with monkeypatch.context() as patch:
        patch.setattr(taking if point == "write_pointer" else intents, point, _die)
        patch.setattr(taking.parts, "write_record", _die) if point == "drop" else None
        with pytest.raises(Killed):
            take(layout, SID)
    (intent,) = _intents(layout)  # a killed process's: another pid than the next take's
    data = json.loads(intent.read_text())
    intent.unlink()
    (intent.parent / f"{SID}.1.json").write_text(json.dumps({**data, "pid": 0}))
    later = journal.now_utc() + timedelta(seconds=5)
    with monkeypatch.context() as patch:
        patch.setattr(taking, "finish_interrupted", lambda layout: [])  # the intent looked in flight
        patch.setattr(intents, "finish_session", lambda layout, session: [])
        patch.setattr(journal, "now_utc", lambda: later)
        patch.setattr(take_module, "drain", lambda layout: [])
        take_module.take_source(layout, SID, take_module.locate.source(live), force=True)
    assert len(_archived(layout)) == 2

    drain(layout)

    _one_archive_name(layout, live)
    assert ("intent-dropped", "superseded") in [(d, f.get("reason")) for d, f in _journal(layout)]
