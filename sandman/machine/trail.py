"""The trail: one event per autonomous decision, append-only (docs/BANK-FORMAT.md § trail).

On disk: ``trail/<yyyy>/<mm>/<dd>.jsonl`` (the UTC day of the event), versioned,
one JSON object per line::

    {"id": "ev-20261201T031500Z-3f9a1c", "at": "2026-12-01T03:15:00Z", "kind": "shift.commit",
     "parent": "ev-20261201T021000Z-a81e02", "shift": "s-20261201T0210Z", "repo": "/home/u/code/app",
     "summary": "split parser.py", "model": "claude-opus-4", "cost_usd": 0.42, "data": {}}

An id is ``ev-<UTC stamp to the second>-<6 hex digits>``: unique, sortable by
time, and it names its own day file (``find`` reads one file). A line is never
edited or removed: a revocation is a new ``revoke`` event naming an event or a
shift (``data.target``). Lines are appended whole under ``.commit.lock`` by a
rewrite of the day file through banks.commit's transaction (atomic, undone if
the process dies), and committed with ``Verb: trail``.

The API the machine verbs call (shift, report, score, breathe, curators):

- ``append(layout, kind, summary, parent=None, shift=None, repo=None, model=None,
  cost_usd=None, data=None) -> Event``: one event in its own commit
  (``trail: <kind>: <summary>``, trailers ``Verb: trail``, ``Event: <id>``,
  ``Kind: <kind>``). Raises InputError (bad kind, id, parent, shift, repo, cost,
  data), LockBusy, RepositoryError.
- A caller that is already committing (dream, upkeep, reflect) makes the event
  first and writes its line inside its own transaction, so the event lands in
  the same commit as what it decided::

      event = trail.new_event("dream.commit", summary, data={"session": sid})
      with bank_transaction(layout, verb="dream", subject=...) as tx:
          ...  # the memories
          trail.write(tx, event)  # the line, and Event:/Kind: on this commit

  A commit that only may carry the event (dream's second memory of one
  session) passes ``trailers=trail.trailers(event)`` and writes no line.

- ``read(layout, since=None) -> Trail`` (events in file order, lines skipped
  counted), ``find(layout, id) -> Event | None``, ``Trail.descendants(id)``,
  ``Trail.revoked_by(event)``, ``Trail.of_shift(shift)``; ``revoke(layout,
  target, why) -> Event``; ``event_ids(value)`` reads an ``Event:`` trailer
  (a category word from before the trail, ``voyage``, ``upkeep``, ``merge``,
  is not an event); ``commit_kind(trailers)`` reads ``Kind:`` with the old
  words mapped.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sandman import config, journal
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.machine.owner import refuse_owner_kind

VERB = "trail"
EVENT_ID = re.compile(r"ev-([0-9]{8})T([0-9]{6})Z-[0-9a-f]{6}")
SHIFT_ID = re.compile(r"s-[0-9]{8}T[0-9]{4}(?:[0-9]{2})?Z")
KIND = re.compile(r"[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)*")
REVOKE = "revoke"
RECONCILE = "reconcile"
MAX_LINE_BYTES = 64 * 1024  # a line larger than this is refused at append
SUMMARY_MAX_CHARS = 300
FIELDS = ("id", "at", "kind", "parent", "shift", "repo", "summary", "model", "cost_usd", "data")
# ``Event:`` held a category word before the trail; those words now go to ``Kind:``.
OLD_EVENT_WORDS = {"voyage": "reflect.entry", "upkeep": "upkeep.apply", "merge": "sync.merge"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(slots=True)
class Event:
    """One decision on the trail (docs/BANK-FORMAT.md § trail). ``at`` is ``YYYY-MM-DDTHH:MM:SSZ``."""

    id: str
    at: str
    kind: str
    summary: str
    parent: str | None = None
    shift: str | None = None
    repo: str | None = None
    model: str | None = None
    cost_usd: float | None = None
    data: dict = field(default_factory=dict)

    @property
    def day(self) -> str:
        """The UTC day (``YYYY-MM-DD``) whose file holds the event."""
        return self.at[:10]

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}

    def line(self) -> str:
        """The event as one JSON line (no newline)."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(", ", ": "))

    @classmethod
    def from_json(cls, value: object) -> "Event":
        """Rebuild an event from a decoded line; raise ValueError when it is not one."""
        # Straight-line on purpose: a year's trail is 100,000 of these (bench/trail.py).
        if type(value) is not dict:
            raise ValueError("not an object")
        get = value.get
        ident, at, kind, summary = get("id"), get("at"), get("kind"), get("summary")
        if type(ident) is not str or not EVENT_ID.fullmatch(ident):
            raise ValueError("no valid id")
        if type(at) is not str or type(kind) is not str or type(summary) is not str:
            raise ValueError("at, kind or summary missing")
        parent, shift, repo, model = get("parent"), get("shift"), get("repo"), get("model")
        for item in (parent, shift, repo, model):
            if item is not None and type(item) is not str:
                raise ValueError("a field has the wrong type")
        cost = get("cost_usd")
        if cost is not None and type(cost) is not float and type(cost) is not int:
            raise ValueError("cost_usd is not a number")
        data = get("data")
        return cls(ident, at, kind, summary, parent, shift, repo, model, cost,
                   data if type(data) is dict else {})


