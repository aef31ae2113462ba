"""Takes in progress: ``.taking/<sid>.<pid>.json`` (docs/BANK-FORMAT.md, "Takes in progress").

A take writes its intent record before it links the transcript into the
archive and drops it once the pointer and the take record are written.
``finish_interrupted`` (every drain, and a take by hand, run it first)
finishes a take a kill interrupted: the session never drops out of the
pipeline with its transcript archived and no pointer. Standard library only:
take --hook imports it.
"""

from __future__ import annotations

import glob
import json
import os
import time
from collections import namedtuple
from pathlib import Path, PurePosixPath

from sandman import config, journal
from sandman.archive import parts
from sandman.archive.link import link_companion
from sandman.archive.pointer import earlier_parts, pointer_data
from sandman.archive.root import ensure_repository
from sandman.errors import InputError, SandmanError
from sandman.layout import Layout
from sandman.pointers import check_session_id, parse_time, read_pointer, write_pointer
from sandman.store.atomic import TEMP_NAME, is_real_dir, link_no_replace, write_atomic
from sandman.store.runlock import held
from sandman.transcripts import HOSTS, summarize
from sandman.transcripts.locate import Source

VERB = "take"


def _rel(layout: Layout, path: Path) -> str:
    return path.relative_to(layout.root).as_posix()


def record(layout: Layout, path: Path, session_id: str, source: Source, dst: Path, *,
                   cwd: str | None, hook: bool, force: bool, part: parts.Part) -> None:
    """Write the intent record of a take about to link ``source`` as ``dst`` (the part it archives)."""
    entry = {"session": session_id, "source": str(source.path), "host": source.host, "relpath": source.relpath,
             "companion": None if source.companion is None else str(source.companion),
             "archived": _rel(layout, dst), "offset": part.offset, "bytes": part.bytes, "sha256": part.sha256,
             "cwd": cwd, "hook": hook, "forced": force,
             "pid": os.getpid(), "written": journal.iso(journal.now_utc())}
    # ASCII JSON: a path whose name is not UTF-8 holds surrogate escapes, written as \udcXX.
    write_atomic(path, json.dumps(entry, indent=2) + "\n")


def drop(path: Path) -> None:
    path.unlink(missing_ok=True)


# An intent record read back from ``.taking/<sid>.<pid>.json``.
Intent = namedtuple("Intent", "session archived source cwd hook forced pid written part")


def read(path: Path) -> Intent:
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
    return Intent(
        session=session, archived=archived,
        source=Source(host=data["host"], path=Path(source), relpath=relpath,
                      companion=Path(companion) if isinstance(companion, str) and companion.startswith("/") else None),
        cwd=cwd if isinstance(cwd, str) else None, hook=data.get("hook") is True, forced=data.get("forced") is True,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        written=parse_time(data.get("written")),
        part=intent_part(data),
    )


def intent_part(data: dict) -> parts.Part | None:
    """The part an intent record names; None for a record without one (written before takes linked)."""
    offset, size, digest = data.get("offset"), data.get("bytes"), data.get("sha256")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (offset, size)) \
            or offset > size or not isinstance(digest, str) or len(digest) != 64:
        return None
    return parts.Part(offset, size, digest, None)


def in_flight(intent: Intent) -> bool:
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
    pointer go too. Each record is settled under its session's lock, waiting
    while a take of that session holds it; the caller must hold no take lock.
    """
    sweep_temp_files(layout)
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


def sweep_temp_files(layout: Layout) -> None:
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


def finish_session(layout: Layout, session_id: str) -> list[str]:
    """Finish the killed takes of ``session_id`` alone, by a caller that holds its lock
    (``layout.take_lock``: take_source, before it plans); return ``[session_id]`` when a
    pointer was written, else []. Never raises, like ``finish_interrupted``."""
    try:
        records = sorted(layout.taking.glob(f"{glob.escape(session_id)}.*.json"))
    except OSError:
        return []
    recovered = []
    for path in records:
        try:
            if _finish(layout, path, held_for=session_id) is not None:
                recovered.append(session_id)
        except Exception as error:  # noqa: BLE001 - a drain never fails its verb
            journal.write(layout, VERB, "intent-kept", intent=path.name, reason="error",
                          error=f"{type(error).__name__}: {error}")
    return recovered


def _finish(layout: Layout, path: Path, *, held_for: str | None = None) -> str | None:
    """Settle one intent record; return its session when the take was finished here.

    A record whose take is not running is settled under its session's lock
    (``layout.take_lock``; ``held_for``: the session whose lock the caller holds), so no take of the
    session plans meanwhile from the pointer and record not yet written."""
    try:
        intent = read(path)
    except (OSError, ValueError, RecursionError, InputError):
        drop(path)
        journal.write(layout, VERB, "intent-dropped", intent=path.name, reason="unreadable")
        return None
    if in_flight(intent):
        journal.write(layout, VERB, "intent-kept", session=intent.session, reason="in-flight", pid=intent.pid)
        return None
    if intent.session == held_for:
        return _settle(layout, path, intent)
    with held(layout.take_lock(intent.session)):
        if not os.path.lexists(path):
            return None  # another drain settled it while this one waited
        return _settle(layout, path, intent)


def _settle(layout: Layout, path: Path, intent: Intent) -> str | None:
    """Settle the record at ``path`` of a take no longer running, its session's lock held."""
    source, archived = intent.source, layout.root / intent.archived
    pointer = read_pointer(layout.pointer(intent.session))
    if pointer is not None and pointer.data.get("archived") == intent.archived \
            and (intent.part is None or pointer.data.get("bytes") == intent.part.bytes):
        reason = "pointer-written"  # killed after the pointer, before the record went
        settle_record(layout, intent.session, pointer.data)
    elif not os.path.lexists(archived):
        reason = "not-moved" if os.path.lexists(source.path) else "gone"
    else:
        elsewhere = _held_elsewhere(layout, intent, archived, pointer)
        if elsewhere is None:
            recover(layout, intent, archived)
            drop(path)
            return intent.session
        name, covered = elsewhere
        removed = _remove_orphan(layout, intent, archived, layout.root / name, pointer)
        if intent.part is not None and covered < intent.part.bytes:
            recover(layout, intent, layout.root / name)  # the name the later take made, reused
            drop(path)
            return intent.session
        drop(path)
        journal.write(layout, VERB, "intent-dropped", session=intent.session, reason="superseded",
                      archived=name, removed=removed)
        return None
    drop(path)
    journal.write(layout, VERB, "intent-dropped", session=intent.session, reason=reason)
    return None


