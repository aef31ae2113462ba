"""The machine's pages: the trail, shifts, breaths, reports, proposals and the score.

Phase one of a render, like site.gather and site.pages: ``gather_machine``
reads what the machine wrote into a ``Machine`` (nothing is written), and
``machine_pages`` turns it into ``Page`` objects whose JSON-able contexts hold
everything they show, so the incremental render's digests cover them. The
URL scheme (site-relative):

    trail/index.html                 the trail's days, newest first
    trail/<yyyy-mm-dd>.html          one UTC day's events (anchors: the event ids)
    shifts/index.html                every shift, newest first
    shifts/<shift id>.html           a shift: meta.json, brief, handoff, report, commits, findings, events
    breaths/index.html               the breaths, by repository (anchors: the breath ids)
    reports.html                     the shifts' reports, unread first
    proposals.html                   the proposals, with their state
    score.html                       the weeks scored, newest first
    score/<yyyy>-W<ww>.html          one week's numbers, each charted across every week scored

Everything here came from a shift session, a breath or a hand edit, so none
of it is trusted: values are escaped by the templates, markdown goes through
site.markup, an address is a link only when it is http(s), and file names that
become page paths (days, shift ids, weeks) are the validated shapes only. A
file that cannot be read or parsed is kept with its error and shown, never
raised. Formats: docs/BANK-FORMAT.md § trail, § shifts, § breath, § report,
§ score.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from sandman.errors import SandmanError
from sandman.layout import Layout
from sandman.machine import trail as trails
from sandman.site.gather import _no_follow, display_value, dump_state, file_identity, load_state
from sandman.site.markup import safe_link
from sandman.site.pages import Page, bank_path, entry_path, memory_path
from sandman.store.atomic import read_regular, write_atomic

TRAIL_CACHE_FORMAT = 1
MAX_TEXT_BYTES = 400_000  # of a brief, handoff or report shown on a page
WEEK_FILE = re.compile(r"(\d{4}-W\d{2})\.json")
WORST_ON_HOME = 3
HOME_UNREAD = 10
SHIFT_FILES = ("brief.md", "handoff.md", "report.md")
CHART_WIDTH, CHART_HEIGHT = 320, 132
# The plot's margins inside the chart: the y-axis labels on the left, the week ticks below.
CHART_LEFT, CHART_RIGHT, CHART_TOP, CHART_BOTTOM = 44, 12, 10, 24


# --- reading ----------------------------------------------------------------------------------


@dataclass
class Machine:
    """What the machine wrote, read once per render; every ``*_error`` is a sentence or ``""``."""

    days: dict[str, list[trails.Event]] = field(default_factory=dict)  # file day -> events, file order
    day_sha: dict[str, str] = field(default_factory=dict)  # file day -> SHA-256 of the day file's bytes
    trail: trails.Trail = field(default_factory=trails.Trail)
    shifts: list[dict] = field(default_factory=list)  # newest first
    breaths: list[dict] = field(default_factory=list)
    breaths_error: str = ""
    reports: list[dict] = field(default_factory=list)  # unread first
    reports_error: str = ""
    proposals: list[dict] = field(default_factory=list)
    proposals_error: str = ""
    scores: list[dict] = field(default_factory=list)  # oldest week first
    # event id -> [(repository, commit id, subject)] in the other known repositories (as `trail show`)
    repo_commits: dict[str, list] = field(default_factory=dict)


def _text(path: Path) -> tuple[str | None, str]:
    """Return ``(text, error)``: the file's text (None when absent) and why it could not be read."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return None, ""
    except OSError as error:
        return None, f"{path.name} cannot be read: {error.strerror or error}"
    note = ""
    if len(data) > MAX_TEXT_BYTES:
        data, note = data[:MAX_TEXT_BYTES], f"{path.name} is cut at {MAX_TEXT_BYTES:,} bytes"
    try:
        return data.decode("utf-8"), note
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), f"{path.name} is not UTF-8; shown with replacement marks"


# The order of an Event's fields in the trail cache: Event(*row).
_ROW = ("id", "at", "kind", "summary", "parent", "shift", "repo", "model", "cost_usd", "data")


def _parse_day(data: bytes, path: Path) -> tuple[list[trails.Event], list[int]]:
    """The events of a day file's bytes and the numbers of the lines that are not events."""
    trail = trails.Trail()
    trails.read_data(data, path, trail)
    return trail.events, [int(item.rsplit(":", 1)[1]) for item in trail.skipped]


