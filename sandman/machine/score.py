"""The week's score: numbers against targets, worst three first (docs/score.md, docs/BANK-FORMAT.md § score).

Read only from what exists: the journals (``.trace/*.log``, docs/BANK-FORMAT.md
§ The journal, § Dream journal, § Reflect journal), the trail (§ trail),
``shifts/*/meta.json`` (§ shifts) and the breath store (§ breath). Nothing here
calls a model or decides anything: the score is computed, so its commit
(``Verb: score``) carries no trail event.

A week is an ISO week ``yyyy-Www`` read in ``[machine] time_zone`` (the local
zone when unset): from Monday 00:00 to the next Monday 00:00 there. A journal
line or a trail event belongs to the week its time falls in; a shift to the
week its ``meta.json`` names.

Every ``Number`` has a target and a direction; its ``distance`` (0 = met, 1 =
as far as it gets) is the relative shortfall on the wrong side of the target:
``1 - value/target`` for "up", ``1 - target/value`` for "down" (a "down"
number whose target is 0 is 1 as soon as it is above 0). So a share, a count
and dollars compare. A number with no data this week is ``value None`` (not
measured), never 0. Counts that have no target (events by kind, repository,
model; breath movement) are detail tables.

The API: ``parse_week(text) -> date`` (its Monday; InputError for a bad week),
``current_week(layout, now) -> str``, ``previous_week(layout, now) -> str``,
``compute(layout, week) -> Score``, ``render(score) -> str`` (the page),
``as_json(score) -> dict`` / ``json_text(score) -> str`` (schema 1),
``commit(layout, score) -> commit id | None``, ``write(layout, week) -> Path``,
``write_files(tx, layout, score)`` (inside a caller's bank transaction: the rest
day's brief), ``refresh_ended(layout, now)`` (reflect's step).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from sandman import config, journal
from sandman.errors import ConfigError, InputError
from sandman.layout import Layout
from sandman.machine import trail as trails
from sandman.machine import week as weeks

VERB = "score"
SCHEMA = 1
WEEK = re.compile(r"([0-9]{4})-W([0-9]{2})")  # ASCII digits only: \d matches any Unicode digit
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_TOKEN = re.compile(r"\w+")
_FIRST, _LAST = "0001-W02", "9999-W51"  # a week's window and a zone's day either side are dates
RECURRENCE_JACCARD = 0.5  # title-token Jaccard at or above which a correction recurs
BRIEF_USED_TARGET = 0.2  # the share of a week's brief items with an id that shifts should name
FAMILIES = ("memory", "machine", "breath")


# --- records --------------------------------------------------------------------------------


@dataclass
class Number:
    """One scored number: ``value`` None when not measured this week; ``target`` and ``direction``
    ("up": higher is better, "down": lower is better); ``distance`` in [0, 1] (0 = met) or None."""

    key: str
    label: str
    family: str
    value: float | None
    unit: str  # "share" (0..1), "count", "USD"
    target: float
    direction: str
    distance: float | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        self.distance = distance(self.value, self.target, self.direction)

    def to_json(self) -> dict:
        return {"key": self.key, "label": self.label, "family": self.family, "value": self.value,
                "unit": self.unit, "target": self.target, "direction": self.direction,
                "distance": None if self.distance is None else round(self.distance, 4), "detail": self.detail}


@dataclass
class Table:
    """A detail table (counts with no target): ``columns`` and ``rows`` of strings or numbers."""

    key: str
    title: str
    columns: list[str]
    rows: list[list]

    def to_json(self) -> dict:
        return {"key": self.key, "title": self.title, "columns": self.columns, "rows": self.rows}


@dataclass
class Score:
    """One week's score: ``numbers`` (memory, then machine, then breath), ``worst`` the three measured
    numbers furthest from their targets, ``empty`` when nothing was measured, ``tables`` the detail,
    ``notes`` what could not be read (skipped trail lines, unreadable meta.json, journal lines)."""

    week: str
    start: str  # the local Monday, YYYY-MM-DD
    zone: str
    numbers: list[Number] = field(default_factory=list)
    worst: list[Number] = field(default_factory=list)
    empty: bool = True
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # what was read, one line each
    findings: list[str] = field(default_factory=list)  # promises the week broke (coverage), one line each


def distance(value: float | None, target: float, direction: str) -> float | None:
    """How far ``value`` is from ``target`` on the wrong side, relative, in [0, 1]; None when not measured."""
    if value is None:
        return None
    if direction == "up":
        if value >= target or target <= 0:
            return 0.0
        return min(1.0, (target - max(value, 0.0)) / target)
    if value <= target:
        return 0.0
    return 1.0 if target <= 0 else min(1.0, 1 - target / value)


# --- weeks ----------------------------------------------------------------------------------


def parse_week(text: str) -> date:
    """The Monday of ISO week ``text`` (``yyyy-Www``, two digits). Raises InputError naming it."""
    match = WEEK.fullmatch(text or "")
    if match is None:
        raise InputError(f"week {text!r} is not yyyy-Www (an ISO week such as 2026-W49)")
    year, number = int(match.group(1)), int(match.group(2))
    try:
        monday = date.fromisocalendar(year, number, 1)
        monday - timedelta(days=1), monday + timedelta(days=8)  # its window, a zone's day either side
        return monday
    except OverflowError:
        raise InputError(f"week {text!r} is out of range: weeks from {_FIRST} to {_LAST} are scored") from None
    except ValueError:
        if year < 1:
            raise InputError(f"week {text!r} is out of range: weeks from {_FIRST} to {_LAST} are scored") from None
        last = date(year, 12, 28).isocalendar()[1]
        raise InputError(f"week {text!r} does not exist: {year} has ISO weeks W01 to W{last:02d}") from None


def current_week(layout: Layout, now: datetime | None = None) -> str:
    """The ISO week of ``now`` (default the clock) in ``[machine] time_zone``. Raises ConfigError."""
    moment = now or journal.now_utc()
    return weeks.iso_week(moment.astimezone(config.machine(layout).zone()).date())


def previous_week(layout: Layout, now: datetime | None = None) -> str:
    """The ISO week that ended before ``now``'s week."""
    monday = parse_week(current_week(layout, now))
    return weeks.iso_week(monday - timedelta(days=7))


