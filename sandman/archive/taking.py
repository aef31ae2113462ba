"""One take of a resolved transcript: the live check, the vetting, the link, the pointer, the record.

What ``sandman take``, ``take --hook``, ``take --all``, ``take --missed`` and the
pending-take drain share (design stations ① take, ② archive, ③ pointer). A take
gives the session's live transcript a second name in the archive (a hard link on
the same volume: one file, never a copy; a cross-device destination is an
error; sandman/archive/link.py) and leaves Claude Code's name in place. The
pointer it drops into ``memories/.recent/`` names the part to dream
(sandman/archive/parts.py, pointer.py). An intent record
(``.taking/<sid>.<pid>.json``, sandman/archive/intents.py) is written before the
link and deleted once the pointer is written, so a take killed in between is
finished by the next drain. The session's lock (``.taking/<sid>.lock``, held
from the plan to the take record) makes concurrent takes of one session (four
SessionEnd hooks and a take by hand) run one after the other: the later ones
find nothing new, and the transcript keeps one archive name.

Standard library only: take --hook imports it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandman import config, journal
from sandman.archive import intents, parts
from sandman.archive.intents import finish_interrupted
from sandman.archive.link import archive
from sandman.archive.pointer import earlier_parts, pointer_data
from sandman.archive.root import ensure_repository, refuse_foreign_root
from sandman.errors import InputError, SandmanError, TranscriptLive, TranscriptNotFound
from sandman.layout import Layout
from sandman.pointers import write_pointer
from sandman.store.runlock import held
from sandman.transcripts import Session, locate, summarize
from sandman.transcripts.locate import Source

VERB = "take"


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

    The plan, the link, the pointer and the take record run under the
    session's lock (``layout.take_lock``), waiting while another take of the
    session holds it (docs/BANK-FORMAT.md, "Takes in progress").

    Raises TranscriptLive (not ``force`` and written within the live window),
    InputError (``vet`` refused it), NothingNew (taken already, and nothing
    written since), ForeignRepository (the root is someone's own git
    repository), TranscriptNotFound (gone, or another take linked it first),
    CrossDeviceError, OSError.
    """
    if not force:
        check_live(source.path)
    refuse_foreign_root(layout)
    finish_interrupted(layout)  # other sessions' killed takes; this session's are finished under its lock
    session = vet(layout, session_id, source)
    # One take of a session at a time, from its plan to its take record: a second take plans from
    # the first's record (nothing new, or only what was appended), where both once planned from
    # none and linked two archive names a second apart (BANK-FORMAT "Takes in progress").
    with held(layout.take_lock(session_id)):
        # A killed take of this session gets its pointer and record first, so this take plans from
        # them and reuses its archive name: taking before the drain made a second name, orphaned
        # when the drain then recovered the killed take's. Under the lock none of this session's
        # takes is running, so one killed while this take waited is finished here too.
        intents.finish_session(layout, session_id)
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
