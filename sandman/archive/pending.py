"""The pending-take ledger: sessions whose ending a live job declined (BANK-FORMAT "Pending takes").

``take --hook`` declines a session that a live job would resume into
(``locate.live_job``) and files it as ``pending-takes/<sid>.json``
(``{"declined", "job", "session", "transcript"}``); every take, ``take --hook``,
``take --missed`` and ``reflect`` then drain the ledger: an entry whose job is
gone is taken, unforced, and removed (design station ①).

Standard library only: take --hook imports it.
"""

from __future__ import annotations

import json
from pathlib import Path

from sandman import journal
from sandman.archive.intents import finish_interrupted
from sandman.archive.taking import take_source
from sandman.errors import InputError, NothingNew, TranscriptLive, TranscriptNotFound
from sandman.layout import Layout
from sandman.pointers import read_pending_take
from sandman.store.atomic import write_atomic
from sandman.transcripts import locate

VERB = "take"


def file(layout: Layout, session_id: str, job: str, transcript: Path) -> None:
    """Write ``pending-takes/<session_id>.json`` for a session the live ``job`` would resume into,
    whose transcript is at ``transcript``. Raises OSError."""
    entry = {"declined": journal.iso(journal.now_utc()), "job": job, "session": session_id,
             "transcript": str(transcript)}
    write_atomic(layout.pending_take(session_id), json.dumps(entry, indent=2) + "\n")


def drain(layout: Layout) -> list[str]:
    """Settle ``pending-takes/``: keep, take unforced, or drop each entry (design station ①).

    An entry whose session a job still names is kept; one whose transcript is
    gone is dropped; otherwise the session is taken, unforced (the live window
    guards a session resumed by hand meanwhile) and the entry removed; anything
    else (a live transcript, an unreadable entry, an error) keeps the entry.
    Takes a kill interrupted are finished first (``finish_interrupted``).
    Returns the sessions reclaimed from the ledger. Never raises: a drain
    never fails the verb it rode in on; a reclaimed take never spawns a dream.
    """
    finish_interrupted(layout)
    reclaimed = []
    try:
        entries = sorted(p for p in layout.pending_takes.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    except OSError:
        return reclaimed
    for entry in entries:
        try:
            if _settle(layout, entry):
                reclaimed.append(entry.stem)
        except Exception as error:  # noqa: BLE001 - a drain never fails its verb
            journal.write(layout, VERB, "kept", session=entry.stem, reason="error",
                          error=f"{type(error).__name__}: {error}")
    return reclaimed


def _settle(layout: Layout, entry: Path) -> bool:
    session_id = entry.stem
    try:
        data = read_pending_take(entry)
    except (OSError, ValueError):
        journal.write(layout, VERB, "kept", session=session_id, reason="unreadable-entry")
        return False
    session_id = data["session"]
    job = locate.live_job(session_id)
    if job is not None:
        journal.write(layout, VERB, "kept", session=session_id, reason="job-live", job=job)
        return False
    recorded = data.get("transcript")
    path = Path(recorded) if isinstance(recorded, str) and Path(recorded).is_absolute() else None
    if path is None or not path.exists():
        try:
            path = locate.find(session_id)
        except TranscriptNotFound:
            entry.unlink(missing_ok=True)
            journal.write(layout, VERB, "dropped", session=session_id, reason="transcript-gone")
            return False
    try:
        take_source(layout, session_id, locate.source(path), force=False, reclaimed=True)
    except TranscriptLive:
        journal.write(layout, VERB, "kept", session=session_id, reason="live")
        return False
    except TranscriptNotFound:
        entry.unlink(missing_ok=True)
        journal.write(layout, VERB, "dropped", session=session_id, reason="transcript-gone")
        return False
    except NothingNew:
        entry.unlink(missing_ok=True)
        journal.write(layout, VERB, "dropped", session=session_id, reason="nothing-new")
        return False
    except InputError as error:  # vet refused it: it will never be taken
        entry.unlink(missing_ok=True)
        journal.write(layout, VERB, "dropped", session=session_id, reason="refused", error=str(error))
        return False
    return True
