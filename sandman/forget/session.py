"""``sandman forget <session>``: the privacy ending. Destroy every copy of a session.

What is destroyed, wherever it is found:

- the live transcript(s) under Claude Code's projects folder or Codex's
  sessions folder, with the Claude Code companion folder ``<session id>/``
  (a taken session keeps them there for ``claude --resume``: they are second
  names of the archived files, and both names go);
- Claude Code's other files of the session: ``file-history/<id>/``,
  ``todos/<id>-agent-*.json``, ``debug/<id>.txt``, ``session-env/<id>/``;
- the archived transcript and companion folder (named by the pointer, by
  take's journal lines, or found by name under ``.archive/``), and archive
  folders left empty;
- the pointer ``memories/.recent/<id>.json``, the take record ``.takes/<id>.json``,
  ``pending-takes/<id>.json`` and the backstop's start record ``.started/<id>.json``;
- every kept SessionStart reply ``.start-replies/*.json`` (they list recent sessions
  by title and id; derived, composed again at the next start), when the session was
  held here or a reply names it (_start_replies);
- what a killed take left (_leftovers): its intent records ``.taking/<id>.<pid>.json``,
  write_atomic's temp files beside them and beside each file above, and a
  pointer reflect's sweep set aside;
- the mind transcripts under ``.dream/``: every file dream's manifest
  ``.dream/by-session/<id>.json`` lists, the manifest, and every file under
  ``.dream/`` whose bytes name the session id as a whole token (_mentions);
- every journal line that names the session (_names_session; the ``.trace/``
  files are rewritten without them);
- the search index ``.search.sqlite`` when memories were deleted: rebuilt whole
  without them (a new file; the old one deleted), so the prompt and file hooks
  keep finding the other memories; deleted when it cannot be rebuilt (the next
  search builds it);
- the rendered site's copies: when ``.site/`` exists it is rendered again, so
  the pages and search index of deleted memories and the queue's title of the
  session are gone; when it cannot be rendered it is removed (it is derived).

forget writes no journal line of its own: a line naming the session would be
the very trace it promises not to leave (design, "Observability").

Memories whose ``source`` is this session alone are listed; with
``memories=True`` they are deleted in one commit (``forget: ...``, no
``Session:`` trailer). Memories that cite other sessions too are kept and
listed. Git history still holds what was committed before: docs/forget.md says
how to purge it.

The ``sandman forget`` verb (sandman/verbs/forget.py) is the command over this
module; nothing here imports sandman.verbs or sandman.cli.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sandman.archive.parts import read_record
from sandman.banks.commit import bank_transaction
from sandman.banks.index import memory_files
from sandman.banks.listing import bank_folders
from sandman.banks.memory import REMEMBER_SOURCE, read_memory
from sandman.errors import FormatError, InputError, SandmanError
from sandman.journal import parse_line
from sandman.layout import Layout
from sandman.pointers import check_session_id, read_pointer
from sandman.store.atomic import TEMP_NAME, write_atomic
from sandman.transcripts import locate

_READ_CHUNK = 1 << 20
# An id this long (a UUID is 36) is matched inside file bytes and journal lines; a shorter
# one only as a whole field or file name (see _distinctive).
DISTINCTIVE_CHARS = 16
# Next to one of these characters an occurrence of the id is part of a longer name (a
# longer session id, a model name): a prefix of a UUID is followed by a hex digit or `-`.
# `.` and `:` are allowed in a session id too, but around an id they end it
# (`<id>.jsonl`, `<id>.<pid>.json`, `Session: <id>`).
_NAME_CHARS = r"A-Za-z0-9_\-"
# A Codex rollout's name puts `-` between its time and the id (transcripts/locate.py).
_ROLLOUT_TIME = r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-"
# Keys whose whole value, quoted in JSON, is a session id; another key's whole value equal
# to the id (`"model": "claude-fable-5-1"`) is that field's, not a session's.
_SESSION_KEYS = ("session", "sessionId", "session_id")
# Journal facts whose whole value is a model's name: the one place a distinctive id's exact
# spelling in a journal line is not a session (forgetting `claude-fable-5-1` leaves the minds' lines).
_MODEL_FACTS = frozenset({"model", "models"})
# How far before an occurrence a JSON key is looked for, in bytes.
_KEY_CONTEXT = 64


@dataclass
class Forgotten:
    """What a forget found and did. Paths are absolute.

    ``destroyed``: files and folders removed. ``memories``: memories citing only
    this session (deleted when ``deleted``). ``shared``: memories citing it
    among other sources, kept. ``scrubbed``: journal files rewritten without
    the session's lines. ``commit``: the id of the deleting commit, if any.
    ``site``: ``re-rendered`` or ``removed`` when a rendered ``.site/`` had to
    lose its copies, else None.
    """

    destroyed: list[Path] = field(default_factory=list)
    memories: list[Path] = field(default_factory=list)
    shared: list[Path] = field(default_factory=list)
    scrubbed: list[Path] = field(default_factory=list)
    deleted: bool = False
    commit: str | None = None
    site: str | None = None


def _token(session_id: str) -> re.Pattern[str]:
    """The id as a whole token: not inside a longer name (see _NAME_CHARS), or a Codex rollout's."""
    return re.compile(rf"(?:(?<![{_NAME_CHARS}])|(?<={_ROLLOUT_TIME})){re.escape(session_id)}(?![{_NAME_CHARS}])")


