"""sandman.procs: one answer to "does this pid run, and is it the process recorded with it"
(git's lock files, the backstop, the start hook's check and the shifts' tick share it)."""

from __future__ import annotations

import os
import subprocess
import sys

from sandman import procs


def test_a_running_process_runs_and_its_start_names_it() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        start = procs.process_start(child.pid)
        assert isinstance(start, int)
        assert procs.running(child.pid) and procs.running(child.pid, start)
        # The same pid with another start time is a pid given again: another process.
        assert not procs.running(child.pid, start + 1)
    finally:
        child.communicate(b"")


def test_an_ended_process_runs_no_more_even_unreaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: a zombie
    try:
        assert not procs.running(child.pid)
        assert procs.process_start(child.pid) is None
    finally:
        child.wait()
    assert not procs.running(child.pid)


def test_what_is_no_pid_is_never_running() -> None:
    for pid in (None, "1", 0, -1, True, 1.5):
        assert not procs.running(pid)
        assert procs.process_start(pid) is None
