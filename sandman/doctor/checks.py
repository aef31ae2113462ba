"""``sandman doctor``: is this machine's sandman healthy? (docs/doctor.md)

One check per line, each OK, WARN or FAIL, in this order: the root resolves,
is a git repository, is clean; the hooks are registered with Claude Code; the
claude binary for the minds is found; the SANDMAN_* settings parse; the dream
queue; pending takes; the last take, dream and reflect; journal errors in the
last 24 h; the remote; the last sync. Then one verdict line naming the most
important problem.

doctor only reads: it writes no file and no journal line, so it can be run on
a root that does not exist yet, or that something is wrong with. A check that
hits an OSError or a sandman error is a FAIL line naming it; the others still run.

The ``sandman doctor`` verb (sandman/verbs/doctor.py) is the command over this
module; nothing here imports sandman.verbs or sandman.cli.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sandman import config
from sandman.errors import ConfigError, RepositoryError, SandmanError
from sandman.journal import iso, now_utc, parse_line
from sandman.layout import Layout
from sandman.pointers import parse_time, pending_entries, read_pending_take

SCHEMA_VERSION = 1
OK, WARN, FAIL = "ok", "warn", "fail"
# Journal decisions that are errors: a verb that could not do its work
# (``failed``) or a hook that hit a bug (``crashed``). ``refused`` (a secret
# kept out), ``declined`` and ``abstained`` are the engine working as designed.
ERROR_DECISIONS = frozenset({"failed", "crashed"})
HOOKS = {"SessionEnd": "take", "SessionStart": "recall"}  # event -> the verb whose hook it runs
# Within one severity, the order in which problems matter: the verdict names the first.
PRIORITY = ("root", "repository", "clean", "hooks", "claude", "env", "sync", "errors", "remote",
            "queue", "dream", "reflect", "pending", "take", "memory", "worktrees", "schedule", "machine")
# The settings doctor parses, each with the config.py function that reads it (and raises
# ConfigError on a bad value): the same parse the verbs run, never a copy of it.
ENV_SETTINGS = (
    ("SANDMAN_MIND_TIMEOUT", config.mind_timeout),
    (config.OLD_DAY_BUDGET_VARIABLE, config.old_daily_budget_usd),
)


@dataclass
class Check:
    """One line of the report: ``status`` is ok, warn or fail; ``details`` go to --json."""

    name: str
    status: str
    message: str
    details: dict = field(default_factory=dict)


@dataclass
class Report:
    """Every check, in display order, and the verdict."""

    root: str | None
    checks: list[Check]

    @property
    def worst(self) -> Check | None:
        """The most important problem: the first FAIL by PRIORITY, else the first WARN; None when healthy."""
        for status in (FAIL, WARN):
            found = [check for check in self.checks if check.status == status]
            if found:
                # A check missing from PRIORITY ranks last: naming the worst must never fail doctor.
                return min(found, key=lambda check: PRIORITY.index(check.name) if check.name in PRIORITY
                           else len(PRIORITY))
        return None

    @property
    def verdict(self) -> str:
        worst = self.worst
        if worst is None:
            return "OK sandman is healthy"
        return f"{worst.status.upper()} {worst.name}: {worst.message}"

    @property
    def exit_code(self) -> int:
        """1 when any check FAILs, else 0 (warnings do not fail)."""
        return 1 if any(check.status == FAIL for check in self.checks) else 0

    def lines(self) -> list[str]:
        out = [f"{check.status.upper():<4}  {check.name:<10}  {check.message}" for check in self.checks]
        return out + [f"verdict: {self.verdict}"]

    def to_json(self) -> str:
        worst = self.worst
        return json.dumps({
            "schema_version": SCHEMA_VERSION,
            "root": self.root,
            "status": worst.status if worst else OK,
            "verdict": self.verdict,
            "checks": [check.__dict__ for check in self.checks],
        }, ensure_ascii=False, indent=2)


def doctor(now: datetime | None = None) -> Report:
    """Run every check against the configured root and Claude Code settings; return the report.

    ``now`` (aware UTC) is the moment ages are measured from, default the
    current time. Never raises for a broken installation: that is what the
    report is for.
    """
    now = now or now_utc()
    checks: list[Check] = []
    try:
        layout: Layout | None = Layout(config.root())
    except ConfigError as error:
        layout = None
        checks.append(Check("root", FAIL, str(error)))
    if layout is not None:
        checks.append(Check("root", OK, str(layout.root), {"path": str(layout.root), "exists": layout.root.is_dir()}))
    repo = None
    if layout is None:
        checks += [Check(name, WARN, "not checked: the root does not resolve") for name in ("repository", "clean")]
    else:
        try:
            repo, repo_checks = _repository(layout)
        except CHECK_ERRORS as error:
            repo_checks = [_failed("repository", error), Check("clean", WARN, "not checked: no repository")]
        checks += repo_checks
    checks.append(_guarded("hooks", _hooks))
    checks.append(_guarded("claude", _claude))
    checks.append(_guarded("memory", _auto_memory, checks))
    checks.append(_env(layout))
    if layout is None:
        names = ("queue", "pending", "take", "dream", "reflect", "worktrees", "schedule", "errors", "remote", "sync", "machine")
        checks += [Check(name, WARN, "not checked: the root does not resolve") for name in names]
        return Report(None, checks)
    checks += _activity(layout, now)
    checks.append(_guarded("worktrees", _worktrees, layout))
    checks.append(_guarded("schedule", _schedule, layout, now))
    checks.append(_guarded("errors", _errors, layout, now))
    try:
        checks += _sync(layout, repo, now)
    except CHECK_ERRORS as error:
        checks += [_failed("remote", error), Check("sync", WARN, "not checked: the remote could not be read")]
    checks.append(_guarded("machine", _machine, layout))
    return Report(str(layout.root), checks)


# What a check may meet on a broken machine: it becomes that check's FAIL line.
CHECK_ERRORS = (OSError, SandmanError)


def _failed(name: str, error: Exception) -> Check:
    """The FAIL line of a check that could not run: the error, and the path it names."""
    if isinstance(error, OSError) and error.filename is not None:
        text = f"{error.strerror or type(error).__name__}: {error.filename}"
    else:
        text = str(error) or type(error).__name__
    return Check(name, FAIL, f"cannot be checked: {text}", {"error": text})


def _guarded(name: str, check, *args) -> Check:
    """Run one check; an OSError or sandman error is its FAIL line instead of a traceback."""
    try:
        return check(*args)
    except CHECK_ERRORS as error:
        return _failed(name, error)


def _env(layout: Layout | None = None) -> Check:
    """Parse every SANDMAN_* setting that holds a value (not a name or a path) as the verbs do; note
    an old spelling (``$SANDMAN_DAILY_BUDGET_USD``: ``[machine] budget_usd_day``, config.day_budget_usd)."""
    values = {name: os.environ.get(name) for name, _ in ENV_SETTINGS}
    bad = []
    for name, read in ENV_SETTINGS:
        try:
            read()
        except ConfigError as error:
            bad.append(str(error))
    details = {"variables": values, "errors": bad}
    if bad:
        return Check("env", FAIL, "; ".join(bad) + ": dream and reflect fail until it is fixed or unset", details)
    shown = ", ".join(f"{name}={value}" for name, value in values.items() if value) or "defaults"
    return Check("env", OK, f"SANDMAN_* settings parse ({shown})" + _old_budget_note(layout, values), details)


def _old_budget_note(layout: Layout | None, values: dict) -> str:
    """The note on ``$SANDMAN_DAILY_BUDGET_USD``, the day's cap's old spelling (read one more release)."""
    if not values.get(config.OLD_DAY_BUDGET_VARIABLE):
        return ""
    try:
        section = config.settings(layout).get("machine", {}) if layout is not None else {}
    except ConfigError:
        section = {}
    if isinstance(section, dict) and "budget_usd_day" in section:
        return (f"; {config.OLD_DAY_BUDGET_VARIABLE} is ignored: [machine] budget_usd_day is set, "
                "and it is the day's one cap; unset the variable")
    return (f"; {config.OLD_DAY_BUDGET_VARIABLE} is the old spelling of [machine] budget_usd_day: "
            "put budget_usd_day in .settings.toml and unset it (it is read only while that key is absent)")


def _machine(layout: Layout) -> Check:
    """``[machine]``: off (no roots) is OK; a bad value FAILs; a missing root or no budget warns."""
    settings = config.machine(layout)
    if not settings.on:
        return Check("machine", OK, "off: no [machine] roots in .settings.toml (docs/shift.md sets it up)",
                     {"on": False})
    details = {"on": True, "roots": [str(path) for path in settings.roots],
               "time_zone": settings.time_zone, "budget_usd_day": settings.budget_usd_day}
    missing = [str(path) for path in settings.roots if not path.is_dir()]
    if missing:
        return Check("machine", WARN, f"machine.roots names folder(s) that do not exist: {', '.join(missing)}",
                     details)
    note = _not_pickable(layout, details)
    pickable, nights = len(details.get("pickable", [])), 6 * settings.shifts_per_night  # the rest day holds one
    short = pickable > nights
    if short:
        note += (f"; {pickable} pickable repositories, but six working nights of machine.shifts_per_night "
                 f"{settings.shifts_per_night} hold {nights} shifts: not every repository can be shifted once a "
                 "week; raise shifts_per_night (docs/shift.md, \"Whole nights\")")
    if not _report_hook_registered():
        return Check("machine", WARN, "SessionStart (sandman report --hook) not registered: the shifts' reports "
                     "are not shown when a session starts; run `sandman hooks install`" + note, details)
    if settings.window_file is None:
        note += "; no window_file: shift clock answers unknown"
    from sandman.machine.profile import sandbox_missing, sandbox_unavailable

    details["sandbox_missing"] = sandbox_missing()
    details["sandbox"] = why = sandbox_unavailable()
    if why:
        return Check("machine", WARN, f"Claude Code's sandbox cannot run here: {why}; a shift's session asks for "
                     "the sandbox and cannot work without it" + note, details)
    if settings.budget_usd_day is None:
        return Check("machine", WARN, "no machine.budget_usd_day: shifts run with no daily cost cap" + note,
                     details)
    return Check("machine", WARN if short else OK,
                 f"on: {len(settings.roots)} root(s), ${settings.budget_usd_day:g} a day" + note, details)


NOT_PICKABLE_NAMED = 5  # how many repositories the machine line names; --json lists them all


def _not_pickable(layout: Layout, details: dict) -> str:
    """The repositories under the roots no shift may pick, and why (shift pick's own reasons: the
    memory root, a repository containing it, ``exclude``, untrusted, no trunk), into
    ``details["not_pickable"]``; return the clause for the machine line ("" when every one is pickable)."""
    from sandman.machine import pick, trail

    try:
        found = pick.candidates(layout, trail.read(layout), signals=False)
    except SandmanError as error:
        details["not_pickable_error"] = str(error)
        return f"; the rotation cannot be read: {error}"
    barred = [{"path": c.path, "why": "; ".join(c.reasons)} for c in found if not c.pickable]
    details["not_pickable"] = barred
    details["pickable"] = [c.path for c in found if c.pickable]
    if not barred:
        return ""
    named = ", ".join(f"{item['path']} ({item['why']})" for item in barred[:NOT_PICKABLE_NAMED])
    more = f" and {len(barred) - NOT_PICKABLE_NAMED} more (--json)" if len(barred) > NOT_PICKABLE_NAMED else ""
    return f"; not pickable: {named}{more}"


# --- the root ------------------------------------------------------------------


# A root that does not exist yet is no fault: `take`, `remember` and every verb that writes create it.
NOT_YET = ("{root} does not exist yet: the first `sandman take --all`, `sandman remember` or any verb that "
           "writes creates it (`sandman init` creates it now)")


def _repository(layout: Layout):
    from sandman.banks.commit import strangers
    from sandman.store import repo as store

    if not layout.root.is_dir():
        blocker = next((folder for folder in layout.root.parents if folder.exists() and not folder.is_dir()), None)
        if blocker is None:  # a fresh install: the first verb that writes creates the root
            return None, [Check("repository", WARN, NOT_YET.format(root=layout.root)),
                          Check("clean", WARN, "not checked: no repository")]
        return None, [
            Check("repository", FAIL, f"{layout.root} lies under {blocker}, which is not a folder; "
                                      "point SANDMAN_ROOT at a folder"),
            Check("clean", WARN, "not checked: no repository"),
        ]
    try:
        repo = store.open_repo(layout)
    except RepositoryError as error:
        return None, [Check("repository", FAIL, str(error)), Check("clean", WARN, "not checked: no repository")]
    if repo.head_is_unborn:
        head = Check("repository", FAIL, f"{layout.root} has no commit; run `sandman init`")
    elif repo.head_is_detached:
        head = Check("repository", WARN, f"HEAD is detached at {str(repo.head.target)[:12]}; check out a branch")
    else:
        head = Check("repository", OK, f"git repository on {repo.head.shorthand} at {str(repo.head.target)[:12]}",
                     {"branch": repo.head.shorthand, "head": str(repo.head.target)})
    try:
        dirty = sorted(store.dirty_paths(repo))
        committable = set(store.committable_paths(repo))
    except RepositoryError as error:
        return repo, [head, Check("clean", FAIL, str(error))]
    links = [path for path in dirty if path not in committable]
    if links:
        return repo, [head, Check(
            "clean", WARN,
            f"{links[0]} is a symbolic link: sandman never reads or commits a link in the root; delete it",
            {"dirty": dirty[:50], "links": links[:50]},
        )]
    if not dirty:
        strays = _set_aside(layout)
        if strays:
            return repo, [head, Check("clean", WARN, f"{len(strays)} file(s) of no sandman format were moved into "
                                      f"{layout.strays.name}/, e.g. {strays[0]}; look at them and delete them or "
                                      "move them out of the root", {"dirty": [], "strays": strays[:50]})]
        return repo, [head, Check("clean", OK, "no uncommitted changes")]
    if layout.commit_undo.exists():
        # banks/commit.recover rolls the killed transaction back from its undo log
        # before it commits anything; only what the log does not name is left to `recover`.
        return repo, [head, Check(
            "clean", WARN,
            f"{len(dirty)} uncommitted change(s), e.g. {dirty[0]}, and {layout.commit_undo.name} left by a killed "
            f"transaction; the next sandman write rolls that transaction back from {layout.commit_undo.name}, "
            "then commits any change left as `recover`",
            {"dirty": dirty[:50], "undo_log": str(layout.commit_undo)},
        )]
    from sandman.banks.secrets import refuse_secret_files
    from sandman.errors import LeftoverSecret

    try:
        refuse_secret_files(layout.root, dirty)
    except LeftoverSecret as error:
        # recover refuses such a change, so every write fails until the person fixes the file.
        return repo, [head, Check("clean", FAIL, str(error), {"dirty": dirty[:50], "secret": error.path})]
    found = strangers(repo)
    if found:
        return repo, [head, Check(
            "clean", WARN,
            f"{len(found)} new file(s) of no sandman format in the versioned tier, e.g. {found[0]}: the next sandman "
            f"write moves them into {layout.strays.name}/ and never commits them; delete them or move them out",
            {"dirty": dirty[:50], "strangers": found[:50], "strays": _set_aside(layout)[:50]})]
    return repo, [head, Check(
        "clean", WARN,
        f"{len(dirty)} uncommitted change(s), e.g. {dirty[0]}; the next sandman write commits them as `recover`",
        {"dirty": dirty[:50]},
    )]


def _set_aside(layout: Layout) -> list[str]:
    """The files in ``.strays/`` (root-relative POSIX paths, sorted): strangers recovery moved aside."""
    if not layout.strays.is_dir():
        return []
    return sorted(path.relative_to(layout.root).as_posix() for path in layout.strays.rglob("*") if path.is_file())


# --- Claude Code ---------------------------------------------------------------


def _entries(hooks: object, event: str) -> list[object]:
    """Return every hook entry registered for ``event`` in a ``hooks`` mapping."""
    groups = hooks.get(event, []) if isinstance(hooks, dict) else []
    found: list[object] = []
    for group in groups if isinstance(groups, list) else []:
        entries = group.get("hooks", []) if isinstance(group, dict) else []
        found += entries if isinstance(entries, list) else []
    return found


def _read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def _plugin_installs(settings: dict) -> list[tuple[str, str | None]]:
    from sandman.claudecode.settings import sandman_plugins

    return sandman_plugins(settings)


def _plugin_hooks(settings: dict) -> tuple[list[str], dict[str, list[object]]]:
    """Return the enabled sandman plugins (labels naming their scope) and the hook entries
    their hooks/hooks.json registers."""
    installs = _plugin_installs(settings)
    commands: dict[str, list[object]] = {event: [] for event in HOOKS}
    for _label, path in installs:
        if path is None:
            continue
        try:
            hooks = _read_json(Path(path) / "hooks" / "hooks.json")
        except (OSError, ValueError, RecursionError):
            continue
        for event in HOOKS:
            commands[event] += _entries(hooks.get("hooks", {}) if isinstance(hooks, dict) else {}, event)
    return list(dict.fromkeys(label for label, _ in installs)), commands


def _report_hook_registered() -> bool:
    """True when Claude Code's settings or an enabled sandman plugin (whose hooks file cannot be
    read counts) registers ``sandman report --hook`` on SessionStart; an unreadable settings file
    counts too: the hooks check names it."""
    from sandman.claudecode.settings import is_sandman_hook

    try:
        settings = _read_json(config.claude_settings_file())
    except FileNotFoundError:
        settings = {}
    except (OSError, ValueError, RecursionError):
        return True
    if not isinstance(settings, dict):
        return True
    entries = _entries(settings.get("hooks", {}), "SessionStart")
    for _label, path in _plugin_installs(settings):
        try:
            hooks = _read_json(Path(path) / "hooks" / "hooks.json") if path is not None else None
        except (OSError, ValueError, RecursionError):
            return True
        if isinstance(hooks, dict):
            entries += _entries(hooks.get("hooks", {}), "SessionStart")
    return any(is_sandman_hook(entry, "report") for entry in entries)


# What a hook that cannot run costs, per event.
_HOOK_LOSS = {"SessionEnd": "every session end would archive nothing",
              "SessionStart": "every session start would recall nothing"}


def _hooks() -> Check:
    from sandman.claudecode.settings import is_sandman_hook, missing_executables

    path = config.claude_settings_file()
    try:
        settings = _read_json(path)
    except FileNotFoundError:
        settings = {}
    except (OSError, ValueError, RecursionError) as error:
        return Check("hooks", FAIL, f"{path} is not readable JSON ({error}); Claude Code cannot read it either")
    if not isinstance(settings, dict):
        return Check("hooks", FAIL, f"{path} is not a JSON object")
    plugins, plugin_commands = _plugin_hooks(settings)
    where: dict[str, list[str]] = {}
    broken: dict[str, list[str]] = {}  # event -> executables its sandman hooks run that do not exist
    working: set[str] = set()  # events with a sandman hook whose executables all exist
    for event, verb in HOOKS.items():
        places = []
        ours = [entry for entry in _entries(settings.get("hooks", {}), event) if is_sandman_hook(entry, verb)]
        from_plugins = [entry for entry in plugin_commands[event] if is_sandman_hook(entry, verb)]
        if ours:
            places.append(str(path))
        if from_plugins or (plugins and not any(plugin_commands.values())):
            places += plugins
            if not from_plugins:
                working.add(event)  # a plugin whose hooks file cannot be read: nothing to check
        for entry in ours + from_plugins:
            gone = missing_executables(entry)
            broken.setdefault(event, []).extend(gone)
            if not gone:
                working.add(event)
        where[event] = places
    details = {"settings": str(path), "plugins": plugins, "registered": where,
               "missing_executables": {event: paths for event, paths in broken.items() if paths}}
    missing = [event for event, places in where.items() if not places]
    if len(missing) == len(HOOKS):
        return Check("hooks", FAIL, f"neither hook is registered in {path} or a sandman plugin; run `sandman hooks install`", details)
    dead = [(event, paths[0]) for event, paths in broken.items() if paths and event not in working]
    if dead:
        return Check("hooks", FAIL, "; ".join(
            f"the {event} hook runs {exe}, which is not an executable file: {_HOOK_LOSS[event]}" for event, exe in dead
        ) + "; run `sandman hooks install` again", details)
    if missing:
        lost = ", ".join(f"{event} (sandman {HOOKS[event]} --hook)" for event in missing)
        return Check("hooks", WARN, f"{lost} not registered; run `sandman hooks install`", details)
    stray = [(event, paths[0]) for event, paths in broken.items() if paths]
    if stray:
        return Check("hooks", WARN, "; ".join(
            f"the {event} hook also runs {exe}, which is not an executable file" for event, exe in stray
        ) + "; run `sandman hooks install` again to keep only the working one", details)
    twice = [event for event, places in where.items() if str(path) in places and len(places) > 1]
    if twice:
        return Check("hooks", WARN, f"sandman's hooks are registered twice, in {path} (`sandman hooks install`) and "
                     f"by the {plugins[0]}: each runs twice ({', '.join(twice)}; every session start recalls twice); "
                     "keep one: `sandman hooks uninstall` (keeps the plugin) or "
                     f"`claude plugin disable {plugins[0].split()[1]}` (keeps these)", details)
    places = sorted({place for found in where.values() for place in found})
    return Check("hooks", OK, f"SessionEnd take and SessionStart recall registered in {', '.join(places)}", details)


def _auto_memory(checks: list[Check]) -> Check:
    """WARN when Claude Code's native auto memory and sandman's recall both start every session."""
    from sandman.claudecode.settings import auto_memory

    enabled, why = auto_memory()
    hooks = next((check for check in checks if check.name == "hooks"), None)
    registered = hooks is not None and bool((hooks.details or {}).get("registered", {}).get("SessionStart"))
    details = {"native_auto_memory": enabled, "why": why, "recall_registered": registered}
    if enabled and registered:
        return Check("memory", WARN, f"Claude Code's native auto memory is on ({why}) beside sandman's recall: "
                     "every session starts with both. Keep sandman's: `sandman import claude-memory`, then "
                     "`sandman hooks install --auto-memory off`; keep the native one: `sandman hooks uninstall`",
                     details)
    if enabled:
        return Check("memory", OK, f"Claude Code's native auto memory is on ({why}); sandman's recall is not registered",
                     details)
    return Check("memory", OK, f"Claude Code's native auto memory is off ({why})", details)


def _schedule(layout: Layout, now: datetime) -> Check:
    """Whether the nightly reflect, report serve and (machine on) the shift tick are installed for
    this platform's scheduler (``details["files"]`` lists each file), and when reflect last ran."""
    from sandman.schedule import jobs as schedule

    kind = schedule.detect()
    files = schedule.installed(layout, kind)
    line = last_line(layout, "reflect", frozenset({"finished"}))
    ran = f"reflect last ran {_ago(line[0], now)}" if line else "reflect has not run"
    details = {"kind": kind, "files": files, "reflect_last": iso(line[0]) if line else None}
    if kind == "cron":
        return Check("schedule", OK, f"no systemd or launchd here: `sandman schedule show` prints the crontab "
                     f"line; {ran}", details)
    present = [path for path, there in files.items() if there]
    if not present:
        return Check("schedule", OK, f"not installed for {kind} (`sandman schedule install` adds it); {ran}", details)
    if len(present) < len(files):
        missing = next(path for path, there in files.items() if not there)
        return Check("schedule", WARN, f"partly installed for {kind}: {missing} is missing; run "
                     f"`sandman schedule install` again; {ran}", details)
    problem = schedule.claude_problem(layout, kind)
    if problem is not None:
        return Check("schedule", WARN, f"installed for {kind}, but {problem}; with claude found (on PATH or "
                     f"SANDMAN_CLAUDE_BIN), run `sandman schedule install` again; {ran}", details)
    return Check("schedule", OK, f"installed for {kind} ({len(present)} files); {ran}", details)


