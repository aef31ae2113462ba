"""The retired ledger and the failure-to-forget tripwire (docs/BANK-FORMAT.md, "The retired ledger").

``curation/retired.jsonl`` (versioned) holds one JSON object a line for each
memory a machine decision archived without a successor — a curator's
``archive`` or a merge's absorbed members, upkeep's ``prune`` and merge — and
each live memory a ``reconcile`` revert removed (machine.reconcile)::

    {"bank": "<bank>", "file": "<file>", "type": "...", "name": "...", "description": "...",
     "key": "<type>_<slug>", "body_sha": "<SHA-256 of the cleaned body>",
     "at": "<ISO UTC>", "by": "curate <set id>" | "upkeep" | "reconcile <event or shift>"
                         | "forget <event id>"}

and one ``{"bank", "name", "key", "body_sha", "at", "readded": true}`` line when the
owner re-adds such a memory by hand (``sandman remember``): that memory is
no longer retired. A dream that proposes a retired memory again is refused
and counted (the dream's ``tripped`` count and a ``refused-retired`` journal
line), and ``import claude-memory`` skips it (``retired``): what a curator,
upkeep or forget retired does not creep back through the next session that
mentions it. "Again" is the same bank and the same file key or body
(``retired``), or the same claim in other words (``retiring``): a line of the
memory's type, in its bank or a bank above it, whose name and description
state what it states by the test dream's dedupe uses against live memories
(``sandman.minds.evidence.same``). Lines are only appended (the file is rewritten whole inside the
same bank transaction as the archive).
"""

from __future__ import annotations

import json

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sandman.banks.memory import Memory, clean_body
from sandman.banks.names import memory_filename
from sandman.journal import iso, now_utc
from sandman.layout import Layout
from sandman.store.atomic import read_regular

if TYPE_CHECKING:
    from sandman.minds.evidence import Evidence


def keys(memory: Memory) -> tuple[str, str]:
    """Return ``(file key, body SHA-256)``: what a memory is recognised by."""
    import hashlib  # here: a remember into a root with no ledger never hashes (issue 29: 1.2 ms to import)

    key = memory_filename(memory.type, memory.name)[: -len(".md")]
    body = clean_body(memory.body or "").strip()
    return key, hashlib.sha256(body.encode("utf-8")).hexdigest()


def path(layout: Layout):
    return layout.curation / "retired.jsonl"


def lines(layout: Layout) -> list[dict]:
    """Return the ledger's lines (an unreadable line is skipped)."""
    try:
        text = read_regular(path(layout)).decode("utf-8", "replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def retired(layout: Layout, bank: str, memory: Memory) -> dict | None:
    """Return the ledger line that retired a memory like ``memory`` in ``bank``, None when none
    does (or the owner re-added it by hand since)."""
    found = lines(layout)
    if not found:
        return None
    key, body_sha = keys(memory)
    hit = None
    for line in found:
        if line.get("bank") != bank or not (line.get("key") == key or line.get("body_sha") == body_sha):
            continue
        hit = None if line.get("readded") else line
    return hit


def in_force(found: Sequence[dict]) -> list[dict]:
    """Return the retiring lines of ``found`` (the ledger, in order) that no later ``readded``
    line of their bank lifts (same key or same body)."""
    readded = [(n, line) for n, line in enumerate(found) if line.get("readded")]
    kept = []
    for n, line in enumerate(found):
        if line.get("readded"):
            continue
        if any(m > n and later.get("bank") == line.get("bank")
               and (later.get("key") == line.get("key") or later.get("body_sha") == line.get("body_sha"))
               for m, later in readded):
            continue
        kept.append(line)
    return kept


def retiring(layout: Layout, banks: Iterable[str], memory_type: str,
             candidates: Sequence[Evidence]) -> dict | None:
    """Return the latest ledger line in force that retired the claim one of ``candidates`` states,
    None when none did.

    ``banks`` are the bank names the claim would reach (its bank and those above it, as
    dream's dedupe reads them); a line counts when it is of one of them, of
    ``memory_type``, and its name and description are ``same`` as a candidate (the
    Consensus test, docs/BANK-FORMAT.md "Consensus"; the body is not kept, so it is
    name and description alone). A line written before the ledger kept descriptions
    is compared by its name.
    """
    # Here, not at the top: remember asks ``retired`` alone, and the minds package costs a process start.
    from sandman.minds.evidence import Evidence, same

    wanted = set(banks)
    for line in reversed(in_force(lines(layout))):
        name = line.get("name")
        if line.get("bank") not in wanted or line.get("type") != memory_type or not isinstance(name, str):
            continue
        description = line.get("description")
        held = Evidence(name, description if isinstance(description, str) else "")
        if any(same(held, candidate) for candidate in candidates):
            return line
    return None


def entry(bank: str, file: str, memory: Memory, by: str) -> dict:
    """The ledger line retiring ``memory`` (file ``file`` of ``bank``), written by ``by``.

    Name and description are kept so that a rewording is recognised (``retiring``);
    the body only as its SHA-256.
    """
    key, body_sha = keys(memory)
    return {"bank": bank, "file": file, "type": memory.type, "name": memory.name,
            "description": memory.description, "key": key, "body_sha": body_sha, "at": iso(now_utc()), "by": by}


def readded(bank: str, memory: Memory) -> dict:
    """The ledger line lifting a retirement of ``memory`` (re-added by hand). Its name stands beside its key, so
    the secrets ban reads the key as the name it was made from (docs/secrets.md, "A memory's own file name"): a
    key alone that holds a hash (``project_fixed_in_<40 hex>``) read as a prefixed token and refused the
    re-add."""
    key, body_sha = keys(memory)
    return {"bank": bank, "name": memory.name, "key": key, "body_sha": body_sha, "at": iso(now_utc()),
            "readded": True}


def append(tx, layout: Layout, new: list[dict]) -> None:
    """Append ``new`` lines to the ledger inside bank transaction ``tx`` (one commit with the archive)."""
    if not new:
        return
    target = path(layout)
    try:
        old = read_regular(target).decode("utf-8")
    except FileNotFoundError:
        old = ""
    if old and not old.endswith("\n"):
        old += "\n"
    target.parent.mkdir(parents=True, exist_ok=True)
    tx.write_file(target, old + "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in new))