def _cached_day(entry: object, identity: list[int]) -> tuple[list[trails.Event], list[int], str] | None:
    """A day as the cache holds it, when its identity is the file's and its shape is sound."""
    if not isinstance(entry, dict) or entry.get("identity") != identity:
        return None
    try:
        events = [trails.Event(*row) for row in entry["events"]]
        skipped = [int(n) for n in entry["skipped"]]
        sha = entry["sha"]
    except (KeyError, TypeError, ValueError):
        return None
    # Like the parse cache of the memories (site.gather), the rows are trusted as this module wrote them.
    return (events, skipped, sha) if isinstance(sha, str) else None


def _read_trail(layout: Layout, machine: Machine) -> None:
    """Read every day file of the trail into ``machine``. A file whose identity (inode, size,
    mtime, ctime) is the one the last render recorded in ``.site/.state/trail.marshal`` is taken
    from there, neither read nor parsed again; the cache is rewritten when anything changed."""
    cache = load_state(layout.site_trail_cache)
    old = cache.get("days") if isinstance(cache, dict) and cache.get("format") == TRAIL_CACHE_FORMAT else None
    old = old if isinstance(old, dict) else {}
    new: dict[str, dict] = {}
    for path in layout.trail_days():
        year, month, name = path.relative_to(layout.trail).parts
        day = f"{year}-{month}-{name[:2]}"
        try:
            identity = file_identity(os.lstat(path))
        except OSError:
            identity = None
        known = _cached_day(old.get(day), identity) if identity else None
        if known is not None:
            events, skipped, sha = known
            new[day] = old[day]
        else:
            try:
                with open(path, "rb", opener=_no_follow) as handle:
                    st = os.fstat(handle.fileno())
                    if not stat.S_ISREG(st.st_mode):
                        raise OSError(22, "is not a regular file")
                    data = handle.read()
            except OSError as error:
                events, skipped, sha = [], [0], f"unreadable: {error.strerror or error}"
            else:
                sha = hashlib.sha256(data).hexdigest()
                events, skipped = _parse_day(data, path)
                new[day] = {"identity": file_identity(st), "sha": sha, "skipped": skipped,
                            "events": [[getattr(event, key) for key in _ROW] for event in events]}
        machine.day_sha[day] = sha
        machine.days[day] = events
        machine.trail.events.extend(events)
        machine.trail.skipped.extend(f"{path}:{number}" for number in skipped)
    if new != old and layout.site_state.is_dir():
        # A cache: torn or lost by a crash, it is rebuilt (as the other caches of .site/.state/).
        write_atomic(layout.site_trail_cache, dump_state({"format": TRAIL_CACHE_FORMAT, "days": new}), durable=False)


def _read_shifts(layout: Layout) -> list[dict]:
    if not layout.shifts.is_dir():
        return []
    found = []
    for folder in sorted(layout.shifts.iterdir(), reverse=True):
        if not trails.is_shift_id(folder.name) or not folder.is_dir() or folder.is_symlink():
            continue
        shift = {"id": folder.name, "meta": None, "errors": []}
        raw, problem = _text(folder / "meta.json")
        if raw is None:
            shift["errors"].append(problem or "meta.json is missing")
        else:
            try:
                meta = json.loads(raw)
            except (ValueError, RecursionError) as error:
                shift["errors"].append(f"meta.json is not JSON ({error})")
            else:
                if isinstance(meta, dict):
                    shift["meta"] = meta
                else:
                    shift["errors"].append("meta.json is not a JSON object")
        for name in SHIFT_FILES:
            text, problem = _text(folder / name)
            shift[name] = text
            if problem:
                shift["errors"].append(problem)
        found.append(shift)
    return found


def _read_breaths(layout: Layout) -> list[dict]:
    from sandman.machine import breath

    folder = layout.breath_breaths
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("b-*.json")):
        raw, problem = _text(path)
        try:
            if raw is None:
                raise ValueError(problem or "gone")
            record = breath.Breath.from_json(json.loads(raw))
            found.append({"file": path.name, "breath": record, "error": ""})
        except (ValueError, RecursionError, TypeError) as error:
            found.append({"file": path.name, "breath": None, "error": f"{path.name} is not a breath ({error})"})
    return found