def _worktrees(layout: Layout) -> Check:
    """WARN for each bank a linked git worktree got before worktrees shared their main worktree's bank."""
    from sandman.banks.worktrees import worktree_banks

    if not config.share_worktrees(layout):
        return Check("worktrees", OK, "linked worktrees keep banks of their own (banks.share_worktrees = false)")
    found = worktree_banks(layout)
    details = {"banks": [{"bank": bank.name, "directory": bank.directory, "shared": str(shared)}
                         for bank, shared in found]}
    if not found:
        return Check("worktrees", OK, "no bank belongs to a linked git worktree", details)
    first, shared = found[0]
    return Check("worktrees", WARN, f"{len(found)} bank(s) of linked worktrees are no longer recalled, "
                 f"such as {first.name} ({first.directory}); fold each into its main worktree's: "
                 f"`sandman banks merge {first.directory} {shared}`", details)


def _claude() -> Check:
    name = config.claude_bin()
    found = shutil.which(name)
    if found is None:
        return Check("claude", FAIL, f"claude binary {name!r} not found: dream cannot run its minds; "
                     "install Claude Code or set SANDMAN_CLAUDE_BIN", {"bin": name})
    return Check("claude", OK, f"minds run {found}", {"bin": name, "path": found})


# --- the queue and the journal ----------------------------------------------------


