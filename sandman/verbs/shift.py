"""``sandman shift pick|brief|attach|status|clock|handoff|profile|run|targets`` (docs/shift.md).

Thin over sandman.machine.shift (the record), .pick (the rotation), .brief (the
template), .tick (``run``): parse, call, journal (the machine journals its own
decisions under the verb ``shift``).
"""

from __future__ import annotations

from sandman.layout import Layout
from sandman.machine import pick as picking
from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails


def pick(layout: Layout, *, untrusted: bool = False) -> list[picking.Candidate]:
    """The candidates in rotation order (pickable first); with ``untrusted``, only those Claude Code
    does not trust (for the owner to trust or exclude)."""
    found = picking.candidates(layout, trails.read(layout))
    if untrusted:
        return [c for c in found if not c.trusted]
    return found


def brief(layout: Layout, *, path: str | None = None) -> shifts.Opened:
    """Open a shift by hand (the tick does it at night). Raises LockBusy while a tick runs."""
    held = shifts.lock(layout)
    try:
        shifts.recover(layout)
        return shifts.open_shift(layout, path=path)
    finally:
        held.release()


def run(layout: Layout) -> tick.Tick:
    return tick.run(layout)


attach = shifts.attach
status = shifts.status
clock = shifts.clock
handoff = shifts.handoff
profile = shifts.profile
targets = shifts.write_targets
