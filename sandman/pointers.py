"""Pointers: ``memories/.recent/<session id>.json`` (docs/BANK-FORMAT.md, "Pointers").

take writes a pointer, dream reads its queue from them and stamps ``dreamed``,
recall shows the young ones, reflect sweeps the old dreamed ones. This module is
the one reader and writer of the format. Standard library only: the hook entry
points import it.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from datetime import datetime, timezone
from pathlib import Path

from sandman import config
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.store.atomic import write_atomic

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]*")


def check_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is safe as a file name; raise InputError otherwise.

    Refused: a non-string, empty, over 128 characters, ``/``, ``\\``, ``..``, NUL,
    or anything but letters, digits, ``.``, ``_``, ``:`` and ``-``.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InputError(f"session id {session_id!r} is missing or not a string")
    if len(session_id) > config.SESSION_ID_MAX_CHARS:
        raise InputError(
            f"session id is {len(session_id)} characters; the limit is {config.SESSION_ID_MAX_CHARS}"
        )
    if ".." in session_id or not _SESSION_ID.fullmatch(session_id):
        raise InputError(f"session id {session_id!r} holds characters a file name cannot carry")
    return session_id


def parse_time(text: object) -> datetime | None:
    """Return an ISO 8601 time as an aware UTC datetime, or None when unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


class Pointer(namedtuple("Pointer", "session path data")):
    """One pointer file: its session id (str), path (Path), and JSON fields (``data``, a dict)."""

    __slots__ = ()

    @property
    def ended(self) -> datetime | None:
        return parse_time(self.data.get("ended"))

    @property
    def dreamed(self) -> bool:
        return bool(self.data.get("dreamed"))


def write_pointer(layout: Layout, session_id: str, data: dict) -> Path:
    """Write ``memories/.recent/<session id>.json`` atomically; return its path.

    Raises InputError for an unsafe session id, OSError when it cannot be written.
    """
    path = layout.pointer(check_session_id(session_id))
    text = json.dumps({"session": session_id, **data}, ensure_ascii=False, indent=2) + "\n"
    # A path whose name is not UTF-8 (``origin``, ``archived``) holds surrogate escapes; only JSON
    # strings hold text, so each becomes a \udcXX escape there, and reads back as the same path.
    write_atomic(path, text.encode("utf-8", "backslashreplace"))
    return path


def read_pointer(path: Path) -> Pointer | None:
    """Read one pointer file; None when it is gone or is not a JSON object."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    return Pointer(session=path.stem, path=path, data=data)


def list_pointers(layout: Layout) -> list[Pointer]:
    """Return every readable pointer, oldest ``ended`` first (unknown end times last)."""
    try:
        paths = [p for p in layout.recent.iterdir() if p.suffix == ".json" and not p.name.startswith(".")]
    except FileNotFoundError:
        return []
    pointers = [pointer for pointer in map(read_pointer, paths) if pointer is not None]
    far = datetime.max.replace(tzinfo=timezone.utc)
    return sorted(pointers, key=lambda p: (p.ended or far, p.session))


# --- pending-take records (BANK-FORMAT "Pending takes") -------------------------
# take's ledger drain and doctor share this one definition of a readable record.


def pending_entries(layout: Layout) -> list[Path]:
    """Return the ledger's entries, ``pending-takes/*.json`` (dotted names, temp files, excluded), sorted.

    ``[]`` when the folder does not exist. Raises OSError when it cannot be
    listed (it is a file, say).
    """
    try:
        return sorted(p for p in layout.pending_takes.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    except FileNotFoundError:
        return []


def read_pending_take(path: Path) -> dict:
    """Return one pending-take record: a JSON object whose ``session`` is a safe session id.

    Raises OSError (unreadable, a folder) and ValueError (not UTF-8 JSON, not
    an object, no usable ``session``), naming the problem.
    """
    try:
        data = json.loads(path.read_bytes())
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    try:
        check_session_id(data.get("session"))
    except InputError as error:
        raise ValueError(str(error)) from None
    return data
