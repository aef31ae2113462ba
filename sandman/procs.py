"""Processes by pid: whether one runs, and when it started, so that a pid the system gave again
to another process is not taken for the one recorded with it.

Built-ins only: the SessionStart hook's check (archive/missed.py, under ``python -I -S``)
uses it, as do git's lock files (store/repo.py), the backstop and the shifts' tick.
"""

from __future__ import annotations

import os


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command's ``)``: [0] is the state (field 3),
    [19] the start time (field 22). None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            return stream.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def process_start(pid: object) -> int | None:
    """When process ``pid`` started: clock ticks since boot (field 22 of ``/proc/<pid>/stat``).

    None when ``pid`` is not an int above 0 (a bool is not one), the process is gone or has
    ended (a zombie), or there is no ``/proc`` to read. With the pid it names one process.
    """
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    fields = _stat_fields(pid)
    try:
        return None if fields is None or fields[0] in (b"Z", b"X") else int(fields[19])
    except (IndexError, ValueError):
        return None


def running(pid: object, start: int | None = None) -> bool:
    """True while process ``pid`` (an int above 0; a bool is not one) runs.

    Signal 0 reaching it, or being refused it (another user's process), says it runs, unless
    ``/proc`` shows it ended (a zombie). When ``start`` is given and ``/proc`` is there, it
    must also have started then (``process_start``): a pid given again is another process.
    A ``/proc`` entry that cannot be read leaves the start unknown: running only without ``start``.
    """
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return False
    if not os.path.isdir("/proc"):
        return True
    fields = _stat_fields(pid)
    if fields is None:
        return start is None
    if fields[0] in (b"Z", b"X"):
        return False
    return start is None or process_start(pid) == start
