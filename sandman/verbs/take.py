"""``sandman take``: a session's afterlife begins (design stations ① take, ② archive, ③ pointer).

A take moves the session's live transcript into the archive, byte-identical,
by a same-volume rename (a cross-device destination is an error, never a copy),
drops a pointer into ``memories/.recent/``, drains the pending-take ledger,
and, when dream's queue holds ``config.DREAM_DUE_POINTERS`` pointers and no
dream runs, spawns ``sandman dream`` fully detached. Un-take is ``mv`` back.

``take --hook`` is Claude Code's SessionEnd hook (through sandman.hook): it
declines ``reason: "resume"`` quietly (a resume is a beginning), declines a
session a live job would resume into ``pending-takes/<sid>.json``, and takes
every other ending at once (SessionEnd is the proof the session is over, so
the live window does not apply). ``$SANDMAN_NO_TAKE`` and
``CLAUDE_MEMORY_PIPELINE=1`` are handled in sandman.hook, before stdin is read.

A take writes an intent record (``.taking/<sid>.<pid>.json``) before the
move and deletes it once the pointer is written, so a take killed in between
is finished by the next drain (``finish_interrupted``): the session never
drops out of the pipeline with its transcript archived and no pointer.

Module level is standard library only: take --hook imports it, and must do the
rename, the pointer and the spawn without importing anything heavy.
"""

from __future__ import annotations

import json
import os
import time
from collections import namedtuple
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath

from sandman import config, journal
from sandman.errors import InputError, SandmanError, TranscriptLive, TranscriptNotFound
from sandman.layout import GITIGNORE_SIGNATURE, Layout
from sandman.pointers import check_session_id, parse_time, read_pending_take, read_pointer, write_pointer
from sandman.store.detach import sandman_argv, spawn_detached
from sandman.store.runlock import RunLock
from sandman.store.atomic import TEMP_NAME, is_real_dir, move_no_replace, write_atomic
from sandman.transcripts import HOSTS, Session, locate, summarize
from sandman.transcripts.locate import Source

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


def _rel(layout: Layout, path: Path) -> str:
    return path.relative_to(layout.root).as_posix()


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


def _move(layout: Layout, src: Path, host: str, relpath: str, taken: datetime,
          record: Callable[[Path], None] | None) -> Path:
    """Move ``src`` to its archive path and return it; ``record(dst)`` runs before each attempt.

    A clash with another file of the same name and second moves the stamp on a second.
    """
    for delta in range(_SAME_SECOND_RETRIES):
        dst = layout.archive_path(host, taken + timedelta(seconds=delta), relpath)
        if record is not None:
            record(dst)
        try:
            move_no_replace(src, dst)
            return dst
        except FileExistsError:
            # A concurrent take of the same session linked the same name first.
            try:
                gone = not src.exists() or os.path.samefile(src, dst)
            except FileNotFoundError:  # ... and unlinked src between the two looks
                gone = True
            if gone:
                raise TranscriptNotFound(f"transcript {src} is already gone: another take archived it") from None
        except FileNotFoundError:
            raise TranscriptNotFound(f"transcript {src} is already gone: another take archived it") from None
    raise FileExistsError(f"archive names for {src} are all taken around {taken:%H%M%S}")


def archive(layout: Layout, source: Source, taken: datetime,
            record: Callable[[Path], None] | None = None) -> tuple[Path, Path | None]:
    """Move the transcript (then its companion folder) into ``.archive/`` (BANK-FORMAT "The archive").

    ``record(dst)`` is called with each destination just before the move
    tries it (take's intent record). Returns the archived transcript and
    companion folder. Raises TranscriptNotFound (another take moved it
    first), CrossDeviceError (the archive is on another filesystem: nothing
    is copied), OSError.
    """
    dst = _move(layout, source.path, source.host, source.relpath, taken, record)
    companion = None
    if source.companion is not None:
        companion = _move_companion(layout, source.companion, dst)
    return dst, companion


def _move_companion(layout: Layout, folder: Path, archived: Path) -> Path | None:
    """Move a companion folder beside the transcript's archived name, under the same time prefix
    (``<HHMMSS>-<project>/<sid>.jsonl`` gets ``<HHMMSS>-<project>/<sid>/``); return it, None when it stays."""
    target = archived.with_suffix("")
    try:
        move_no_replace(folder, target)
        return target
    except (OSError, SandmanError) as error:
        journal.write(layout, VERB, "companion-left", folder=str(folder), error=str(error))
        return None


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


