"""``sandman banks merge FROM INTO``: fold one bank into another (issue 17).

Made for the banks linked git worktrees got before they shared their main
worktree's (banks/worktrees.py; ``doctor`` lists them), and useful for any two
banks. Every live memory of FROM is written into INTO through the single writer
(``bank_transaction``: slug and collision suffix, index, secrets ban) keeping
its type, name, description, body, ``created``, ``source`` and unknown keys,
then moved into FROM's ``_archive/`` (nothing is deleted). A memory INTO
already holds (same type, name and body) is only archived from FROM. One
commit ``banks: merge <FROM> into <INTO>`` (``Verb: banks``); nothing when
FROM holds no memory. Each memory is a journal line in ``.trace/banks-<date>.log``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sandman import journal
from sandman.banks.commit import bank_transaction
from sandman.banks.index import memory_files
from sandman.banks.listing import find_bank
from sandman.banks.memory import Memory, read_memory
from sandman.banks.names import bank_name, normalize_directory
from sandman.banks.worktrees import worktree_banks
from sandman.errors import FormatError, InputError
from sandman.layout import Layout

VERB = "banks"
__all__ = ["Merged", "merge", "worktree_banks"]  # worktree_banks: sandman/banks/worktrees.py, by its old path


@dataclass
class Merged:
    """What a merge did: ``moved`` and ``duplicates`` (file names of FROM), ``written``
    (paths in INTO), ``unreadable`` (FROM's files left in place) and the commit (None: none)."""

    source: str
    target: str
    moved: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    commit: str | None = None


def _target(layout: Layout, key: str) -> tuple[str, str | None]:
    bank = find_bank(layout, key)
    if bank is not None:
        return bank.name, bank.directory
    if key.startswith("/"):
        directory = normalize_directory(key)
        return bank_name(directory), str(directory)
    raise InputError(f"INTO {key!r} is neither a bank nor an absolute directory; `sandman doctor` lists banks")


def merge(layout: Layout, source: str, target: str) -> Merged:
    """Fold bank ``source`` into bank ``target`` (each a bank name or an absolute directory; ``target``
    may be a directory with no bank yet). Raises InputError (no such FROM, FROM is INTO),
    SecretRefused, LockBusy, RepositoryError; nothing is written then."""
    found = find_bank(layout, source)
    if found is None:
        raise InputError(f"FROM {source!r} is not a bank; `sandman doctor` lists the banks of worktrees")
    into, into_directory = _target(layout, target)
    if into == found.name:
        raise InputError(f"FROM and INTO are the same bank, {into}")
    result = Merged(source=found.name, target=into)
    files = memory_files(found.folder)
    if not files:
        return result
    held = set()
    for path in memory_files(layout.bank(into)):
        try:
            memory = read_memory(path)
        except (FormatError, OSError):
            continue
        held.add((memory.type, memory.name, memory.body))
    with bank_transaction(layout, verb=VERB, subject=f"merge {found.name} into {into}") as tx:
        for path in files:
            try:
                memory = read_memory(path)
            except (FormatError, OSError):
                result.unreadable.append(path.name)
                continue
            if (memory.type, memory.name, memory.body) in held:
                result.duplicates.append(path.name)
            else:
                copy = Memory(name=memory.name, description=memory.description, type=memory.type, body=memory.body,
                              created=memory.created, source=memory.source, witnesses=memory.witnesses,
                              front=memory.front)  # replaces names a file of FROM's _archive/: not carried
                result.written.append(tx.write_memory(into, copy, directory=into_directory))
                held.add((memory.type, memory.name, memory.body))
                result.moved.append(path.name)
            tx.archive(found.name, path.name)
    result.commit = tx.commit
    for name in result.moved:
        journal.write(layout, VERB, "merged", source=found.name, target=into, file=name)
    for name in result.duplicates:
        journal.write(layout, VERB, "deduped", source=found.name, target=into, file=name)
    for name in result.unreadable:
        journal.write(layout, VERB, "skipped", reason="unreadable", source=found.name, file=name)
    journal.write(layout, VERB, "finished", source=found.name, target=into, moved=len(result.moved),
                  duplicates=len(result.duplicates), commit=(result.commit or "")[:12] or None)
    return result
