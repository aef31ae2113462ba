"""``sandman init``: create or adopt the memory root, idempotently."""

from __future__ import annotations

from sandman import journal
from sandman.banks.commit import index_every_bank
from sandman.layout import Layout
from sandman.store import repo as store


def init(layout: Layout) -> bool:
    """Create the root's tree and git repository; return True when anything changed.

    A folder that exists but is not a repository (or a repository with no
    commit yet) is adopted in place: its visible files become the first
    commit, and every bank's MEMORY.md is regenerated (a bank without one
    would be invisible to recall). A repository with history that is not a
    memory root is refused (store.repo.ensure_root). Raises ForeignRepository,
    LeftoverSecret, RepositoryError, LockBusy, OSError (the root cannot be
    created).
    """
    changed = store.ensure_root(layout)
    for folder in (layout.memories, layout.recent, layout.log, layout.trace):
        folder.mkdir(parents=True, exist_ok=True)
    # An adopted folder may hold memory files without indexes; recall reads MEMORY.md.
    changed = bool(index_every_bank(layout)) or changed
    if changed:
        journal.write(layout, "init", "created", root=str(layout.root))
    return changed
