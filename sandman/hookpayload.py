"""Reading a SessionStart hook's payload, shared by ``recall --hook`` and ``report --hook``.

Standard library only (both run at every session start; tests/test_imports.py).
The payload is Claude Code's hook JSON on stdin (docs/hooks.md):
``{session_id, transcript_path, cwd, hook_event_name, source, ...}``.
"""

from __future__ import annotations

import json

from sandman import journal, plainhook
from sandman.layout import Layout


def parse(payload: bytes) -> dict | None:
    """The payload as a dict; None when it is not UTF-8 JSON holding an object."""
    try:
        data = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: JSON nested 100,000 deep
        return None
    return data if isinstance(data, dict) else None


def session_start(layout: Layout, verb: str, payload: bytes) -> tuple[dict, str | None] | None:
    """``(payload, session id or None)`` when ``payload`` is a SessionStart's; else None after a
    journal line under ``verb``: ``skipped reason=unreadable-payload`` (not a JSON object) or
    ``skipped reason=not-session-start`` (another ``hook_event_name``, or none: Claude Code always
    names it, and output for another event lands where no surface belongs), or ``declined
    reason=path-too-long`` (a ``cwd`` longer than config.PATH_MAX_BYTES: plainhook.too_long)."""
    data = parse(payload)
    if data is None:
        journal.write(layout, verb, "skipped", hook=True, reason="unreadable-payload", bytes=len(payload))
        return None
    session = data.get("session_id") if isinstance(data.get("session_id"), str) else None
    event = data.get("hook_event_name")
    if event != "SessionStart":
        shown = None if event is None else "".join(c if c.isprintable() else " " for c in str(event))[:80]
        journal.write(layout, verb, "skipped", hook=True, reason="not-session-start", event=shown, session=session)
        return None
    if plainhook.too_long(data.get("cwd")):
        journal.write(layout, verb, "declined", hook=True, reason="path-too-long", session=session,
                      chars=len(data["cwd"]))
        return None
    return data, session
