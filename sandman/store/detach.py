"""Starting a sandman verb fully detached: the caller never waits for it.

take starts ``sandman dream`` at a deep queue and recall's SessionStart hook
may start ``sandman sync --background``: both from a hook Claude Code is
timing, so the child must not delay it or die with it. It runs in a new
session (no controlling terminal, outside the hook's process group), stdin
from /dev/null, stdout and stderr appended to a journal file. Standard library
only (``os.posix_spawn``; no subprocess import on the hook path).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def sandman_argv(*args: str) -> list[str]:
    """Return the argv that runs ``sandman <args>`` with this interpreter."""
    return [sys.executable, "-m", "sandman", *args]


def spawn_detached(argv: list[str], log: Path, env: dict[str, str] | None = None) -> int:
    """Start ``argv`` detached with stdout and stderr appended to ``log``; return its pid.

    ``env`` defaults to this process's environment. Descriptors made
    inheritable (a lock handed over, store/runlock.py) stay open in the child
    under the same numbers. Raises OSError when the log cannot be opened or the
    program cannot be started.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        return os.posix_spawn(
            argv[0], argv, dict(os.environ) if env is None else env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fd, 1),
                (os.POSIX_SPAWN_DUP2, fd, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(fd)
