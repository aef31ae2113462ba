"""Owner decisions: approve, decline, revoke, reconcile (docs/trail.md, "Owner decisions").

Each has one way in, an owner's verb (``report approve|decline``, ``trail revoke``,
``reconcile``), and a shift cannot take it: ``trail append`` refuses their kinds
(``OWNER_KINDS``), the verbs refuse a caller inside a shift (``refuse_in_shift``: ``$SANDMAN_SHIFT``,
a Claude Code session a shift recorded, or the open shift's session process among the caller's
ancestors; machine.guard.shift_of_caller), and the shift's guard refuses the other routes. A shift
still running is neither revoked nor reconciled (``refuse_running``): its session would go on
committing on top of the reverts.
"""

from __future__ import annotations

import json

from sandman.errors import InputError
from sandman.layout import Layout
from sandman.machine.guard import OWNER_KINDS, shift_of_caller

__all__ = ["OWNER_KINDS", "refuse_in_shift", "refuse_owner_kind", "running_shift", "refuse_running"]


def refuse_owner_kind(kind: str) -> None:
    """Raise InputError for an owner decision's kind: ``trail append`` never writes one."""
    if kind in OWNER_KINDS:
        verb = {"revoke": "sandman trail revoke", "reconcile": "sandman reconcile",
                "proposal.approve": "sandman report approve", "proposal.decline": "sandman report decline"}[kind]
        raise InputError(f"{kind} is an owner decision; `trail append` does not write it: `{verb}` does, "
                         "and never inside a shift")


def refuse_in_shift(layout: Layout, what: str) -> None:
    """Raise InputError when this process runs inside a shift (machine.guard.shift_of_caller)."""
    shift = shift_of_caller(layout.root)
    if shift is not None:
        raise InputError(f"{what} is the owner's decision; a shift session ({shift}) cannot make it")


def running_shift(layout: Layout) -> str | None:
    """The id of the shift open in ``shifts/.current.json`` (briefing or open, not yet closed), or None."""
    try:
        current = json.loads(layout.shift_current.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(current, dict) or not isinstance(current.get("shift"), str):
        return None
    try:
        meta = json.loads((layout.shift_dir(current["shift"]) / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    if isinstance(meta, dict) and meta.get("outcome"):
        return None
    return current["shift"]


def refuse_running(layout: Layout, target: str, shifts_touched: set[str], what: str) -> None:
    """Raise InputError when ``target`` is, or has events of, the running shift."""
    running = running_shift(layout)
    if running is not None and (target == running or running in shifts_touched):
        raise InputError(f"shift {running} is still running: {what} {target} waits until it ends "
                         f"(`sandman shift status`; it is closed at its handoff or deadline, or by "
                         f"`sandman shift handoff --abandoned`)")