def _quoted_key(before: bytes) -> str | None:
    """The JSON key whose string value starts right after ``before`` (``"key": "``), else None."""
    found = re.search(rb'"([A-Za-z_][A-Za-z0-9_]*)"\s*:\s*"\Z', before)
    return found.group(1).decode() if found else None


def _names_in_bytes(data: bytes, session_id: str, *, carried: int, complete: bool) -> bool:
    """True when ``data`` holds the id as a whole token that is not another JSON key's whole value.

    ``carried``: how many leading bytes the previous window held too; an
    occurrence ending inside them was judged there. ``complete`` is False while
    more of the file follows: an occurrence at the very end is then undecided
    (the next byte may continue it) and is judged in the next window.
    """
    token = re.compile(_token(session_id).pattern.encode())
    for found in token.finditer(data):
        if found.end() < carried or (not complete and found.end() == len(data)):
            continue
        whole = data[found.start() - 1 : found.start()] == b'"' and data[found.end() : found.end() + 1] == b'"'
        key = _quoted_key(data[max(0, found.start() - _KEY_CONTEXT) : found.start()]) if whole else None
        if key is None or key in _SESSION_KEYS:
            return True
    return False


def _mentions(path: Path, session_id: str) -> bool:
    """True when the file's bytes name the session (_names_in_bytes), read in chunks.

    Each window starts with the previous one's last bytes, enough to hold an
    occurrence split between chunks with the context it is judged by.
    """
    overlap = len(session_id.encode()) + _KEY_CONTEXT + 1
    try:
        with open(path, "rb") as stream:
            window, carried = stream.read(_READ_CHUNK), 0
            while True:
                more = stream.read(_READ_CHUNK)
                if _names_in_bytes(window, session_id, carried=carried, complete=not more):
                    return True
                if not more:
                    return False
                tail = window[-overlap:]
                window, carried = tail + more, len(tail)
    except OSError:
        return False


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _archived(layout: Layout, session_id: str) -> set[Path]:
    """The session's archived copies: named by its pointer, by take's journal, or by name."""
    found: set[Path] = set()
    pointer = read_pointer(layout.pointer(session_id))
    named = [] if pointer is None else [pointer.data.get("archived"), pointer.data.get("companion")]
    if pointer is not None and isinstance(pointer.data.get("earlier"), list):
        named += pointer.data["earlier"]
    record = read_record(layout, session_id)  # outlives the pointer: names every part's file
    if record is not None:
        named += [record.archived, record.companion, *record.earlier]
    needle = session_id.encode()
    for log in sorted(layout.trace.glob("take-*.log")) if layout.trace.is_dir() else []:
        if needle not in log.read_bytes():
            continue
        for line in log.read_text("utf-8", "replace").splitlines():
            try:
                facts = parse_line(line)[3]
            except ValueError:
                continue
            if facts.get("session") == session_id:
                named += [facts.get("archived"), facts.get("companion")]
    for rel in named:
        if isinstance(rel, str) and rel not in ("", "-"):
            path = layout.root / rel
            if _inside(path, layout.archive) and (path.exists() or path.is_symlink()):
                found.add(path)
    if layout.archive.is_dir():
        # The time prefix of the archive, or a Codex rollout's name: never any text before the
        # id, or a suffix of another session's UUID would match its archived rollout.
        transcript = re.compile(rf"(?:\d{{6}}-)?(?:{_ROLLOUT_TIME})?{re.escape(session_id)}\.jsonl")
        for folder, dirs, files in os.walk(layout.archive):
            here = Path(folder)
            for name in files:
                if transcript.fullmatch(name):
                    found.add(here / name)
            # A companion folder is named like its transcript, which sits beside it:
            # never a date folder of the archive that happens to spell the id.
            for name in dirs:
                if name == session_id and any(transcript.fullmatch(f) for f in files):
                    found.add(here / name)
    return found


