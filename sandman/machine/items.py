"""The weekday brief's items: memories by bearing, open findings, the week's branches
(docs/BANK-FORMAT.md § shifts, "The brief"; "Items").

An **item** is one thing a brief carries that a shift can act on and name: a memory
(``<bank>/<file>``), a breath (``b-…``), a proposal (``ev-…``), a finding (``f-<8 hex>``),
a branch (``shift/<id>``). ``shift.start`` logs each item's id and fingerprint
(brief.Slot.item_prints), and the week's score counts an item used when the shift it was
briefed to, or a later one, names its id in a trail event or its handoff (``used_by``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from datetime import datetime, timedelta

from sandman import journal
from sandman.layout import Layout
from sandman.machine import trail as trails

MEMORIES_BUDGET_CHARS = 6_000  # what the memories slot may hold before the brief's own cap
MEMORY_BODY_MAX_CHARS = 800  # the body of a memory ranked by bearing
RANKED_MAX = 8  # memories ranked by bearing, at most
QUERY_MAX_TERMS = 24  # the night's words the ranking reads, first seen first
FINDINGS_DAYS = 14  # how far back open findings are gathered


def finding_id(shift_id: str, text: str) -> str:
    """``f-<8 hex>``: the id of finding ``text`` of shift ``shift_id`` (SHA-256 of both)."""
    return "f-" + hashlib.sha256(f"{shift_id}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _chain(layout: Layout, repo: str) -> list[str]:
    """The banks recall reads for ``repo``, in the brief's order: the repository's own bank, its
    ancestors' nearest first, the user-wide bank last; only those that exist."""
    from sandman.recall.moments import bank_chain

    banks = bank_chain(layout, repo)
    ordered = banks[1:] + banks[:1]
    return [name for name in ordered if layout.bank(name).is_dir()]


def memories(layout: Layout, repo: str, query: str,
             budget: int = MEMORIES_BUDGET_CHARS) -> tuple[list[tuple[str, str]], str]:
    """``([(id, text)], label)``: the memories of ``repo``'s bank chain for its brief, within
    ``budget`` characters. First the memories that rank best for ``query`` — the night's work: the
    plan, the approved proposals' titles, the theme's job — each with at most MEMORY_BODY_MAX_CHARS of its
    body; then every other memory's ``MEMORY.md`` line, the repository's own bank first. The ranking
    is recall's: bm25 over the search index with recall's weights (recall.index.ranked), each of
    the first QUERY_MAX_TERMS meaningful words of ``query`` with its related words, any of them
    matching (no relevance floor: the brief lists the best few, a prompt adds only the sure ones).
    ``id`` is
    ``<bank>/<file>``. An index that cannot be opened ranks nothing (the label says so)."""
    from sandman.banks import listing
    from sandman.banks.query import group, terms
    from sandman.recall import index

    banks = _chain(layout, repo)
    if not banks:
        return [], "no bank for this repository or its ancestors"
    found: list[tuple[str, str]] = []
    used = 0
    ranked_ids: set[str] = set()
    note = "ranked by bearing on the night's work, then each bank's MEMORY.md"
    try:
        from sandman.banks.search import open_index

        words = terms(query, QUERY_MAX_TERMS)
        ranked = []
        if words:
            connection = open_index(layout)
            try:
                ranked = index.ranked(connection, " OR ".join(f"({group(word)})" for word in words), banks,
                                      RANKED_MAX)
            finally:
                connection.close()
    except (OSError, sqlite3.Error) as error:
        ranked, note = [], f"not ranked (the search index could not be opened: {error}); each bank's MEMORY.md"
    for hit in ranked:
        body = hit.body.strip()
        if len(body) > MEMORY_BODY_MAX_CHARS:
            body = body[:MEMORY_BODY_MAX_CHARS] + " […]"
        text = f"- {hit.path}: {hit.name} — {hit.description}\n  " + body.replace("\n", "\n  ")
        if used + len(text) > budget:
            break
        found.append((hit.path, text))
        ranked_ids.add(hit.path)
        used += len(text) + 1
    for name in banks:
        for entry in listing.read_bank(layout.bank(name), None).entries:
            ident = f"{name}/{entry.file}" if entry.file else None
            if ident is None or ident in ranked_ids:
                continue
            text = f"- {ident}: {entry.line.lstrip('- ').strip()}"
            if used + len(text) > budget:
                return found, note + f"; cut at {budget:,} characters"
            found.append((ident, text))
            used += len(text) + 1
    return found, note


