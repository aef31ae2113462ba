"""``sandman take``: a session's afterlife begins (design stations ① take, ② archive, ③ pointer).

A take gives the session's live transcript a second name in the archive (a
hard link on the same volume: one file, never a copy; a cross-device
destination is an error) and leaves Claude Code's name in place, so the
session can still be resumed (docs/take.md, "Resume after a take"). The
pointer it drops into ``memories/.recent/`` names the part to dream, a byte
range of that file with the SHA-256 of everything up to its end
(sandman.archive). A second ending of a resumed session archives only what
was appended. Then take drains the pending-take ledger and, when a dream is due
(``config.dream_due_pointers()`` pointers queued, or one waiting longer than
``config.dream_wait_s()``) and none runs, spawns ``sandman dream`` fully
detached.

``take --hook`` is Claude Code's SessionEnd hook (through sandman.hook): it
declines ``reason: "resume"`` quietly (a resume is a beginning), declines a
session a live job would resume into ``pending-takes/<sid>.json``, and takes
every other ending at once (SessionEnd is the proof the session is over, so
the live window does not apply). ``$SANDMAN_NO_TAKE`` and
``CLAUDE_MEMORY_PIPELINE=1`` are handled in sandman.hook, before stdin is read.

A take writes an intent record (``.taking/<sid>.<pid>.json``) before the
link and deletes it once the pointer is written, so a take killed in between
is finished by the next drain (``archive.intents.finish_interrupted``): the
session never drops out of the pipeline with its transcript archived and no
pointer.

The substance lives one floor down, in ``sandman.archive``: ``parts`` (what a
take archives of a session, the take record), ``link`` (the archive names),
``pointer`` (the pointer's fields), ``intents`` (takes in progress and their
recovery), ``root`` (the repository the first take makes). This module is the
verb: the guards, the order of the steps, the hook's declines, the
pending-take ledger and the dream trigger.

Module level is standard library only: take --hook imports it, and must do the
link, the pointer and the spawn without importing anything heavy.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sandman import config, journal
from sandman.archive import intents, parts
from sandman.archive.intents import finish_interrupted
from sandman.archive.link import archive
from sandman.archive.pointer import earlier_parts, pointer_data
from sandman.archive.root import ensure_repository, refuse_foreign_root
from sandman.errors import InputError, NothingNew, SandmanError, TranscriptLive, TranscriptNotFound
from sandman.layout import Layout
from sandman.pointers import check_session_id, read_pending_take, write_pointer
from sandman.store.detach import sandman_argv, spawn_detached
from sandman.store.runlock import RunLock
from sandman.store.atomic import write_atomic
from sandman.transcripts import Session, locate, summarize
from sandman.transcripts.locate import Source

__all__ = ["Taken", "archive", "check_live", "drain", "dream_if_due", "finish_interrupted", "hook", "take",
           "take_source", "vet"]

VERB = "take"
_SAME_SECOND_RETRIES = 5


class Taken:
    """What one take did: the archived transcript and companion folder (absolute paths),
    the pointer written, the pending takes a drain reclaimed (session ids), and the pid
    of a dream it spawned (None when it spawned none)."""

    __slots__ = ("session", "archived", "pointer", "companion", "dream_pid", "reclaimed")

    def __init__(self, session: str, archived: Path, pointer: Path, companion: Path | None = None):
        self.session, self.archived, self.pointer, self.companion = session, archived, pointer, companion
        self.dream_pid: int | None = None
        self.reclaimed: list[str] = []

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"Taken({shown})"


def check_live(path: Path, now: float | None = None) -> None:
    """Raise TranscriptLive when ``path`` was written within ``config.TAKE_LIVE_WINDOW_S`` seconds
    or more than ``config.TAKE_CLOCK_SLACK_S`` seconds in the future (a clock is off: the
    message says so, since waiting would not help), TranscriptNotFound when it is gone."""
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        raise TranscriptNotFound(f"transcript {path} is already gone") from None
    age = (time.time() if now is None else now) - mtime
    if age < -config.TAKE_CLOCK_SLACK_S:
        raise TranscriptLive(
            f"transcript {path} was written {int(-age)} s in the future by this machine's clock: the clock "
            "(or the file's time) is off, so waiting will not help; pass --force to take it now"
        )
    if age < config.TAKE_LIVE_WINDOW_S:
        wait = config.TAKE_LIVE_WINDOW_S - max(age, 0)
        raise TranscriptLive(
            f"transcript {path} was written {max(int(age), 0)} s ago: the session may still be live; "
            f"wait {int(wait) + 1} s or pass --force"
        )


def refuse_inside_root(layout: Layout, path: Path) -> None:
    """Raise InputError when the transcript ``path`` lies inside the memory root.

    Taking one would re-archive sandman's own archive (``.archive/``): the
    pointer's ``archived`` (and its ``earlier``) would name a path that no
    longer exists, and a dreamt pointer would be queued again.
    """
    root = layout.root.resolve()
    if path.resolve().is_relative_to(root):
        raise InputError(f"transcript {path} is inside the memory root {layout.root}; "
                         "sandman takes only transcripts its hosts write")


def vet(layout: Layout, session_id: str, source: Source) -> Session | None:
    """Check a transcript before it is moved; return its summary (None: it cannot be read).

    Raises InputError when it is inside the memory root, or is another
    session's: neither its file name (locate.session_id_of) nor its lines
    name ``session_id`` (a hook payload naming one session and the transcript
    of another). The file name alone suffices: a forked session's file may
    begin with lines copied from its parent. An unreadable transcript is still
    taken: its bytes are kept all the same.
    """
    refuse_inside_root(layout, source.path)
    try:
        session = summarize(source.path, source.host)
    except FileNotFoundError:
        raise TranscriptNotFound(f"transcript {source.path} is already gone: another take archived it") from None
    except (OSError, SandmanError):
        return None
    named = session.session_id
    if named is not None and named != session_id and locate.session_id_of(source.path) != session_id:
        raise InputError(f"transcript {source.path} belongs to session {named}, not {session_id}")
    return session


def take_source(layout: Layout, session_id: str, source: Source, *, force: bool,
                cwd: str | None = None, hook: bool = False, reclaimed: bool = False) -> Taken:
    """Take one resolved transcript: live check, vet, plan the part, link, pointer, take record, journal line.

    Raises TranscriptLive (not ``force`` and written within the live window),
    InputError (``vet`` refused it), NothingNew (taken already, and nothing
    written since), ForeignRepository (the root is someone's own git
    repository), TranscriptNotFound (gone, or another take linked it first),
    CrossDeviceError, OSError.
    """
    if not force:
        check_live(source.path)
    refuse_foreign_root(layout)
    # A killed take of this session gets its pointer and record first, so this take plans from
    # them and reuses its archive name: taking before the drain made a second name, orphaned
    # when the drain then recovered the killed take's (BANK-FORMAT "Takes in progress").
    finish_interrupted(layout)
    session = vet(layout, session_id, source)
    try:
        part = parts.plan(layout, session_id, source.path)
    except FileNotFoundError:
        raise TranscriptNotFound(f"transcript {source.path} is already gone") from None
    intent = layout.take_intent(session_id, os.getpid())

    def record(dst: Path) -> None:
        intents.record(layout, intent, session_id, source, dst, cwd=cwd, hook=hook, force=force, part=part)

    try:
        archived, companion, linked = archive(layout, source, journal.now_utc(), record, existing=part.archived)
    except (SandmanError, OSError):
        intents.drop(intent)  # nothing of this take was archived
        raise
    data, skipped = pointer_data(layout, source, archived, companion, cwd, session, part=part)
    if not linked:
        data["moved"] = True
    earlier = earlier_parts(layout, session_id, data)
    pointer = write_pointer(layout, session_id, data)
    parts.write_record(layout, session_id, data, earlier)
    intents.drop(intent)
    layout.pending_take(session_id).unlink(missing_ok=True)  # a debt paid
    ensure_repository(layout)
    journal.write(
        layout, VERB, "reclaimed" if reclaimed else "archived", session=session_id, host=source.host,
        archived=data["archived"], companion=data.get("companion"), hook=hook, forced=force,
        skipped_lines=skipped, offset=part.offset, bytes=part.bytes, linked=linked,
    )
    return Taken(session=session_id, archived=archived, pointer=pointer, companion=companion)


def take(layout: Layout, session_id: str, *, force: bool = False, transcript: Path | None = None) -> Taken:
    """Take a session by hand: ``sandman take <session> [--force] [--transcript PATH]``.

    Without ``transcript`` the session's live transcript is found under Claude
    Code's projects folder, then Codex's sessions folder. A transcript that
    names another session, or lies inside the memory root, is refused. Raises
    InputError (bad id or path, session mismatch), TranscriptNotFound,
    UnrecognisedTranscript, TranscriptLive, CrossDeviceError, OSError.
    """
    check_session_id(session_id)
    finish_interrupted(layout)  # a take of this session killed mid-way gets its pointer now
    path = Path(os.path.abspath(transcript)) if transcript is not None else locate.find(session_id)
    source = locate.source(path)
    taken = take_source(layout, session_id, source, force=force)
    taken.reclaimed = drain(layout)
    taken.dream_pid = dream_if_due(layout)
    return taken


# --- the hook ----------------------------------------------------------------


def _payload(payload: bytes) -> dict:
    if len(payload) > config.HOOK_PAYLOAD_MAX_BYTES:
        raise InputError(f"SessionEnd payload is over {config.HOOK_PAYLOAD_MAX_BYTES:,} bytes")
    try:
        data = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError(f"SessionEnd payload is not JSON ({len(payload)} bytes)") from None
    if not isinstance(data, dict):
        raise InputError("SessionEnd payload is not a JSON object")
    return data


def hook(layout: Layout, payload: bytes) -> str | None:
    """Handle Claude Code's SessionEnd payload (``session_id``, ``transcript_path``, ``cwd``, ``reason``).

    Prints nothing (returns None); every decision is a journal line. Raises
    InputError for a bad payload, id or path (sandman.hook journals it and
    exits 0), and what ``take_source`` raises.
    """
    data = _payload(payload)
    reason = data.get("reason")
    session_id = data.get("session_id")
    event = data.get("hook_event_name")
    if event is not None and event != "SessionEnd":
        # Registered on the wrong event, take would pull a live session's transcript away.
        journal.write(layout, VERB, "declined", reason="not-session-end", event=str(event), hook=True)
        return None
    if reason == "resume":
        journal.write(layout, VERB, "declined", reason="resume", session=session_id if isinstance(session_id, str) else None)
        return None
    check_session_id(session_id)
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    # A transcript_path that is not a string is read as absent: the session's id finds the file.
    raw_path = data.get("transcript_path") if isinstance(data.get("transcript_path"), str) else None
    try:
        source = locate.source(Path(raw_path) if raw_path else locate.find(session_id))
    except TranscriptNotFound:
        journal.write(layout, VERB, "declined", reason="no-transcript", session=session_id, hook=True)
        drain(layout)
        return None
    refuse_inside_root(layout, source.path)  # before a live job could file it as a pending take
    job = None if reason == "clear" else locate.live_job(session_id)
    if job is not None:
        entry = {"declined": journal.iso(journal.now_utc()), "job": job, "session": session_id,
                 "transcript": str(source.path)}
        write_atomic(layout.pending_take(session_id), json.dumps(entry, indent=2) + "\n")
        journal.write(layout, VERB, "declined", reason="live-job", session=session_id, job=job, hook=True)
        drain(layout)
        return None
    try:
        take_source(layout, session_id, source, force=True, cwd=cwd, hook=True)
    except NothingNew:  # taken already, and resumed without a word since (or a second SessionEnd)
        journal.write(layout, VERB, "declined", reason="nothing-new", session=session_id, hook=True)
        drain(layout)
        return None
    except TranscriptNotFound:  # a concurrent take archived it first
        journal.write(layout, VERB, "declined", reason="already-gone", session=session_id, hook=True)
        drain(layout)
        return None
    drain(layout)
    dream_if_due(layout)
    return None


# --- the pending-take ledger (BANK-FORMAT "Pending takes") --------------------


def drain(layout: Layout) -> list[str]:
    """Settle ``pending-takes/``: keep, take unforced, or drop each entry (design station ①).

    An entry whose session a job still names is kept; one whose transcript is
    gone is dropped; otherwise the session is taken, unforced (the live window
    guards a session resumed by hand meanwhile) and the entry removed; anything
    else (a live transcript, an unreadable entry, an error) keeps the entry.
    Takes a kill interrupted are finished first (``finish_interrupted``).
    Returns the sessions reclaimed from the ledger. Never raises: a drain
    never fails the verb it rode in on; a reclaimed take never spawns a dream.
    """
    finish_interrupted(layout)
    reclaimed = []
    try:
        entries = sorted(p for p in layout.pending_takes.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    except OSError:
        return reclaimed
    for entry in entries:
        try:
            if _settle(layout, entry):
                reclaimed.append(entry.stem)
        except Exception as error:  # noqa: BLE001 - a drain never fails its verb
            journal.write(layout, VERB, "kept", session=entry.stem, reason="error",
                          error=f"{type(error).__name__}: {error}")
    return reclaimed


def _settle(layout: Layout, entry: Path) -> bool:
    session_id = entry.stem
    try:
        data = read_pending_take(entry)
    except (OSError, ValueError):
        journal.write(layout, VERB, "kept", session=session_id, reason="unreadable-entry")
        return False
    session_id = data["session"]
    job = locate.live_job(session_id)
    if job is not None:
        journal.write(layout, VERB, "kept", session=session_id, reason="job-live", job=job)
        return False
    recorded = data.get("transcript")
    path = Path(recorded) if isinstance(recorded, str) and Path(recorded).is_absolute() else None
    if path is None or not path.exists():
        try:
            path = locate.find(session_id)
        except TranscriptNotFound:
            entry.unlink(missing_ok=True)
            journal.write(layout, VERB, "dropped", session=session_id, reason="transcript-gone")
            return False
    try:
        take_source(layout, session_id, locate.source(path), force=False, reclaimed=True)
    except TranscriptLive:
        journal.write(layout, VERB, "kept", session=session_id, reason="live")
        return False
    except TranscriptNotFound:
        entry.unlink(missing_ok=True)
        journal.write(layout, VERB, "dropped", session=session_id, reason="transcript-gone")
        return False
    except NothingNew:
        entry.unlink(missing_ok=True)
        journal.write(layout, VERB, "dropped", session=session_id, reason="nothing-new")
        return False
    except InputError as error:  # vet refused it: it will never be taken
        entry.unlink(missing_ok=True)
        journal.write(layout, VERB, "dropped", session=session_id, reason="refused", error=str(error))
        return False
    return True


# --- the dream trigger ------------------------------------------------------


def dream_command() -> list[str]:
    """Return the argv of the detached dream: this interpreter running ``sandman dream``."""
    return sandman_argv("dream")


def spawn_dream(layout: Layout, lock: RunLock | None = None) -> int:
    """Start ``sandman dream`` fully detached and return its pid; never wait for it.

    stdout and stderr are appended to ``.trace/dream-<date>.log``
    (store/detach.py). ``lock``, the dream lock held by this process, is handed
    to the dream (``$SANDMAN_DREAM_LOCK_FD``), which holds it until it exits.
    Raises OSError when it cannot be started.
    """
    log = layout.trace_file("dream", journal.now_utc().strftime("%Y-%m-%d"))
    if lock is None:
        return spawn_detached(dream_command(), log)
    env = dict(os.environ)
    env[config.DREAM_LOCK_FD_ENV] = str(lock.hand_over())
    return spawn_detached(dream_command(), log, env)


def dream_if_due(layout: Layout) -> int | None:
    """Spawn a detached dream when dream's queue is due and no dream runs; return its pid.

    Due is asked of the dream queue (sandman/dreamqueue.py ``due_reason``: enough pointers
    queued, or one waiting past ``config.dream_wait_s()``), never counted here (design
    station ①). The dream lock is taken here, before the spawn, and handed to
    the dream: a take that finds it held (a dream runs, or another take is
    starting one) spawns nothing and journals ``dream-running``, so a burst of
    session endings starts one dream, not one per take. Never raises: a failed
    spawn is a journal line.
    """
    from sandman import dreamqueue
    from sandman.errors import ConfigError

    try:
        reason, depth = dreamqueue.due_reason(layout)
    except ConfigError as error:  # the dream would refuse it too; the hook must not fail for it
        journal.write(layout, VERB, "dream-failed", reason="config", error=str(error))
        return None
    if reason is None:
        return None
    lock = RunLock(layout.dream_lock)
    try:
        acquired = lock.acquire()
    except OSError as error:
        journal.write(layout, VERB, "dream-failed", queued=depth, error=str(error))
        return None
    if not acquired:
        journal.write(layout, VERB, "dream-running", queued=depth)
        return None
    try:
        pid = spawn_dream(layout, lock)
    except OSError as error:
        lock.release()
        journal.write(layout, VERB, "dream-failed", queued=depth, error=str(error))
        return None
    lock.let_go(pid)
    journal.write(layout, VERB, "dream-spawned", queued=depth, pid=pid, due=reason)
    return pid
