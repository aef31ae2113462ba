"""Owner decisions: approve, decline, revoke, reconcile (docs/trail.md, "Owner decisions").

Stdlib and sandman.errors only at import: the shift's guard (machine.guard) imports it on every
tool call of a shift.

Each has one way in, an owner's verb (``report approve|decline``, ``trail revoke``,
``reconcile``), and a shift cannot take it: ``trail append`` refuses their kinds
(``OWNER_KINDS``), the verbs refuse a caller inside a shift (``refuse_in_shift``: ``$SANDMAN_SHIFT``,
a Claude Code session a shift recorded, or the open shift's session process among the caller's
ancestors; ``shift_of_caller``), and the shift's guard refuses the other routes. A shift
still running is neither revoked nor reconciled (``refuse_running``): its session would go on
committing on top of the reverts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sandman.errors import InputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the guard runs on every tool call)
if TYPE_CHECKING:
    from sandman.layout import Layout

__all__ = ["OWNER_KINDS", "refuse_in_shift", "refuse_owner_kind", "running_shift", "refuse_running",
           "shift_of_caller"]

# The kinds only the owner's verbs write. The lowest module that needs them: the trail refuses
# them in ``trail append``, the shift's guard refuses their verbs (machine.guard), both import here.
OWNER_KINDS = ("revoke", "reconcile", "proposal.approve", "proposal.decline")


def refuse_owner_kind(kind: str) -> None:
    """Raise InputError for an owner decision's kind: ``trail append`` never writes one."""
    if kind in OWNER_KINDS:
        verb = {"revoke": "sandman trail revoke", "reconcile": "sandman reconcile",
                "proposal.approve": "sandman report approve", "proposal.decline": "sandman report decline"}[kind]
        raise InputError(f"{kind} is an owner decision; `trail append` does not write it: `{verb}` does, "
                         "and never inside a shift")


def _ancestors(pid: int) -> list[int]:
    found = []
    for _ in range(64):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 1:
            break
        found.append(pid)
    return found


def shift_of_caller(root: Path) -> str | None:
    """The shift this process runs in, or None when it is the owner's: ``$SANDMAN_SHIFT``; or a
    Claude Code session id (``$CLAUDE_CODE_SESSION_ID``) that a shift recorded in its
    ``meta.json``; or the open shift's session process (``shifts/.current.json`` ``pid``) among this
    process's ancestors. A shift that unsets the variables is still a child of its session."""
    named = os.environ.get("SANDMAN_SHIFT", "").strip()
    if named:
        return named
    shifts = root / "shifts"
    try:
        current = json.loads((shifts / ".current.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        current = None
    if isinstance(current, dict) and isinstance(current.get("pid"), int) and current["pid"] > 1 \
            and current["pid"] in _ancestors(os.getpid()):
        return str(current.get("shift") or "?")
    session = os.environ.get("CLAUDE_CODE_SESSION_ID", "").strip()
    if session:
        if isinstance(current, dict) and current.get("session") == session:
            return str(current.get("shift") or "?")
        try:
            folders = sorted(shifts.iterdir(), reverse=True)[:60]
        except OSError:
            folders = []
        for folder in folders:
            try:
                meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(meta, dict) and meta.get("session") == session:
                return folder.name
    return None


def refuse_in_shift(layout: Layout, what: str) -> None:
    """Raise InputError when this process runs inside a shift (``shift_of_caller``)."""
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
