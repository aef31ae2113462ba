"""``sandman dream``: route short-term pointers into banks by 2-of-3 consensus (design, station ④).

The queue (which pointers are queued and due, whether a dream runs) is
sandman/dreamqueue.py, re-exported here; the run's substance lives one floor
down in ``sandman.dream.run`` and is imported when a run starts. The imports
run one way: dream -> sandman.dream.run -> dreamqueue.
"""

from __future__ import annotations

import time

from sandman import config, journal
from sandman.dreamqueue import due, due_reason, is_due, is_running, queue, queue_depth, retry_after_s
from sandman.errors import ClaudeNotFound, ConfigError, LockBusy
from sandman.layout import Layout
from sandman.marks import visible
from sandman.pointers import Pointer
from sandman.store.runlock import RunLock

__all__ = ["dream", "due", "is_due", "is_running", "queue", "queue_depth", "retry_after_s"]


def dream(layout: Layout, *, now: bool = False, interactive: bool = False):
    """Run one dream over the queue (design, station ④; docs/dream.md); return its RunSummary.

    Without ``now`` the run happens only when a dream is due (take's trigger,
    dreamqueue.due_reason: ``config.dream_due_pointers()`` due pointers, or one
    waiting longer than ``config.dream_wait_s()``) and tries only due pointers; ``now`` (by hand) dreams whatever is queued, a pointer
    waiting out a failed attempt included. ``interactive`` shows a rich progress bar on stderr.
    Raises LockBusy when another dream holds ``.dream.lock`` (the message says
    whether that run looks hung), ConfigError for a bad mind setting,
    ClaudeNotFound (journalled; the queue untouched) when the minds' binary is
    missing.
    """
    from sandman.dream import run as dream_run

    lock = RunLock(layout.dream_lock)
    inherited = config.inherited_dream_lock()
    handed = inherited is not None and lock.adopt(inherited)
    if not handed and not lock.acquire():
        raise _busy(layout, lock)
    try:
        summary = _run_locked(layout, dream_run, now=now, interactive=interactive)
        if summary.total("committed"):
            # Outside the commit lock: a sync takes it itself (docs/sync.md, "Automation").
            from sandman.verbs.sync import maybe_sync_after_commit

            maybe_sync_after_commit(layout)
    finally:
        # A lock take handed over is held until this process exits: no take may see it
        # free and start a second dream while this one is still alive.
        if not handed:
            lock.release()
    return summary


def _run_locked(layout: Layout, dream_run, *, now: bool, interactive: bool):
    """The run itself, under the dream lock; return its RunSummary."""
    from sandman.minds.runner import require_claude

    if now:
        depth = len(queue(layout))
    else:
        reason, depth = due_reason(layout)
        if reason is None:
            journal.write(layout, "dream", "idle", reason="not due", queued=depth)
            return dream_run.RunSummary(left=depth, stopped="not due")
    if depth:
        try:
            require_claude()
        except ClaudeNotFound as error:
            # Once, before any mind: otherwise every mind abstains ("spawn failed") in turn.
            journal.write(layout, "dream", "failed", reason="no-claude", queued=depth, error=str(error))
            raise ClaudeNotFound(f"{error}; {depth} pointer(s) stay queued") from None
        try:
            config.mind_timeout(), config.day_budget_usd(layout)
        except ConfigError as error:
            # A detached dream's stderr is only its log: the journal is where doctor looks.
            journal.write(layout, "dream", "failed", reason="config", queued=depth, error=str(error))
            raise
    if not interactive or depth == 0:
        return dream_run.run_queue(layout, everything=now)
    return _with_progress(layout, dream_run, everything=now)


def _busy(layout: Layout, lock: RunLock) -> LockBusy:
    """Journal and describe a held dream lock; a holder past the stale age is reported as hung.

    A flock is released by the kernel when its holder dies, so a held lock
    always has a live holder: past ``config.DREAM_LOCK_STALE_S`` that holder is
    hung, not dead. It is not ours to kill (it may be in the middle of a
    commit); the operator is told its pid.
    """
    holder = lock.holder() or {}
    pid = holder.get("pid")
    started = holder.get("started")
    age = time.time() - started if isinstance(started, (int, float)) else None
    stale = age is not None and age > config.DREAM_LOCK_STALE_S
    journal.write(layout, "dream", "busy", holder=pid, age_s=None if age is None else int(age), stale=stale)
    if stale:
        return LockBusy(
            f"a dream (pid {pid}) has held {layout.dream_lock} for {age / 3600:.1f} h, longer than any "
            f"run should take: it looks hung. It was left alone; end it (kill {pid}) and dream again"
        )
    since = "" if age is None else f" for {int(age)} s"
    return LockBusy(f"another dream is running (pid {pid}{since}); this one exits")


def _with_progress(layout: Layout, dream_run, *, everything: bool):
    from rich.markup import escape
    from rich.progress import Progress

    started = []
    with Progress(transient=False) as progress:
        task = progress.add_task("dreaming", total=None)

        def on_pointer(pointer: Pointer, planned: int) -> None:
            title = visible(str(pointer.data.get("title") or pointer.session)[:60], lines=False)
            progress.update(task, total=planned, completed=len(started), description=escape(f"dreaming {title}"))
            started.append(pointer.session)

        summary = dream_run.run_queue(layout, everything=everything, on_pointer=on_pointer)
        progress.update(task, total=len(started), completed=len(started), description="dreamt")
    return summary
