"""shift pick: which repository a shift works (docs/BANK-FORMAT.md § shifts, "Rotation"; docs/shift.md, "pick").

Candidates are the git repositories under ``[machine] roots`` (store.repos.discover),
never the memory root's repository, one containing the memory root (``holds_memory_root``)
nor one under ``[machine] exclude``. A candidate is picked
only when Claude Code trusts it: its own per-project flag
``projects[<path>].hasTrustDialogAccepted`` in its global config
(``~/.claude.json``; ``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set), on the
repository's folder or one of its parents, as Claude Code reads it. A repository
whose trunk does not resolve is never picked either (a shift branch is cut from
the trunk).

Order: a repository with an approved proposal no shift has taken yet comes first
(machine.proposals; the oldest approval first, its reason naming the proposal);
then the repositories no weekday shift worked this ISO week (``due``: the
rotation's promise, every repository once a week); then by ``weight``, highest
first; ties by path. The weight adds the local signals, each read without a network
and each printed in the reasons with what it added (``SIGNALS``):

- the days since its newest weekday ``shift.start`` (never shifted: ``NEVER_DAYS``);
- the breaths filed or spiked against it (machine.breath);
- the proposals filed on it that the owner has not decided;
- the findings of its newest closed shift (``meta.json`` ``findings``);
- ``[machine] check`` failing in its folder (run by ``checks``, bounded by
  ``check_timeout_seconds``, remembered in ``shifts/.checks.json`` until the command
  or the repository's HEAD changes, or a day passes).

Trust, the trunk and ``exclude`` still decide what is pickable: no signal and no
approved proposal makes an untrusted repository pickable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sandman import config, journal
from sandman.errors import ConfigError, InputError, RepositoryError
from sandman.layout import Layout
from sandman.machine import proposals as proposing
from sandman.machine import week
from sandman.machine.trail import Trail, is_shift_id
from sandman.store import repos as git
from sandman.store.atomic import write_atomic

# What each signal adds to a repository's weight (docs/shift.md, "pick"), in days-since-last-shift units:
# one breath is worth a day, so a repository with a breath filed against it moves ahead of one shifted a
# day less recently; a red check is worth three. Each signal is capped so no pile of them outweighs the
# rotation: the repositories not shifted this week still come first whatever the others' weights.
NEVER_DAYS = 14.0  # a repository never shifted weighs as one last shifted two weeks ago
MAX_DAYS = 28.0
SIGNALS = {  # name: (points each, most points)
    "breaths": (1.0, 3.0),
    "proposals": (0.5, 1.0),
    "findings": (0.5, 2.0),
    "check": (3.0, 3.0),
}
CHECK_FRESH = timedelta(days=1)  # a remembered check result is rerun after this even when nothing changed
CHECK_OUTPUT_BYTES = 64 * 1024  # what of a check's output is read for its last line


@dataclass
class Candidate:
    """One repository under the roots and why it is (or is not) pickable."""

    path: str
    trusted: bool
    pickable: bool
    last_shifted: str | None = None  # the ``at`` of its newest shift.start, UTC
    trunk: str | None = None
    proposals: list[str] = field(default_factory=list)  # approved proposals waiting, oldest approval first
    reasons: list[str] = field(default_factory=list)
    due: bool = True  # no weekday shift worked it this ISO week
    weight: float | None = None  # the signals' sum (pickable only; None when not weighed)
    signals: dict = field(default_factory=dict)  # signal name -> what it added

    def to_json(self) -> dict:
        return asdict(self)


def trusted_folders() -> dict[str, bool]:
    """Claude Code's per-project trust flags: ``{absolute folder: hasTrustDialogAccepted}``.

    A missing file is no trust at all. Raises ConfigError naming the file when it
    is not a JSON object.
    """
    path = config.claude_global_config_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ConfigError(f"{path} (Claude Code's config) is not readable JSON: {error}") from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {os.path.normpath(key): entry.get("hasTrustDialogAccepted") is True
            for key, entry in projects.items() if isinstance(key, str) and isinstance(entry, dict)}


def is_trusted(path: Path, flags: dict[str, bool]) -> bool:
    """True when ``path`` or a parent folder carries Claude Code's trust flag."""
    current = Path(os.path.normpath(path))
    for folder in (current, *current.parents):
        if flags.get(str(folder)):
            return True
    return False