# --- ids and checks -------------------------------------------------------------------------


def is_event_id(value: object) -> bool:
    return isinstance(value, str) and EVENT_ID.fullmatch(value) is not None


def is_shift_id(value: object) -> bool:
    return isinstance(value, str) and SHIFT_ID.fullmatch(value) is not None


def check_target(value: str) -> str:
    """Return ``value`` when it is an event id or a shift id; raise InputError naming it otherwise."""
    if is_event_id(value) or is_shift_id(value):
        return value
    raise InputError(f"{value!r} is neither an event id (ev-YYYYMMDDTHHMMSSZ-xxxxxx) nor a shift id "
                     "(s-<yyyymmddTHHMM[SS]>Z); `sandman trail log` lists them")


def shift_order(ident: str, opened_at: object) -> tuple[str, str]:
    """The sort key of a shift, oldest first: ``(when, id)``, ``when`` its ``meta.json`` ``opened_at``
    (``YYYY-MM-DDTHH:MM:SSZ``) else its id's time in that form, the id the tie-break. Ids come in a
    minute form and a second form (``s-20261205T1144Z``, ``s-20261205T114448Z``), whose strings
    do not sort by time."""
    if isinstance(opened_at, str) and opened_at:
        return opened_at, ident
    stamp = ident[2:-1].ljust(15, "0")  # yyyymmddTHHMM[SS]
    return f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}Z", ident


def new_id(moment: datetime) -> str:
    return f"ev-{moment:%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}"


