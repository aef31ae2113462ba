"""``sandman dream``: route short-term pointers into banks by 2-of-3 consensus (design, station ④).

This module owns the queue: an undreamed pointer is queued, and due unless it
is waiting out a failed attempt (1 h after the first, doubling, at most 24 h:
a session whose minds keep failing must not cost three model calls on every
session end). take asks
``queue_depth`` (never counts files itself) so the trigger and the run cannot
disagree about what is queued, and ``is_running`` so it never spawns a second
dream. Module level is standard library only: take --hook imports it; the run
itself (``dream``) lives in ``dream_run`` and is imported when it starts.
"""

from __future__ import annotations

import time
from datetime import datetime

from sandman import config, journal
from sandman.errors import ClaudeNotFound, ConfigError, LockBusy
from sandman.layout import Layout
from sandman.pointers import Pointer, list_pointers, parse_time
from sandman.store.runlock import RunLock
from sandman.marks import visible


def queue(layout: Layout) -> list[Pointer]:
    """Return the queued (undreamed) pointers, oldest ``ended`` first."""
    return [pointer for pointer in list_pointers(layout) if not pointer.dreamed]


def retry_after_s(attempts: int) -> int:
    """Seconds a pointer waits after its ``attempts``-th failed dream: 1 h, 2 h, 4 h... at most 24 h."""
    if attempts < 1:
        return 0
    return min(3600 * 2 ** min(attempts - 1, 16), config.DREAM_RETRY_MAX_S)


def is_due(pointer: Pointer, now: datetime) -> bool:
    """True unless the pointer failed a dream recently (docs/BANK-FORMAT.md, "Pointers")."""
    tried = parse_time(pointer.data.get("tried"))
    attempts = pointer.data.get("attempts")
    if tried is None or not isinstance(attempts, int) or isinstance(attempts, bool):
        return True
    return (now - tried).total_seconds() >= retry_after_s(attempts)


def due(layout: Layout, now: datetime | None = None) -> list[Pointer]:
    """Return the queued pointers a dream should try now: not waiting out a failed attempt."""
    now = now or journal.now_utc()
    return [pointer for pointer in queue(layout) if is_due(pointer, now)]


def queue_depth(layout: Layout) -> int:
    """Return how many queued pointers are due: what makes a dream due, and what take asks."""
    return len(due(layout))


def is_running(layout: Layout) -> bool:
    """True while a dream run holds ``.dream.lock``."""
    return RunLock(layout.dream_lock).holder() is not None


def dream(layout: Layout, *, now: bool = False, interactive: bool = False):
    """Run one dream over the queue (design, station ④; docs/dream.md); return its RunSummary.

    Without ``now`` the run happens only when the queue is due (at least
    ``config.DREAM_DUE_POINTERS`` due pointers, take's trigger) and tries only
    due pointers; ``now`` (by hand) dreams whatever is queued, a pointer
    waiting out a failed attempt included. ``interactive`` shows a rich progress bar on stderr.
    Raises LockBusy when another dream holds ``.dream.lock`` (the message says
    whether that run looks hung), ConfigError for a bad mind setting,
    ClaudeNotFound (journalled; the queue untouched) when the minds' binary is
    missing.
    """
    from sandman.verbs import dream_run

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

    depth = len(queue(layout)) if now else queue_depth(layout)
    if not now and depth < config.DREAM_DUE_POINTERS:
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
            config.mind_timeout(), config.daily_budget_usd()
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
