"""The search index: SQLite FTS5 over every live memory (docs/BANK-FORMAT.md, "The search index").

``<root>/.search.sqlite`` is derived and dotted: it is never versioned, and
deleting it loses nothing, since it is rebuilt from the banks on the next
search. It holds two tables:

- ``files(id, path, bank, file, type, mtime_ns, size)``: one row per live
  memory file (``memories/<bank>/<type>_<slug>.md``; ``MEMORY.md``,
  ``_archive/`` and dotted folders are not memories), ``path`` being
  ``<bank>/<file>``, with the modification time (nanoseconds) and size (bytes)
  the row was read at;
- ``banks(name, mtime_ns)``: each bank folder's modification time when it
  was last scanned;
- ``memories``: an FTS5 table (``porter`` over ``unicode61``, diacritics
  folded: every word indexed by its Porter stem) of ``name``, ``description``
  and ``body``, its rowid the ``files`` id;
- ``words(word, memories)``: every word of letters (three or more, lower-cased,
  as typed: not stemmed) of the indexed memories, with how many hold it: what a
  misspelt query word is corrected to (sandman.banks.query.corrections).

A search first compares each bank folder's modification time with
``banks``; in a folder that changed it compares ``files`` with the folder (one
``stat`` per memory) and re-reads only what was added, changed or removed, so
a ``git pull``, a reconcile or a hand edit saved by rename (most editors; every
sandman write) is found without any writer's help. A file rewritten in place
does not change its folder: a search compares the ``lstat`` time and size of
each hit's file with its ``files`` row, and when one differs reads that bank
again and asks again (so no hit shows a text its file no longer holds); the
hooks' detached refresh (``open_index(every_file=True)``) compares every
memory's, and ``sandman search --reindex`` rebuilds the index. A missing,
unreadable or older-schema index is rebuilt whole into a sibling temp file and
moved into place (``os.replace``). commit_memory refreshes the banks it
touched after each commit when the index exists (``refresh``), so the index a
search opens is current in the common case.

A query is a person's words (sandman.banks.query): its meaningful words,
stemmed, any of them matching; ranking is FTS5's bm25 with the columns
weighted name 10, description 4, body 1, so the memories sharing the most and
the rarest words come first, and a word in a memory's name ranks it above the
same word in another's body. A query is bounded: at most
query.MAX_QUERY_CHARS characters read, query.MAX_TERMS terms, and
QUERY_SECONDS of SQLite work (a progress handler), past which it fails with
InputError.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sandman import private
from sandman.banks.listing import bank_folders, scalar, split_frontmatter
from sandman.banks.query import MAX_TERMS, corrections, fts_query, fts_related, terms, vocabulary
from sandman.errors import InputError, SearchIndexError
from sandman.layout import BANK_INDEX, Layout
from sandman.store.atomic import fsync_dir

SCHEMA_VERSION = "5"  # 5: the words table (misspellings); 4: private spans hidden before indexing
# bm25 weights of the FTS5 columns (name, description, body).
WEIGHTS = (10.0, 4.0, 1.0)
DEFAULT_LIMIT = 20
BUSY_TIMEOUT_SECONDS = 30.0
LINE_MAX_CHARS = 200
QUERY_SECONDS = 1.0  # SQLite work one query may take before it is interrupted
RELATED_WEIGHT = 0.5  # a related word (query.RELATED) is half the evidence of the word typed
PROGRESS_STEPS = 1000  # SQLite virtual-machine steps between two looks at the clock

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, bank TEXT NOT NULL, file TEXT NOT NULL,
    type TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL
);
CREATE INDEX files_bank ON files (bank);
CREATE TABLE banks (name TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL);
CREATE VIRTUAL TABLE memories USING fts5(name, description, body, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE words (word TEXT PRIMARY KEY, memories INTEGER NOT NULL) WITHOUT ROWID;
"""
# Marks around the words a match holds (highlight()): private-use characters, never in a line shown.
_OPEN, _CLOSE = "\ue000", "\ue001"