def _leftovers(layout: Layout, session_id: str) -> set[Path]:
    """What a killed take, pointer write or sweep left of the session beside its own files.

    The intent records ``.taking/<id>.<pid>.json`` of takes that never finished
    (each holds the session's paths; a readable one naming another session is
    left), write_atomic's temp files ``.<name>.<32 hex>.tmp`` of each of them and
    of every file forget removes by name (the pointer, the take record, the
    pending take, the deliveries ledger, dream's manifest), a pointer
    reflect's sweep set aside (``memories/.recent/.<id>.json.sweeping``), and
    the session's take lock ``.taking/<id>.lock`` a killed take left.
    """
    found: set[Path] = set()
    intent = re.compile(rf"{re.escape(session_id)}\.\d+\.json")
    try:
        entries = [entry.name for entry in os.scandir(layout.taking)]
    except OSError:
        entries = []
    for name in entries:
        if intent.fullmatch(name) and _intent_of(layout.taking / name, session_id):
            found.add(layout.taking / name)
        elif (TEMP_NAME.fullmatch(name) and intent.fullmatch(name[1:-37])
              and _intent_of(layout.taking / name, session_id)):
            found.add(layout.taking / name)
    for path in (layout.pointer(session_id), layout.take_record(session_id), layout.pending_take(session_id),
                 layout.delivered_ledger(session_id), layout.dream_manifest(session_id)):
        prefix = f".{path.name}."
        try:
            names = [entry.name for entry in os.scandir(path.parent)]
        except OSError:
            continue
        found.update(path.parent / name for name in names
                     if name.startswith(prefix) and len(name) == len(prefix) + 36 and TEMP_NAME.fullmatch(name))
    sweeping = layout.sweeping_pointer(session_id)
    if os.path.lexists(sweeping):
        found.add(sweeping)
    lock = layout.take_lock(session_id)  # empty, but named for the session: a killed take's holding left it
    if os.path.lexists(lock):
        found.add(lock)
    return found


def _intent_of(path: Path, session_id: str) -> bool:
    """False only for a readable intent record (or its temp file) that names another session."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return True  # half-written: its name is all there is, and it names the session
    return not isinstance(data, dict) or data.get("session") in (None, session_id)


def _mind_transcripts(layout: Layout, session_id: str) -> set[Path]:
    """The mind transcripts kept for the session: listed by dream's manifest, or naming it."""
    found: set[Path] = set()
    manifest = layout.dream_manifest(session_id)
    try:
        listed = json.loads(manifest.read_bytes()).get("transcripts", [])
    except (OSError, ValueError, RecursionError, AttributeError):
        listed = []
    if manifest.exists():
        found.add(manifest)
    for rel in listed if isinstance(listed, list) else []:
        if isinstance(rel, str):
            path = layout.root / rel
            if _inside(path, layout.dream_dir) and path.exists():
                found.add(path)
    if layout.dream_dir.is_dir() and _distinctive(session_id):
        for folder, _, files in os.walk(layout.dream_dir):
            for name in files:
                path = Path(folder) / name
                if _mentions(path, session_id):
                    found.add(path)
    return found