def _ago(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "never"
    seconds = max(0, int((now - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def _parsed(path: Path) -> list[tuple[datetime, str, str, dict]]:
    """Return the journal lines of one file, in file order; lines that do not parse are skipped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            when, verb, decision, facts = parse_line(line)
        except ValueError:
            continue
        moment = parse_time(when)
        if moment is not None:
            out.append((moment, verb, decision, facts))
    return out


def _files(layout: Layout, verb: str, day: str = "[0-9]*") -> list[Path]:
    """Return the journal files of ``verb`` (``*``: every verb) for ``day`` (a glob), oldest date first."""
    return sorted(layout.trace.glob(layout.trace_file(verb, day).name), key=lambda path: path.name[-len("yyyy-mm-dd.log"):])


def last_line(layout: Layout, verb: str, decisions: frozenset[str] | None = None):
    """Return the newest ``(time, verb, decision, facts)`` journal line of ``verb``, or None.

    ``decisions`` limits it to those decisions. Reads files newest first and
    stops at the first that has one.
    """
    for path in reversed(_files(layout, verb)):
        found = [line for line in _parsed(path) if decisions is None or line[2] in decisions]
        if found:
            return sorted(found, key=lambda line: line[0])[-1]  # stable: a tie goes to the later line
    return None


def _activity(layout: Layout, now: datetime) -> list[Check]:
    """The queue, pending, take, dream and reflect checks, each a FAIL line of its own when it cannot run."""
    try:
        queue_check, queued = _queue(layout, now)
    except CHECK_ERRORS as error:
        queue_check, queued = _failed("queue", error), None
    checks = [queue_check, _guarded("pending", _pending, layout, now)]
    last = {}
    for verb in ("take", "dream", "reflect"):
        try:
            last[verb] = last_line(layout, verb)
        except CHECK_ERRORS as error:
            checks.append(_failed(verb, error))
            continue
        checks.append(_last_run(verb, last, queue_check, queued, now))
    return checks


def _queue(layout: Layout, now: datetime):
    """Return the queue's check and the queued pointers."""
    from sandman.dreamqueue import is_running, queue

    queued = queue(layout)
    ends = [pointer.ended for pointer in queued if pointer.ended is not None]
    oldest = min(ends) if ends else None
    details = {"depth": len(queued), "oldest_ended": iso(oldest) if oldest else None, "dream_running": is_running(layout)}
    message = f"{len(queued)} pointer(s) queued for dream"
    if oldest is not None:
        message += f"; the oldest ended {_ago(oldest, now)}"
    if details["dream_running"]:
        message += "; a dream is running"
    status = OK
    if oldest is not None and now - oldest > timedelta(hours=config.RECALL_POINTER_HOURS):
        status, message = WARN, message + f": older than {config.RECALL_POINTER_HOURS} h, it left recall undreamed"
    elif len(queued) >= 2 * config.DREAM_DUE_POINTERS:
        status, message = WARN, message + f": twice the {config.DREAM_DUE_POINTERS} that trigger a dream"
    return Check("queue", status, message, details), queued


def _last_run(verb: str, last: dict, queue_check: Check, queued: list | None, now: datetime) -> Check:
    """When ``verb`` last ran and what it decided; ``queued`` is None when the queue could not be read."""
    line = last[verb]
    moment = line[0] if line else None
    text = f"last {verb} {_ago(moment, now)} ({line[2]})" if line else f"{verb} has never run"
    status = OK
    if line and line[2] in ERROR_DECISIONS:
        # The newest line is the run's last word: a failure there is not "OK ... (failed)".
        status, text = WARN, f"last {verb} {_ago(moment, now)} {line[2]}"
        if line[3].get("error"):
            text += f": {line[3]['error']}"
    elif (verb == "dream" and queued is not None and len(queued) >= config.DREAM_DUE_POINTERS
          and not queue_check.details["dream_running"]
          and (moment is None or now - moment > timedelta(hours=config.DOCTOR_DREAM_LATE_HOURS))):
        status, text = WARN, text + f"; {len(queued)} pointers are due: run `sandman dream`"
    if verb == "reflect" and last.get("take") and (
        moment is None or now - moment > timedelta(hours=config.DOCTOR_REFLECT_LATE_HOURS)
    ):
        status, text = WARN, text + "; reflect is the daily pass: run `sandman reflect` (or schedule it)"
    return Check(verb, status, text, {"at": iso(moment) if moment else None, "decision": line[2] if line else None})


def _pending(layout: Layout, now: datetime) -> Check:
    entries = pending_entries(layout)
    unreadable: list[str] = []
    stale = []
    for path in entries:
        try:
            read_pending_take(path)
        except (OSError, ValueError):
            unreadable.append(str(path))
            continue
        try:
            changed = datetime.fromtimestamp(path.stat().st_mtime, tz=now.tzinfo)
        except OSError:
            continue
        if now - changed > timedelta(hours=config.DOCTOR_PENDING_STALE_HOURS):
            stale.append(path.stem)
    details = {"count": len(entries), "stale": sorted(stale), "unreadable": unreadable[:50]}
    if unreadable:
        return Check("pending", WARN, f"{len(entries)} pending take(s), {len(unreadable)} not a readable pending-take "
                     f"record (e.g. {unreadable[0]}): no take will ever settle it; delete it", details)
    if stale:
        return Check("pending", WARN, f"{len(entries)} pending take(s), {len(stale)} waiting over "
                     f"{config.DOCTOR_PENDING_STALE_HOURS} h (e.g. {sorted(stale)[0]}); the next take or reflect retries them", details)
    return Check("pending", OK, f"{len(entries)} pending take(s)", details)


def _errors(layout: Layout, now: datetime) -> Check:
    since = now - timedelta(hours=config.DOCTOR_ERRORS_WINDOW_HOURS)
    days = sorted({since.strftime("%Y-%m-%d"), now.strftime("%Y-%m-%d")})
    errors = sorted(
        (line for day in days for path in _files(layout, "*", day) for line in _parsed(path)
         if line[2] in ERROR_DECISIONS and since <= line[0] <= now),
        key=lambda line: line[0],
    )
    window = config.DOCTOR_ERRORS_WINDOW_HOURS
    if not errors:
        return Check("errors", OK, f"no journal errors in the last {window} h", {"count": 0})
    moment, verb, decision, facts = errors[-1]
    latest = f"{verb} {decision} {_ago(moment, now)}"
    if facts.get("error"):
        latest += f": {facts['error']}"
    return Check("errors", WARN, f"{len(errors)} journal error(s) in the last {window} h; latest: {latest}",
                 {"count": len(errors), "latest": {"at": iso(moment), "verb": verb, "decision": decision, "facts": facts}})


# --- the remote ------------------------------------------------------------------


def _sync(layout: Layout, repo, now: datetime) -> list[Check]:
    if repo is None:
        return [Check("remote", WARN, "not checked: no repository"), Check("sync", WARN, "not checked: no repository")]
    from sandman.store import sync as git

    try:
        name = config.sync_remote(layout)
    except ConfigError as error:
        return [Check("remote", FAIL, str(error)), Check("sync", WARN, "not checked: unreadable settings")]
    configured = git.remotes(repo)
    url = dict(configured).get(name)
    last_synced = last_line(layout, "sync", frozenset({"synced"}))
    attempt = last_line(layout, "sync", frozenset({"synced", "failed"}))
    if url is None:
        others = ", ".join(n for n, _ in configured)
        remote = Check("remote", WARN, f"no remote {name!r}" + (f" (there is {others})" if others else "")
                       + ": this machine's memory is its only copy; set one up with `sandman sync --setup <url>`",
                       {"name": name, "remotes": dict(configured)})
        return [remote, Check("sync", OK, "not set up", {"last": None})]
    unpushed = 0
    if not repo.head_is_unborn and not repo.head_is_detached:
        tip = git.tracking(repo, name, repo.head.shorthand)
        unpushed = len(git.outgoing(repo, repo.head.target, tip))
    state = f"{unpushed} local commit(s) not on it" if unpushed else "every local commit is on it"
    remote = Check("remote", OK, f"{name} is {url}; {state} (as of the last fetch)",
                   {"name": name, "url": url, "unpushed": unpushed})
    if git.is_relative_local(url):
        remote = Check("remote", WARN, f"{name} is the relative path {url!r}: it names a folder only from where it "
                       "was typed, so a sync run from anywhere else fails; point it at the absolute path "
                       f"(git -C {layout.root} remote set-url {name} <absolute path>)", remote.details)
    last_ok = last_synced[0] if last_synced else None
    details = {"last": iso(last_ok) if last_ok else None, "last_attempt": iso(attempt[0]) if attempt else None}
    if attempt and attempt[2] == "failed":
        moment, _, _, facts = attempt
        return [remote, Check("sync", WARN, f"the last sync failed {_ago(moment, now)} ({facts.get('reason', '?')}): "
                              f"{facts.get('error', '')}; last success {_ago(last_ok, now)}", details)]
    if last_ok is None:
        return [remote, Check("sync", WARN, f"never synced with {name}: run `sandman sync`", details)]
    late = now - last_ok > timedelta(hours=config.DOCTOR_UNPUSHED_LATE_HOURS)
    if unpushed and late:
        return [remote, Check("sync", WARN, f"last synced {_ago(last_ok, now)} and {unpushed} commit(s) wait to be "
                              "pushed: run `sandman sync`", details)]
    action = last_synced[3].get("action", "")
    return [remote, Check("sync", OK, f"last synced {_ago(last_ok, now)} ({action})", details)]
