"""``sandman dream``: route short-term pointers into banks by 2-of-3 consensus (design, station ④).

This module owns the queue: an undreamed pointer is queued. take asks
``queue_depth`` (never counts files itself) so the trigger and the run cannot
disagree about what is queued, and ``is_running`` so it never spawns a second
dream. Module level is standard library only: take --hook imports it.
"""

from __future__ import annotations

from sandman.layout import Layout
from sandman.pointers import Pointer, list_pointers
from sandman.store.runlock import RunLock


def queue(layout: Layout) -> list[Pointer]:
    """Return the queued (undreamed) pointers, oldest ``ended`` first."""
    return [pointer for pointer in list_pointers(layout) if not pointer.dreamed]


def queue_depth(layout: Layout) -> int:
    """Return how many pointers are queued for dream."""
    return len(queue(layout))


def is_running(layout: Layout) -> bool:
    """True while a dream run holds ``.dream.lock``."""
    return RunLock(layout.dream_lock).holder() is not None