def _distinctive(session_id: str) -> bool:
    """True when the id is long enough that its bytes inside a file can only mean this session.

    Claude Code's and Codex's ids are UUIDs (36 characters). A short id such as
    ``2026`` or a word such as ``dream`` appears in unrelated files and journal
    lines: those are matched by exact fields and file names only, never by bytes.
    """
    return len(session_id) >= DISTINCTIVE_CHARS


def _start_replies(layout: Layout, session_id: str, *, held: bool) -> list[Path]:
    """Remove every kept SessionStart reply (``.start-replies/``, its temp files too) when the
    session was ``held`` here or a reply's bytes hold its id; return what was removed.

    A reply lists recent sessions by title (a first prompt) and id; which replies list
    this one is not worth deciding: they are derived, and the next start composes its
    cwd's reply again (docs/BANK-FORMAT.md, "Start replies").
    """
    try:
        replies = sorted(layout.start_replies.iterdir())
    except OSError:
        return []
    if not held and not any(_holds(path, session_id) for path in replies):
        return []
    return [path for path in replies if _remove(path)]


def _holds(path: Path, session_id: str) -> bool:
    try:
        return session_id.encode("utf-8", "surrogateescape") in path.read_bytes()
    except OSError:
        return False


def _remove(path: Path) -> bool:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        return False
    return True