class Hit(namedtuple("Hit", "bank file name description type line_number line score")):
    """One memory a search found: its ``bank`` (folder name) and ``file``, its ``name``,
    ``description`` and ``type``, the first matching line (``line_number`` 1-based in the
    body; 0 when the match is in the name or description, then ``line`` is that text) and
    the bm25 ``score`` (lower ranks first)."""

    __slots__ = ()

    @property
    def path(self) -> str:
        """``<bank>/<file>``, relative to ``memories/``."""
        return f"{self.bank}/{self.file}"


def _live_files(folder: Path) -> dict[str, tuple[int, int]]:
    """Map each live memory file of one bank folder to ``(mtime_ns, size)``."""
    found = {}
    try:
        entries = os.scandir(folder)
    except OSError:
        return found
    with entries:
        for entry in entries:
            name = entry.name
            if not name.endswith(".md") or name == BANK_INDEX or name.startswith("."):
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found[f"{folder.name}/{name}"] = (stat.st_mtime_ns, stat.st_size)
    return found


def _read_memory(layout: Layout, path: str) -> tuple[str, str, str, str] | None:
    """Return ``(name, description, type, body)`` of ``memories/<path>``, None when unreadable."""
    try:
        with open(layout.memories / path, "rb") as stream:
            text = stream.read().decode("utf-8", "replace")
    except OSError:
        return None
    split = split_frontmatter(text)
    if split is None:
        return None
    front, body = split
    name = scalar(front, "name") or Path(path).stem
    # A memory edited by hand (or committed before its spans were hidden) may hold a private
    # span: neither found by its words nor shown (sandman.private).
    return (private.redact(name), private.redact(scalar(front, "description") or ""),
            scalar(front, "type") or "", private.redact(body))


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    # The index is derived: a power cut may lose its last transactions (the next refresh finds their
    # files by time and size again), never corrupt it (WAL with NORMAL); no fsync at every commit's refresh.
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


def _is_current_schema(connection: sqlite3.Connection) -> bool:
    try:
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except sqlite3.DatabaseError:
        return False
    return row is not None and row[0] == SCHEMA_VERSION


def _folder_mtime(folder: Path) -> int | None:
    try:
        return folder.stat().st_mtime_ns
    except OSError:
        return None


def _sync(connection: sqlite3.Connection, layout: Layout, folders: list[Path], *, every_bank: bool,
          trust_folders: bool = False, every_file: bool = False) -> int:
    """Bring the rows of ``folders`` (of every bank when ``every_bank``) in line with the disk.

    With ``trust_folders``, a bank folder whose modification time is the one
    recorded at its last scan is not scanned again (every sandman write and
    most editors' saves replace a file by rename, which changes it), unless
    ``every_file`` and one of its indexed files has not the time and size
    recorded (a file rewritten in place changes those, not its folder's: one
    ``lstat`` per memory). Returns
    how many memories were (re)read or dropped. Runs as one write
    transaction, so a concurrent search sees the index before or after it.
    """
    seen = {folder.name: _folder_mtime(folder) for folder in folders}
    if trust_folders:
        recorded = dict(connection.execute("SELECT name, mtime_ns FROM banks").fetchall())
        gone = [name for name in recorded if name not in seen]
        # A file rewritten in place changes its own time and size, never its folder's.
        edited = _edited_in_place(connection, layout) if every_file else set()
        folders = [folder for folder in folders
                   if recorded.get(folder.name) != seen[folder.name] or folder.name in edited]
        if not folders and not gone:
            return 0
    current: dict[str, tuple[int, int]] = {}
    for folder in folders:
        current.update(_live_files(folder))
    connection.execute("BEGIN IMMEDIATE")
    try:
        if every_bank and not trust_folders:
            rows = connection.execute("SELECT id, path, mtime_ns, size FROM files").fetchall()
            connection.execute("DELETE FROM banks")
        else:
            names = [folder.name for folder in folders] + (gone if trust_folders else [])
            marks = ",".join("?" * len(names))
            rows = connection.execute(
                f"SELECT id, path, mtime_ns, size FROM files WHERE bank IN ({marks})", names).fetchall()
            connection.execute(f"DELETE FROM banks WHERE name IN ({marks})", names)
        connection.executemany("INSERT INTO banks (name, mtime_ns) VALUES (?, ?)",
                               [(folder.name, seen[folder.name]) for folder in folders
                                if seen[folder.name] is not None])
        known = {path: (row_id, mtime, size) for row_id, path, mtime, size in rows}
        changed = 0
        for path, (row_id, mtime, size) in known.items():
            if current.get(path) != (mtime, size):
                _drop_row(connection, row_id)
                changed += path not in current
        for path, (mtime, size) in current.items():
            if path in known and known[path][1:] == (mtime, size):
                continue
            changed += _add_row(connection, layout, path, mtime, size)
        connection.execute("DELETE FROM words WHERE memories <= 0")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return changed


