"""The undo log of a bank transaction: a transaction killed half way is rolled back, never half committed.

A bank transaction (sandman.banks.commit) changes several files before its one
git commit: an upkeep merge archives its members and writes the merged memory;
a dream or a remember writes a memory and its index. A process killed in
between (kill -9, the OOM killer, a power cut) leaves part of that in the
working tree, and committing the part (as recovery once did) would apply half
an upkeep plan: a memory archived without the memory that replaces it.

So before each change a transaction appends how to undo it to
``.commit.undo`` (JSON lines, fsynced), the first line naming HEAD as the
transaction began (docs/BANK-FORMAT.md, "Writing a bank"). The log is removed
once the transaction has committed, or has undone itself after an error. The
next transaction's recovery, under the commit lock, finds a log left behind
and:

- when HEAD has moved since its first line, the transaction committed and
  died before removing its log: the log is dropped;
- otherwise every change it records is undone, newest first. Each undo looks
  at the files first, so a recovery killed in turn and replayed does no harm.

A rewritten file whose old bytes the repository holds as a blob (MEMORY.md
of a bank as HEAD holds it, 120 KB in a bank of 1,000) is logged by that
blob's id rather than by its bytes, which recovery reads back from the
repository. Standard library only: the repository is reached through the
callables a caller passes.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from sandman.layout import Layout
from sandman.store.atomic import fsync_dir, move_no_replace, write_atomic


class UndoLog:
    """The undo log of one transaction; nothing touches the disk until the first ``record``.

    ``stored`` (optional), given a file about to be rewritten and its bytes, returns the id (hex)
    of a blob of the repository holding exactly those bytes, or None: the old bytes are then
    logged by that id.
    """

    def __init__(self, layout: Layout, head: str | None,
                 stored: Callable[[Path, bytes], str | None] | None = None):
        self.layout = layout
        self.head = head
        self.stored = stored
        self._fd: int | None = None

    def _append(self, lines: list[dict]) -> None:
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        os.fsync(self._fd)

    def _record(self, step: dict) -> None:
        if self._fd is None:
            self._fd = os.open(self.layout.commit_undo, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
            self._append([{"head": self.head}, step])
            fsync_dir(self.layout.root)
        else:
            self._append([step])

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.layout.root).as_posix()

    def created(self, path: Path) -> None:
        """Record, before it is written, a file that did not exist: its undo removes it."""
        self._record({"created": self._rel(path)})

    def moved(self, source: Path, target: Path) -> None:
        """Record, before the move, a file about to move from ``source`` to ``target``: its undo moves it back."""
        self._record({"moved": [self._rel(source), self._rel(target)]})

    def replaced(self, path: Path, old: bytes | None) -> None:
        """Record, before it changes, a file's bytes (None: it does not exist yet): its undo puts them back."""
        blob = self.stored(path, old) if old is not None and self.stored is not None else None
        if blob is not None:
            self._record({"replaced": self._rel(path), "blob": blob})
            return
        data = None if old is None else base64.b64encode(old).decode("ascii")
        self._record({"replaced": self._rel(path), "data": data})

    def close(self) -> None:
        """The transaction is over (committed, or undone in process): the log goes."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self.layout.commit_undo.unlink(missing_ok=True)


def _inside(layout: Layout, relpath: object) -> Path:
    """Return ``root / relpath`` for a repo-relative path the log recorded; ValueError for anything else."""
    if not isinstance(relpath, str) or not relpath:
        raise ValueError(f"{relpath!r} is not a path")
    parts = PurePosixPath(relpath).parts
    if PurePosixPath(relpath).is_absolute() or ".." in parts or parts[0] == ".git":
        raise ValueError(f"{relpath!r} is not a path of the versioned tier")
    return layout.root.joinpath(*parts)


def remove_created(layout: Layout, path: Path) -> None:
    """Remove a file a transaction created, and the folders that leaves empty (a new bank, its
    ``_archive/``): an empty folder left in ``memories/`` would be taken for a bank and seeded."""
    path.unlink(missing_ok=True)
    _prune(layout, path.parent)


def _prune(layout: Layout, folder: Path) -> None:
    stop = (layout.root, layout.memories, layout.log)
    while folder not in stop and folder.is_relative_to(layout.root):
        try:
            folder.rmdir()
        except OSError:
            return  # not empty, or not ours to remove
        folder = folder.parent


def _undo(layout: Layout, step: dict, read_blob: Callable[[str], bytes] | None) -> None:
    if "created" in step:
        remove_created(layout, _inside(layout, step["created"]))
    elif "moved" in step:
        source, target = (_inside(layout, part) for part in step["moved"])
        if not target.exists():
            return  # the move never happened
        if source.exists():
            if os.path.samefile(source, target):
                target.unlink()  # killed between the link and the unlink of a move: one name too many
            return  # target is another file that was already there: this move never happened
        move_no_replace(target, source)
        _prune(layout, target.parent)
    elif "replaced" in step:
        path = _inside(layout, step["replaced"])
        if "blob" in step:
            write_atomic(path, _blob(step["blob"], read_blob))
        elif step.get("data") is None:
            remove_created(layout, path)
        else:
            write_atomic(path, base64.b64decode(step["data"]))
    else:
        raise ValueError(f"unknown undo step {sorted(step)}")


def _blob(blob: object, read_blob: Callable[[str], bytes] | None) -> bytes:
    """The bytes of the blob ``blob`` (hex) names; ValueError when it cannot be read."""
    if not isinstance(blob, str) or read_blob is None:
        raise ValueError(f"{blob!r} is not a blob this recovery can read")
    try:
        return read_blob(blob)
    except (KeyError, ValueError) as error:
        raise ValueError(f"blob {blob} cannot be read: {error}") from None


def roll_back(layout: Layout, head: str | None, read_blob: Callable[[str], bytes] | None = None) -> int | None:
    """Undo the transaction a killed process left half done; return how many changes were undone.

    ``head`` is the repository's HEAD now; ``read_blob`` returns the bytes of the blob a hex
    id names (KeyError, ValueError when it cannot), for the files logged by blob (``UndoLog``'s
    ``stored``): without it, such a file is left as the kill left it, for the recovery that
    follows to find changed. Returns None when there is no log,
    0 when the log's transaction had committed (or recorded nothing) and was
    dropped. The caller holds ``.commit.lock`` and then regenerates the
    indexes of the banks this touched. Raises OSError when a file cannot be
    put back (the log stays, to be replayed by the next recovery); a log
    torn by the kill is read up to its last whole line.
    """
    try:
        text = layout.commit_undo.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    steps = []
    for line in text.splitlines():
        try:
            step = json.loads(line)
        except (ValueError, RecursionError):
            break  # the line being written when the process died: its change had not begun
        if isinstance(step, dict):
            steps.append(step)
    undone = 0
    if steps and "head" in steps[0] and steps[0]["head"] == head:
        for step in reversed(steps[1:]):
            try:
                _undo(layout, step, read_blob)
            except ValueError:
                continue  # not a step this module writes: a hand-edited log is not followed
            undone += 1
    layout.commit_undo.unlink(missing_ok=True)
    return undone
