"""The note: what one session leaves for the next in the same directory.

(Called "the handoff note" until issue 33: "handoff" is now a shift's only, a
shift's ``handoff.md``. A record in the old ``.handoff/<bank>.json`` is still
read, and delivered, until a new note replaces it.)

``sandman note "<what's next>"`` writes ``.notes/<bank>.json`` (dotted:
this machine's, never versioned, like claude-remember's delivery record), the
bank being the directory's (banks.names.bank_name)::

    {"directory": "/abs/dir", "note": "...", "at": "<ISO UTC>", "session": "<id>" | null,
     "once": false, "delivered": 0, "first_delivered": null, "last_delivered": null,
     "sessions": ["<id>", ...]}

recall shows the note first, inside its budget (docs/recall.md). A note with
``once`` is shown to one session and then no more; otherwise it is shown until
a new ``note`` replaces it, and every delivery after the first says how
many times it was already delivered, so a stale note is never read as news. A
delivery is a new session's SessionStart (or an MCP ``recall``); a ``sandman
recall`` run by hand shows it without counting it, and so does a compaction
refire (``source: compact``, the same session, whose context lost it); a
resumed or forked session gets recall's short note, which repeats nothing.
``sessions`` keeps the last 20 session ids it was delivered to; a session
already among them is shown the note again but not counted.

Standard library only: ``recall --hook`` imports this module. Two sessions
starting in the same second may both count one delivery (the record is
rewritten whole, atomically, without a lock): the count is a floor.
"""

from __future__ import annotations

import json
import os
from collections import namedtuple

from sandman.banks.names import bank_name
from sandman.journal import iso, now_utc
from sandman.layout import Layout
from sandman.store.atomic import read_regular, write_atomic

KEPT_SESSIONS = 20


class Note(namedtuple("Note", "path data")):
    """A note's record: ``path`` (its ``.notes/<bank>.json`` file, or the old ``.handoff/<bank>.json``)
    and its ``data`` (a dict)."""

    __slots__ = ()

    @property
    def shown(self) -> bool:
        """True when recall still shows it: not a ``once`` note already delivered."""
        return not (self.data.get("once") and self.data.get("delivered", 0) > 0)


def read(layout: Layout, directory: str) -> Note | None:
    """Return the note of ``directory`` (absolute, normalised), None when there is none or it is
    unreadable (a broken record never stops recall). Without a ``.notes/`` record, one left in the
    old ``.handoff/`` folder is read (and its deliveries recorded there) until a note replaces it."""
    bank = bank_name(directory)
    path = layout.note(bank)
    if not os.path.lexists(path):
        path = layout.old_handoff_note(bank)
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("note"), str) or not data["note"].strip():
        return None
    if not isinstance(data.get("delivered"), int) or isinstance(data.get("delivered"), bool):
        data["delivered"] = 0
    return Note(path, data)


def write(layout: Layout, directory: str, note: str, *, once: bool, session: str | None) -> Note:
    """Write (or replace) the note of ``directory``; the delivery count starts at 0. A record in
    the old ``.handoff/`` folder is removed: the new note replaces it.

    The caller has checked ``note`` (sandman.verbs.note). Raises OSError.
    """
    data = {"directory": directory, "note": note, "at": iso(now_utc()), "session": session, "once": once,
            "delivered": 0, "first_delivered": None, "last_delivered": None, "sessions": []}
    bank = bank_name(directory)
    path = layout.note(bank)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    try:
        os.unlink(layout.old_handoff_note(bank))
    except FileNotFoundError:
        pass
    return Note(path, data)


def _units(text: str) -> int:
    """UTF-16 code units of ``text``, as recall's budget counts (recall/budget.py ``utf16_units``)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def render(note: Note, budget: int) -> str:
    """Return the note as recall's first lines, at most ``budget`` UTF-16 code units ("" when none fit).

    ``## Note from the last session (<at>)``, a line saying how often it was
    already delivered when it was, the note, one blank line. A note wider than
    the budget is cut at a line and marked ``[note cut at N UTF-16 units]``.
    """
    data = note.data
    head = [f"## Note from the last session ({data.get('at') or 'undated'})"]
    if data["delivered"]:
        times = "once" if data["delivered"] == 1 else f"{data['delivered']} times"
        head.append(f"(already delivered {times} since {data.get('first_delivered') or 'an unknown time'}: "
                    "pending replacement, not news)")
    text = "\n".join(head + [data["note"].rstrip(), "", ""])
    if _units(text) <= budget:
        return text
    marker = f"\n[note cut at {budget:,} UTF-16 units]\n\n"
    room = budget - _units(marker)
    if room <= _units(head[0]):
        return ""
    # the first ``room`` units; a pair split at the cut is dropped by errors="ignore"
    kept = text.encode("utf-16-le", "surrogatepass")[:room * 2].decode("utf-16-le", "ignore")
    return kept.rsplit("\n", 1)[0] + marker if "\n" in kept else ""


def delivered(layout: Layout, note: Note, session: str | None) -> None:
    """Record one delivery of ``note`` (count, first and last time, the session); never raises."""
    data = dict(note.data)
    stamp = iso(now_utc())
    sessions = [s for s in data.get("sessions", []) if isinstance(s, str)] if isinstance(data.get("sessions"), list) else []
    if not (session and session in sessions):  # a resumed session has had it already: not counted again
        data["delivered"] = data["delivered"] + 1
        data["first_delivered"] = data.get("first_delivered") or stamp
        if session:
            sessions = (sessions + [session])[-KEPT_SESSIONS:]
    data["last_delivered"] = stamp
    data["sessions"] = sessions
    try:
        write_atomic(note.path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    except OSError:
        pass