def vet_shown(layout: Layout, source: Source, title: str | None, highlights: list[str]) -> tuple[str | None, list[str]]:
    """Return the title with its secrets masked and the highlights that hold none (the secrets ban).

    A pointer's title and highlights reach recall, the minds and the site: a
    ``sandman remember`` whose refusal was hidden (``2>/dev/null || true``)
    still looks committed in the transcript. The full check loads a rule set
    (hundreds of milliseconds), so it runs only on text the stdlib pre-check
    cannot clear (banks.secret_rules.suspected); each highlight dropped is a
    journal line naming its kinds, never its text.
    """
    from sandman.banks.secret_rules import suspected

    texts = [t for t in [title or "", *highlights] if t]
    if not any(suspected(text) for text in texts):
        return title, highlights
    from sandman.banks.secrets import find_secrets, mask_secrets

    if title and find_secrets(title):
        title = mask_secrets(title)
    kept = []
    for highlight in highlights:
        kinds = find_secrets(highlight)
        if kinds:
            journal.write(layout, VERB, "highlight-refused", origin=str(source.path), kinds=", ".join(kinds))
        else:
            kept.append(highlight)
    return title, kept


def pointer_data(layout: Layout, source: Source, archived: Path, companion: Path | None,
                 cwd: str | None, session: Session | None) -> tuple[dict, int]:
    """Return the pointer's fields for a transcript just archived (BANK-FORMAT "Pointers"),
    and how many of its lines the reader skipped (-1: the file could not be read).

    ``session`` is the transcript's summary, read before the move (``vet``). A
    transcript that cannot be read still gets a pointer: cwd from the
    payload, the end time from the file's modification time.
    """
    if session is not None:
        facts = {"cwd": session.cwd, "started": session.started, "ended": session.ended,
                 "title": session.title, "highlights": session.highlights}
        facts["title"], facts["highlights"] = vet_shown(layout, source, session.title, session.highlights)
        skipped = sum(session.skipped.values())
    else:
        facts, skipped = {"cwd": None, "started": None, "ended": None, "title": None, "highlights": []}, -1
    if facts["ended"] is None:
        facts["ended"] = journal.iso(datetime.fromtimestamp(archived.stat().st_mtime, timezone.utc))
    data = {
        "host": source.host,
        "archived": _rel(layout, archived),
        "cwd": facts["cwd"] or cwd,
        "started": facts["started"],
        "ended": facts["ended"],
        "title": facts["title"],
        "highlights": facts["highlights"],
        "origin": str(source.path),
    }
    if isinstance(data["cwd"], str):
        data["cwd"], masked = vet_cwd(layout, source, data["cwd"])
        if masked:
            data["cwd_masked"] = True
    if companion is not None:
        data["companion"] = _rel(layout, companion)
    return data, skipped


def vet_cwd(layout: Layout, source: Source, cwd: str) -> tuple[str, bool]:
    """Return the pointer's cwd with its secrets masked as ``[secret]``, and whether any was (the secrets ban).

    A cwd reaches recall, the site and the bank a dream files into: a
    directory named after a key must not carry it there. The transcript
    itself is archived unchanged (never lose data); a pointer whose cwd was
    masked is marked ``cwd_masked`` and routed by dream without a mind. The full check runs only
    when the stdlib pre-check for paths (secret_rules.suspected_path) cannot
    clear the cwd; the journal line names the kinds, never the value.
    """
    from sandman.banks.secret_rules import suspected_path

    if not suspected_path(cwd):
        return cwd, False
    from sandman.banks.secrets import find_secrets, mask_secrets

    kinds = find_secrets(cwd)
    if not kinds:
        return cwd, False
    journal.write(layout, VERB, "cwd-masked", origin=str(source.path), kinds=", ".join(kinds))
    return mask_secrets(cwd), True


def _earlier(layout: Layout, session_id: str, data: dict) -> None:
    """Keep the archive paths of an earlier take of the same session in ``earlier``.

    A session id taken twice (its transcript written again after a take) has
    two archived parts; the newer pointer must not lose the older one.
    """
    old = read_pointer(layout.pointer(session_id))
    if old is None:
        return
    earlier = [p for p in old.data.get("earlier", []) if isinstance(p, str)]
    for key in ("archived", "companion"):
        value = old.data.get(key)
        if isinstance(value, str) and value not in (data["archived"], data.get("companion")):
            earlier.append(value)
    if earlier:
        data["earlier"] = earlier


def _ensure_repository(layout: Layout) -> None:
    """Make the root a git repository on the first take (every verb sets the tree up on first use).

    After the rename and the pointer, so a hook pays for pygit2 only once, on
    the very first take. Best effort: a failure is a journal line, never a lost take.
    """
    if (layout.root / ".git").exists():
        return
    from sandman.verbs.init import init

    try:
        init(layout)
    except (SandmanError, OSError) as error:
        journal.write(layout, VERB, "init-failed", error=str(error))


