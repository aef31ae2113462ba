"""``sandman init``: create or adopt the memory root, idempotently."""

from __future__ import annotations

from sandman import journal
from sandman.layout import Layout
from sandman.store import repo as store


def init(layout: Layout) -> bool:
    """Create the root's tree and git repository; return True when anything changed.

    A folder that exists but is not a repository is adopted in place: its
    visible files become the first commit. Raises RepositoryError, LockBusy,
    OSError (the root cannot be created).
    """
    changed = store.ensure_root(layout)
    for folder in (layout.memories, layout.recent, layout.log, layout.trace):
        folder.mkdir(parents=True, exist_ok=True)
    if changed:
        journal.write(layout, "init", "created", root=str(layout.root))
    return changed
