"""The pointer sweep (docs/reflect.md, step 3): dreamed pointers ended more than 72 h ago go.

``sandman reflect`` (sandman/verbs/reflect.py) runs it once a pass.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sandman import config, journal
from sandman.layout import Layout
from sandman.pointers import Pointer, list_pointers, read_pointer
from sandman.store.atomic import move_no_replace

VERB = "reflect"


def _sweepable(pointer: Pointer | None, cutoff: datetime) -> bool:
    return pointer is not None and pointer.dreamed and pointer.ended is not None and pointer.ended < cutoff


def sweep(layout: Layout, now: datetime) -> list[str]:
    """Delete the pointers that are dreamed and ended more than 72 h before ``now``; return their sessions.

    An undreamed pointer never expires, nor one whose end time is unknown.
    Each pointer is moved aside and read again before it is deleted, so one
    that take rewrote meanwhile (undreamed again) is put back, never lost.
    """
    cutoff = now - timedelta(hours=config.SWEEP_AFTER_HOURS)
    swept = []
    for pointer in list_pointers(layout):
        if not _sweepable(pointer, cutoff):
            continue
        aside = layout.sweeping_pointer(pointer.session)
        try:
            move_no_replace(pointer.path, aside)
        except (FileNotFoundError, FileExistsError):
            continue
        if not _sweepable(read_pointer(aside), cutoff):
            try:
                move_no_replace(aside, pointer.path)
            except FileExistsError:
                pass  # take wrote a newer pointer meanwhile: both stay, the set-aside one dotted
            journal.write(layout, VERB, "unswept", session=pointer.session, reason="rewritten")
            continue
        aside.unlink()
        swept.append(pointer.session)
        journal.write(layout, VERB, "swept", session=pointer.session, ended=pointer.data.get("ended"),
                      dreamed=pointer.data.get("dreamed"))
    return swept
