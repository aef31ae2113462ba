"""``sandman statusline``: the live shift under Claude Code's prompt (docs/statusline.md).

Claude Code's ``statusLine`` setting runs a command after each assistant message (at most every
300 ms), gives it the session as JSON on stdin — ``session_id``, ``cwd``, ``model``, ``workspace``,
``cost``, and on a plan with usage limits ``rate_limits.five_hour.{used_percentage, resets_at}``
(epoch seconds; Claude Code 2.1.332) — and shows the first line it prints. This module prints:

    sandman s-20261201T2300Z · Tuesday Refactor · app · 3h12m left · window 2h10m · shift.commit edit NOTES.md (4m ago)

the open shift (``shifts/.current.json``), its day and theme and target (its ``meta.json``), how
long until its deadline, the usage window (the payload's ``rate_limits.five_hour``, else
``shifts/.window.json``), and the newest event of today's trail file (UTC; yesterday's before
the first of today). With no shift open: ``sandman no shift open`` and that last event. A
payload carrying the five-hour window is also recorded in ``shifts/.window.json`` (as
machine.session.record_window writes it), so ``shift clock`` knows the window the owner's
sessions saw. Text from files (a summary a session wrote) is shown with its control
characters as spaces and cut to length: it is data, and the terminal must not run it.

Built-ins only (no ``json``, ``re``, ``pathlib``, ``datetime``): sandman/fasthook.py runs it
under ``python -I -S``, and bench/statusline.py measures it against ``python -c pass``. It never
raises: a missing or unreadable file leaves its part out. The paths are layout.py's (a test checks
each copy); the root is config.root()'s plain case (``$SANDMAN_ROOT``, else ``~/.sandman``).
"""

from __future__ import annotations

import os
import time

from sandman import plainhook
from sandman.fastjson import parse, string

# layout.py's, relative to the root (tests/test_statusline.py checks them)
CURRENT = "shifts/.current.json"
WINDOW = "shifts/.window.json"
SHIFTS = "shifts"
TRAIL = "trail"
READ_MAX_BYTES = 1 << 20
TAIL_BYTES = 64 * 1024  # of today's trail file: the newest events are at its end
SUMMARY_CHARS = 60
MAX_CHARS = 240  # the whole line
RESET_MAX_AWAY_S = 7 * 86400  # a usage window's reset further from now than this is not one (a five-hour window)


def root() -> str | None:
    """``$SANDMAN_ROOT`` when it is absolute, else ``~/.sandman``; None for a relative one."""
    value = os.environ.get("SANDMAN_ROOT", "")
    if value:
        value = os.path.expanduser(value)
        return value if os.path.isabs(value) else None
    return os.path.join(os.path.expanduser("~"), ".sandman")


def _read(path: str, limit: int = READ_MAX_BYTES) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return b""


def _object(path: str) -> dict:
    return parse(_read(path)) or {}


def clean(text: object, limit: int = SUMMARY_CHARS) -> str:
    """``text`` on one line for a terminal: every character that is not printable (controls, escape
    sequences' lead-in, bidirectional overrides, line separators) a space, at most ``limit``
    characters (the last one ``…`` when cut)."""
    if not isinstance(text, str):
        return ""
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def epoch(stamp: object) -> float | None:
    """Epoch seconds of ``YYYY-MM-DDTHH:MM:SSZ`` (the form every sandman time takes) or of a number
    (epoch seconds, as Claude Code's ``resets_at``); None for anything else."""
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return float(stamp)
    if not isinstance(stamp, str) or len(stamp) != 20 or stamp[10] != "T" or stamp[19] != "Z":
        return None
    try:
        year, month, day = int(stamp[0:4]), int(stamp[5:7]), int(stamp[8:10])
        hour, minute, second = int(stamp[11:13]), int(stamp[14:16]), int(stamp[17:19])
    except ValueError:
        return None
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    return float(_days(year, month, day) * 86400 + hour * 3600 + minute * 60 + second)


def span(seconds: float) -> str:
    """``3h12m``, ``45m``, ``<1m`` (whole minutes, rounded down)."""
    minutes = int(seconds // 60)
    if minutes < 1:
        return "<1m"
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def last_event(base: str, now: float) -> dict | None:
    """The newest event line of today's trail file (UTC), else yesterday's; None when neither has one."""
    for back in (0, 86400):
        day = time.gmtime(now - back)
        path = os.path.join(base, TRAIL, f"{day.tm_year:04d}", f"{day.tm_mon:02d}", f"{day.tm_mday:02d}.jsonl")
        try:
            with open(path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - TAIL_BYTES))
                tail = handle.read(TAIL_BYTES)
        except OSError:
            continue
        for line in reversed(tail.split(b"\n")):
            event = parse(line) if line.strip() else None
            if event and isinstance(event.get("kind"), str):
                return event
    return None