def _window(zone, monday: date) -> tuple[datetime, datetime]:
    start = datetime(monday.year, monday.month, monday.day, tzinfo=zone)
    end_day = monday + timedelta(days=7)
    end = datetime(end_day.year, end_day.month, end_day.day, tzinfo=zone)
    return start.astimezone(timezone.utc), end.astimezone(timezone.utc)


def _utc(stamp: object) -> datetime | None:
    if not isinstance(stamp, str) or not _STAMP.fullmatch(stamp):
        return None
    try:
        return datetime.fromisoformat(stamp[:-1]).replace(tzinfo=timezone.utc)  # strptime is 10x slower
    except ValueError:
        return None


# --- reading --------------------------------------------------------------------------------


@dataclass
class _Line:
    at: datetime
    verb: str
    decision: str
    facts: dict


def _journal_lines(layout: Layout, start: datetime, end: datetime, notes: list[str]) -> list[_Line]:
    """The journal lines whose time is in [start, end); lines that are not journal lines are counted."""
    found: list[_Line] = []
    skipped = 0
    day = start.date()
    while day <= end.date():
        for path in layout.trace_files(day.isoformat()):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                notes.append(f"{path.name}: unreadable, not counted")
                continue
            for raw in text.splitlines():
                try:
                    stamp, verb, decision, facts = journal.parse_line(raw)
                except ValueError:
                    skipped += 1
                    continue
                moment = _utc(stamp)
                if moment is None:
                    skipped += 1  # a detached run's own output shares the file
                    continue
                if start <= moment < end and verb != VERB:  # the score's own lines are not the week's data
                    found.append(_Line(moment, verb, decision, facts))
        day += timedelta(days=1)
    if skipped:
        notes.append(f"journals: {skipped} line(s) that are not journal lines skipped")
    return found


def _shift_metas(layout: Layout, week_name: str, start: datetime, end: datetime,
                 notes: list[str]) -> list[dict]:
    """``meta.json`` of the week's shifts; an unreadable one of the week (by its id's time) is noted."""
    found = []
    if not layout.shifts.is_dir():
        return found
    for folder in sorted(layout.shifts.iterdir()):
        if not trails.is_shift_id(folder.name):
            continue
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError, UnicodeDecodeError):
            meta = None
        if not isinstance(meta, dict) or not isinstance(meta.get("week"), str):
            stamp = folder.name[2:15]
            moment = datetime.strptime(stamp, "%Y%m%dT%H%M").replace(tzinfo=timezone.utc)
            if start <= moment < end:
                notes.append(f"shifts/{folder.name}/meta.json is not a shift record; not counted")
            continue
        if meta["week"] == week_name:
            meta.setdefault("id", folder.name)
            found.append(meta)
    return sorted(found, key=lambda meta: trails.shift_order(str(meta["id"]), meta.get("opened_at")))  # by opened_at


