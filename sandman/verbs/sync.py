"""``sandman sync``: carry memory between machines through a git remote (docs/sync.md).

The run (fetch, recover, fast-forward, push or merge, under ``.commit.lock``)
and its automation (``maybe_sync_after_commit`` after dream and reflect
commit, ``spawn_background_sync`` from recall's SessionStart hook) live one
floor down, in sandman/sync/run.py; the CLI's options and output are
sandman/sandman/cli's ``sync`` command. This module keeps the verb's old import
path: the names below are that module's. Module level is standard library
only, as the hook needs.
"""

from __future__ import annotations

from sandman.sync.run import SyncResult, background_sync, maybe_sync_after_commit, setup, spawn_background_sync, sync

__all__ = ["SyncResult", "background_sync", "maybe_sync_after_commit", "setup", "spawn_background_sync", "sync"]