def percentage(value: object) -> float | None:
    """``value`` as a used percentage: a finite number from 0 to 100, else None (NaN, infinities,
    ``true``, a negative or a larger number are no percentage: JSON has no NaN to write them as)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer past a float's range
        return None
    return value if 0.0 <= value <= 100.0 else None  # False for NaN too


def reset(value: object, now: float) -> float | None:
    """``value`` (``resets_at``: epoch seconds or a sandman time) as epoch seconds when it lies
    within ``RESET_MAX_AWAY_S`` (seconds) of ``now``; None for anything else (1e300, 1e999, year
    10000, a far past: what no five-hour window resets at, and what ``time.gmtime`` cannot show)."""
    try:
        seconds = epoch(value)
    except OverflowError:  # an integer past a float's range
        return None
    return seconds if seconds is not None and abs(seconds - now) <= RESET_MAX_AWAY_S else None


def five_hour(payload: dict, now: float) -> tuple[float, float | None] | None:
    """``(resets_at as epoch seconds, used_percentage or None)`` of the payload's
    ``rate_limits.five_hour``; None without one, or with a ``resets_at`` ``reset`` refuses at ``now``
    (epoch seconds). A used percentage ``percentage`` refuses is None."""
    limits = payload.get("rate_limits")
    window = limits.get("five_hour") if isinstance(limits, dict) else None
    if not isinstance(window, dict):
        return None
    resets = reset(window.get("resets_at"), now)
    return (resets, percentage(window.get("used_percentage"))) if resets is not None else None


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def record_window(base: str, window: tuple[float, float | None], now: float) -> None:
    """Write ``shifts/.window.json`` from the payload's window when it differs from what is there
    (atomically: a sibling temp file, then ``os.replace``); ``shifts/`` is made when missing."""
    path = os.path.join(base, WINDOW)
    known = _object(path)
    resets, used = _iso(window[0]), window[1]
    if known.get("resets_at") == resets and known.get("used_percentage") == used:
        return
    text = ("{\n" + f'  "resets_at": {string(resets)},\n  "used_percentage": {"null" if used is None else repr(used)},\n'
            + f'  "source": "statusline",\n  "at": {string(_iso(now))}\n' + "}\n")
    plainhook.write_atomic(path, text.encode("utf-8"))


def line(base: str, payload: dict, now: float) -> str:
    """The status line (no newline) for the memory root at ``base`` at epoch second ``now``."""
    parts = []
    current = _object(os.path.join(base, CURRENT))
    shift = current.get("shift")
    if isinstance(shift, str) and shift.startswith("s-") and shift.isprintable() and len(shift) < 40:
        meta = _object(os.path.join(base, SHIFTS, shift, "meta.json"))
        parts.append(shift if current.get("state") == "open" else f"{shift} ({clean(current.get('state'), 12)})")
        day = " ".join(clean(meta.get(key), 20) for key in ("weekday", "theme") if isinstance(meta.get(key), str))
        if day:
            parts.append(day)
        repo = meta.get("repo") or current.get("repo")
        if isinstance(repo, str) and repo:
            parts.append("rest day" if meta.get("rest") else clean(os.path.basename(repo.rstrip("/")), 40))
        deadline = epoch(meta.get("deadline") or current.get("deadline"))
        if deadline is not None:
            parts.append(f"{span(deadline - now)} left" if deadline > now else "past its deadline")
    else:
        parts.append("no shift open")
    window = five_hour(payload, now)
    if window is not None:
        record_window(base, window, now)
    else:
        known = _object(os.path.join(base, WINDOW))
        resets = reset(known.get("resets_at"), now)
        if resets is not None:
            window = (resets, percentage(known.get("used_percentage")))
    if window is not None and window[0] > now:
        spent = window[1] is not None and window[1] >= 100
        parts.append(f"window spent until {time.strftime('%H:%M', time.localtime(window[0]))}" if spent
                     else f"window {span(window[0] - now)}")
    event = last_event(base, now)
    if event is not None:
        at = epoch(event.get("at"))
        ago = f" ({span(now - at)} ago)" if at is not None and at <= now else ""
        parts.append(f"{clean(event.get('kind'), 30)} {clean(event.get('summary'))}".rstrip() + ago)
    return clean("sandman " + " \u00b7 ".join(parts), MAX_CHARS)


def main(payload: bytes, now: float | None = None) -> str:
    """The line to print for Claude Code's ``payload`` (stdin), with its newline; "" when there is no
    memory root (nothing to show). Never raises."""
    base = root()
    if base is None or not os.path.isdir(base):
        return ""
    try:
        return line(base, parse(payload) or {}, time.time() if now is None else now) + "\n"
    except Exception:  # noqa: BLE001 — a status line never breaks Claude Code: it shows nothing
        return ""
