"""What a running or ended shift session says about its cost and the usage window (docs/shift.md,
"Cost cap" and "The usage window").

- ``running_cost``: US dollars a session has spent so far, estimated from the token counts
  of its Claude Code transcript (``message.usage`` of each assistant message, counted once
  per message id) at ``config.SHIFT_PRICES_USD_PER_MTOK``; ``claude -p`` prints its real
  ``total_cost_usd`` only when it exits.
- ``limit_reset``: when the usage window resets, as a session's output names it after a
  usage-limit refusal: a ``rate_limit_info``/``rate_limit_event`` object with ``resetsAt``
  (epoch seconds, Claude Code 2.1.332's shape) or the older ``usage limit reached|<epoch>``.
- ``record_window``: keep ``shifts/.window.json`` (layout.shift_window) current with it, for
  ``shift clock`` when no ``[machine] window_file`` is set.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

from sandman import config, journal
from sandman.layout import Layout
from sandman.store.atomic import write_atomic

TRANSCRIPT_MAX_BYTES = 50_000_000  # a transcript read for its token counts is read at most this far
LEGACY_LIMIT = re.compile(r"usage limit reached\|(\d{9,11})", re.IGNORECASE)
LIMIT_WORDS = re.compile(r"usage limit|hit your (?:[a-z-]+ )*limit|limit reached", re.IGNORECASE)


def prices(model: str | None) -> tuple[float, float, float, float]:
    """``(input, output, cache write, cache read)`` US dollars per million tokens for ``model``."""
    name = (model or "").lower()
    for family, table in config.SHIFT_PRICES_USD_PER_MTOK.items():
        if family in name:
            return table
    return max(config.SHIFT_PRICES_USD_PER_MTOK.values())


def transcript(session: str) -> Path | None:
    """The live Claude Code transcript of ``session`` (a UUID), None when there is none (yet)."""
    from sandman.transcripts import locate

    found = [path for path in locate.live_transcripts(session) if path.suffix == ".jsonl"]
    return found[0] if found else None


def running_cost(session: str | None, model: str | None = None) -> float | None:
    """US dollars the session has spent so far, estimated from its transcript; None when no
    transcript or no usage is found. Each assistant message is counted once (Claude Code
    writes one line per content block, each repeating the message's usage); the model of the
    message prices it, else ``model``."""
    path = transcript(session) if session else None
    if path is None:
        return None
    seen: dict[str, float] = {}
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            read = 0
            for line in handle:
                read += len(line)
                if read > TRANSCRIPT_MAX_BYTES:
                    break
                if '"usage"' not in line:
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                message = entry.get("message") if isinstance(entry, dict) else None
                usage = message.get("usage") if isinstance(message, dict) else None
                if not isinstance(usage, dict):
                    continue
                key = str(message.get("id") or entry.get("uuid") or len(seen))
                seen[key] = _usd(usage, message.get("model") or model)
    except OSError:
        return None
    return round(sum(seen.values()), 6) if seen else None


def _usd(usage: dict, model: str | None) -> float:
    def count(name: str) -> float:
        value = usage.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0

    fresh, out, write, cached = prices(model)
    return (count("input_tokens") * fresh + count("output_tokens") * out
            + count("cache_creation_input_tokens") * write + count("cache_read_input_tokens") * cached) / 1e6


def limit_reset(text: str) -> tuple[datetime, float | None] | None:
    """``(when the window resets (aware UTC), its utilization in percent or None)`` as a session's
    output ``text`` (one JSON object or array a line) names it after a usage-limit refusal, the
    last one found; None when it names none."""
    found = None
    for line in text.splitlines():
        line = line.strip()
        legacy = LEGACY_LIMIT.search(line)
        if legacy:
            found = (datetime.fromtimestamp(int(legacy.group(1)), timezone.utc), None)
        if "resetsAt" not in line or not line.startswith(("{", "[")):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        for info in _infos(data):
            status, resets = info.get("status"), info.get("resetsAt")
            if status not in (None, "rejected") or isinstance(resets, bool) or not isinstance(resets, (int, float)):
                continue
            try:
                moment = datetime.fromtimestamp(float(resets), timezone.utc)
            except (OverflowError, OSError, ValueError):
                continue
            used = info.get("utilization")
            used = float(used) * (100 if isinstance(used, float) and used <= 1 else 1) if isinstance(
                used, (int, float)) and not isinstance(used, bool) else None
            found = (moment, used if used is not None else 100.0)
    return found


def _infos(data: object, depth: int = 0):
    """Every ``rate_limit_info`` object in ``data`` (searched a few levels down)."""
    if depth > 6:
        return
    if isinstance(data, list):
        for item in data:
            yield from _infos(item, depth + 1)
    elif isinstance(data, dict):
        info = data.get("rate_limit_info")
        if isinstance(info, dict):
            yield info
        for key, value in data.items():
            if key != "rate_limit_info" and isinstance(value, (dict, list)):
                yield from _infos(value, depth + 1)


def limited(result: dict | None, text: str) -> bool:
    """True when the session ended on a usage-limit refusal: its output names a reset, or its
    error result says so: ``api_error_status`` 429 / ``api_error_type`` ``rate_limit_error``
    (what 2.1.332 prints for a refused request under an API key: tests/test_shift.py), or a
    text speaking of the usage limit (a subscription's "You've hit your … limit · resets …")."""
    if limit_reset(text) is not None:
        return True
    if not result or not result.get("is_error"):
        return False
    if result.get("api_error_status") == 429 or result.get("api_error_type") == "rate_limit_error":
        return True
    return isinstance(result.get("result"), str) and LIMIT_WORDS.search(result["result"]) is not None


def record_window(layout: Layout, resets: datetime, used: float | None, source: str,
                  now: datetime | None = None) -> None:
    """Write ``shifts/.window.json`` (``{resets_at, used_percentage, source, at}``), atomically."""
    data = {"resets_at": journal.iso(resets), "used_percentage": used, "source": source,
            "at": journal.iso(now or journal.now_utc())}
    write_atomic(layout.shift_window, json.dumps(data, indent=2) + "\n")