def _reports(layout: Layout, machine: Machine) -> None:
    """The shifts' reports as ``sandman report`` lists them, with its read marks (only read here)."""
    from sandman.machine import report

    shifts = {shift["id"]: shift for shift in machine.shifts}
    try:
        infos = report.reports(layout)
        unread = set(report.unread(layout))
    except (SandmanError, OSError, ValueError) as error:
        machine.reports_error = f"the reports could not be read: {error}"
        return
    def row(info) -> dict:
        return {"shift": info.shift, "repo": display_value(info.repo), "outcome": display_value(info.outcome),
                "opened_at": display_value(info.opened_at), "closed_at": display_value(info.closed_at),
                "read": info.shift not in unread, "handoff": display_value(getattr(info, "handoff", "")),
                "problem": display_value(getattr(info, "problem", "")),
                # What `sandman report` says of it (report.summary), and the digest's worst news mark.
                "counts": "" if info.outcome == report.UNREADABLE else report.counts(info),
                "bad": report.severity(info) < 2,
                "revoked": machine.trail.revocation(info.shift) is not None}

    # Unread first, each part worst first as the SessionStart digest orders it (report.worst_first).
    unread_rows = [row(info) for info in report.worst_first([info for info in infos if info.shift in unread])]
    read_rows = [row(info) for info in report.worst_first([info for info in infos if info.shift not in unread])]
    for row_ in unread_rows + read_rows:
        row_["url"] = [shift_path(row_["shift"]), "report"] if row_["shift"] in shifts else None
    machine.reports = unread_rows + read_rows


def _proposals(layout: Layout, machine: Machine) -> None:
    from sandman.machine import proposals

    try:
        # From the trail this render already read, when the module offers it: not a second read.
        read = getattr(proposals, "from_trail", None)
        found = read(machine.trail) if read is not None else proposals.proposals(layout)
    except (SandmanError, OSError, ValueError) as error:
        machine.proposals_error = f"the proposals could not be read: {error}"
        return
    names = ("id", "shift", "repo", "title", "body", "state", "opened_at", "decided_at", "why", "taken_by")
    machine.proposals = [{name: display_value(getattr(item, name, None)) for name in names} for item in found]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


def _read_scores(layout: Layout) -> list[dict]:
    if not layout.score.is_dir():
        return []
    found = []
    for path in sorted(layout.score.iterdir()):
        match = WEEK_FILE.fullmatch(path.name)
        if not match:
            continue
        week = match.group(1)
        raw, problem = _text(path)
        score = {"week": week, "error": "", "empty": False, "numbers": [], "worst": [], "tables": [], "notes": []}
        try:
            if raw is None:
                raise ValueError(problem or "gone")
            data = json.loads(raw)
            if not isinstance(data, dict) or not isinstance(data.get("numbers"), list):
                raise ValueError("not a score: no numbers list")
            for item in data["numbers"]:
                if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                    raise ValueError("a number without a key")
                score["numbers"].append({
                    "key": item["key"], "label": display_value(item.get("label")) or item["key"],
                    "family": display_value(item.get("family")), "value": _number(item.get("value")),
                    "unit": display_value(item.get("unit")), "target": _number(item.get("target")),
                    "direction": display_value(item.get("direction")), "distance": _number(item.get("distance")),
                    "detail": display_value(item.get("detail")),
                })
            for table in data.get("tables") if isinstance(data.get("tables"), list) else []:
                if isinstance(table, dict) and isinstance(table.get("rows"), list):
                    columns = table.get("columns") if isinstance(table.get("columns"), list) else []
                    score["tables"].append({
                        "title": display_value(table.get("title")), "columns": [display_value(c) for c in columns],
                        "rows": [[display_value(cell) for cell in row] for row in table["rows"] if isinstance(row, list)],
                    })
            notes = data.get("notes")
            score["notes"] = [display_value(note) for note in notes] if isinstance(notes, list) else []
            score["empty"] = bool(data.get("empty"))
            worst = data.get("worst")
            score["worst"] = [key for key in worst if isinstance(key, str)] if isinstance(worst, list) else []
        except (ValueError, RecursionError) as error:
            score["error"] = f"{path.name} is not a readable score ({error})"
            score["numbers"], score["tables"], score["notes"] = [], [], []
        found.append(score)
    return found


def gather_machine(layout: Layout) -> Machine:
    """Read the trail, shifts, breaths, reports, proposals and scores of ``layout``.

    Never raises for bad content: a bad trail line is counted (``trail.skipped``),
    a bad meta.json, breath, score or report listing is kept with its error.
    Raises OSError only when a folder cannot be listed.
    """
    machine = Machine()
    _read_trail(layout, machine)
    machine.shifts = _read_shifts(layout)
    try:
        machine.breaths = _read_breaths(layout)
    except OSError as error:
        machine.breaths_error = f"the breaths could not be read: {error}"
    _reports(layout, machine)
    _proposals(layout, machine)
    machine.scores = _read_scores(layout)
    _repo_commits(layout, machine)
    return machine


