"""The sync's run and its automation (``run``), below the ``sandman sync`` verb (docs/sync.md); the git
pieces it is built from are sandman/store/sync.py."""