def _drop_row(connection: sqlite3.Connection, row_id: int) -> None:
    """Remove one memory's rows (``files``, ``memories``) and its words' counts."""
    old = connection.execute("SELECT name, description, body FROM memories WHERE rowid = ?", (row_id,)).fetchone()
    if old is not None:
        _count_words(connection, old, -1)
    connection.execute("DELETE FROM files WHERE id = ?", (row_id,))
    connection.execute("DELETE FROM memories WHERE rowid = ?", (row_id,))


def _add_row(connection: sqlite3.Connection, layout: Layout, path: str, mtime: int, size: int) -> bool:
    """Index the memory at ``memories/<path>`` read at ``mtime`` (ns) and ``size`` (bytes); False
    when it cannot be read."""
    memory = _read_memory(layout, path)
    if memory is None:
        return False
    name, description, memory_type, body = memory
    bank, file = path.split("/", 1)
    cursor = connection.execute(
        "INSERT INTO files (path, bank, file, type, mtime_ns, size) VALUES (?, ?, ?, ?, ?, ?)",
        (path, bank, file, memory_type, mtime, size))
    connection.execute("INSERT INTO memories (rowid, name, description, body) VALUES (?, ?, ?, ?)",
                       (cursor.lastrowid, name, description, body))
    _count_words(connection, (name, description, body), 1)
    return True


def _edited_in_place(connection: sqlite3.Connection, layout: Layout, paths: list[str] | None = None) -> set[str]:
    """The banks holding an indexed memory (of ``paths``, ``<bank>/<file>``; None: every one) whose
    file's ``lstat`` modification time (ns) or size (bytes) is not the one recorded in ``files``,
    or that is gone: one ``lstat`` per memory."""
    base = str(layout.memories)
    edited = set()
    if paths is None:
        rows = connection.execute("SELECT path, bank, mtime_ns, size FROM files")
    else:
        rows = connection.execute("SELECT path, bank, mtime_ns, size FROM files WHERE path IN"
                                  f" ({','.join('?' * len(paths))})", paths)
    for path, bank, mtime, size in rows:
        if bank in edited:
            continue
        try:
            stat = os.lstat(f"{base}/{path}")
        except OSError:
            edited.add(bank)
            continue
        if stat.st_mtime_ns != mtime or stat.st_size != size:
            edited.add(bank)
    return edited


def _count_words(connection: sqlite3.Connection, texts: tuple[str, str, str], step: int) -> None:
    """Add ``step`` (1: a memory indexed, -1: one dropped) to the ``words`` count of each word of
    ``texts`` (a memory's name, description and body): query.vocabulary's words, each once."""
    found = [(word,) for word in vocabulary(" ".join(texts))]
    if step > 0:
        connection.executemany("INSERT INTO words (word, memories) VALUES (?, 1)"
                               " ON CONFLICT (word) DO UPDATE SET memories = memories + 1", found)
    else:
        connection.executemany("UPDATE words SET memories = memories - 1 WHERE word = ?", found)