def _repo_commits(layout: Layout, machine: Machine) -> None:
    """The commits of the other known repositories that carry an event (machine.repositories)."""
    from sandman.machine import repositories

    try:
        machine.repo_commits, _ = repositories.carried_events(layout, machine.trail)
    except (SandmanError, OSError):  # bad [machine] roots: the events show their memory-root commits only
        machine.repo_commits = {}


# --- paths --------------------------------------------------------------------------------------


def trail_day_path(day: str) -> str:
    return f"trail/{day}.html"


def shift_path(shift_id: str) -> str:
    return f"shifts/{shift_id}.html"


def score_path(week: str) -> str:
    return f"score/{week}.html"


def web_address(address: str) -> bool:
    """True when ``address`` may be a clickable link on a breath: http(s) only."""
    return safe_link(address) and address.strip().lower().startswith(("http://", "https://"))


# --- pages ----------------------------------------------------------------------------------------


class MachinePages:
    """Builds the machine's pages from a Machine and the site's Snapshot (for commit links)."""

    def __init__(self, machine: Machine, snapshot) -> None:
        self.machine = machine
        self.snapshot = snapshot
        self.shift_ids = {shift["id"] for shift in machine.shifts}
        self.event_day = {event.id: day for day, events in machine.days.items() for event in events}
        self.commits = self._event_commits()
        self.revoked = self._revocations()

    def _revocations(self) -> dict[str, trails.Event]:
        """Event id -> the revoke that makes it revoked (as ``Trail.revoked_by``), in one pass:
        a parent is on the trail before its children, so its answer is known when they come;
        an event whose parent comes later asks ``revoked_by`` itself."""
        trail = self.machine.trail
        named = {event.data["target"]: event for event in trail.events
                 if event.kind == trails.REVOKE and isinstance(event.data.get("target"), str)}
        if not named:
            return {}
        found: dict[str, trails.Event] = {}
        seen: set[str] = set()
        for event in trail.events:
            if event.kind not in (trails.REVOKE, trails.RECONCILE):
                if event.parent and event.parent not in seen:
                    revoke = trail.revoked_by(event)
                else:
                    revoke = named.get(event.id) or (named.get(event.shift) if event.shift else None) \
                        or (found.get(event.parent) if event.parent else None)
                if revoke is not None:
                    found[event.id] = revoke
            seen.add(event.id)
        return found

    # -- links: a site path, or [site path, fragment] (the ``link`` filter of site.markup) --
    def event_url(self, event_id: str | None) -> str | None:
        day = self.event_day.get(event_id or "")
        return [trail_day_path(day), event_id] if day else None

    def shift_url(self, shift_id: object) -> str | None:
        return shift_path(shift_id) if isinstance(shift_id, str) and shift_id in self.shift_ids else None

    def _page_of(self) -> dict[str, object]:
        """Root-relative path -> the page that shows it (memories, voyage entries, shifts, breaths)."""
        pages = {}
        for bank in self.snapshot.banks:
            for source in bank.memories:
                pages[source.relpath] = [memory_path(bank.name, source.relpath.rsplit("/", 1)[-1]), "history"]
            for source in bank.archived:
                pages[source.relpath] = [memory_path(bank.name, source.relpath.rsplit("/", 1)[-1], True), "history"]
            if bank.index is not None:
                pages[bank.index.relpath] = bank_path(bank.name)
        for source in self.snapshot.entries:
            pages[source.relpath] = entry_path(source.relpath.rsplit("/", 1)[-1][: -len(".md")])
        return pages

    def _event_commits(self) -> dict[str, list[dict]]:
        """Event id -> the memory root's commits carrying it in an ``Event:`` trailer, oldest first."""
        history = self.snapshot.history
        if history is None:
            return {}
        carrying: dict[str, list[str]] = {}
        for commit_id, info in history.commits.items():
            for event_id in trails.event_ids(value for key, value in info.trailers if key == "Event"):
                carrying.setdefault(commit_id, []).append(event_id)
        if not carrying:
            return {}
        pages = self._page_of()
        touched: dict[str, list[dict]] = {}
        for path, commit_ids in history.paths.items():
            for commit_id in commit_ids:
                if commit_id in carrying:
                    touched.setdefault(commit_id, []).append(path)
        found: dict[str, list[dict]] = {}
        for commit_id in sorted(carrying, key=lambda c: history.commits[c].time):
            info = history.commits[commit_id]
            links, seen = [], set()
            for path in sorted(touched.get(commit_id, ())):
                url = pages.get(path)
                if url is None:
                    parts = path.split("/")
                    if parts[0] == "shifts" and len(parts) > 1:
                        url = self.shift_url(parts[1])
                    elif parts[0] == "breath" and len(parts) == 3 and parts[1] == "breaths":
                        url = ["breaths/index.html", parts[2][: -len(".json")]]
                if url and str(url) not in seen:
                    seen.add(str(url))
                    links.append({"path": path, "url": url})
            row = {"id": commit_id, "short": commit_id[:12], "subject": info.subject, "time": info.time,
                   "links": links}
            for event_id in dict.fromkeys(carrying[commit_id]):
                found.setdefault(event_id, []).append(row)
        return found

    # -- summaries --
    def facts(self, event: trails.Event) -> list | None:
        """What an event's row shows that is not in its own line, or None when nothing is:
        its revocation, whether its shift and parent (or revoke target) have pages, its commits."""
        revoke = self.revoked.get(event.id)
        if revoke is None and event.kind != trails.REVOKE and event.id not in self.commits \
                and event.id not in self.machine.repo_commits \
                and (event.shift is None or event.shift not in self.shift_ids) \
                and (event.parent is None or event.parent not in self.event_day):
            return None
        target = event.data.get("target") if event.kind == trails.REVOKE else None
        found = [
            [revoke.id, self.event_day.get(revoke.id), display_value(revoke.data.get("why"))] if revoke else None,
            self.shift_url(event.shift) is not None, self.event_day.get(event.parent or ""),
            [self.event_url(target), self.shift_url(target)] if isinstance(target, str) else None,
            self.commits.get(event.id), self.machine.repo_commits.get(event.id),
        ]
        return None if found == [None, False, None, None, None, None] else found

    def event(self, event: trails.Event) -> dict:
        revoke = self.revoked.get(event.id)
        return {
            "id": event.id, "at": event.at, "time": event.at[11:19], "kind": event.kind, "summary": event.summary,
            "shift": event.shift or "", "shift_url": self.shift_url(event.shift),
            "repo": event.repo or "", "model": event.model or "",
            "cost": "" if event.cost_usd is None else f"${event.cost_usd:.2f}",
            "parent": event.parent or "", "parent_url": self.event_url(event.parent),
            "target": display_value(event.data.get("target")) if event.kind == trails.REVOKE else "",
            "target_url": (self.event_url(event.data.get("target")) or self.shift_url(event.data.get("target")))
            if event.kind == trails.REVOKE else None,
            "revoked": None if revoke is None else {
                "id": revoke.id, "url": self.event_url(revoke.id), "why": display_value(revoke.data.get("why")),
            },
            "commits": self.commits.get(event.id, []),
            "repo_commits": [{"repo": display_value(repo), "short": commit[:12], "subject": display_value(subject)}
                             for repo, commit, subject in self.machine.repo_commits.get(event.id, [])],
            # A proposal's live state is on proposals.html (listed there unless revoked).
            "proposal_url": ["proposals.html", event.id if event.kind == "proposal.open" else event.parent]
            if event.kind.startswith("proposal.") and revoke is None
            and (event.kind == "proposal.open" or event.parent in self.event_day) else None,
        }

    def named_proposals(self, text: str, carried: object) -> list[dict]:
        """The listed proposals a shift's report names (or its meta.json's ``proposals`` carried),
        in order of first mention, each with its live state and its anchor on proposals.html."""
        listed = {item["id"]: item for item in self.machine.proposals}
        ids = [match.group(0) for match in trails.EVENT_ID.finditer(text)]
        ids += [ident for ident in carried if isinstance(ident, str)] if isinstance(carried, list) else []
        return [{"id": ident, "title": listed[ident]["title"], "state": listed[ident]["state"],
                 "url": ["proposals.html", ident]} for ident in dict.fromkeys(ids) if ident in listed]

    def shift_summary(self, shift: dict) -> dict:
        meta = shift["meta"] or {}
        revoke = self.machine.trail.revocation(shift["id"])
        cost = _number(meta.get("cost_usd"))
        return {
            "id": shift["id"], "url": shift_path(shift["id"]), "ok": shift["meta"] is not None,
            "repo": display_value(meta.get("repo")), "outcome": (display_value(meta.get("outcome")) or "open") if shift["meta"] is not None else "unreadable",
            "theme": display_value(meta.get("theme")), "opened_at": display_value(meta.get("opened_at")),
            "closed_at": display_value(meta.get("closed_at")), "cost": "" if cost is None else f"${cost:.2f}",
            "revoked": revoke is not None,
        }

    # -- the pages --
    def pages(self) -> list[Page]:
        pages = [self._trail_index(), *self._trail_days(), self._shift_index(), *self._shifts(),
                 self._breaths(), self._reports(), self._proposals(), self._score_index(), *self._score_weeks()]
        return pages

    def _trail_index(self) -> Page:
        days = []
        for day in sorted(self.machine.days, reverse=True):
            events = self.machine.days[day]
            kinds: dict[str, int] = {}
            for event in events:
                kinds[event.kind] = kinds.get(event.kind, 0) + 1
            days.append({"day": day, "url": trail_day_path(day), "count": len(events),
                         "revoked": sum(1 for event in events if event.id in self.revoked),
                         "kinds": [[kind, count] for kind, count in sorted(kinds.items())]})
        context = {"title": "Trail", "days": days, "events": len(self.machine.trail.events),
                   "skipped": list(self.machine.trail.skipped)}
        return Page("trail/index.html", "html", "trail_index.html", context, "trail/")

    def _trail_days(self) -> list[Page]:
        """One page per day file. A day holds hundreds of events, so the page's context (what
        its digest covers) is a key: the file's SHA-256 and each event's facts from elsewhere;
        the rows are built only when the page is written (``Page.expand``)."""
        pages = []
        ordered = sorted(self.machine.days)
        for n, day in enumerate(ordered):
            prefix = f"{day[:4]}/{day[5:7]}/{day[8:]}.jsonl"
            skipped = [item for item in self.machine.trail.skipped if f"/{prefix}:" in item]
            events = self.machine.days[day]
            facts = []
            for i, event in enumerate(events):
                found = self.facts(event)
                if found is not None:
                    facts.append([i, found])
            context = {
                "title": f"Trail {day}", "day": day, "sha": self.machine.day_sha.get(day, ""), "facts": facts,
                "count": len(events), "skipped": [item.rsplit(":", 1)[-1] for item in skipped],
                "file": f"trail/{prefix}",
                "previous_day": ordered[n - 1] if n > 0 else None,
                "next_day": ordered[n + 1] if n + 1 < len(ordered) else None,
            }
            pages.append(Page(trail_day_path(day), "html", "trail_day.html", context, f"trail/{prefix}",
                              expand=lambda context, day=day: dict(
                                  context, events=[self.event(event) for event in self.machine.days[day]])))
        return pages

    def _shift_index(self) -> Page:
        context = {"title": "Shifts", "shifts": [self.shift_summary(shift) for shift in self.machine.shifts]}
        return Page("shifts/index.html", "html", "shift_index.html", context, "shifts/")

    def _shifts(self) -> list[Page]:
        pages = []
        unread = {row["shift"] for row in self.machine.reports if not row["read"]}
        for shift in self.machine.shifts:
            meta = shift["meta"] or {}
            commits = []
            for item in meta.get("commits") if isinstance(meta.get("commits"), list) else []:
                item = item if isinstance(item, dict) else {"subject": display_value(item)}
                events = item.get("events") if isinstance(item.get("events"), list) else []
                commits.append({
                    "commit": display_value(item.get("commit"))[:12], "subject": display_value(item.get("subject")),
                    "resolves": item.get("resolves") is True,
                    "events": [{"id": display_value(e), "url": self.event_url(e if isinstance(e, str) else None)}
                               for e in events],
                })
            findings = meta.get("findings") if isinstance(meta.get("findings"), list) else []
            shown = ("repo", "branch", "trunk", "base", "worktree", "day", "weekday", "theme", "week", "session",
                     "model", "opened_at", "deadline", "closed_at", "cost_usd", "brief_characters")
            revoke = self.machine.trail.revocation(shift["id"])
            context = {
                **self.shift_summary(shift), "title": f"Shift {shift['id']}", "errors": list(shift["errors"]),
                "fields": [[key, display_value(meta.get(key))] for key in shown if meta.get(key) is not None],
                "start_event": {"id": display_value(meta.get("start_event")),
                                "url": self.event_url(meta.get("start_event") if isinstance(
                                    meta.get("start_event"), str) else None)},
                "handoff_event": {"id": display_value(meta.get("handoff_event")),
                                  "url": self.event_url(meta.get("handoff_event") if isinstance(
                                      meta.get("handoff_event"), str) else None)},
                "commits": commits, "findings": [display_value(f) for f in findings],
                "brief": shift["brief.md"], "handoff": shift["handoff.md"], "report": shift["report.md"],
                "report_proposals": self.named_proposals(shift["report.md"] or "", meta.get("proposals")),
                "unread": shift["id"] in unread,
                "revocation": None if revoke is None else {"id": revoke.id, "url": self.event_url(revoke.id),
                                                           "why": display_value(revoke.data.get("why"))},
                "events": [self.event(event) for event in self.machine.trail.of_shift(shift["id"])],
            }
            pages.append(Page(shift_path(shift["id"]), "html", "shift.html", context, f"shifts/{shift['id']}/"))
        return pages

    def _breaths(self) -> Page:
        groups: dict[str, list[dict]] = {}
        broken = []
        for item in self.machine.breaths:
            record = item["breath"]
            if record is None:
                broken.append(item["error"])
                continue
            scores = record.scores if isinstance(record.scores, dict) else {}
            address = display_value(record.address)
            history = record.history if isinstance(record.history, list) else []
            groups.setdefault(display_value(record.repo), []).append({
                "id": display_value(record.id), "title": display_value(record.title), "address": address,
                "link": web_address(address), "source": display_value(record.source),
                "state": display_value(record.state), "filed_at": display_value(record.filed_at),
                "scores": [[name, display_value(scores.get(name))] for name in ("bearing", "novelty", "provenance")],
                "body": display_value(record.body),
                "history": [{"state": display_value(h.get("state")), "at": display_value(h.get("at")),
                             "event": display_value(h.get("event")),
                             "url": self.event_url(h.get("event") if isinstance(h.get("event"), str) else None)}
                            for h in history if isinstance(h, dict)],
            })
        context = {"title": "Breaths", "error": self.machine.breaths_error, "broken": broken,
                   "repos": [{"repo": repo, "breaths": groups[repo]} for repo in sorted(groups)]}
        return Page("breaths/index.html", "html", "breaths.html", context, "breath/breaths/")

    def _reports(self) -> Page:
        context = {"title": "Reports", "error": self.machine.reports_error, "reports": self.machine.reports,
                   "unread": sum(1 for row in self.machine.reports if not row["read"])}
        return Page("reports.html", "html", "reports.html", context, "shifts/*/report.md")

    def _proposals(self) -> Page:
        rows = []
        for item in self.machine.proposals:
            rows.append({**item, "url": self.event_url(item["id"]), "shift_url": self.shift_url(item["shift"]),
                         "taken_url": self.shift_url(item["taken_by"])})
        order = {"open": 0, "approved": 1, "taken": 2, "declined": 3}
        rows.sort(key=lambda row: (order.get(row["state"], 4), row["opened_at"]))
        context = {"title": "Proposals", "error": self.machine.proposals_error, "proposals": rows}
        return Page("proposals.html", "html", "proposals.html", context, "the trail's proposals")

    def _score_index(self) -> Page:
        weeks = [{"week": s["week"], "url": score_path(s["week"]), "error": s["error"], "empty": s["empty"],
                  "worst": self._worst(s)} for s in reversed(self.machine.scores)]
        return Page("score.html", "html", "score_index.html", {"title": "Score", "weeks": weeks}, "score/")

    def _worst(self, score: dict) -> list[dict]:
        by_key = {number["key"]: number for number in score["numbers"]}
        return [number_view(by_key[key]) for key in score["worst"] if key in by_key][:WORST_ON_HOME]

    def _score_weeks(self) -> list[Page]:
        pages = []
        weeks = [score["week"] for score in self.machine.scores]
        for n, score in enumerate(self.machine.scores):
            numbers = []
            for number in score["numbers"]:
                series = [(other["week"], _value_of(other, number["key"])) for other in self.machine.scores]
                numbers.append({**number_view(number), "chart": chart(series, number["target"], score["week"], number["unit"])})
            worst = set(score["worst"])
            context = {
                "title": f"Score {score['week']}", "week": score["week"], "error": score["error"],
                "empty": score["empty"], "worst": self._worst(score),
                "numbers": [dict(number, worst=number["key"] in worst) for number in numbers],
                "tables": score["tables"], "notes": score["notes"],
                "previous_week": weeks[n - 1] if n > 0 else None,
                "next_week": weeks[n + 1] if n + 1 < len(weeks) else None,
            }
            pages.append(Page(score_path(score["week"]), "html", "score_week.html", context,
                              f"score/{score['week']}.json"))
        return pages

    def home(self) -> dict:
        """What the home page leads with: the unread reports and the latest score's worst three."""
        latest = next((score for score in reversed(self.machine.scores) if not score["error"]), None)
        unread = [row for row in self.machine.reports if not row["read"]]
        return {
            "unread": unread[:HOME_UNREAD], "unread_count": len(unread), "reports_error": self.machine.reports_error,
            "latest_week": latest["week"] if latest else None,
            "latest_url": score_path(latest["week"]) if latest else None,
            "latest_empty": latest["empty"] if latest else False,
            "worst": self._worst(latest) if latest else [],
        }