def _share(part: int, whole: int) -> float | None:
    return None if whole == 0 else part / whole


def _counts(counter: Counter) -> str:
    return ", ".join(f"{key} ({value})" for key, value in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _tokens(text: str) -> set[str]:
    return {token for token in _TOKEN.findall(text.lower()) if len(token) > 2}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


# --- the memory engine ------------------------------------------------------------------------


def _memory(lines: list[_Line], events: list[trails.Event], trail: trails.Trail, tables: list[Table],
            cap: float | None) -> list[Number]:
    minds = set(config.MINDS)
    pointers = [line for line in lines if line.verb == "dream" and line.decision in ("routed", "queued")]
    dreamt = [line for line in pointers if any(mind in line.facts for mind in minds)]
    reached = [line for line in dreamt if sum(line.facts.get(m) == "answered" for m in minds) >= config.DREAM_QUORUM]
    numbers = [Number(
        "dream.quorum", "Dream quorum rate", "memory", _share(len(reached), len(dreamt)), "share", 0.9, "up",
        detail=(f"{len(reached)} of {len(dreamt)} dreamt session(s) had at least {config.DREAM_QUORUM} minds answer"
                if dreamt else "no session dreamt by the minds this week"))]

    calls: Counter = Counter()
    abstained: Counter = Counter()
    reasons: dict[str, Counter] = defaultdict(Counter)
    for line in pointers:
        for mind in minds:
            verdict = line.facts.get(mind)
            if verdict is not None:
                calls[mind] += 1
                if verdict != "answered":
                    abstained[mind] += 1
                    reasons[mind][verdict] += 1
    for line in lines:
        if line.verb == "dream":
            continue
        for key in line.facts:
            if key.startswith("cost_"):
                calls[key[5:]] += 1
        mind = line.facts.get("mind")
        if line.decision in ("abstained", "rejected") and mind and f"cost_{mind}" in line.facts:
            abstained[mind] += 1
            reasons[mind][line.facts.get("reason") or "unknown"] += 1
    for mind in sorted(calls):
        numbers.append(Number(
            f"abstain.{mind}", f"Abstentions of the {mind} mind", "memory", _share(abstained[mind], calls[mind]),
            "share", 0.1, "down",
            detail=f"{abstained[mind]} of {calls[mind]} call(s)" + (f": {_counts(reasons[mind])}" if reasons[mind] else "")))

    spend: Counter = Counter()
    unknown = known = 0
    for line in lines:
        for key, value in line.facts.items():
            if key.startswith("cost_"):
                try:
                    dollars = float(value)
                except ValueError:
                    dollars = math.nan
                if not math.isfinite(dollars) or dollars < 0:
                    unknown += 1  # "unknown" (the CLI reported none), or a value that is not money
                    dollars = 0.0
                else:
                    known += 1
                spend[line.at.date().isoformat()] += dollars
    total = sum(spend.values())
    peak_day, peak = max(spend.items(), key=lambda kv: kv[1]) if spend else (None, 0.0)
    cost_detail = (f"${total:.2f} this week on {sum(calls.values())} mind call(s)"
                   + (f", highest {peak_day} ${peak:.2f}" if peak_day else "")
                   + (f"; {unknown} call(s) reported no cost" if unknown else ""))
    numbers.append(Number(
        "memory.cost", "Mind cost against the daily budget", "memory",
        None if cap is None or not known else peak / cap, "share", 1.0, "down",
        detail=(f"not measured: all {unknown} call(s) reported no cost" if spend and not known else
                (cost_detail + f" (budget ${cap:.2f} a UTC day)") if cap is not None and spend else
                (cost_detail + "; no machine.budget_usd_day set" if spend else "no mind ran this week"))))
    if known:
        tables.append(Table("memory.cost_by_day", "Mind cost by UTC day", ["day", "USD"],
                            [[day, round(value, 4)] for day, value in sorted(spend.items())]))

    writes = [line for line in lines if line.verb in ("dream", "remember")]
    committed = sum(1 for line in writes if line.decision == "committed")
    dream_committed = sum(1 for line in writes if line.verb == "dream" and line.decision == "committed")
    deduped = sum(1 for line in writes if line.verb == "dream" and line.decision == "deduped")
    unchanged = sum(1 for line in writes if line.verb == "remember" and line.decision == "unchanged")
    numbers.append(Number(
        "memory.committed", "Memories committed", "memory", float(committed) if writes else None, "count", 1, "up",
        detail=(f"{dream_committed} by dream, {committed - dream_committed} by remember" if writes
                else "neither dream nor remember ran this week")))
    numbers.append(Number(
        "memory.deduped", "Agreed memories already held (deduplicated)", "memory",
        _share(deduped, dream_committed + deduped), "share", 0.5, "down",
        detail=(f"{deduped} of {dream_committed + deduped} agreed by the minds were in a bank already"
                + (f"; remember left {unchanged} unchanged" if unchanged else "")
                if dream_committed + deduped else "no memory agreed by the minds this week")))

    secret_kinds = Counter()
    for line in lines:
        if line.decision == "dropped-secret":
            secret_kinds[f"{line.verb} dropped from a reply"] += 1
        elif line.decision == "refused" and line.facts.get("reason") == "secret":
            secret_kinds[f"{line.verb} refused"] += 1
        elif line.decision in ("highlight-refused", "cwd-masked"):
            secret_kinds[f"{line.verb} {line.decision}"] += 1
    # "handoff": the note's journal before issue 33 named it so
    guarded = [line for line in lines if line.verb in ("take", "dream", "remember", "note", "handoff")]
    numbers.append(Number(
        "memory.secrets", "Refused as secrets", "memory",
        float(sum(secret_kinds.values())) if guarded else None, "count", 0, "down",
        detail=_counts(secret_kinds) if secret_kinds else (
            "none refused" if guarded else "take, dream, remember and handoff did not run this week")))

    recalls = [line for line in lines if (line.verb == "recall" and line.decision == "recalled")
               or (line.verb == "mcp" and line.decision == "called" and line.facts.get("tool") == "recall")]
    trims: Counter = Counter()
    trimmed = 0
    for line in recalls:
        # "log-empty" says the voyage log has no entry yet: nothing was cut for the budget.
        cut = [part for part in (line.facts.get("trimmed") or "").split(",") if part and part not in ("-", "log-empty")]
        if cut:
            trimmed += 1
            trims.update(cut)
    numbers.append(Number(
        "recall.trims", "Recalls that trimmed", "memory", _share(trimmed, len(recalls)), "share", 0.2, "down",
        detail=(f"{trimmed} of {len(recalls)} recall(s) cut something for the budget" + (f": {_counts(trims)}" if trims else "")
                if recalls else "no recall this week")))

    decisions = [event for event in events if event.kind not in (trails.REVOKE, trails.RECONCILE)]
    revoked = [event for event in decisions if trail.revoked_by(event) is not None]
    revokes = sum(1 for event in events if event.kind == trails.REVOKE)
    numbers.append(Number(
        "trail.revoked", "Decisions revoked", "memory", _share(len(revoked), len(decisions)), "share", 0.05, "down",
        detail=(f"{len(revoked)} of the week's {len(decisions)} event(s) revoked; {revokes} revoke event(s) this week"
                if decisions else f"no decision on the trail this week; {revokes} revoke event(s)")))
    return numbers


# --- the machine ----------------------------------------------------------------------------


def _hours(meta: dict) -> float | None:
    opened, closed = _utc(meta.get("opened_at")), _utc(meta.get("closed_at"))
    return None if opened is None or closed is None else (closed - opened).total_seconds() / 3600


def _length(hours: float) -> str:
    """A shift's length for a reader: seconds under a minute, minutes under an hour, else hours."""
    seconds = hours * 3600
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{hours:.2f} h"


def _machine(layout: Layout, settings: config.Machine, metas: list[dict], events: list[trails.Event],
             before: list[trails.Event], trail: trails.Trail, tables: list[Table], notes: list[str],
             findings: list[str] | None = None) -> list[Number]:
    from sandman.machine import pick

    numbers = []
    work = [meta for meta in metas if not meta.get("rest")]
    covered = sorted({str(meta.get("repo")) for meta in work if meta.get("repo")})
    try:
        every = [c.path for c in pick.candidates(layout, trail, signals=False) if c.pickable]
    except (InputError, ConfigError) as error:
        every = []
        notes.append(f"coverage: the repositories could not be listed ({error})")
    missed = [path for path in every if path not in covered]
    if findings is not None and work and missed:
        capacity = 6 * settings.shifts_per_night  # six working nights: the rest day holds its self-pass
        why = (f"{len(every)} pickable repositories, more than six working nights of machine.shifts_per_night "
               f"{settings.shifts_per_night} ({capacity}) can hold" if len(every) > capacity else
               f"the nights held {len(work)} weekday shift(s) for {len(every)} pickable repositories")
        findings += [f"coverage: {path} was not shifted this week; every pickable repository is shifted at "
                     f"least once a week ({why})" for path in missed]
    numbers.append(Number(
        "machine.coverage", "Repositories covered this week", "machine",
        _share(len([p for p in covered if p in every]), len(every)) if work and every else None, "share", 1.0, "up",
        detail=(f"{len(covered)} of {len(every)} pickable repositories shifted"
                + (f"; missed: {', '.join(missed)}" if missed else "") if work and every
                else "no weekday shift this week" if not work else "no pickable repository")))

    outcomes = Counter(str(meta.get("outcome") or "open") for meta in metas)
    closed = [meta for meta in metas if meta.get("outcome")]
    lengths = [h for h in (_hours(meta) for meta in closed) if h is not None]
    mean = sum(lengths) / len(lengths) if lengths else None
    numbers.append(Number(
        "shift.outcomes", "Shifts not abandoned", "machine",
        _share(sum(1 for m in closed if m.get("outcome") != "abandoned"), len(closed)), "share", 0.9, "up",
        detail=(f"{_counts(outcomes)}; mean length {_length(mean)}" if mean is not None else _counts(outcomes))
        if metas else "no shift this week"))
    if metas:
        tables.append(Table("shift.list", "Shifts", ["shift", "repository", "theme", "outcome", "length", "USD"],
                            [[m.get("id"), m.get("repo"), m.get("theme"), m.get("outcome") or "open",
                              None if _hours(m) is None else _length(_hours(m)), m.get("cost_usd")] for m in metas]))

    machine_events = [e for e in events if e.kind.startswith(("shift.", "breath."))]
    by_day: Counter = Counter()
    zone = settings.zone()
    for event in machine_events:
        moment = _utc(event.at)
        if event.cost_usd and moment is not None:
            by_day[moment.astimezone(zone).date().isoformat()] += event.cost_usd
    cap = settings.budget_usd_day
    peak_day, peak = max(by_day.items(), key=lambda kv: kv[1]) if by_day else (None, 0.0)
    total = sum(by_day.values())
    costed = [e for e in machine_events if e.cost_usd is not None]  # a cost of $0.00 is still measured
    numbers.append(Number(
        "machine.cost", "Machine cost against the daily budget", "machine",
        None if cap is None or not costed else peak / cap, "share", 1.0, "down",
        detail=("no shift or breath event this week" if not machine_events else
                f"not measured: none of {len(machine_events)} shift or breath event(s) carries a cost"
                if not costed else
                f"${total:.2f} this week" + (f", highest night {peak_day} ${peak:.2f}" if peak_day else "")
                + (f" (budget ${cap:.2f} a day)" if cap is not None else "; no machine.budget_usd_day set"))))

    ran = [e for e in events if (e.model and e.kind not in ("shift.start", "shift.cost"))
           or e.kind in ("shift.handoff", "breath.close")]
    # A handoff made from inside the session carries no cost; its shift.cost, appended when the
    # session exited (shift.settle_cost), does.
    settled = {e.shift for e in events if e.kind == "shift.cost" and e.cost_usd is not None}
    uncosted = [e for e in ran if e.cost_usd is None and not (e.kind == "shift.handoff" and e.shift in settled)]
    numbers.append(Number(
        "machine.uncosted", "Model runs that carry no cost", "machine", _share(len(uncosted), len(ran)),
        "share", 0.1, "down",
        detail=(f"{len(uncosted)} of {len(ran)} event(s) of a model run carry no cost_usd"
                + (f": {_counts(Counter(e.kind for e in uncosted))}" if uncosted else "")
                if ran else "no event of a model run this week")))

    corrections = [e for e in events if e.kind.split(".")[0] == "correction"]
    earlier = [e for e in before if e.kind.split(".")[0] == "correction"]
    recurring = 0
    for n, event in enumerate(corrections):
        mine = _tokens(event.summary)
        if any(_jaccard(mine, _tokens(other.summary)) >= RECURRENCE_JACCARD for other in earlier + corrections[:n]):
            recurring += 1
    numbers.append(Number(
        "correction.recurrence", "Corrections that recur", "machine", _share(recurring, len(corrections)),
        "share", 0.1, "down",
        detail=(f"{recurring} of {len(corrections)} correction(s) repeat an earlier one of this week or last "
                f"(title-token Jaccard ≥ {RECURRENCE_JACCARD})" if corrections else
                "unmeasured: no correction.* event this week (nothing in sandman emits them yet)")))

    starts = sorted((e for e in events if e.kind == "shift.start"), key=lambda e: e.at)
    seen: set[tuple[str, str, str]] = set()
    briefed = stale = 0
    stale_slots: Counter = Counter()
    for event in starts:
        items = _brief_items(event)
        for slot, ident, value in items:
            briefed += 1
            if (slot, ident, value) in seen:
                stale += 1
                stale_slots[slot] += 1
        seen.update(items)
    if not starts:
        none = "no shift brief this week"
    else:
        none = f"{len(starts)} shift brief(s) this week, every slot of them empty"
    numbers.append(Number(
        "context.stale", "Brief items seen in an earlier shift (stale)", "machine", _share(stale, briefed),
        "share", 0.5, "down",
        detail=(f"{stale} of {briefed} brief item(s) repeated an earlier shift's this week"
                + (f": {_counts(stale_slots)}" if stale_slots else "") if briefed else none)))

    from sandman.machine import items as briefing_items

    rows = briefing_items.used_by(layout, trail, starts)
    used = [row for row in rows if row["used_by"]]
    numbers.append(Number(
        "brief.used", "Brief items a shift named (used)", "machine", _share(len(used), len(rows)),
        "share", BRIEF_USED_TARGET, "up",
        detail=(f"{len(used)} of {len(rows)} item(s) with an id (memory, breath, proposal, finding, branch) "
                "were named by the shift they were briefed to or a later one" if rows else
                (none if not starts else "no brief item with an id this week"))))
    if used:
        tables.append(Table("brief.used", "Brief items shifts used", ["slot", "item", "briefed in", "used by"],
                            [[row["slot"], row["id"], row["briefed"], ", ".join(row["used_by"])] for row in used]))
    return numbers


def _brief_items(event: trails.Event) -> list[tuple[str, str, str]]:
    """``(slot, id, fingerprint)`` of each item a ``shift.start`` logged (``data.items``); an older
    start's per-slot ``data.fingerprints`` reads as one item per slot."""
    found = []
    for item in event.data.get("items") or []:
        if isinstance(item, dict):
            found.append((str(item.get("slot")), str(item.get("id")), str(item.get("fingerprint"))))
    prints = event.data.get("fingerprints")
    if isinstance(prints, dict):
        found += [(str(slot), str(slot), str(value)) for slot, value in prints.items()]
    return found


# --- the breath store -----------------------------------------------------------------------


def _breath(layout: Layout, events: list[trails.Event], end: datetime, tables: list[Table],
            notes: list[str]) -> list[Number]:
    from sandman.machine import breath

    moves = {"breath.file": "filed", "breath.spike": "spiked", "breath.adopt": "adopted", "breath.drop": "dropped"}
    moved = [e for e in events if e.kind in moves]
    per_source: dict[str, Counter] = defaultdict(Counter)
    for event in moved:
        per_source[str(event.data.get("source") or "?")][moves[event.kind]] += 1
    movement = Counter(moves[e.kind] for e in moved)
    try:
        stored = breath.all_breaths(layout)
    except InputError as error:
        stored = []
        notes.append(f"breath store: {error}")
    held: dict[str, Counter] = defaultdict(Counter)
    for item in stored:
        held[item.source][item.state] += 1
    if not moved and not any(item.filed_at < journal.iso(end) for item in stored):
        return []  # no store yet in that week: nothing to measure, not zeros
    adopted, dropped = movement["adopted"], movement["dropped"]
    numbers = [
        Number("breath.filed", "Breaths filed", "breath", float(movement["filed"]),
               "count", 1, "up", detail=", ".join(f"{state} {movement[state]}" for state in breath.STATES)),
        Number("breath.adoption", "Breaths adopted of those decided", "breath", _share(adopted, adopted + dropped),
               "share", 0.25, "up",
               detail=(f"{adopted} adopted, {dropped} dropped this week" if adopted + dropped
                       else "no breath adopted or dropped this week")),
    ]
    tables.append(Table("breath.movement", "Breath movement this week", list(breath.STATES),
                        [[movement[state] for state in breath.STATES]]))
    names = sorted(set(per_source) | set(held))
    tables.append(Table("breath.sources", "Breaths per source (this week's moves; held now)",
                        ["source", *breath.STATES, *(f"held {s}" for s in breath.STATES)],
                        [[name, *(per_source[name][s] for s in breath.STATES), *(held[name][s] for s in breath.STATES)]
                         for name in names]))
    return numbers


# --- the score ------------------------------------------------------------------------------


def compute(layout: Layout, week: str) -> Score:
    """Compute the score of ``week`` (``yyyy-Www``). Reads only; never raises for bad data (a skipped
    trail line, an unreadable ``meta.json`` or journal line is counted in ``notes``). Raises InputError
    (a bad week), ConfigError (a bad ``[machine]``)."""
    monday = parse_week(week)
    settings = config.machine(layout)
    zone = settings.zone()
    start, end = _window(zone, monday)
    score = Score(week, monday.isoformat(), settings.time_zone or f"local time ({start.astimezone(zone).tzname()})")
    notes = score.notes
    trail = trails.read(layout, since=(start - timedelta(days=8)).date().isoformat())
    if trail.skipped:
        shown = ", ".join(item.split(f"{layout.root}/", 1)[-1] for item in trail.skipped[:5])
        notes.append(f"trail: {len(trail.skipped)} line(s) that are not events skipped ({shown})")
    times = [(e, _utc(e.at)) for e in trail.events]
    in_week = [e for e, m in times if m is not None and start <= m < end]
    before = [e for e, m in times if m is not None and start - timedelta(days=7) <= m < start]
    lines = _journal_lines(layout, start, end, notes)
    metas = _shift_metas(layout, week, start, end, notes)
    score.sources = [f"trail: {len(in_week)} event(s) this week", f"journals: {len(lines)} line(s) this week",
                     f"shifts: {len(metas)} meta.json of this week"]

    numbers = _memory(lines, in_week, trail, score.tables, settings.budget_usd_day)
    if settings.on:
        numbers += _machine(layout, settings, metas, in_week, before, trail, score.tables, notes, score.findings)
    numbers += _breath(layout, in_week, end, score.tables, notes)
    score.numbers = numbers
    for name, attr in (("kind", "kind"), ("repository", "repo"), ("model", "model")):
        counts: Counter = Counter(str(getattr(e, attr) or "(none)") for e in in_week)
        costs: dict[str, float] = {}  # only the keys whose events carried a cost: no cost is not $0
        for event in in_week:
            if event.cost_usd is not None:
                key = str(getattr(event, attr) or "(none)")
                costs[key] = costs.get(key, 0.0) + event.cost_usd
        if counts:
            score.tables.append(Table(f"events.{name}", f"Events by {name}", [name, "events", "USD", "no cost"],
                                      [[key, count, round(costs[key], 4) if key in costs else None,
                                        sum(1 for e in in_week if str(getattr(e, attr) or "(none)") == key
                                            and e.cost_usd is None)]
                                       for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]))
    measured = [n for n in numbers if n.value is not None]
    score.empty = not measured
    order = {id(n): i for i, n in enumerate(numbers)}
    missed = [n for n in measured if n.distance]  # a met target is never among the worst
    score.worst = sorted(missed, key=lambda n: (-(n.distance or 0.0), order[id(n)]))[:3]
    return score


def _value(number: Number, value: float | None) -> str:
    if value is None:
        return "not measured"
    if number.unit == "share":
        return f"{value * 100:.0f}%"
    if number.unit == "USD":
        return f"${value:.2f}"
    return f"{value:g}"


def _target(number: Number) -> str:
    return ("≥ " if number.direction == "up" else "≤ ") + _value(number, number.target)


def _line(number: Number) -> str:
    met = "met" if not number.distance else f"distance {number.distance:.2f}"
    return (f"{number.label}: {_value(number, number.value)} against {_target(number)} ({met})"
            + (f" — {number.detail}" if number.detail else ""))


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def render(score: Score) -> str:
    """The page ``score/<week>.md``: the three worst numbers on its first three lines (or the plain
    "no data this week" line), then every number by family, the detail tables, what was read."""
    first, last = score.start, (date.fromisoformat(score.start) + timedelta(days=6)).isoformat()
    span = f"{first} to {last}, {score.zone}"
    if score.empty:
        lines = [f"no data this week: {score.week} ({span}) has no dreamt session, recall, memory written, "
                 "trail event, shift or breath movement to measure; nothing is scored", ""]
    elif not score.worst:
        lines = ["every number measured this week meets its target", ""]
    else:
        lines = [f"{n}. {_line(number)}" for n, number in enumerate(score.worst, 1)] + [""]
    lines += [f"# Score {score.week}", "", f"The week {span}; the worst three lead. A number not measured this "
              "week says so; none is a zero. Targets and distances: docs/score.md.", ""]
    titles = {"memory": "Memory engine", "machine": "Machine", "breath": "Breath"}
    for family in FAMILIES:
        mine = [n for n in score.numbers if n.family == family]
        if not mine:
            continue
        lines += [f"## {titles[family]}", "", "| number | value | target | distance | detail |", "|---|---|---|---|---|"]
        lines += [f"| {_cell(n.label)} | {_value(n, n.value)} | {_target(n)} | "
                  f"{'-' if n.distance is None else f'{n.distance:.2f}'} | {_cell(n.detail)} |" for n in mine]
        lines.append("")
    if score.findings:
        lines += ["## Findings", ""] + [f"- {finding}" for finding in score.findings] + [""]
    if score.tables:
        lines += ["## Detail", ""]
        for table in score.tables:
            lines += [f"### {table.title}", "", "| " + " | ".join(table.columns) + " |",
                      "|" + "---|" * len(table.columns)]
            lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in table.rows]
            lines.append("")
    lines += ["## Read", ""] + [f"- {item}" for item in score.sources + score.notes] + [""]
    return "\n".join(lines)