def build(layout: Layout) -> int:
    """Build the index whole from the banks into a temp file and move it into place.

    Returns the number of memories indexed. Raises SearchIndexError naming the index (not
    the temp file, which is gone by then) when the index's place cannot take it (a folder
    there, a read-only root), OSError (a bank unreadable), sqlite3.Error.
    """
    target = layout.search_index
    temp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.build")
    try:
        try:
            connection = sqlite3.connect(temp, isolation_level=None)
            connection.execute("PRAGMA user_version")  # sqlite opens lazily: fail here, not half way
        except (sqlite3.Error, OSError) as error:
            raise SearchIndexError(
                f"search index {target} cannot be built in {target.parent} ({error}); "
                "make that folder writable and search again") from None
        try:
            connection.executescript(_SCHEMA)
            connection.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            _sync(connection, layout, bank_folders(layout), every_bank=True)
            count = connection.execute("SELECT count(*) FROM files").fetchone()[0]
        finally:
            connection.close()
        with open(temp, "rb+") as stream:
            os.fsync(stream.fileno())
        try:
            os.replace(temp, target)
        except OSError as error:
            raise SearchIndexError(
                f"search index {target} cannot be replaced ({error.strerror or error}); it is derived: "
                f"remove it (rm -r '{target}') and search again") from None
        for stale in (target.with_name(target.name + "-wal"), target.with_name(target.name + "-shm")):
            stale.unlink(missing_ok=True)  # a replaced database's logs would be read as its own
        fsync_dir(target.parent)
    finally:
        temp.unlink(missing_ok=True)
    return count


