"""The journal: one line per decision in ``.trace/<verb>-<yyyy-mm-dd>.log``.

A line is ``<UTC time> <verb> <decision> key=value ...``: the time in ISO 8601
with a ``Z``, the decision one word (``committed``, ``declined``, ``abstained``),
then facts. A value with spaces, quotes, ``=`` or control characters is written
as a JSON string, so every line stays one line and parses back with
``parse_line``. Lines are appended with one ``write`` on an ``O_APPEND``
descriptor, so concurrent writers never interleave within a line.

The journal records decisions, never transcripts: callers pass facts, not text a
session wrote. ``forget`` writes no journal line (the design's privacy ending).

Standard library only: the hook entry points import this module.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path

from sandman.layout import Layout

_BARE = re.compile(r"[A-Za-z0-9_.,:/@+\-~#%]+")
MAX_VALUE_CHARS = 500


def now_utc() -> datetime:
    """Return the current time, timezone-aware UTC, to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def iso(moment: datetime) -> str:
    """Return ``moment`` as ``YYYY-MM-DDTHH:MM:SSZ`` (converted to UTC)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _value(value: object) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        text = str(value)
    else:
        text = json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS] + "…"
    return text if _BARE.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def format_line(verb: str, decision: str, moment: datetime, facts: dict[str, object]) -> str:
    """Return one journal line (no trailing newline) for ``verb``'s ``decision``."""
    parts = [iso(moment), verb, decision]
    parts += [f"{key}={_value(value)}" for key, value in facts.items()]
    return " ".join(parts)


def parse_line(line: str) -> tuple[str, str, str, dict[str, str]]:
    """Return ``(time, verb, decision, facts)`` of a journal line.

    Raises ValueError for a line that is not a journal line.
    """
    head = line.rstrip("\n").split(" ", 3)
    if len(head) < 3:
        raise ValueError(f"not a journal line: {line!r}")
    facts: dict[str, str] = {}
    rest = head[3] if len(head) == 4 else ""
    decoder = json.JSONDecoder()
    i = 0
    while i < len(rest):
        eq = rest.index("=", i)
        key = rest[i:eq]
        if rest[eq + 1 : eq + 2] == '"':
            value, end = decoder.raw_decode(rest, eq + 1)
        else:
            end = rest.find(" ", eq + 1)
            end = len(rest) if end < 0 else end
            value = rest[eq + 1 : end]
        facts[key] = value
        i = end + 1
    return head[0], head[1], head[2], facts


def write(layout: Layout, verb: str, decision: str, **facts: object) -> Path | None:
    """Append one decision to ``.trace/<verb>-<day>.log`` and return the file's path.

    Never raises: the journal must not turn a decision into a failure. When the
    line cannot be written (a read-only root, a full disk) it returns None.
    """
    moment = now_utc()
    path = layout.trace_file(verb, moment.strftime("%Y-%m-%d"))
    data = (format_line(verb, decision, moment, facts) + "\n").encode("utf-8", "backslashreplace")
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the first line of a root: .trace/ is made then, not checked on every line
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        return None
    return path
