"""Run locks: at most one process runs a verb (dream) at a time.

The lock is an ``fcntl.flock`` on a dotted file under the root, so the kernel
releases it when its holder dies, even by ``kill -9``: a crashed run never
leaves a lock behind. The file records the holder's pid and start time, so a
caller can tell how long the current holder has run (the design deems a dream
lock older than 2 h stale: its holder is hung). Standard library only: take
--hook asks whether a dream is running.

A lock can be handed to a child process (``hand_over`` before the spawn,
``let_go`` after it; the child calls ``adopt`` on the inherited descriptor):
take takes the dream lock itself before it starts a detached dream, so between
the spawn and the dream's first line no second take can see the lock free and
start another (a burst of session endings once started one dream per take).

``WaitLock`` is the waiting kind on a file that stays: the root's
``.commit.lock`` and the site's render lock, waited for up to a timeout. It
takes the same ``fcntl.flock`` the filelock package's ``FileLock`` takes (whole
file, exclusive, the file left in place), so the two exclude each other; it is
here because importing filelock cost every ``sandman remember`` 21 ms, 1.7 x
``python -c pass`` (issue 29).

``held`` is the other waiting kind: an exclusive lock on a file that exists only
while it is held (take holds ``.taking/<sid>.lock`` from planning a session's
part to writing its take record, so two takes of one session run one after
the other).
"""


from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
        self._fd = fd
        self.record(os.getpid())
        return True

    def record(self, pid: int) -> None:
        """Write ``pid`` and the time now into the held lock, as its holder."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, json.dumps({"pid": pid, "started": time.time()}).encode(), 0)

    def hand_over(self) -> int:
        """Make the held lock's descriptor inheritable and return it, for a child about to be spawned."""
        if self._fd is None:
            raise ValueError(f"{self.path} is not held")
        os.set_inheritable(self._fd, True)
        return self._fd

    def let_go(self, child: int) -> None:
        """After a spawn that inherited the lock: record ``child`` as its holder and close this
        process's descriptor without unlocking (the child's copy keeps the lock)."""
        if self._fd is not None:
            self.record(child)
            os.close(self._fd)
            self._fd = None

    def adopt(self, fd: int) -> bool:
        """Take over the lock a parent handed down as descriptor ``fd``; return False (and
        leave ``fd`` alone) when ``fd`` is not this lock's file or does not hold it."""
        try:
            mine, theirs = os.stat(self.path), os.fstat(fd)
            if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
                return False
            # The same open file description that holds the lock: this succeeds at once.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        os.set_inheritable(fd, False)
        self._fd = fd
        self.record(os.getpid())
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
                except (ValueError, RecursionError):
                    data = {}
                return data if isinstance(data, dict) else {}
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)


class WaitLock:
    """An exclusive ``fcntl.flock`` on ``path``, waited for up to ``timeout`` seconds (0: one try).

    ``acquire`` returns a handle (``with lock.acquire():`` releases at its end, as filelock's) and raises
    TimeoutError when the wait runs out; OSError when the file cannot be opened. Re-entrant
    for one object (each ``acquire`` needs its ``release``); two objects on one path exclude
    each other, in one process too (each holds its own open file), as filelock's do.
    ``lock_file`` is the path as a string.
    """

    POLL_S = 0.05  # filelock's interval between two tries

    def __init__(self, path: Path | str, timeout: float):
        self.lock_file = str(path)
        self.timeout = timeout
        self._fd: int | None = None
        self._depth = 0

    @property
    def is_locked(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "_Acquired":
        if self._fd is not None:
            self._depth += 1
            return _Acquired(self)
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise TimeoutError(f"{self.lock_file} is held") from None
                time.sleep(self.POLL_S)
            except BaseException:
                os.close(fd)
                raise
        self._fd, self._depth = fd, 1
        return _Acquired(self)

    def release(self) -> None:
        """Release one ``acquire``; the last unlocks (the file stays)."""
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth == 0:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def leave_to_child(self) -> None:
        """Close this process's descriptor of the held lock without unlocking it: a child forked
        while it was held shares the open file, and the lock stays held until the child exits
        (an ``flock`` belongs to the open file, not the process). Nothing when not held."""
        if self._fd is not None:
            fd, self._fd, self._depth = self._fd, None, 0
            os.close(fd)

    def __enter__(self) -> "WaitLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class _Acquired:
    """What ``WaitLock.acquire`` returns: ``with`` it releases that one acquisition at its end."""

    def __init__(self, lock: WaitLock):
        self.lock = lock

    def __enter__(self) -> WaitLock:
        return self.lock

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


@contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on ``path``, waiting while another holds it; yield None.

    The file is created for the holding and removed at release, so a lock no
    one holds leaves nothing behind (the kernel releases a killed holder's
    lock; its empty file goes at the next holding). A waiter that wakes on a
    file its holder removed opens the new one and waits again: every holder
    locks the file ``path`` names at that moment. Within one process each
    ``held`` is its own open file, so two threads exclude each other too; a
    thread must not nest two ``held`` of one path (it would wait on itself).
    Raises OSError when the file cannot be created or locked.
    """
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            mine, named = os.fstat(fd), os.stat(path, follow_symlinks=False)
            if (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino):
                break
        except FileNotFoundError:
            pass  # its holder removed it as it let go: lock the next one
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield None
    finally:
        try:
            os.unlink(path)  # while still held: a waiter on this file wakes to find it gone
        except OSError:
            pass
        os.close(fd)
