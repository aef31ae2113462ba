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
detached. The hook then composes again the kept SessionStart replies the new
pointer made stale (sandman/recall/startreply.py ``refresh``), so the next
start is served.

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

The substance lives one floor down, in ``sandman.archive``: ``taking`` (one
take of a resolved transcript: the live check, the vetting, the steps in their
order), ``parts`` (what a take archives of a session, the take record),
``link`` (the archive names), ``pointer`` (the pointer's fields), ``intents``
(takes in progress and their recovery), ``pending`` (the pending-take ledger
and its drain), ``root`` (the repository the first take makes). This module is
the verb: a take by hand, the hook's declines and the dream trigger.

Module level is standard library only: take --hook imports it, and must do the
link, the pointer and the spawn without importing anything heavy.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sandman import config, journal
from sandman.archive import pending
from sandman.archive.intents import finish_interrupted
from sandman.archive.link import archive
from sandman.archive.pending import drain
from sandman.archive.taking import Taken, check_live, refuse_inside_root, take_source, vet
from sandman.errors import InputError, NothingNew, TranscriptNotFound
from sandman.layout import Layout
from sandman.pointers import check_session_id
from sandman.store.detach import sandman_argv, spawn_detached
from sandman.store.runlock import RunLock
from sandman.transcripts import locate

__all__ = ["Taken", "archive", "check_live", "drain", "dream_if_due", "finish_interrupted", "hook", "take",
           "take_source", "vet"]

VERB = "take"


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
        pending.file(layout, session_id, job, source.path)
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
    # The pointer changed what every start recalls: its kept replies are composed again now, off
    # the next start's path (sandman/recall/startreply.py).
    from sandman.recall.startreply import refresh

    refresh(layout)
    return None




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
