"""A session's archived parts and its take record (docs/BANK-FORMAT.md, "Take records", "Pointers").

    plan(layout, session, path) -> Part          what the next take of ``path`` archives, and from where
    untouched(layout, session, path, st) -> bool  taken, and nothing written since (one stat, nothing read)
    link_tree(folder, target) -> int              a companion folder's files linked into the archive
    read_part(path, offset, end, sha256) -> bytes the bytes a pointer names, checked against their digest

Standard library only: take --hook imports it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import namedtuple
from pathlib import Path

from sandman import journal
from sandman.errors import ArchiveChanged, NothingNew
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.store.atomic import write_atomic

_CHUNK = 1 << 20

# A take record read back: the archived name (relative to the root), the live name it was
# taken from, the archived length in bytes and the SHA-256 of those bytes, and the names of
# earlier parts that are other files (a transcript Claude Code wrote anew).
TakeRecord = namedtuple("TakeRecord", "session archived origin companion bytes sha256 earlier")

# What the next take archives: the byte range [offset, bytes) of the live file, the digest
# of its first ``bytes`` bytes, and ``archived`` (a Path) when the archive already holds
# this very file under that name (a resumed session appends to it), else None.
Part = namedtuple("Part", "offset bytes sha256 archived")


def read_record(layout: Layout, session_id: str) -> TakeRecord | None:
    """Return the session's take record, None when there is none or it is not one."""
    try:
        data = json.loads(layout.take_record(session_id).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    archived, size, digest = data.get("archived"), data.get("bytes"), data.get("sha256")
    if not isinstance(archived, str) or not isinstance(size, int) or isinstance(size, bool) or size < 0 \
            or not isinstance(digest, str) or len(digest) != 64:
        return None
    listed = data.get("earlier")
    earlier = [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []
    companion = data.get("companion") if isinstance(data.get("companion"), str) else None
    origin = data.get("origin") if isinstance(data.get("origin"), str) else None
    return TakeRecord(session_id, archived, origin, companion, size, digest, earlier)


def write_record(layout: Layout, session_id: str, pointer: dict, earlier: list[str]) -> Path:
    """Write ``.takes/<sid>.json`` from the pointer just written; return its path. Raises OSError."""
    data = {"session": session_id, "host": pointer.get("host"), "archived": pointer["archived"],
            "origin": pointer.get("origin"), "companion": pointer.get("companion"),
            "bytes": pointer["bytes"], "sha256": pointer["sha256"], "taken": journal.iso(journal.now_utc())}
    if earlier:
        data["earlier"] = earlier
    path = layout.take_record(session_id)
    write_atomic(path, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8", "backslashreplace"))
    return path


def _hash(path: Path, size: int, mark: int | None) -> tuple[str, str | None, int]:
    """Hash the first ``size`` bytes of ``path``: (digest of all read, digest of the first
    ``mark`` bytes or None, bytes read). Fewer bytes than ``size`` may be read (a file cut
    short meanwhile)."""
    hasher, at, marked = hashlib.sha256(), 0, None
    with open(path, "rb") as stream:
        while at < size:
            if mark is not None and at == mark:
                marked = hasher.hexdigest()
            want = min(_CHUNK, size - at) if mark is None or at >= mark else min(_CHUNK, mark - at)
            chunk = stream.read(want)
            if not chunk:
                break
            hasher.update(chunk)
            at += len(chunk)
    if mark is not None and at == mark and marked is None:
        marked = hasher.hexdigest()
    return hasher.hexdigest(), marked, at


def digest(path: Path, length: int) -> str:
    """Return the SHA-256 (hex) of the first ``length`` bytes of ``path``.

    Raises ArchiveChanged when the file holds fewer bytes, OSError when it cannot be read.
    """
    whole, _, read = _hash(path, length, None)
    if read < length:
        raise ArchiveChanged(f"{path} holds {read:,} bytes; its take archived {length:,}")
    return whole


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def plan(layout: Layout, session_id: str, path: Path) -> Part:
    """Decide what a take of the live transcript ``path`` archives (docs/take.md, "Resume after a take").

    No take record, or a live file that no longer begins with the recorded
    bytes (Claude Code wrote it anew, or it was taken before takes kept
    records): the whole file, from offset 0. Otherwise only what was appended
    since, from the recorded length, unless the session's pointer is still
    queued (not yet dreamt): then from that pointer's own offset, so the
    queued part is not lost when the new pointer replaces it. Raises
    NothingNew when the file is exactly what was archived, OSError when it
    cannot be read.
    """
    size = os.stat(path).st_size
    record = read_record(layout, session_id)
    mark = record.bytes if record is not None and record.bytes <= size else None
    whole, prefix, read = _hash(path, size, mark)
    extends = record is not None and prefix == record.sha256
    archived = layout.root / record.archived if record is not None else None
    same = archived if extends and archived is not None and _same_file(archived, path) else None
    if not extends:
        return Part(0, read, whole, same)
    if read == record.bytes:
        raise NothingNew(f"session {session_id} has nothing new since its take: its {read:,} bytes are "
                         f"archived as {record.archived}")
    offset = record.bytes
    pointer = read_pointer(layout.pointer(session_id))
    if pointer is not None and not pointer.dreamed:
        queued = pointer.data.get("offset", 0)
        if isinstance(queued, int) and not isinstance(queued, bool) and 0 <= queued <= record.bytes:
            offset = queued
    return Part(offset, read, whole, same)


def untouched(layout: Layout, session_id: str, path: Path, st: os.stat_result) -> bool:
    """True when ``path`` is the file the session's last take archived, at the length it archived.

    One stat of the archived name, nothing read: what ``take --all`` and
    ``--missed`` pass over as ``taken``. A file that grew (a resumed session
    whose ending was missed) or was written anew is not untouched.
    """
    record = read_record(layout, session_id)
    if record is None or record.bytes != st.st_size:
        return False
    try:
        other = os.stat(layout.root / record.archived)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def link_tree(folder: Path, target: Path) -> int:
    """Link every regular file under ``folder`` to the same relative name under ``target``; return how many.

    A companion folder (subagent transcripts, tool outputs) stays where Claude
    Code keeps it, so a resumed session still finds it; the archive gets second
    names of its files. A name already there is left alone (an earlier take
    linked it, and a resumed session appends to the same file); links and
    other special files are not followed. Raises CrossDeviceError, OSError.
    """
    from sandman.store.atomic import link_no_replace

    linked = 0
    for base, dirs, files in os.walk(folder):
        here = Path(base)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
        for name in files:
            src = here / name
            if src.is_symlink() or not src.is_file():
                continue
            dst = target / src.relative_to(folder)
            if os.path.lexists(dst):
                continue
            try:
                link_no_replace(src, dst)
            except (FileExistsError, FileNotFoundError):
                continue
            linked += 1
        if not files and not dirs:
            (target / here.relative_to(folder)).mkdir(parents=True, exist_ok=True)
    return linked


def read_part(path: Path, offset: int, end: int, sha256: str) -> bytes:
    """Return bytes ``[offset, end)`` of the archived ``path`` once its first ``end`` bytes hash to ``sha256``.

    What the minds read is exactly what a take archived: a resumed session
    appends after ``end``, which is the next part's. Raises ArchiveChanged when
    the prefix differs (its bytes were rewritten since the take), OSError.
    """
    if digest(path, end) != sha256:
        raise ArchiveChanged(f"{path}: its first {end:,} bytes changed since they were taken")
    with open(path, "rb") as stream:
        stream.seek(offset)
        return stream.read(end - offset)