def _prune_empty(folder: Path, stop: Path) -> None:
    """Remove ``folder`` and its parents while empty, up to (not including) ``stop``."""
    while folder != stop and _inside(folder, stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _names_session(line: bytes, session_id: str) -> bool:
    """True when a journal line names the session.

    That is: a ``session=<id>`` fact, or, for a distinctive id, the id as a whole
    token in any other fact, whole or inside it (``starting=<id>``,
    ``sessions=<a>,<id>``, an archived path, an intent's file name, an error).
    Only a fact that names a model (``_MODEL_FACTS``: ``model=claude-fable-5-1``)
    is that model's name, never a session; a line that is not a journal line
    names the session when it holds a distinctive id as a whole token.
    """
    if session_id.encode() not in line:
        return False
    text = line.decode("utf-8", "replace")
    try:
        facts = parse_line(text)[3]
    except ValueError:
        return _distinctive(session_id) and _token(session_id).search(text) is not None
    if facts.get("session") == session_id:
        return True
    token = _token(session_id)
    return _distinctive(session_id) and any(
        token.search(value) for key, value in facts.items()
        if isinstance(value, str) and not (key in _MODEL_FACTS and value == session_id)
    )


def _scrub_journal(layout: Layout, session_id: str) -> list[Path]:
    """Rewrite every journal file without the lines naming the session."""
    scrubbed = []
    needle = session_id.encode()
    for log in sorted(layout.trace.glob("*.log")) if layout.trace.is_dir() else []:
        for _ in range(3):  # a verb appending meanwhile: read again
            data = log.read_bytes()
            if needle not in data:
                break
            lines = data.splitlines(keepends=True)
            kept = b"".join(line for line in lines if not _names_session(line, session_id))
            if len(kept) == len(data):
                break
            if log.stat().st_size != len(data):
                continue
            write_atomic(log, kept)
            scrubbed.append(log)
            break
    return scrubbed


def _memories(layout: Layout, session_id: str) -> tuple[list[Path], list[Path]]:
    """Return (memories citing only the session, memories citing it among others).

    ``remember`` in a memory's ``source`` marks it as asked for by hand, not
    another session: a memory a session remembered (``[remember, <id>]``) cites
    that session alone.
    """
    only, shared = [], []
    for bank in bank_folders(layout):
        for path in memory_files(bank):
            try:
                source = read_memory(path).source
            except (FormatError, OSError):
                continue
            if session_id in source:
                sessions = set(source) - {REMEMBER_SOURCE}
                (only if sessions == {session_id} else shared).append(path)
    return only, shared


def forget(layout: Layout, session_id: str, *, memories: bool = False) -> Forgotten:
    """Destroy every copy sandman or the host holds of ``session_id``; write no journal line.

    With ``memories``, also delete the memories whose only source is the
    session (one commit). Raises InputError (unsafe id), and, only with
    ``memories``, LockBusy and RepositoryError before anything is destroyed;
    OSError when a copy cannot be removed.
    """
    check_session_id(session_id)
    if session_id == REMEMBER_SOURCE:
        raise InputError(f"{REMEMBER_SOURCE!r} marks memories remembered by hand; it is not a session id")
    result = Forgotten()
    # The pointer goes first: a dream still running on this session checks for it,
    # under the commit lock, before each commit (sandman/dream/run.py).
    archived = sorted(_archived(layout, session_id))  # the pointer names the archived copies
    pointer = layout.pointer(session_id)
    if _remove(pointer):
        result.destroyed.append(pointer)
    if memories:
        # Looked for under the commit lock, so a dream's commit is seen whole or not at all.
        with bank_transaction(layout, verb="forget", subject="delete memories of a forgotten session") as tx:
            result.memories, result.shared = _memories(layout, session_id)
            for path in result.memories:
                tx.delete(path.parent.name, path.name)
            count = len(result.memories)
            tx.subject = f"delete {count} {'memory' if count == 1 else 'memories'} of a forgotten session"
        result.deleted, result.commit = bool(result.memories), tx.commit
    else:
        result.memories, result.shared = _memories(layout, session_id)
    targets: list[Path] = []
    for live in locate.live_transcripts(session_id):
        targets.append(live)
        if live.with_suffix("").is_dir():
            targets.append(live.with_suffix(""))
    targets += locate.host_leftovers(session_id)
    targets += archived
    targets.append(layout.pending_take(session_id))
    targets.append(layout.delivered_ledger(session_id))  # which memories it was given (sandman/recall/ledger.py)
    targets.append(layout.take_record(session_id))
    targets.append(layout.started_record(session_id))  # the backstop's record of its start
    targets += sorted(_mind_transcripts(layout, session_id))
    targets += sorted(_leftovers(layout, session_id))  # after the intents' and pointer's own files
    for path in targets:
        if _remove(path):
            result.destroyed.append(path)
    for path in archived:
        _prune_empty(path.parent, layout.archive)
    result.destroyed += _start_replies(layout, session_id, held=bool(result.destroyed))
    result.scrubbed = _scrub_journal(layout, session_id)
    if result.deleted:
        _forget_search_index(layout)
    if result.destroyed or result.deleted or result.scrubbed:
        result.site = _forget_site(layout)
    return result


def forget_derived(layout: Layout) -> str | None:
    """Drop the derived copies of memories just deleted: the search index, and the rendered site
    (re-rendered, else removed); return the site's fate as ``_forget_site`` does."""
    _forget_search_index(layout)
    return _forget_site(layout)


def _forget_search_index(layout: Layout) -> None:
    """Delete the search index and build it again from the banks (sandman.banks.search.build).

    A deleted row's words can outlive it inside the FTS5 index's segments and
    the database's free pages, so an in-place refresh is not enough for forget's
    promise: the old file goes, and a new one is built whole. Without that new
    one the prompt and file hooks (which never build an index) would add nothing
    until a search. When the build fails the index stays deleted (the next
    search builds it). Never raises for the build.
    """
    import sqlite3

    from sandman.banks import search

    for path in (layout.search_index, layout.search_index.with_name(layout.search_index.name + "-wal"),
                 layout.search_index.with_name(layout.search_index.name + "-shm")):
        path.unlink(missing_ok=True)
    if layout.memories.is_dir():
        try:
            search.build(layout)
        except (OSError, sqlite3.Error):
            pass


def _forget_site(layout: Layout) -> str | None:
    """Re-render ``.site/`` without the forgotten copies, else remove it; None when there is none.

    The site holds a page per memory, the search index of every body and the
    queue's titles: left alone it would keep what forget just destroyed.
    Raises OSError when a site that cannot be rendered cannot be removed either.
    """
    from sandman.site import render  # jinja2, markdown-it, pygit2: only when there is a site

    if not layout.site.is_dir():
        return None
    try:
        render.render_site(layout)
        return "re-rendered"
    except (SandmanError, OSError):
        shutil.rmtree(layout.site)
        return "removed"
