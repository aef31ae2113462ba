"""The search index as the prompt and file hooks read it: sqlite3 alone, never a rebuild.

The index is sandman.banks.search's (``<root>/.search.sqlite``, docs/BANK-FORMAT.md,
"The search index"): ``files(id, path, bank, ...)``, ``banks(name, mtime_ns)`` and the
FTS5 table ``memories(name, description, body)``. Those hooks run on every prompt and
every file read, so they never build or bring the index up to date themselves: ``open_current``
answers None with a reason when the index is missing, locked, of another schema, or stale for
the banks asked about (a bank folder whose modification time is not the one recorded at its
last scan), and ``refresh_soon`` then starts ``python -m sandman.recall.index`` detached, which
brings it up to date (``sandman.banks.search.open_index``) for the next prompt. Who keeps it
current otherwise: commit_memory refreshes the banks it writes after each commit (and builds
the index when there is none), forget of memories builds it again, and any ``sandman search``
refreshes what changed.

Standard library only at module level (the hook paths import it).
"""

from __future__ import annotations

import os
import sqlite3
import time

from sandman.layout import Layout

# sandman.banks.search.WEIGHTS: bm25 weights of name, description, body.
WEIGHTS = "10.0, 4.0, 1.0"
# A writer holds the index for a moment (a commit's refresh); a reader waits this long, then gives up.
BUSY_TIMEOUT_S = 0.25
# The best-ranked memories of every bank that are filtered to the banks asked about, per one asked for.
RANK_WINDOW = 20
# A stale index starts at most one detached refresh per this many seconds.
REFRESH_EVERY_S = 30


class Found(tuple):
    """One memory read from the index: its row ``id``, ``path`` (``<bank>/<file>``), ``bank`` and
    ``file``, its ``name``, ``description`` and ``body`` (str), its bm25 ``score`` (lower ranks first),
    and the ``mtime_ns`` (nanoseconds) and ``size`` (bytes) its file had when it was indexed.
    A plain tuple with named fields: a namedtuple's class is built by exec at import, on every prompt."""

    __slots__ = ()
    id = property(lambda self: self[0])
    path = property(lambda self: self[1])
    bank = property(lambda self: self[2])
    file = property(lambda self: self[3])
    name = property(lambda self: self[4])
    description = property(lambda self: self[5])
    body = property(lambda self: self[6])
    score = property(lambda self: self[7])
    mtime_ns = property(lambda self: self[8])
    size = property(lambda self: self[9])


def open_current(layout: Layout, banks: list[str]) -> tuple[sqlite3.Connection | None, str | None]:
    """Return ``(connection, None)`` when the index is current for ``banks`` (bank folder names),
    else ``(None, reason)``: ``index-missing``, ``index-locked``, ``index-unreadable`` (not an
    index) or ``index-stale`` (a bank folder changed since its last scan, or appeared, or went).
    The schema version is not compared (reading sandman.banks.search's constant costs the hook
    its imports): an index of an older schema is used as it is until a search or the refresh
    that follows the next commit in one of ``banks`` rebuilds it. Never raises."""
    path = layout.search_index
    if not path.is_file():
        return None, "index-missing"
    connection = None
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        marks = ",".join("?" * len(banks))
        recorded = dict(connection.execute(f"SELECT name, mtime_ns FROM banks WHERE name IN ({marks})", banks))
    except sqlite3.OperationalError as error:
        if connection is not None:
            connection.close()
        return None, "index-locked" if "locked" in str(error) or "busy" in str(error) else "index-unreadable"
    except sqlite3.Error:
        if connection is not None:
            connection.close()
        return None, "index-unreadable"
    for name in banks:
        try:
            mtime = os.stat(layout.bank(name)).st_mtime_ns
        except OSError:
            mtime = None
        if recorded.get(name) != mtime:
            connection.close()
            return None, "index-stale"
    return connection, None


def refresh_soon(layout: Layout) -> int | None:
    """Start ``python -m sandman.recall.index`` detached (it brings the index up to date), unless
    one was started in the last REFRESH_EVERY_S seconds; return its pid. Never raises, never waits."""
    stamp = layout.search_refresh_stamp
    now = time.time()
    try:
        if now - stamp.stat().st_mtime < REFRESH_EVERY_S:
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    import sys

    from sandman import journal
    from sandman.store.detach import spawn_detached

    try:
        stamp.touch()
        os.utime(stamp, (now, now))
        return spawn_detached([sys.executable, "-m", "sandman.recall.index"],
                              layout.trace_file("recall", journal.now_utc().strftime("%Y-%m-%d")),
                              {**os.environ, "SANDMAN_ROOT": str(layout.root)})
    except OSError:
        return None


def ranked(connection: sqlite3.Connection, expression: str, banks: list[str], limit: int) -> list[Found]:
    """Return the memories of ``banks`` matching the FTS5 ``expression``, best first, at most ``limit``.

    Raises sqlite3.Error (an expression FTS5 refuses, a locked index)."""
    marks = ",".join("?" * len(banks))
    # Ranked first on the FTS5 table alone, the bank filter on the few best: joining the files
    # table inside the ranking read every match's columns (10,000 bodies for a common word).
    rows = connection.execute(
        f"WITH best AS (SELECT rowid AS id, bm25(memories, {WEIGHTS}) AS score FROM memories"
        " WHERE memories MATCH ? ORDER BY score LIMIT ?)"
        " SELECT f.id, f.path, f.bank, f.file, m.name, m.description, m.body, best.score, f.mtime_ns, f.size"
        f" FROM best JOIN files f ON f.id = best.id JOIN memories m ON m.rowid = best.id"
        f" WHERE f.bank IN ({marks}) ORDER BY best.score, f.path LIMIT ?",
        [expression, RANK_WINDOW * limit, *banks, limit]).fetchall()
    return [Found(row) for row in rows]


def count(connection: sqlite3.Connection, expression: str, cap: int) -> int:
    """Return how many memories (of every bank) match the FTS5 ``expression``, counted no further
    than ``cap`` + 1 (a word in every memory costs what a rare one does). Raises sqlite3.Error."""
    return connection.execute("SELECT count(*) FROM (SELECT 1 FROM memories WHERE memories MATCH ? LIMIT ?)",
                              [expression, cap + 1]).fetchone()[0]


def main() -> int:
    """``python -m sandman.recall.index``: bring the index of ``$SANDMAN_ROOT`` up to date (build it when
    missing); the detached child of ``refresh_soon``. Returns the exit status."""
    from sandman import config, journal
    from sandman.banks import search
    from sandman.errors import ConfigError

    try:
        layout = Layout(config.root())
    except ConfigError as error:
        print(f"sandman: {error}")
        return 1
    if not layout.memories.is_dir():
        return 0
    try:
        search.open_index(layout, every_file=True).close()  # finds a memory rewritten in place too
    except (OSError, sqlite3.Error) as error:
        journal.write(layout, "recall", "failed", step="index-refresh", error=str(error))
        return 1
    journal.write(layout, "recall", "index-refreshed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
