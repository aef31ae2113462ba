"""Run locks: at most one process runs a verb (dream) at a time.

The lock is an ``fcntl.flock`` on a dotted file under the root, so the kernel
releases it when its holder dies, even by ``kill -9``: a crashed run never
leaves a lock behind. The file records the holder's pid and start time, so a
caller can tell how long the current holder has run (the design deems a dream
lock older than 2 h stale: its holder is hung). Standard library only: take
--hook asks whether a dream is running.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path


class RunLock:
    """An exclusive, non-blocking lock on ``path``; use ``acquire``/``release`` or ``with``."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock if free and record this process in it; return False when held."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "started": time.time()}).encode())
        self._fd = fd
        return True

    def release(self) -> None:
        """Release the lock (the file stays; its content is stale until the next holder)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def holder(self) -> dict | None:
        """Return ``{"pid": int, "started": epoch seconds}`` of the live holder, or None when free."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    data = json.loads(os.read(fd, 4096) or b"{}")
                except ValueError:
                    data = {}
                return data if isinstance(data, dict) else {}
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)
