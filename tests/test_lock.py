"""store.lock.Lock: the commit and site locks (fcntl.flock on the file, waited with a timeout)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sandman.errors import LockBusy
from sandman.store.lock import Lock

HOLDER = "import sys\nfrom sandman.store.lock import Lock\nLock(sys.argv[1], 0).acquire()\nprint('held', flush=True)\nsys.stdin.read()\n"


def test_a_lock_another_process_holds_times_out_with_lock_busy_and_is_free_once_it_dies(tmp_path: Path) -> None:
    path = str(tmp_path / ".commit.lock")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        with pytest.raises(LockBusy, match=rf"^{path} is held by another sandman process; try again$"):
            Lock(path, timeout=0.1).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)  # the kernel releases a dead holder's lock
        holder.wait()
    with Lock(path, timeout=0) as lock:
        assert lock.is_locked
    assert not lock.is_locked and Path(path).exists()  # released; the file stays


def test_two_locks_on_one_file_exclude_each_other_in_one_process(tmp_path: Path) -> None:
    """As filelock's did: a second Lock object on the same file is another holder, not a re-entry."""
    path = str(tmp_path / ".site.lock")
    with Lock(path, timeout=0).acquire():
        with pytest.raises(LockBusy):
            Lock(path, timeout=0).acquire()
    Lock(path, timeout=0).acquire().release()


def test_a_lock_file_that_cannot_be_made_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Lock(str(tmp_path / "missing" / ".commit.lock"), timeout=-1).acquire()