def holds_memory_root(path: Path, memory_root: Path) -> str | None:
    """Why the repository at ``path`` may never be shifted because of the memory root, or None.

    The memory root's own repository (the same folder, or a worktree sharing its git folder)
    and any repository whose folder contains the memory root (a dotfiles repository at ``~``
    holding ``~/.sandman``: a shift there could edit the trail) are never pickable. Paths are
    compared resolved (symbolic links followed)."""
    here, root = path.resolve(), memory_root.resolve()
    if here == root:
        return "the memory root: never shifted"
    if root.is_relative_to(here):
        return f"contains the memory root ({memory_root}): never shifted"
    try:
        if git.common_dir(git.open_at(path)) == git.common_dir(git.open_at(memory_root)):
            return f"a worktree of the memory root ({memory_root}): never shifted"
    except RepositoryError:
        pass
    return None


def last_shifted(trail: Trail) -> dict[str, str]:
    """``{repository path: at of its newest shift.start}`` (rest day starts left out)."""
    found: dict[str, str] = {}
    for event in trail.events:
        if event.kind == "shift.start" and event.repo and not event.data.get("rest"):
            if event.at > found.get(event.repo, ""):
                found[event.repo] = event.at
    return found


def shifted_in_week(trail: Trail, week_name: str) -> set[str]:
    """The repositories a weekday ``shift.start`` of ISO week ``week_name`` (its ``data.week``) names."""
    return {event.repo for event in trail.events if event.kind == "shift.start" and event.repo
            and not event.data.get("rest") and event.data.get("week") == week_name}


def latest_findings(layout: Layout) -> dict[str, list[str]]:
    """``{repository: the findings of its newest closed weekday shift}`` from ``shifts/*/meta.json``
    (an unreadable one is passed over: ``shift status`` names it)."""
    found: dict[str, list[str]] = {}
    if not layout.shifts.is_dir():
        return found
    for folder in sorted(layout.shifts.iterdir()):
        if not is_shift_id(folder.name):
            continue
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError, UnicodeDecodeError):
            continue
        if isinstance(meta, dict) and meta.get("outcome") and isinstance(meta.get("repo"), str) \
                and not meta.get("rest"):
            findings = meta.get("findings")
            found[os.path.normpath(meta["repo"])] = [str(f) for f in findings] if isinstance(findings, list) else []
    return found


@dataclass
class Check:
    """One run of ``[machine] check`` in a repository: ``exit`` its status (None: it did not finish in
    time or could not start), ``line`` the last line it printed (or why it did not finish)."""

    command: str
    head: str
    exit: int | None
    at: str
    line: str

    @property
    def failed(self) -> bool:
        return self.exit is not None and self.exit != 0