def _one_line(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def new_event(
    kind: str,
    summary: str,
    *,
    parent: str | None = None,
    shift: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    model: str | None = None,
    cost_usd: float | None = None,
    data: dict | None = None,
    now: datetime | None = None,
) -> Event:
    """Make an event (a fresh id, ``at`` now, UTC) without writing it; ``write`` or ``append`` it.

    ``summary`` is made one line and cut at 300 characters. Raises InputError
    naming the bad field: a kind that is not ``<family>.<what>`` in lower case,
    a parent or shift id of the wrong shape, a relative ``repo``, a negative,
    non-finite or over ``config.EVENT_COST_MAX_USD`` ``cost_usd``, ``data`` that is not a JSON object, a line over
    64 KiB. (That the parent exists is checked by ``append``, which reads.)
    """
    if not isinstance(kind, str) or not KIND.fullmatch(kind) or ("." not in kind and kind not in (REVOKE, RECONCILE)):
        raise InputError(f"event kind {kind!r} is not <family>.<what> in lower case (dream.commit, shift.commit)")
    summary = _one_line(summary or "")[:SUMMARY_MAX_CHARS]
    if not summary:
        raise InputError("an event needs a summary: one line saying what was decided")
    if parent is not None and not is_event_id(parent):
        raise InputError(f"parent {parent!r} is not an event id (ev-YYYYMMDDTHHMMSSZ-xxxxxx)")
    if shift is not None and not is_shift_id(shift):
        raise InputError(f"shift {shift!r} is not a shift id (s-<yyyymmddTHHMM[SS]>Z)")
    if repo is not None:
        path = Path(repo)
        if not path.is_absolute() or _CONTROL.search(str(path)):
            raise InputError(f"repo {str(repo)!r} is not an absolute path")
        repo = os.path.normpath(path)
    if cost_usd is not None:
        if isinstance(cost_usd, bool) or not isinstance(cost_usd, (int, float)) or not math.isfinite(cost_usd) \
                or cost_usd < 0:
            raise InputError(f"cost {cost_usd!r} is not a non-negative number of US dollars")
        if cost_usd > config.EVENT_COST_MAX_USD:
            raise InputError(f"cost {cost_usd:g} is over the {config.EVENT_COST_MAX_USD:,.0f} US dollars one event "
                             "may carry; give what it cost in US dollars")
    if data is not None and not isinstance(data, dict):
        raise InputError("event data must be a JSON object")
    if model is not None:
        model = _one_line(model) or None
    moment = now or journal.now_utc()
    event = Event(new_id(moment), journal.iso(moment), kind, summary, parent=parent, shift=shift,
                  repo=None if repo is None else str(repo), model=model,
                  cost_usd=None if cost_usd is None else float(cost_usd), data=dict(data or {}))
    try:
        size = len(event.line().encode("utf-8"))
    except (TypeError, ValueError):
        raise InputError("event data is not plain JSON (objects, lists, strings, numbers)") from None
    if size > MAX_LINE_BYTES:
        raise InputError(f"the event is {size:,} bytes as a line; the trail takes at most {MAX_LINE_BYTES:,}")
    return event


def trailers(event: Event) -> dict[str, str]:
    """The trailers of a commit carrying ``event``: ``Event: <id>``, ``Kind: <kind>``, ``Shift:`` if any."""
    found = {"Event": event.id, "Kind": event.kind}
    if event.shift:
        found["Shift"] = event.shift
    return found


def event_ids(values: Iterable[str]) -> list[str]:
    """The event ids among ``Event:`` trailer values; a category word (``voyage``) is not an event."""
    return [value.strip() for value in values if is_event_id(value.strip())]


def commit_kind(pairs: Iterable[tuple[str, str]]) -> str | None:
    """A commit's kind from its trailers: ``Kind:``, else an old commit's ``Event: voyage|upkeep|merge``."""
    pairs = list(pairs)
    for key, value in pairs:
        if key == "Kind":
            return value.strip()
    for key, value in pairs:
        if key == "Event" and value.strip() in OLD_EVENT_WORDS:
            return OLD_EVENT_WORDS[value.strip()]
    return None


# --- writing --------------------------------------------------------------------------------


def write(tx, event: Event) -> Path:
    """Append ``event``'s line to its day file inside an open BankTransaction ``tx``; return the file.

    The day file is rewritten whole (old bytes, then the line), atomically, under
    the transaction's ``.commit.lock``, and committed with the transaction. A
    last line a killed writer left without its newline is closed first, so the
    new line stays whole (the broken one is skipped by readers). The commit's
    trailers gain ``Event: <id>`` (a commit may carry several: an upkeep plan
    and its merges), and ``Kind:`` and ``Shift:`` when it has none yet.
    """
    named = tx.trailers.get("Event")
    named = [] if not named else [named] if isinstance(named, str) else list(named)
    if event.id not in named:
        tx.trailers["Event"] = named + [event.id] if named else event.id
    tx.trailers.setdefault("Kind", event.kind)
    if event.shift:
        tx.trailers.setdefault("Shift", event.shift)
    path = tx.layout.trail_day(event.day)
    old = path.read_bytes() if path.exists() else b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    tx.write_file(path, old + event.line().encode("utf-8") + b"\n")
    return path


def append_event(layout: Layout, event: Event, *, verb: str = VERB) -> str | None:
    """Write a made event in its own commit; return the commit id. Raises InputError (unknown
    parent), LockBusy, RepositoryError."""
    from sandman.banks.commit import bank_transaction

    if event.parent is not None and find(layout, event.parent) is None:
        raise InputError(f"parent {event.parent} is not on the trail; `sandman trail log` lists the events")
    subject = f"{event.kind}: {event.summary}"[:120]
    with bank_transaction(layout, verb=verb, subject=subject, trailers=trailers(event)) as tx:
        write(tx, event)
    journal.write(layout, VERB, "appended", id=event.id, kind=event.kind, commit=(tx.commit or "")[:12])
    return tx.commit


def append(
    layout: Layout,
    kind: str,
    summary: str,
    parent: str | None = None,
    shift: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    model: str | None = None,
    cost_usd: float | None = None,
    data: dict | None = None,
) -> Event:
    """Append one event to the trail and commit it (``Verb: trail``); return it.

    Raises InputError (``new_event``'s checks; a parent not on the trail),
    LockBusy, RepositoryError, ForeignRepository, LeftoverSecret; InputError for an owner
    decision's kind (machine.owner.OWNER_KINDS: their verbs write them).
    """
    refuse_owner_kind(kind)
    event = new_event(kind, summary, parent=parent, shift=shift, repo=repo, model=model, cost_usd=cost_usd,
                      data=data)
    append_event(layout, event)
    return event


# --- reading --------------------------------------------------------------------------------


@dataclass
class Trail:
    """The events read, in file order, and the lines that were not events (``skipped``:
    ``<file>:<line number>``)."""

    events: list[Event] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_id: dict[str, Event] | None = None
        self._children: dict[str, list[Event]] | None = None
        self._revokes: dict[str, Event] | None = None

    def _index(self) -> None:
        if self._by_id is not None:
            return
        self._by_id, self._children, self._revokes = {}, {}, {}
        for event in self.events:
            self._by_id.setdefault(event.id, event)
            if event.parent:
                self._children.setdefault(event.parent, []).append(event)
            if event.kind == REVOKE and isinstance(event.data.get("target"), str):
                self._revokes.setdefault(event.data["target"], event)

    def get(self, event_id: str) -> Event | None:
        self._index()
        return self._by_id.get(event_id)

    def descendants(self, event_id: str) -> list[Event]:
        """Every event whose ``parent`` chain reaches ``event_id``, in file order (cycles ignored)."""
        self._index()
        found: dict[str, Event] = {}
        todo = [event_id]
        while todo:
            for child in self._children.get(todo.pop(), ()):
                if child.id not in found and child.id != event_id:
                    found[child.id] = child
                    todo.append(child.id)
        order = {event.id: n for n, event in enumerate(self.events)}
        return sorted(found.values(), key=lambda event: order.get(event.id, 0))

    def of_shift(self, shift: str) -> list[Event]:
        """The events of one shift (``shift`` field), revocations and reconciles aside."""
        return [event for event in self.events if event.shift == shift and event.kind not in (REVOKE, RECONCILE)]

    def revocation(self, target: str) -> Event | None:
        """The ``revoke`` event naming ``target`` (an event or shift id) itself, if any."""
        self._index()
        return self._revokes.get(target)

    def revoked_by(self, event: Event) -> Event | None:
        """The revoke that makes ``event`` revoked: one naming it, an ancestor or its shift.

        Revocations and reconciles are never revoked themselves.
        """
        if event.kind in (REVOKE, RECONCILE):
            return None
        self._index()
        seen: set[str] = set()
        current: Event | None = event
        while current is not None and current.id not in seen:
            seen.add(current.id)
            for target in (current.id, current.shift):
                if target and target in self._revokes:
                    return self._revokes[target]
            current = self._by_id.get(current.parent) if current.parent else None
        return None

    def targets(self, target: str) -> list[Event]:
        """The events a reconcile of ``target`` undoes: the event (or the shift's events) and all
        their descendants, revocations and reconciles aside, in file order."""
        roots = self.of_shift(target) if is_shift_id(target) else [e for e in [self.get(target)] if e]
        found: dict[str, Event] = {}
        for root in roots:
            for event in [root, *self.descendants(root.id)]:
                if event.kind not in (REVOKE, RECONCILE):
                    found.setdefault(event.id, event)
        order = {event.id: n for n, event in enumerate(self.events)}
        return sorted(found.values(), key=lambda event: order.get(event.id, 0))


def read_file(path: Path, trail: Trail) -> None:
    """Add the events of one day file to ``trail``; a truncated, non-JSON or non-event line is
    counted in ``trail.skipped``, never fatal. A file that cannot be read counts as one skip."""
    try:
        data = path.read_bytes()
    except OSError:
        trail.skipped.append(f"{path}:0")
        return
    read_data(data, path, trail)


def read_data(data: bytes, path: Path, trail: Trail) -> None:
    """Add the events of a day file's bytes ``data`` (read from ``path``) to ``trail``, as ``read_file``."""
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            trail.events.append(Event.from_json(json.loads(raw)))
        except (ValueError, TypeError, RecursionError):
            trail.skipped.append(f"{path}:{number}")


def read(layout: Layout, since: str | None = None) -> Trail:
    """Read the trail, oldest day first; ``since`` (``YYYY-MM-DD``) skips the days before it."""
    trail = Trail()
    for path in layout.trail_days():
        if since is not None and _day_of(layout, path) < since:
            continue
        read_file(path, trail)
    return trail


def _day_of(layout: Layout, path: Path) -> str:
    year, month, name = path.relative_to(layout.trail).parts
    return f"{year}-{month}-{name[:2]}"


def find(layout: Layout, event_id: str) -> Event | None:
    """Return the event ``event_id`` by reading only its day file; None when it is not there."""
    match = EVENT_ID.fullmatch(event_id)
    if match is None:
        return None
    stamp = match.group(1)
    trail = Trail()
    path = layout.trail_day(f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}")
    if path.exists():
        read_file(path, trail)
    return next((event for event in trail.events if event.id == event_id), None)


def log(layout: Layout, *, since: str | None = None, kind: str | None = None, repo: str | None = None,
        shift: str | None = None) -> Trail:
    """Read the trail filtered: ``kind`` matches a kind or its family (``dream`` or ``dream.commit``),
    ``repo`` the path as given (normalised), ``shift`` the shift id. Raises InputError for a bad ``since``."""
    since = check_day(since) if since is not None else None
    return select(read(layout, since), since=since, kind=kind, repo=repo, shift=shift)


def check_day(value: str) -> str:
    """Return ``value`` as ``YYYY-MM-DD``; raise InputError naming it when it is not a date."""
    try:
        return datetime.strptime(value, "%Y-%m-%d").strftime("%Y-%m-%d")
    except ValueError:
        raise InputError(f"--since {value!r} is not a date YYYY-MM-DD") from None


def select(trail: Trail, *, since: str | None = None, kind: str | None = None, repo: str | None = None,
           shift: str | None = None) -> Trail:
    """The events of an already read ``trail`` that pass ``log``'s filters (``since`` already checked),
    oldest first: by ``at``, file order breaking ties. A day file is in time order until a sync
    merges one (this machine's lines, then the remote's: banks/merge.py), so file order is not enough."""
    wanted = os.path.normpath(repo) if repo else None
    events = [
        event for event in trail.events
        if (since is None or event.day >= since)
        and (kind is None or event.kind == kind or event.kind.startswith(kind + "."))
        and (wanted is None or event.repo == wanted)
        and (shift is None or event.shift == shift)
    ]
    events.sort(key=lambda event: event.at)
    return Trail(events, trail.skipped)


# --- revoking -------------------------------------------------------------------------------


def revoke(layout: Layout, target: str, why: str) -> tuple[Event, bool]:
    """Revoke an event or a shift: append a ``revoke`` event naming it (``data.target``, ``data.why``).

    Returns ``(revoke event, appended)``: a target already revoked by name gives
    the existing revoke and appends nothing. Raises InputError: a malformed or
    unknown id, a revoke or reconcile event (a revocation is not revoked), a
    shift with no events, an empty reason. Never edits a line.
    """
    check_target(target)
    why = _one_line(why or "")
    if not why:
        raise InputError("a revoke needs --why: one line saying what was wrong")
    trail = read(layout)
    if is_shift_id(target):
        if not trail.of_shift(target):
            raise InputError(f"shift {target} has no events on the trail; nothing to revoke")
    else:
        event = trail.get(target)
        if event is None:
            raise InputError(f"event {target} is not on the trail; `sandman trail log` lists the events")
        if event.kind in (REVOKE, RECONCILE):
            raise InputError(f"{target} is a {event.kind} event; a revocation or a reconcile cannot be revoked")
    existing = trail.revocation(target)
    if existing is not None:
        return existing, False
    event = new_event(REVOKE, f"revoke {target}: {why}", data={"target": target, "why": why})
    append_event(layout, event)
    return event, True