def _value_of(score: dict, key: str) -> float | None:
    for number in score["numbers"]:
        if number["key"] == key:
            return number["value"]
    return None


def _show(value: float | None, unit: str) -> str:
    """A number as text in its unit: ``share`` (0..1) as a percentage, ``USD`` as dollars,
    ``count`` bare, any other unit after the number."""
    if value is None:
        return "not measured"
    if unit == "share":
        return f"{value * 100:.0f}%"
    if unit == "USD":
        return f"${value:,.2f}"
    text = f"{value:,.0f}" if value == int(value) else f"{value:,.3g}"
    return text if unit in ("", "count") else f"{text} {unit}"


def number_view(number: dict) -> dict:
    """A score number as the pages show it: value and target as text, met or not."""
    return {
        **number, "shown": _show(number["value"], number["unit"]),
        "target_shown": _show(number["target"], number["unit"]) if number["target"] is not None else "",
        "better": "higher" if number["direction"] == "up" else "lower" if number["direction"] == "down" else "",
        # The target with its direction: "≤ 10%" (lower is better), "≥ 80%" (higher is better).
        "goal": "" if number["target"] is None else (
            {"up": "≥ ", "down": "≤ "}.get(number["direction"], "") + _show(number["target"], number["unit"])),
        "met": number["distance"] == 0 if number["distance"] is not None else None,
    }