def run_check(command: str, repo: Path, timeout: float) -> tuple[int | None, str]:
    """Run ``command`` with ``/bin/sh -c`` in ``repo``, stdin empty, in a process group of its own that
    is killed when it outlives ``timeout`` seconds. Returns ``(exit status or None, last line)``."""
    try:
        process = subprocess.Popen(["/bin/sh", "-c", command], cwd=repo, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as error:
        return None, f"could not start: {error}"
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.communicate()
        return None, f"timed out after {timeout:g} s (machine.check_timeout_seconds)"
    lines = [line.strip() for line in output[-CHECK_OUTPUT_BYTES:].decode("utf-8", "replace").splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    return process.returncode, last[:200]


def checks(layout: Layout, settings: config.Machine, repos: list[str], now: datetime) -> dict[str, Check]:
    """``[machine] check``'s result in each of ``repos`` (absolute paths): remembered in
    ``shifts/.checks.json`` and rerun when the command or the repository's HEAD changed, or a day
    passed. Empty when no check is set."""
    if not settings.check:
        return {}
    try:
        known = json.loads(layout.shift_checks.read_text(encoding="utf-8"))
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError, RecursionError, UnicodeDecodeError):
        known = {}
    results, changed = {}, False
    for repo in repos:
        try:
            head = str(git.open_at(Path(repo)).head.target)
        except Exception:  # noqa: BLE001 — pygit2 raises several kinds for an unborn or odd HEAD
            head = ""
        entry = known.get(repo)
        if isinstance(entry, dict) and entry.get("command") == settings.check and entry.get("head") == head \
                and str(entry.get("at") or "") >= journal.iso(now - CHECK_FRESH) \
                and (entry.get("exit") is None or isinstance(entry.get("exit"), int)):
            results[repo] = Check(settings.check, head, entry.get("exit"), entry["at"], str(entry.get("line") or ""))
            continue
        status, line = run_check(settings.check, Path(repo), settings.check_timeout_seconds)
        results[repo] = Check(settings.check, head, status, journal.iso(now), line)
        known[repo] = asdict(results[repo])
        changed = True
    if changed:
        layout.shifts.mkdir(parents=True, exist_ok=True)
        write_atomic(layout.shift_checks, json.dumps(known, indent=2, ensure_ascii=False) + "\n")
    return results


def _add(item: Candidate, name: str, count: float, reason: str) -> None:
    """Weigh ``count`` of signal ``name`` into ``item`` and print what it added in its reasons."""
    each, most = SIGNALS[name]
    points = min(count * each, most)
    item.signals[name] = points
    item.weight = (item.weight or 0.0) + points
    item.reasons.append(f"{reason} (+{points:g})")


def weigh(layout: Layout, trail: Trail, settings: config.Machine, found: list[Candidate], now: datetime) -> None:
    """Give each pickable candidate its ``due``, ``weight``, ``signals`` and a reason per signal."""
    pickable = [c for c in found if c.pickable]
    if not pickable:
        return
    this_week = week.iso_week(week.day_of(settings, now))
    shifted = shifted_in_week(trail, this_week)
    breath_note, breaths_by = None, {}
    try:
        from sandman.machine import breath

        for item in breath.all_breaths(layout):
            if item.state in ("filed", "spiked"):
                breaths_by.setdefault(os.path.normpath(item.repo or ""), []).append(item.id)
    except InputError as error:
        breath_note = f"breaths not read: {error}"
    undecided: dict[str, list[str]] = {}
    for proposal in proposing.from_trail(trail):
        if proposal.state == "open" and proposal.repo:
            undecided.setdefault(os.path.normpath(proposal.repo), []).append(proposal.id)
    findings = latest_findings(layout)
    results = checks(layout, settings, [c.path for c in pickable], now)
    for item in pickable:
        item.due = item.path not in shifted
        item.reasons.append(f"not shifted this week ({this_week}): due" if item.due
                            else f"already shifted this week ({this_week})")
        if item.last_shifted:
            days = (now - datetime.fromisoformat(item.last_shifted.replace("Z", "+00:00"))).total_seconds() / 86400
            days = round(min(max(days, 0.0), MAX_DAYS), 1)  # as the reason shows it: the weight adds up
            item.weight, item.signals["days"] = days, days
            item.reasons.append(f"last shifted {item.last_shifted}, {days:.1f} day(s) ago (+{days:.1f})")
        else:
            item.weight, item.signals["days"] = NEVER_DAYS, NEVER_DAYS
            item.reasons.append(f"never shifted (+{NEVER_DAYS:g})")
        if breath_note:
            item.reasons.append(breath_note)
        if breaths_by.get(item.path):
            ids = breaths_by[item.path]
            _add(item, "breaths", len(ids), f"{len(ids)} breath(s) filed against it: {', '.join(ids[:3])}"
                 + (" …" if len(ids) > 3 else ""))
        if undecided.get(item.path):
            ids = undecided[item.path]
            _add(item, "proposals", len(ids), f"{len(ids)} open proposal(s) the owner has not decided: "
                                              f"{', '.join(ids[:3])}")
        if findings.get(item.path):
            _add(item, "findings", len(findings[item.path]),
                 f"{len(findings[item.path])} open finding(s) in its last shift's report")
        check = results.get(item.path)
        if check is not None and check.failed:
            _add(item, "check", 1, f"the check `{check.command}` fails (exit {check.exit}: {check.line or 'no output'})")
        elif check is not None:
            item.reasons.append(f"the check `{check.command}` "
                                + ("passes" if check.exit == 0 else f"was not weighed: {check.line}"))
        item.weight = round(item.weight, 2)


def candidates(layout: Layout, trail: Trail, *, now: datetime | None = None, signals: bool = True) -> list[Candidate]:
    """Every repository under the roots, pickable ones first in rotation order, with reasons.

    ``now`` (UTC; the real clock when None) dates the week and the days since each last shift;
    ``signals`` False leaves the weighing out (no check runs): what is pickable, not in which order
    beyond approved proposals and least recently shifted.
    Raises ConfigError (bad ``[machine]``, unreadable Claude Code config),
    InputError when the machine is off (no roots) or a root does not exist.
    """
    settings = config.machine(layout)
    if not settings.on:
        raise InputError("the machine is off: no [machine] roots in "
                         f"{layout.settings_file}; docs/shift.md sets it up")
    missing = [str(root) for root in settings.roots if not root.is_dir()]
    if missing:
        raise InputError(f"machine.roots names folder(s) that do not exist: {', '.join(missing)}")
    flags = trusted_folders()
    shifted = last_shifted(trail)
    approved = proposing.waiting(proposing.from_trail(trail))
    excluded = [Path(os.path.normpath(path)) for path in settings.exclude]
    memory_root = Path(os.path.normpath(layout.root))
    found: list[Candidate] = []
    for path in git.discover(settings.roots):
        path = Path(os.path.normpath(path))
        trusted = is_trusted(path, flags)
        item = Candidate(str(path), trusted, False, shifted.get(str(path)))
        waiting = approved.get(str(path), [])
        item.proposals = [proposal.id for proposal in waiting]
        holds = holds_memory_root(path, memory_root)
        if holds:
            item.reasons.append(holds)
        elif any(path == folder or path.is_relative_to(folder) for folder in excluded):
            item.reasons.append("excluded by machine.exclude")
        else:
            try:
                item.trunk, _ = git.trunk(git.open_at(path), str(path))
            except RepositoryError as error:
                item.reasons.append(f"no trunk: {error}")
            if not trusted:
                item.reasons.append("untrusted: Claude Code has not trusted this folder "
                                    "(open it once in claude and accept)")
            item.pickable = not item.reasons
        if item.pickable:
            if waiting:
                more = f" and {len(waiting) - 1} more" if len(waiting) > 1 else ""
                item.reasons.append(f"approved proposal {waiting[0].id} \u201c{waiting[0].title}\u201d{more} "
                                    "waits: approved work first")
            if not signals:
                item.reasons.append(f"last shifted {item.last_shifted}" if item.last_shifted else "never shifted")
        found.append(item)
    if signals:
        weigh(layout, trail, settings, found, now or journal.now_utc())
    first_approval = {repo: items[0].decided_at or "" for repo, items in approved.items()}
    pickable = sorted((c for c in found if c.pickable),
                      key=lambda c: (not c.proposals, first_approval.get(c.path, ""), not c.due,
                                     -(c.weight or 0.0), c.last_shifted or "", c.path))
    return pickable + [c for c in found if not c.pickable]


def pick(layout: Layout, trail: Trail, path: str | None = None, *, now: datetime | None = None) -> Candidate | None:
    """The repository the next shift works: ``path`` when given (it must be pickable), else the
    first pickable candidate; None when there is none. Raises InputError naming why ``path``
    cannot be picked."""
    found = candidates(layout, trail, now=now, signals=path is None)
    if path is None:
        return next((c for c in found if c.pickable), None)
    wanted = os.path.normpath(os.path.abspath(path))
    for item in found:
        if item.path == wanted:
            if not item.pickable:
                raise InputError(f"{wanted} cannot be picked: {'; '.join(item.reasons)}")
            return item
    raise InputError(f"{wanted} is not a git repository under machine.roots")


def waiting_for(trail: Trail, repo: str) -> list[proposing.Proposal]:
    """The approved proposals on ``repo`` no shift has taken yet, oldest approval first: what the
    brief of a shift on ``repo`` carries (its ``proposals`` slot) and takes."""
    return proposing.waiting(proposing.from_trail(trail)).get(os.path.normpath(repo), [])