def _refuse_foreign_root(layout: Layout) -> None:
    """Raise ForeignRepository when the root is a git repository sandman did not create: a
    transcript must not be filed into someone's project (store.repo.ensure_root's rule).

    The hook reads only the .gitignore; pygit2 is imported just when that does not settle it.
    """
    try:
        rules = set(layout.gitignore.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        rules = set()
    if rules >= set(GITIGNORE_SIGNATURE) or not (layout.root / ".git").exists():
        return
    from sandman.store.repo import open_repo, refuse_foreign

    refuse_foreign(layout, open_repo(layout))


def take_source(layout: Layout, session_id: str, source: Source, *, force: bool,
                cwd: str | None = None, hook: bool = False, reclaimed: bool = False) -> Taken:
    """Take one resolved transcript: live check, vet, move, pointer, journal line.

    Raises TranscriptLive (not ``force`` and written within the live window),
    InputError (``vet`` refused it), ForeignRepository (the root is someone's
    own git repository), TranscriptNotFound (another take moved it first),
    CrossDeviceError, OSError.
    """
    if not force:
        check_live(source.path)
    _refuse_foreign_root(layout)
    session = vet(layout, session_id, source)
    intent = layout.take_intent(session_id, os.getpid())

    def record(dst: Path) -> None:
        _record_intent(layout, intent, session_id, source, dst, cwd=cwd, hook=hook, force=force)

    try:
        archived, companion = archive(layout, source, journal.now_utc(), record)
    except (SandmanError, OSError):
        _drop_intent(intent)  # nothing of this take moved
        raise
    data, skipped = pointer_data(layout, source, archived, companion, cwd, session)
    _earlier(layout, session_id, data)
    pointer = write_pointer(layout, session_id, data)
    _drop_intent(intent)
    layout.pending_take(session_id).unlink(missing_ok=True)  # a debt paid
    _ensure_repository(layout)
    journal.write(
        layout, VERB, "reclaimed" if reclaimed else "archived", session=session_id, host=source.host,
        archived=data["archived"], companion=data.get("companion"), hook=hook, forced=force,
        skipped_lines=skipped,
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
    except InputError as error:  # vet refused it: it will never be taken
        entry.unlink(missing_ok=True)
        journal.write(layout, VERB, "dropped", session=session_id, reason="refused", error=str(error))
        return False
    return True


# --- takes in progress (BANK-FORMAT "Takes in progress") ---------------------


def _record_intent(layout: Layout, path: Path, session_id: str, source: Source, dst: Path, *,
                   cwd: str | None, hook: bool, force: bool) -> None:
    """Write the intent record of a take about to move ``source`` to ``dst``."""
    entry = {"session": session_id, "source": str(source.path), "host": source.host, "relpath": source.relpath,
             "companion": None if source.companion is None else str(source.companion),
             "archived": _rel(layout, dst), "cwd": cwd, "hook": hook, "forced": force,
             "pid": os.getpid(), "written": journal.iso(journal.now_utc())}
    # ASCII JSON: a path whose name is not UTF-8 holds surrogate escapes, written as \udcXX.
    write_atomic(path, json.dumps(entry, indent=2) + "\n")


def _drop_intent(path: Path) -> None:
    path.unlink(missing_ok=True)


# An intent record read back from ``.taking/<sid>.<pid>.json``.
_Intent = namedtuple("_Intent", "session archived source cwd hook forced pid written")


def _read_intent(path: Path) -> _Intent:
    """Read an intent record; raise ValueError (or InputError, OSError) when it is not one."""
    data = json.loads(path.read_bytes())
    if not isinstance(data, dict):
        raise ValueError("not an object")
    session = check_session_id(data.get("session"))
    archived, source, relpath = data.get("archived"), data.get("source"), data.get("relpath")
    if not isinstance(archived, str) or PurePosixPath(archived).parts[:1] != (".archive",) \
            or ".." in PurePosixPath(archived).parts:
        raise ValueError("archived is not a path inside .archive/")
    if not isinstance(source, str) or not source.startswith("/") or not isinstance(relpath, str):
        raise ValueError("source or relpath missing")
    if data.get("host") not in HOSTS:
        raise ValueError("unknown host")
    companion, cwd, pid = data.get("companion"), data.get("cwd"), data.get("pid")
    return _Intent(
        session=session, archived=archived,
        source=Source(host=data["host"], path=Path(source), relpath=relpath,
                      companion=Path(companion) if isinstance(companion, str) and companion.startswith("/") else None),
        cwd=cwd if isinstance(cwd, str) else None, hook=data.get("hook") is True, forced=data.get("forced") is True,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        written=parse_time(data.get("written")),
    )


def _in_flight(intent: _Intent) -> bool:
    """True while the process that wrote the intent still lives and the intent is young:
    its take is running, not interrupted (a recycled pid cannot hold an intent for long)."""
    if intent.pid is None or intent.pid == os.getpid() or intent.written is None:
        return False
    if (journal.now_utc() - intent.written).total_seconds() >= config.TAKE_INTENT_STALE_S:
        return False
    try:
        os.kill(intent.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def finish_interrupted(layout: Layout) -> list[str]:
    """Finish the takes a kill interrupted, from their intent records in ``.taking/``; return the
    sessions whose pointer it wrote (BANK-FORMAT "Takes in progress").

    For each record whose take is not running: the pointer already names the
    archived transcript, the record goes; the transcript is archived and no
    pointer names it, the take is finished as take does it (the live name
    of a half-done link-then-unlink removed, the companion folder moved, the
    pointer built from the archived bytes, journal ``take recovered``);
    nothing was moved, or the transcript is gone, the record goes. Never
    raises: an unreadable record is dropped, any error keeps it; each is a
    journal line. Temp files a killed take left beside its intent record or
    pointer go too.
    """
    _sweep_temp_files(layout)
    try:
        records = sorted(p for p in layout.taking.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    except OSError:
        return []
    recovered = []
    for path in records:
        try:
            session = _finish(layout, path)
            if session is not None:
                recovered.append(session)
        except Exception as error:  # noqa: BLE001 - a drain never fails its verb
            journal.write(layout, VERB, "intent-kept", intent=path.name, reason="error",
                          error=f"{type(error).__name__}: {error}")
    return recovered


def _sweep_temp_files(layout: Layout) -> None:
    """Delete write_atomic's temp files in ``.taking/`` and ``memories/.recent/`` older than
    ``config.TAKE_INTENT_STALE_S`` seconds: takes write there without a lock, so a younger
    one may be a running take's."""
    cutoff = time.time() - config.TAKE_INTENT_STALE_S
    for folder in (layout.taking, layout.recent):
        try:
            orphans = [entry for entry in os.scandir(folder) if TEMP_NAME.fullmatch(entry.name)]
        except OSError:
            continue
        for orphan in orphans:
            try:
                if orphan.is_file(follow_symlinks=False) and orphan.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(orphan.path)
            except OSError:
                pass


def _finish(layout: Layout, path: Path) -> str | None:
    """Settle one intent record; return its session when the take was finished here."""
    try:
        intent = _read_intent(path)
    except (OSError, ValueError, RecursionError, InputError):
        _drop_intent(path)
        journal.write(layout, VERB, "intent-dropped", intent=path.name, reason="unreadable")
        return None
    if _in_flight(intent):
        journal.write(layout, VERB, "intent-kept", session=intent.session, reason="in-flight", pid=intent.pid)
        return None
    source, archived = intent.source, layout.root / intent.archived
    pointer = read_pointer(layout.pointer(intent.session))
    if pointer is not None and pointer.data.get("archived") == intent.archived:
        reason = "pointer-written"  # killed after the pointer, before the record went
    elif not os.path.lexists(archived):
        reason = "not-moved" if os.path.lexists(source.path) else "gone"
    else:
        _recover(layout, intent, archived)
        _drop_intent(path)
        return intent.session
    _drop_intent(path)
    journal.write(layout, VERB, "intent-dropped", session=intent.session, reason=reason)
    return None


def _recover(layout: Layout, intent: _Intent, archived: Path) -> None:
    """Finish a take whose transcript reached the archive: what take_source does after the move."""
    source = intent.source
    try:
        if os.path.samefile(source.path, archived):
            os.unlink(source.path)  # killed between move_no_replace's link and its unlink
    except FileNotFoundError:
        pass
    companion = None
    if source.companion is not None:
        target = archived.with_suffix("")
        if is_real_dir(source.companion) and not os.path.lexists(target):
            _move_companion(layout, source.companion, archived)
        companion = target if is_real_dir(target) else None
    try:
        session = summarize(archived, source.host)
    except (OSError, SandmanError):
        session = None
    data, skipped = pointer_data(layout, source, archived, companion, intent.cwd, session)
    _earlier(layout, intent.session, data)
    write_pointer(layout, intent.session, data)
    layout.pending_take(intent.session).unlink(missing_ok=True)
    _ensure_repository(layout)
    journal.write(layout, VERB, "recovered", session=intent.session, host=source.host, archived=data["archived"],
                  companion=data.get("companion"), hook=intent.hook, forced=intent.forced, skipped_lines=skipped)


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

    The queue is asked of the dream queue (sandman/dreamqueue.py), never counted here (design
    station ①). The dream lock is taken here, before the spawn, and handed to
    the dream: a take that finds it held (a dream runs, or another take is
    starting one) spawns nothing and journals ``dream-running``, so a burst of
    session endings starts one dream, not one per take. Never raises: a failed
    spawn is a journal line.
    """
    from sandman import dreamqueue

    depth = dreamqueue.queue_depth(layout)
    if depth < config.DREAM_DUE_POINTERS:
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
    journal.write(layout, VERB, "dream-spawned", queued=depth, pid=pid)
    return pid