def chart(series: list[tuple[str, float | None]], target: float | None, current: str, unit: str = "") -> dict:
    """Return the geometry of one number's SVG line chart across weeks (template _machine.html).

    ``series`` is ``(week, value or None)`` oldest first; a None is a gap in
    the line. ``target`` is drawn as a dashed horizontal line. ``unit`` is the
    number's (score contract): the y-axis labels and each point's title are shown
    in it ("100%", "$2.00"). The weeks are ticked along the bottom: the first,
    the last and the current. Coordinates are in SVG user units of a
    ``CHART_WIDTH`` x ``CHART_HEIGHT`` box, rounded to tenths so equal data gives
    equal contexts.
    """
    values = [value for _, value in series if value is not None]
    span = values + ([target] if target is not None else [])
    low, high = (min(span), max(span)) if span else (0.0, 1.0)
    if high == low:
        step = 0.1 if unit == "share" else 1
        low, high = low - step, high + step
    inner_w, inner_h = CHART_WIDTH - CHART_LEFT - CHART_RIGHT, CHART_HEIGHT - CHART_TOP - CHART_BOTTOM

    def x_of(i: int) -> float:
        return round(CHART_LEFT + (inner_w * i / (len(series) - 1) if len(series) > 1 else inner_w / 2), 1)

    def y_of(value: float) -> float:
        return round(CHART_TOP + inner_h * (high - value) / (high - low), 1)

    segments, run, points = [], [], []
    for i, (week, value) in enumerate(series):
        if value is None:
            if run:
                segments.append(" ".join(run))
            run = []
            continue
        x, y = x_of(i), y_of(value)
        run.append(f"{x},{y}")
        points.append({"x": x, "y": y, "week": week, "value": value, "shown": _show(value, unit),
                       "current": week == current})
    if run:
        segments.append(" ".join(run))
    last = len(series) - 1
    ticked = sorted({0, last} | {i for i, (week, _) in enumerate(series) if week == current}) if series else []
    ticks = [{"x": x_of(i), "week": series[i][0],
              "anchor": "middle" if last == 0 or 0 < i < last else "start" if i == 0 else "end"}
             for i in ticked]
    # A current week too close to the first or last would print over its label.
    ticks = [tick for tick in ticks if tick["anchor"] != "middle" or last == 0 or
             min(tick["x"] - x_of(0), x_of(last) - tick["x"]) >= 60]
    return {
        "width": CHART_WIDTH, "height": CHART_HEIGHT, "segments": segments, "points": points,
        "left": CHART_LEFT, "right": CHART_WIDTH - CHART_RIGHT, "top": CHART_TOP, "bottom": CHART_TOP + inner_h,
        "target_y": y_of(target) if target is not None else None,
        "low": low, "high": high, "low_shown": _show(low, unit), "high_shown": _show(high, unit),
        "low_y": y_of(low), "high_y": y_of(high), "weeks": [week for week, _ in series], "ticks": ticks,
        "first": series[0][0] if series else "", "last": series[-1][0] if series else "",
        "gaps": sum(1 for _, value in series if value is None),
    }


def machine_pages(machine: Machine, snapshot) -> tuple[list[Page], dict]:
    """Return the machine's pages and the home page's lead (``MachinePages.home``)."""
    builder = MachinePages(machine, snapshot)
    return builder.pages(), builder.home()
