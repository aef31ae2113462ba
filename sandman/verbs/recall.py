"""``sandman recall``: the memory surface a session starts with (design, "Verbs", recall).

The command and Claude Code's SessionStart hook over ``sandman.recall``:
``surfaces`` (what recall reads: the bank chain, the recent pointers, the log
tail, the dream queue), ``budget`` (UTF-16 code units, the 9,000-unit budget),
``compose`` (fitting them into the budget in the design's trimming order, and
the short note of a resumed session). This module is the verb: the journal line
of a recall by hand, and the hook's reading of its payload and its choice of
surface per ``source``.

Standard library only at module level: ``recall --hook`` runs before the
user's first prompt.
"""

from __future__ import annotations

import json
import os

from sandman import config, hookpayload, journal
from sandman.errors import ConfigError
from sandman.layout import Layout
from sandman.recall.budget import check_budget, memories, utf16_units
from sandman.recall.compose import TOOL_INDEX, VERB, Recalled, recall, resumed
from sandman.recall.surfaces import bank_chain, bank_heads, dream_queue_line, log_tail, recent_pointers

__all__ = ["CONTEXT_KEPT", "TOOL_INDEX", "Recalled", "bank_chain", "bank_heads", "check_budget",
           "dream_queue_line", "hook", "log_tail", "memories", "recall", "recall_by_hand", "recent_pointers",
           "resumed", "utf16_units"]


def recall_by_hand(layout: Layout, cwd: str | os.PathLike[str], budget: int | None = None) -> Recalled:
    """``sandman recall`` run by a person: ``recall`` and its journal line (``recalled hook=false``)."""
    recalled = recall(layout, cwd, budget)
    journal.write(layout, VERB, "recalled", hook=False, cwd=str(cwd), chars=len(recalled.text),
                  units=utf16_units(recalled.text), trimmed=",".join(recalled.trims) or None)
    return recalled



# --- the SessionStart hook ---------------------------------------------------


def _is_utf8(text: str) -> bool:
    """False for text holding lone surrogates (a JSON ``"\ud800"``): no real path is spelled so."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fetch_in_background(layout: Layout) -> None:
    """Start the detached sync when ``sync.fetch_at_start`` is on, so the next session
    sees the other machine's memories (docs/sync.md, "Automation"); never waits, never raises."""
    try:
        wanted = config.sync_fetch_at_start(layout)
    except ConfigError:
        wanted = True  # spawn_background_sync journals the bad settings file
    if wanted:
        from sandman.verbs.sync import spawn_background_sync

        spawn_background_sync(layout)


# SessionStart sources whose context still holds the surface given at their start.
CONTEXT_KEPT = ("resume", "fork")


def hook(layout: Layout, payload: bytes) -> str | None:
    """Answer Claude Code's SessionStart hook: the JSON with the recall as ``additionalContext``.

    ``payload`` is the hook's stdin: ``{session_id, transcript_path, cwd,
    hook_event_name, source, ...}``. Returns ``{"hookSpecificOutput":
    {"hookEventName": "SessionStart", "additionalContext": <text>}}`` and a
    newline. ``source`` ``startup``, ``clear`` and ``compact`` get the whole
    surface: after compaction only what this hook returns survives of the
    startup context (docs/recall.md, "Compaction"). ``resume`` and ``fork``
    get the short note of ``resumed``: their context still holds the surface.
    Returns None, with a journal line, for an unreadable payload, a
    ``hook_event_name`` missing or other than SessionStart, a payload without an absolute
    ``cwd``, and a root without ``memories/``. A new session (startup or
    clear) also starts the background sync when the settings ask for it;
    every start but a compaction starts the backstop for missed endings,
    detached (take_missed.start).
    Raises only what recall raises on a broken root (OSError), which hook.py
    journals.
    """
    started = hookpayload.session_start(layout, VERB, payload)
    if started is None:
        return None
    data, session = started
    cwd = data.get("cwd")
    if cwd is None:  # a payload without the field: the hook process's project, as Claude Code names it
        cwd = config.claude_project_dir()
    if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\0" in cwd or not _is_utf8(cwd):
        journal.write(layout, VERB, "skipped", hook=True, reason="no-cwd", session=session)
        return None
    if not layout.memories.is_dir():
        journal.write(layout, VERB, "skipped", hook=True, reason="no-root", root=str(layout.root), session=session)
        return None
    source = data.get("source") if isinstance(data.get("source"), str) else None
    if source != "compact":
        # Every session start but a compaction (the same session going on) runs the backstop,
        # a resume included: it records the starting session so the backstop never takes it.
        from sandman.archive.backstop import start as backstop

        backstop(layout, session)
    if source in CONTEXT_KEPT:
        text, trims = resumed(layout, cwd), []
    else:
        if source != "compact":
            _fetch_in_background(layout)
        if source == "startup":  # kept to be served at the next start here (sandman/recall/served.py)
            from sandman.recall.startreply import recall_and_keep

            recalled = recall_and_keep(layout, cwd, session)
        else:
            # a compaction is the same session: its note is shown again (the context lost it), not counted
            recalled = recall(layout, cwd, deliver=source != "compact", session=session)
        text, trims = recalled.text, recalled.trims
        if session is not None:
            from sandman.recall import ledger

            ledger.record_start(layout, session, source, recalled.given)
    journal.write(layout, VERB, "recalled", hook=True, session=session, source=source, cwd=cwd,
                  chars=len(text), units=utf16_units(text), trimmed=",".join(trims) or None)
    reply = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    return json.dumps(reply, ensure_ascii=False) + "\n"
