"""The dream queue: which pointers a dream routes, and whether a dream is running.

An undreamed pointer is queued, and due unless it is waiting out a failed
attempt (1 h after the first, doubling, at most 24 h: a session whose minds
keep failing must not cost three model calls on every session end). A dream
is due (``due_reason``) when ``config.dream_due_pointers()`` pointers are due
(``queue``), or when one of them has waited ``config.dream_wait_s()`` since its
take (``waited``): someone with two sessions a day learns by the next
morning, from the nightly reflect. take and dream both ask ``due_reason``
(never count files themselves) so the trigger and the run cannot disagree,
and take asks ``is_running`` so it never spawns a second dream. Standard
library only: take --hook imports it. Imported by the dream verb
(sandman/verbs/dream.py) and its run (sandman/dream/run.py); it imports neither.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

from sandman import config, journal
from sandman.layout import Layout
from sandman.pointers import Pointer, list_pointers, parse_time
from sandman.store.runlock import RunLock


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


def waiting_since(pointer: Pointer) -> datetime | None:
    """When the pointer's session joined the queue: its ``taken`` time, else (a pointer written
    before takes stamped one) its file's modification time; None when neither can be read."""
    taken = parse_time(pointer.data.get("taken"))
    if taken is not None:
        return taken
    try:
        return datetime.fromtimestamp(os.stat(pointer.path).st_mtime, timezone.utc)
    except OSError:
        return None


def waiting(layout: Layout, now: datetime | None = None) -> tuple[int, datetime | None]:
    """Return how many pointers are due, and since when the longest-waiting of them waits (None: none)."""
    pointers = due(layout, now)
    times = [t for t in map(waiting_since, pointers) if t is not None]
    return len(pointers), min(times) if times else None


def due_reason(layout: Layout, now: datetime | None = None) -> tuple[str | None, int]:
    """Return why a dream is due (``"queue"``, ``"waited"``, or None: not due) and how many pointers are.

    ``queue``: at least ``config.dream_due_pointers()`` are due; ``waited``: one
    has waited ``config.dream_wait_s()`` seconds or more. Raises ConfigError for
    a bad setting.
    """
    now = now or journal.now_utc()
    at_depth, wait_s = config.dream_due_pointers(), config.dream_wait_s()  # a bad setting fails every time
    depth, oldest = waiting(layout, now)
    if depth and depth >= at_depth:
        return "queue", depth
    if oldest is not None and (now - oldest).total_seconds() >= wait_s:
        return "waited", depth
    return None, depth


def is_running(layout: Layout) -> bool:
    """True while a dream run holds ``.dream.lock``."""
    return RunLock(layout.dream_lock).holder() is not None