@contextmanager
def _writer(layout: Layout):
    """Hold ``layout.search_index_lock`` exclusively while the index is written or replaced.

    Two processes building at once (a prompt hook's detached refresh and a search) replaced
    the file under each other's journal: the loser failed with "disk I/O error". Readers
    take no lock. Raises OSError when the lock file cannot be opened."""
    descriptor = os.open(layout.search_index_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def rebuild(layout: Layout) -> int:
    """``build`` under the writers' lock (``sandman search --reindex``); its returns and raises."""
    with _writer(layout):
        return build(layout)


def open_index(layout: Layout, *, every_file: bool = False) -> sqlite3.Connection:
    """Return a connection to an index that is current with every bank.

    A missing, corrupt or older-schema index is rebuilt (``build``); an
    existing one is brought up to date (``_sync``, by the bank folders' times;
    with ``every_file``, by every memory's time and size too, which finds a
    file rewritten in place), under the writers' lock (``_writer``). Raises
    OSError, sqlite3.Error (a rebuilt index that still cannot be opened).
    """
    with _writer(layout):
        return _open_current(layout, every_file)


def _open_current(layout: Layout, every_file: bool = False) -> sqlite3.Connection:
    path = layout.search_index
    if path.is_file():
        connection = None
        try:
            connection = _connect(path)
            if _is_current_schema(connection):
                _sync(connection, layout, bank_folders(layout), every_bank=True, trust_folders=True,
                      every_file=every_file)
                return connection
        except sqlite3.DatabaseError:
            pass
        if connection is not None:
            connection.close()
    build(layout)
    return _connect(path)


@contextmanager
def _current(layout: Layout) -> Iterator[sqlite3.Connection | None]:
    """The search index's connection, under the writers' lock, when there is an index of the
    current schema; else None (the next search builds or rebuilds it). Closed at the end."""
    if not layout.search_index.is_file():
        yield None
        return
    with _writer(layout):
        try:
            connection = _connect(layout.search_index) if layout.search_index.is_file() else None
        except sqlite3.DatabaseError:
            connection = None
        if connection is None:
            yield None
            return
        try:
            yield connection if _is_current_schema(connection) else None
        finally:
            connection.close()


def refresh(layout: Layout, banks: list[str]) -> int | None:
    """Bring the index's rows of the named banks in line with their folders (commit_memory's step).

    Does nothing and returns None when there is no index (the next search
    builds it). Returns how many memories changed. Raises sqlite3.Error, OSError.
    """
    with _current(layout) as connection:
        if connection is None:
            return None
        return _sync(connection, layout, [layout.bank(name) for name in banks], every_bank=False)


def refresh_written(layout: Layout, bank: str, files: list[str], folder_mtime: int | None) -> int | None:
    """``refresh`` for a writer that knows what it changed in one bank folder: the memory files
    ``files`` (names; written, replaced or removed), the folder's modification time (ns) having
    been ``folder_mtime`` before it wrote.

    When the index recorded that time for the bank, it was current with the folder then: only
    ``files`` are read again and the bank's time becomes the folder's now, so a remember costs
    what it wrote, not what its bank holds (issue 29). Else the bank is brought in line whole,
    as ``refresh`` does. Same returns and raises as ``refresh``.
    """
    folder = layout.bank(bank)
    with _current(layout) as connection:
        if connection is None:
            return None
        row = connection.execute("SELECT mtime_ns FROM banks WHERE name = ?", (bank,)).fetchone()
        if folder_mtime is None or row is None or row[0] != folder_mtime:
            return _sync(connection, layout, [folder], every_bank=False)
        now = _folder_mtime(folder)
        paths = [f"{bank}/{name}" for name in files]
        connection.execute("BEGIN IMMEDIATE")
        try:
            changed = 0
            for path in paths:
                found = connection.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
                if found is not None:
                    _drop_row(connection, found[0])
                try:
                    stat = os.lstat(layout.memories / path)
                except FileNotFoundError:
                    stat = None
                if stat is None or stat.st_mode & 0o170000 != 0o100000:  # gone, or not a regular file
                    changed += found is not None
                    continue
                changed += _add_row(connection, layout, path, stat.st_mtime_ns, stat.st_size)
            connection.execute("DELETE FROM words WHERE memories <= 0")
            connection.execute("DELETE FROM banks WHERE name = ?", (bank,))
            if now is not None:
                connection.execute("INSERT INTO banks (name, mtime_ns) VALUES (?, ?)", (bank, now))
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        return changed


def _unmark(text: str) -> str:
    return text.replace(_OPEN, "").replace(_CLOSE, "")


def _matching_line(name: str, marked_description: str, marked_body: str) -> tuple[int, str]:
    """The first body line holding a matched word (its 1-based number), else the description
    when it matched (0), else the name (0). The marked texts are highlight()'s, words in marks."""
    if _OPEN in marked_body:
        for number, line in enumerate(marked_body.split("\n"), start=1):
            if _OPEN in line:
                return number, _unmark(line).strip()[:LINE_MAX_CHARS]
    if _OPEN in marked_description:
        return 0, _unmark(marked_description)[:LINE_MAX_CHARS]
    return 0, name[:LINE_MAX_CHARS]


def query_terms(text: str) -> list[str]:
    """The terms a search for ``text`` uses (sandman.banks.query.terms, MAX_TERMS at most)."""
    return terms(text, MAX_TERMS)


def rank(
    layout: Layout,
    text: str,
    limit: int = DEFAULT_LIMIT,
    banks: list[str] | None = None,
    *,
    memory_type: str | None = None,
    related: bool = True,
    seconds: float = QUERY_SECONDS,
) -> list[Hit]:
    """Return the memories sharing meaningful words with ``text``, best first, at most ``limit``.

    ``text`` is a person's words (a question, a prompt): sandman.banks.query
    reads its first MAX_QUERY_CHARS characters into at most MAX_TERMS terms,
    any of which may match (stemmed), with their related words when
    ``related``. ``banks`` limits the search to those bank folder names (None:
    every bank); ``memory_type`` to one type. Ranked by bm25 (WEIGHTS); lower
    ``score`` first. Returns [] when ``text`` holds no meaningful word or there
    is no root. Raises InputError when the query's SQLite work passes
    ``seconds``, OSError, sqlite3.Error (docs/search.md).
    """
    found_terms = terms(text, MAX_TERMS)
    if not found_terms or not layout.root.is_dir():
        return []
    if banks is not None and not banks:
        return []
    connection = open_index(layout)
    deadline = time.monotonic() + seconds
    connection.set_progress_handler(lambda: time.monotonic() >= deadline, PROGRESS_STEPS)
    try:
        hits = _ranked(connection, text, found_terms, limit, banks, memory_type, related)
        # A hit's file rewritten in place (its folder's time unchanged) since it was indexed: its
        # banks are read again and the query asked again, so no hit shows what a file no longer says.
        edited = _edited_in_place(connection, layout, [hit.path for hit in hits]) if hits else set()
        if edited:
            with _writer(layout):
                _sync(connection, layout, [layout.bank(name) for name in sorted(edited)], every_bank=False)
            hits = _ranked(connection, text, found_terms, limit, banks, memory_type, related)
        return hits
    except sqlite3.OperationalError as error:
        # The progress handler stopped it: "interrupted", or what the step it stopped reports.
        if str(error) != "interrupted" and time.monotonic() < deadline:
            raise
        raise InputError(f"search query {shown(text)} took over {seconds:g} s; use fewer words") from None
    finally:
        connection.close()


def _ranked(connection: sqlite3.Connection, text: str, found_terms: list[str], limit: int, banks: list[str] | None,
            memory_type: str | None, related: bool) -> list[Hit]:
    """rank's work on an open index: ``found_terms`` (query.terms of ``text``), a word no memory holds
    corrected to the nearest the index holds (query.corrections). Raises sqlite3.Error."""
    expression = fts_query(text, MAX_TERMS, related=False, corrected=corrections(connection, found_terms))
    related_expression = fts_related(text, MAX_TERMS) if related else None
    weights = ", ".join(map(str, WEIGHTS))
    if related_expression is None:
        scored = f"SELECT rowid AS id, bm25(memories, {weights}) AS score FROM memories WHERE memories MATCH ?"
        parameters: list[object] = [expression]
    else:
        # The words typed score in full, their related words at RELATED_WEIGHT (bm25 is negative: lower first).
        scored = (f"SELECT id, sum(score) AS score FROM ("
                  f"SELECT rowid AS id, bm25(memories, {weights}) AS score FROM memories WHERE memories MATCH ?"
                  f" UNION ALL SELECT rowid, {RELATED_WEIGHT} * bm25(memories, {weights})"
                  f" FROM memories WHERE memories MATCH ?"
                  f") GROUP BY id")
        parameters = [expression, related_expression]
    sql = f"SELECT s.id, s.score FROM ({scored}) s JOIN files f ON f.id = s.id WHERE 1"
    if banks is not None:
        sql += f" AND f.bank IN ({','.join('?' * len(banks))})"
        parameters.extend(banks)
    if memory_type is not None:
        sql += " AND f.type = ?"
        parameters.append(memory_type)
    sql += " ORDER BY s.score, f.path LIMIT ?"
    parameters.append(limit)
    # Then the texts of the few found, their matched words marked: highlight() needs a full-text
    # query of its own (the same words, any of them), and is paid only for these.
    either = expression if related_expression is None else f"{expression} OR {related_expression}"
    scores = dict(connection.execute(sql, parameters).fetchall())
    ids = list(scores)
    rows = connection.execute(
        f"SELECT m.rowid, f.bank, f.file, m.name, m.description, f.type,"
        f" highlight(memories, 1, '{_OPEN}', '{_CLOSE}'), highlight(memories, 2, '{_OPEN}', '{_CLOSE}')"
        f" FROM memories m JOIN files f ON f.id = m.rowid"
        f" WHERE memories MATCH ? AND m.rowid IN ({','.join('?' * len(ids))})", [either, *ids]).fetchall()
    found = {}
    for row_id, bank_name, file, name, description, kind, marked_description, marked_body in rows:
        number, line = _matching_line(name, marked_description, marked_body)
        found[row_id] = Hit(bank_name, file, name, description, kind, number, line, scores[row_id])
    return [found[row_id] for row_id in ids if row_id in found]


def shown(text: str, chars: int = 60) -> str:
    """``text`` quoted for a one-line message: its first ``chars`` characters, ``...`` marking a cut."""
    return repr(text[:chars]) + ("..." if len(text) > chars else "")


def search(
    layout: Layout,
    query: str,
    *,
    bank: str | None = None,
    memory_type: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> list[Hit]:
    """Return the memories sharing meaningful words with ``query``, best first, at most ``limit``.

    ``bank`` is a bank folder name (the caller resolves a directory to it);
    ``memory_type`` one of the memory types. A private span of ``query``
    (sandman.private) is not searched for: only the text outside the spans is.
    Raises InputError (a query without a meaningful word, or one whose SQLite
    work passes QUERY_SECONDS), OSError, sqlite3.Error. See ``rank``.
    """
    query = private.outside(query)
    if not query_terms(query):
        raise InputError(f"search query {shown(query)} has no word to search for (only common words such as"
                         " 'how', 'the'); give a word the memory would hold")
    return rank(layout, query, limit, None if bank is None else [bank], memory_type=memory_type)
