"""``sandman search <query>``: find the memories that answer a question, by the words of their name, description and body.

The index is sandman.banks.search (``.search.sqlite``, derived); this verb
resolves ``--bank`` (a bank name or an absolute directory) and ``--type``,
turns an unreadable index into SearchIndexError, and shapes the hits as lines
or as JSON (docs/search.md).
"""

from __future__ import annotations

import json
import sqlite3

from sandman.banks import search as index
from sandman.banks.listing import find_bank
from sandman.banks.names import MEMORY_TYPES
from sandman.errors import InputError, SearchIndexError
from sandman.layout import Layout

MAX_LIMIT = 1000


def search(
    layout: Layout,
    query: str,
    *,
    bank: str | None = None,
    memory_type: str | None = None,
    limit: int = index.DEFAULT_LIMIT,
    reindex: bool = False,
) -> list[index.Hit]:
    """Return the memories sharing meaningful words with ``query``, best first (sandman.banks.search.search).

    ``query`` is a person's words, bounded there (its first 10,000 characters,
    32 terms, 1 s of SQLite work: docs/search.md, "Bounds"). ``reindex``
    rebuilds the index from nothing first (a hand edit made in place is
    otherwise found at the next commit in its bank). Raises InputError (no
    meaningful word in the query, a query past its time bound, an unknown bank
    or type, a limit outside 1..1000), SearchIndexError (the index cannot be
    built or read).
    """
    if "\0" in query:
        raise InputError("search query holds a NUL character; remove it")
    if memory_type is not None and memory_type not in MEMORY_TYPES:
        raise InputError(f"unknown memory type {memory_type!r}; use one of {', '.join(MEMORY_TYPES)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"--limit {limit} is out of range; use 1 to {MAX_LIMIT}")
    folder = None
    if bank is not None:
        found = find_bank(layout, bank)
        if found is None:
            raise InputError(f"no bank {bank!r} under {layout.memories}/; `sandman search` without --bank searches them all")
        folder = found.name
    try:
        if reindex and layout.root.is_dir():
            index.rebuild(layout)
        hits = index.search(layout, query, bank=folder, memory_type=memory_type, limit=limit)
    except sqlite3.Error as error:
        raise SearchIndexError(
            f"search index {layout.search_index} cannot be used ({error}); delete it and search again") from None
    _deliver(layout, hits)
    return hits


def _deliver(layout: Layout, hits: list[index.Hit]) -> None:
    """Count the hits as delivered to the session this search runs in (``$CLAUDE_CODE_SESSION_ID``:
    the model's own ``sandman search`` or MCP ``search``); a person's search in a terminal is no session's."""
    from sandman import config
    from sandman.recall import ledger

    session = config.claude_session_id()
    if session is not None and hits and layout.root.is_dir():
        ledger.append(layout, session, "search", [hit.path for hit in hits])


def reached(usage) -> str:
    """How often a memory reached a session (a sandman.recall.ledger.Usage, or None): `` · reached 3
    sessions, last 2026-12-05T08:01:12Z``, or nothing for a memory no session was given."""
    if usage is None:
        return ""
    return f" · reached {usage.sessions} session{'' if usage.sessions == 1 else 's'}, last {usage.last}"


def no_match(query: str) -> str:
    """The line a search that found nothing prints: the query cut to its first 60 characters."""
    return f"no memory matches {index.shown(query)}"


def lines(layout: Layout, hits: list[index.Hit]) -> list[str]:
    """Two lines a hit: ``<name> (<type>, <bank>)[ · reached <n> sessions, last <time>]`` and
    ``  memories/<bank>/<file>:<line>: <text>``."""
    from sandman.recall.ledger import usage

    used = usage(layout)
    out = []
    for hit in hits:
        out.append(f"{hit.name} ({hit.type}, {hit.bank}){reached(used.get(hit.path))}")
        where = f"memories/{hit.path}:{hit.line_number}" if hit.line_number else f"memories/{hit.path}"
        out.append(f"  {where}: {hit.line}")
    return out


def to_json(layout: Layout, hits: list[index.Hit]) -> str:
    """The hits as a JSON array of objects (bank, file, name, description, type, line_number, line, score,
    and ``sessions`` and ``last``: how many sessions it reached and when last, 0 and null for none)."""
    from sandman.recall.ledger import usage

    used = usage(layout)
    rows = []
    for hit in hits:
        reach = used.get(hit.path)
        rows.append({**hit._asdict(), "sessions": reach.sessions if reach else 0, "last": reach.last if reach else None})
    return json.dumps(rows, ensure_ascii=False, indent=2)
