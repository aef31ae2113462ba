"""The archive below the take verb: a taken session's parts, its take record, its companion links.

A take gives the live transcript a second name under ``.archive/`` (a hard
link: one file, two names, never a copy) and leaves Claude Code's own name in
place, so ``claude --resume``, ``--continue`` and the ``/resume`` picker keep
working (docs/take.md, "Resume after a take"). Claude Code 2.1.332 appends a
resumed session to that same file (same inode, same session id, earlier bytes
untouched), so what a take vouches for is a *prefix*: its length and its
SHA-256 (``bytes``, ``sha256``). A pointer asks dream to read one *part*, the
byte range ``[offset, bytes)``; dream refuses a prefix that no longer hashes
to the recorded digest (``ArchiveChanged``), so the minds read exactly the
bytes that were archived.

``.takes/<sid>.json`` (the take record, docs/BANK-FORMAT.md "Take records")
remembers the last take of each session after its pointer is swept, so a
second ending proposes only what is new, and ``take --all``/``--missed`` pass
over a taken transcript nothing was added to.

Standard library only: take --hook imports it.
"""
