"""Regression: replacing a memory with one of the same name archived the new version.

write_memory wrote the replacement over the old file's path and then moved
"the replaced file" into _archive/: that was the new text, and the bank was
left without the memory.
"""

from __future__ import annotations

from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.memory import Memory, read_memory
from sandman.banks.names import bank_name
from sandman.layout import BANK_ARCHIVE


def test_replace_same_name_keeps_new_live_and_old_archived(layout):
    first = commit_memory(
        layout, Memory(name="Build with make", description="d", type="project", body="one\n"),
        directory="/work/proj", verb="remember",
    )
    with bank_transaction(layout, verb="remember", subject="edit") as tx:
        memory = read_memory(first.path)
        memory.body = "two\n"
        path = tx.write_memory(bank_name("/work/proj"), memory, replaces=first.path.name)
    assert path == first.path
    assert read_memory(path).body == "two\n"
    assert read_memory(path).replaces == first.path.name
    archived = list((path.parent / BANK_ARCHIVE).iterdir())
    assert [read_memory(p).body for p in archived] == ["one\n"]