def _revoked(trail: trails.Trail, shift_id: str) -> bool:
    return trail.revocation(shift_id) is not None


def usage_text(layout: Layout, trail: trails.Trail, shift_id: str) -> str:
    """What shift ``shift_id`` wrote that may name an item: its trail events' summaries and data
    (its ``shift.start`` aside) and its ``handoff.md``."""
    parts = [f"{e.summary} {json.dumps(e.data, ensure_ascii=False)}" for e in trail.events
             if e.shift == shift_id and e.kind != "shift.start"]
    try:
        parts.append((layout.shift_dir(shift_id) / "handoff.md").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        pass
    return "\n".join(parts)


def findings(layout: Layout, trail: trails.Trail, repo: str, metas: list[dict]) -> list[tuple[str, str]]:
    """``[(id, text)]``: the open findings of ``repo`` — those earlier reports (``meta.json``
    ``findings`` of its shifts in ``metas``) listed, their shift not revoked, and no later shift on
    it named (by id) since. One line each: ``- f-… (from <shift> on <day>): <finding>``."""
    key = os.path.normpath(repo)
    mine = [m for m in metas if isinstance(m.get("repo"), str) and os.path.normpath(m["repo"]) == key
            and not m.get("rest") and isinstance(m.get("id"), str)]
    found = []
    for n, meta in enumerate(mine):
        if _revoked(trail, meta["id"]):
            continue
        later = "\n".join(usage_text(layout, trail, other["id"]) for other in mine[n + 1:])
        for text in meta.get("findings") or []:
            ident = finding_id(meta["id"], str(text))
            if ident in later:
                continue
            found.append((ident, f"- {ident} (from {meta['id']} on {meta.get('day')}): {text}"))
    return found


def branches(trail: trails.Trail, repo: str, metas: list[dict]) -> list[tuple[str, str]]:
    """``[(branch, text)]``: this week's shift branches of ``repo`` (``metas``: the week's
    ``meta.json``), one line each: ``- shift/<id> — <weekday> <theme>, <outcome>, <n> commit(s)``,
    a revoked one marked ``revoked``."""
    key = os.path.normpath(repo)
    found = []
    for meta in metas:
        if meta.get("rest") or not meta.get("branch") or not isinstance(meta.get("repo"), str):
            continue
        if os.path.normpath(meta["repo"]) != key:
            continue
        state = "revoked" if _revoked(trail, str(meta.get("id"))) else (meta.get("outcome") or "open")
        found.append((meta["branch"], f"- {meta['branch']} — {meta.get('weekday')} {meta.get('theme')}, {state}, "
                                      f"{len(meta.get('commits') or [])} commit(s)"))
    return found


def findings_since(now: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` FINDINGS_DAYS before ``now``."""
    return journal.iso(now - timedelta(days=FINDINGS_DAYS))


def used_by(layout: Layout, trail: trails.Trail, starts: list[trails.Event]) -> list[dict]:
    """Each item the ``shift.start`` events ``starts`` (oldest first) logged with an id that a shift
    can name: ``{"slot", "id", "briefed", "used_by": [shift ids]}``, where ``used_by`` lists the
    shift it was briefed to and every later one in ``starts`` whose usage_text names the id. Items
    keyed by their slot's name alone (a plan, a score) are left out: no shift names them."""
    texts: dict[str, str] = {}
    rows: dict[tuple[str, str], dict] = {}
    order = [e.shift for e in starts if e.shift]
    for event in starts:
        for item in event.data.get("items") or []:
            if not isinstance(item, dict) or item.get("id") in (None, item.get("slot")):
                continue
            row = rows.setdefault((str(item.get("slot")), str(item["id"])),
                                  {"slot": item.get("slot"), "id": item["id"], "briefed": event.shift,
                                   "used_by": []})
            row.setdefault("_from", order.index(event.shift) if event.shift in order else 0)
    for row in rows.values():
        for shift_id in order[row.pop("_from"):]:
            if shift_id not in texts:
                texts[shift_id] = usage_text(layout, trail, shift_id)
            if row["id"] in texts[shift_id] and shift_id not in row["used_by"]:
                row["used_by"].append(shift_id)
    return list(rows.values())
