"""Waiting file locks: ``.commit.lock`` (the single writer) and ``.site.lock`` (one render at a time).

The lock is an exclusive ``fcntl.flock`` on the file, as filelock's Unix lock
is (so the two interoperate with an older sandman that still takes them with
filelock): the kernel releases it when its holder dies, even by ``kill -9``,
and the file itself is left in place. Standard library only: filelock 4
imports logging, inspect, random, hmac and more, 20 to 60 ms of every
``remember`` (issue 29). The run locks that never wait are store.runlock's.
"""

from __future__ import annotations

import fcntl
import os
import time

from sandman.errors import LockBusy

POLL_S = 0.05  # how often a waiting process tries again (filelock's default)


class Lock:
    """An exclusive lock on ``path``, waited for at most ``timeout`` seconds (0: one try; a
    negative timeout: for ever). Take it with ``acquire`` or ``store.repo.locked``, give it
    back with ``release``; ``with lock:`` (or ``with lock.acquire():``) holds it for a block."""

    def __init__(self, path: str, timeout: float):
        self.lock_file = path
        self.timeout = timeout
        self._fd: int | None = None

    def acquire(self) -> "Lock":
        """Wait for the lock and take it; return self. Raises LockBusy (naming the file) when
        ``timeout`` passes, OSError at once when the file cannot be created or opened."""
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if 0 <= self.timeout and deadline <= time.monotonic():
                    os.close(fd)
                    raise LockBusy(f"{self.lock_file} is held by another sandman process; try again") from None
                time.sleep(POLL_S)
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the lock back (nothing when it is not held)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @property
    def is_locked(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def __enter__(self) -> "Lock":
        if self._fd is None:  # ``with lock:`` takes it; ``with lock.acquire():`` has taken it
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