def as_json(score: Score) -> dict:
    """The JSON document ``score/<week>.json`` (schema 1; docs/BANK-FORMAT.md § score)."""
    return {"schema": SCHEMA, "week": score.week, "start": score.start, "zone": score.zone, "empty": score.empty,
            "numbers": [n.to_json() for n in score.numbers], "worst": [n.key for n in score.worst],
            "tables": [t.to_json() for t in score.tables], "notes": score.notes, "findings": score.findings}


def json_text(score: Score) -> str:
    return json.dumps(as_json(score), indent=2, ensure_ascii=False) + "\n"


def write_files(tx, layout: Layout, score: Score) -> Path:
    """Write the page and its JSON inside an open bank transaction ``tx``; return the page's path."""
    page = layout.week_score(score.week)
    tx.write_file(page, render(score))
    tx.write_file(layout.week_score_json(score.week), json_text(score))
    return page


def commit(layout: Layout, score: Score) -> str | None:
    """Commit ``score/<week>.md`` and ``.json`` of a computed ``score`` in one commit (``score: <week>``,
    ``Verb: score``, no ``Event:``: no model decided anything); return the commit id, None when the
    files already held this score. Raises LockBusy, RepositoryError."""
    from sandman.banks.commit import bank_transaction

    with bank_transaction(layout, verb=VERB, subject=score.week) as tx:
        write_files(tx, layout, score)
    journal.write(layout, VERB, "written", week=score.week, empty=score.empty,
                  measured=sum(n.value is not None for n in score.numbers),
                  worst=",".join(n.key for n in score.worst) or None, commit=(tx.commit or "")[:12] or None)
    return tx.commit


def write(layout: Layout, week: str) -> Path:
    """Compute ``week``'s score and commit its page and JSON (``commit``); return the page's path.
    Raises InputError (a bad week), ConfigError, LockBusy, RepositoryError."""
    commit(layout, compute(layout, week))
    return layout.week_score(week)


def refresh_ended(layout: Layout, now: datetime | None = None) -> tuple[str, str | None, bool]:
    """Score the week that ended before ``now`` (reflect's step): commit its page and JSON when they
    do not exist yet or no longer match what the week's data give; a week with nothing to measure and
    no page gets none (as a quiet day gets no voyage entry). Returns ``(week, commit or None, empty)``.
    Raises ConfigError, LockBusy, RepositoryError."""
    week = previous_week(layout, now)
    computed = compute(layout, week)
    if computed.empty and not layout.week_score(week).exists():
        return week, None, True
    try:
        same = (layout.week_score(week).read_text(encoding="utf-8") == render(computed)
                and layout.week_score_json(week).read_text(encoding="utf-8") == json_text(computed))
    except (OSError, UnicodeDecodeError):
        same = False
    return week, None if same else commit(layout, computed), computed.empty
