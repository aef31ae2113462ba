"""The detached take's fork: a SessionEnd hook leaves Claude Code at once and its take goes on alone.

Used by ``sandman take --hook --detach`` in both its routes, sandman/__main__.py (the fast one,
before anything else of sandman is imported) and sandman/cli, so it lives below both.
Standard library only (``os``). Starting a separate ``sandman`` process detached is
store.detach.spawn_detached; this forks the current one.
"""

from __future__ import annotations

import os

__all__ = ["fork_detached"]


def fork_detached() -> bool:
    """Fork; return True in the parent, which has nothing left to do, False in the child.

    Claude Code gives a plugin's SessionEnd hook about 1.5 s whatever timeout
    the plugin declares, and a take on a loaded machine can need more
    (docs/hooks.md, "The plugin's SessionEnd budget"). So the parent forks as
    soon as it has the payload, before importing anything of sandman's, and
    exits once the child has left the hook's session (``setsid``: a signal to
    the hook's process group as it ends, a closed terminal's SIGHUP or a
    cancellation, does not reach it). The child puts its standard streams on
    /dev/null (Claude Code's pipes close when the parent exits), waits until the
    parent has exited and lowers its own priority (nice 10), then does the take:
    it never takes the CPU from the hook Claude Code waits on. When the fork
    fails the take runs here, in the hook, as without ``--detach``.
    """
    try:
        left_r, left_w = os.pipe()  # the child says it has left the hook's session
        alive_r, alive_w = os.pipe()  # the parent's end closes as it exits
    except OSError:
        return False
    try:
        pid = os.fork()
    except OSError:
        for fd in (left_r, left_w, alive_r, alive_w):
            os.close(fd)
        return False
    if pid:
        os.close(left_w)
        os.close(alive_r)
        try:
            os.read(left_r, 1)  # a byte once the child is in its own session; end of file if it died
        except OSError:
            pass
        os.close(left_r)
        return True
    os.close(left_r)
    os.close(alive_w)
    os.setsid()
    os.write(left_w, b"1")
    os.close(left_w)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    # The take waits for the hook to have exited: on a machine of two cores, a child that began at
    # once took the CPU from the exiting parent for a time slice, and what Claude Code waits on
    # lasted 1.2 x ``python -c pass`` for 1.0 x of CPU (issue 29).
    try:
        os.read(alive_r, 1)
    except OSError:
        pass
    os.close(alive_r)
    try:
        os.nice(10)
    except OSError:
        pass
    return False