def _named(layout: Layout, session_id: str, pointer) -> list[str]:
    """Every archive name the session's pointer and take record give (``archived``, ``companion``, ``earlier``)."""
    names: list[object] = []
    if pointer is not None:
        listed = pointer.data.get("earlier")
        names += [pointer.data.get("archived"), pointer.data.get("companion"),
                  *(listed if isinstance(listed, list) else [])]
    record = parts.read_record(layout, session_id)
    if record is not None:
        names += [record.archived, record.companion, *record.earlier]
    return [name for name in names if isinstance(name, str)]


def _held_elsewhere(layout: Layout, intent: Intent, archived: Path, pointer) -> tuple[str, int] | None:
    """``(name, bytes)`` when the session's pointer, else its take record, names the very file
    the intent archived (one inode) under another name, or under the same name with as many
    bytes or more: a later take got there first, and recovering the intent would point back
    at the killed take's name and part. None otherwise."""
    record = parts.read_record(layout, intent.session)
    named = []
    if pointer is not None and isinstance(pointer.data.get("archived"), str) \
            and isinstance(pointer.data.get("bytes"), int):
        named.append((pointer.data["archived"], pointer.data["bytes"]))
    if record is not None:
        named.append((record.archived, record.bytes))
    for name, covered in named:
        if name == intent.archived and (intent.part is None or covered < intent.part.bytes):
            continue  # the same name, behind the intent: recover as usual
        try:
            if os.path.samefile(layout.root / name, archived):
                return name, covered
        except OSError:
            continue
    return None


def _remove_orphan(layout: Layout, intent: Intent, archived: Path, kept: Path, pointer) -> str | None:
    """Remove the archive name a killed take made (``archived``) when another name (``kept``) of the
    same file is the session's, and neither its pointer nor its take record names ``archived``;
    its companion folder's files go too where ``kept``'s companion folder holds the same files.
    Return the name removed (relative to the root), None when it stays."""
    if archived == kept or intent.archived in _named(layout, intent.session, pointer):
        return None
    try:
        if not os.path.samefile(archived, kept):
            return None
    except OSError:
        return None
    companion, kept_companion = archived.with_suffix(""), kept.with_suffix("")
    if is_real_dir(companion) and _rel(layout, companion) not in _named(layout, intent.session, pointer):
        for base, dirs, files in os.walk(companion, topdown=False):
            here = Path(base)
            for name in files:
                other = kept_companion / (here / name).relative_to(companion)
                try:
                    if not os.path.lexists(other):
                        link_no_replace(here / name, other)
                    if os.path.samefile(here / name, other):
                        os.unlink(here / name)
                except (OSError, SandmanError):
                    continue
            try:
                here.rmdir()
            except OSError:
                pass
    archived.unlink()
    folder = archived.parent
    while folder != layout.archive and folder.is_relative_to(layout.archive):
        try:
            folder.rmdir()
        except OSError:
            break
        folder = folder.parent
    return _rel(layout, archived)


def settle_record(layout: Layout, session_id: str, pointer: dict) -> None:
    """Write the take record from a pointer a killed take wrote before its record."""
    record = parts.read_record(layout, session_id)
    if record is not None and (record.archived, record.bytes) == (pointer.get("archived"), pointer.get("bytes")):
        return
    if isinstance(pointer.get("bytes"), int) and isinstance(pointer.get("sha256"), str):
        listed = pointer.get("earlier")
        earlier = [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []
        parts.write_record(layout, session_id, pointer, earlier)


def recover(layout: Layout, intent: Intent, archived: Path) -> None:
    """Finish a take whose transcript reached the archive: what take_source does after the link.

    The live name stays (a take links, it does not move). The part is the
    intent's; a record without one (written before takes linked) archives
    the whole file as it is now.
    """
    source = intent.source
    companion = None
    if source.companion is not None:
        target = archived.with_suffix("")
        if is_real_dir(source.companion):
            link_companion(layout, source.companion, archived)
        companion = target if is_real_dir(target) else None
    part = intent.part
    if part is None:
        size = archived.stat().st_size
        part = parts.Part(0, size, parts.digest(archived, size), None)
    try:
        session = summarize(archived, source.host, end=part.bytes)
    except (OSError, SandmanError):
        session = None
    data, skipped = pointer_data(layout, source, archived, companion, intent.cwd, session, part=part)
    earlier = earlier_parts(layout, intent.session, data)
    write_pointer(layout, intent.session, data)
    parts.write_record(layout, intent.session, data, earlier)
    layout.pending_take(intent.session).unlink(missing_ok=True)
    ensure_repository(layout)
    journal.write(layout, VERB, "recovered", session=intent.session, host=source.host, archived=data["archived"],
                  companion=data.get("companion"), hook=intent.hook, forced=intent.forced, skipped_lines=skipped,
                  offset=part.offset, bytes=part.bytes)
