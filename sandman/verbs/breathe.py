"""``sandman breathe init|sources|file|list|spike|adopt|drop|pass|attach|close|reweight`` (docs/breathe.md).

Thin over sandman.machine.breath: build the breath document from flags or
stdin, call, and turn results into lines for a person or JSON.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from sandman import journal
from sandman.errors import InputError
from sandman.machine import breath
from sandman.machine.breath import Breath


def document(flags: dict, stdin_text: str | None) -> dict:
    """The breath to file: the flags given, or (when none is) the JSON document ``stdin_text``.

    ``flags`` maps title, address, source, repo, body, pass, bearing, novelty,
    provenance to values or None. Raises InputError when both or neither are given.
    """
    given = {key: value for key, value in flags.items() if value is not None}
    if given:
        if stdin_text and stdin_text.strip():
            raise InputError("give the breath by flags or as JSON on stdin, not both")
        doc = {key: given[key] for key in ("title", "address", "source", "repo", "body", "pass") if key in given}
        doc["scores"] = {key: given[key] for key in breath.SCORES if key in given}
        return doc
    if not stdin_text or not stdin_text.strip():
        raise InputError("no breath given: pass --title, --address, ... or a JSON document on stdin")
    return breath.read_document(stdin_text)


AT_SLACK = timedelta(minutes=5)  # how far past the clock ``--at`` may be (clock skew), no further


def parse_time(value: str | None, now: datetime | None = None) -> datetime | None:
    """``--at`` as a timezone-aware time (``2027-01-01T00:00:00Z``); None when not given. Raises InputError
    when it is not an ISO time with a zone, or later than ``now`` (default: the clock) plus AT_SLACK:
    a future run would be remembered and block every later one."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"--at {value!r} is not an ISO time (2027-01-01T00:00:00Z)") from None
    if moment.tzinfo is None:
        raise InputError(f"--at {value!r} has no time zone; end it with Z or +hh:mm")
    now = now or journal.now_utc()
    if moment > now + AT_SLACK:
        raise InputError(f"--at {value!r} is in the future (now {journal.iso(now)}); give a time up to now")
    return moment


def line(found: Breath) -> str:
    """One breath on one line: id, state, scores, source, repository, title."""
    scores = " ".join(f"{key[0]}{found.scores[key]:.1f}" for key in breath.SCORES)
    return f"{found.id} {found.state:<7} {scores} {found.source} {found.repo} — {found.title}"


def as_json(found: Breath) -> str:
    return json.dumps(found.to_json(), ensure_ascii=False)


def source_line(row: dict) -> str:
    due = "due" if row["due"] else "not due"
    return (f"{row['name']} weight {row['weight']:.2f} (start {row['start']:.2f}) {row['cadence']} {due} "
            f"{row['kind']} {row['address']}")
