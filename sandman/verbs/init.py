"""``sandman init``: create or adopt the memory root, idempotently (archive.root.create_root)."""

from __future__ import annotations

from sandman.archive.root import create_root
from sandman.layout import Layout


def init(layout: Layout) -> bool:
    """Create the root's tree and git repository; return True when anything changed.

    The command over archive.root.create_root (adopting a folder in place, refusing a
    repository that is not a memory root). Raises ForeignRepository, LeftoverSecret,
    RepositoryError, LockBusy, OSError (the root cannot be created).
    """
    return create_root(layout)
