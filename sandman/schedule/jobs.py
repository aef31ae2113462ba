"""``sandman schedule install|uninstall|show``: reflect nightly, serve the site, tick the shifts (issue 17).

Two jobs always: the nightly ``sandman reflect`` (at ``--at HH:MM``, local
time, default 03:30) and ``sandman report serve`` as a long-running user
service. A third, the shift tick (``sandman shift run`` every
``SHIFT_TICK_S`` seconds, docs/shift.md), and the research runner's two
(``sandman breathe run skim`` hourly at minute SKIM_MINUTE, ``sandman breathe
run deep`` daily at DEEP_AT, docs/breathe.md "The runner"), only when the
machine is on (``[machine] roots`` set in ``.settings.toml``); ``uninstall``
removes them either way. Each is written for the platform's own user scheduler, into the user's own
unit folder and nowhere else:

- ``systemd`` (Linux with systemd): ``sandman-reflect.service`` and
  ``sandman-reflect.timer`` (``Persistent=true``: a night the machine slept
  through runs at the next boot), ``sandman-serve.service``, and with the
  machine on ``sandman-shift.service`` and ``sandman-shift.timer``
  (``OnCalendar=*:0/5``, ``Persistent=false``: a missed tick is not made up),
  ``sandman-skim.{service,timer}`` and ``sandman-deep.{service,timer}``, in
  ``$XDG_CONFIG_HOME/systemd/user/`` (default ``~/.config/systemd/user``);
- ``launchd`` (macOS): ``org.sandman.reflect.plist`` and
  ``org.sandman.serve.plist`` (and with the machine on ``org.sandman.shift.plist``,
  ``StartInterval`` 300, ``org.sandman.skim.plist`` and ``org.sandman.deep.plist``) in
  ``~/Library/LaunchAgents/``;
- ``cron`` (neither): nothing is written, since a crontab is one file shared
  with everything else the user schedules; ``install`` prints the lines to add
  with ``crontab -e`` (``report serve`` has no cron form: it is a service).

``install`` is idempotent (an unchanged file is not rewritten) and, unless
``--no-enable``, asks the scheduler to load what it wrote (``systemctl --user
daemon-reload`` and ``enable --now``; ``launchctl bootstrap``); a scheduler
that cannot be asked, or that fails (no user bus), is reported plainly and
the CLI exits 1: the files are written but not enabled. ``uninstall`` disables and
removes exactly the files ``install`` writes, nothing else. Every unit runs
the absolute path of this installation's ``sandman`` (claudecode.settings.executable) with
this memory root in ``SANDMAN_ROOT`` and, when the install finds ``claude``
(config.claude_bin on this PATH), its absolute path in ``SANDMAN_CLAUDE_BIN``: a
scheduler starts its jobs with a bare PATH (``SCHEDULER_PATH``) where ``claude``
is seldom found. ``claude_problem`` says when installed files would not find it.

The ``sandman schedule`` verb (sandman/verbs/schedule.py) is the command over
this module; nothing here imports sandman.verbs or sandman.cli.
"""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sandman import config, journal
from sandman.errors import InputError
from sandman.layout import Layout

VERB = "schedule"
KINDS = ("systemd", "launchd", "cron")
DEFAULT_AT = "03:30"
_AT = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")
LAUNCHD_LABELS = {"reflect": "org.sandman.reflect", "serve": "org.sandman.serve", "shift": "org.sandman.shift",
                  "skim": "org.sandman.skim", "deep": "org.sandman.deep"}
SHIFT_TICK_S = 300  # seconds between shift ticks; `shift run` does nothing outside the night window
# The research runner (docs/breathe.md, "The runner"): the skim at minute SKIM_MINUTE of every hour,
# the deep pass daily at DEEP_AT local time (the day, when shifts do not run); each starts nothing
# when no source of its depth is due or the day's budget is spent.
SKIM_MINUTE = 17
DEEP_AT = (13, 7)
ENABLE_TIMEOUT_S = 30
# The PATH each scheduler gives a job that sets none (systemd's user manager, launchd, cron).
SCHEDULER_PATH = {"systemd": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                  "launchd": "/usr/bin:/bin:/usr/sbin:/sbin", "cron": "/usr/bin:/bin"}


@dataclass
class Unit:
    """One file a scheduler reads: its path and the text sandman writes there."""

    job: str
    path: Path
    text: str


@dataclass
class ScheduleChange:
    """What install, uninstall or show found and did: files ``written``, ``unchanged``, ``removed``,
    ``missing``; ``notes`` for the person (the cron line, a scheduler that could not be asked);
    ``failed`` the scheduler commands that failed (the CLI then exits 1)."""

    kind: str
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # scheduler commands that could not be run or exited non-zero


def detect() -> str:
    """Return this platform's user scheduler: launchd on macOS, systemd where it runs, else cron."""
    if sys.platform == "darwin":
        return "launchd"
    if Path("/run/systemd/system").is_dir() or shutil.which("systemctl"):
        return "systemd"
    return "cron"


def check_at(text: str) -> tuple[int, int]:
    """Return ``(hour, minute)`` of ``HH:MM``; raise InputError otherwise."""
    match = _AT.fullmatch(text.strip())
    if match is None:
        raise InputError(f"--at {text!r} is not a time of day: give HH:MM, such as 03:30")
    return int(match.group(1)), int(match.group(2))


def _command(*args: str) -> list[str]:
    from sandman.claudecode.settings import executable

    return [*executable(), *args]


def environment(layout: Layout) -> dict[str, str]:
    """The environment every job carries: ``SANDMAN_ROOT``, and ``SANDMAN_CLAUDE_BIN`` the absolute
    path of the ``claude`` found now (``$SANDMAN_CLAUDE_BIN``, else ``claude`` on PATH) when one is."""
    env = {"SANDMAN_ROOT": str(layout.root)}
    found = shutil.which(config.claude_bin())
    if found is not None:
        env["SANDMAN_CLAUDE_BIN"] = os.path.abspath(found)
    return env


def _cron_env(layout: Layout) -> str:
    return " ".join(f"{key}={shlex.quote(value)}" for key, value in environment(layout).items())


def claude_problem(layout: Layout, kind: str) -> str | None:
    """Why the installed files of ``kind`` would not find ``claude`` under their scheduler, or None:
    the first file whose ``SANDMAN_CLAUDE_BIN`` is not an executable file, or that sets none while
    ``claude`` is not on the scheduler's bare PATH (``SCHEDULER_PATH``). A file that cannot be read or
    parsed is skipped. Raises what ``units`` raises (InputError, ConfigError)."""
    for unit in units(layout, kind):
        if unit.job == "serve" or not unit.path.is_file() or unit.path.suffix == ".timer":
            continue
        try:
            text = unit.path.read_bytes()
            if kind == "launchd":
                env = plistlib.loads(text).get("EnvironmentVariables") or {}
            else:
                env = dict(word.split("=", 1) for line in text.decode("utf-8").splitlines()
                           if line.startswith("Environment=") for word in shlex.split(line[len("Environment="):])
                           if "=" in word)
        except (OSError, ValueError, UnicodeDecodeError, plistlib.InvalidFileException, AttributeError):
            continue
        claude = env.get("SANDMAN_CLAUDE_BIN") if isinstance(env, dict) else None
        if claude:
            if not (os.path.isabs(claude) and os.path.isfile(claude) and os.access(claude, os.X_OK)):
                return f"{unit.path} runs claude {claude}, which is not an executable file"
        elif shutil.which("claude", path=SCHEDULER_PATH[kind]) is None:
            return (f"{unit.path} sets no SANDMAN_CLAUDE_BIN and claude is not on {kind}'s PATH "
                    f"({SCHEDULER_PATH[kind]}): its job would skip, `claude not found`")
    return None


def machine_on(layout: Layout) -> bool:
    """Whether the shift tick belongs in the schedule: ``[machine] roots`` is set. Raises ConfigError."""
    return config.machine(layout).on


def units(layout: Layout, kind: str, at: str = DEFAULT_AT, *, shift: bool | None = None) -> list[Unit]:
    """Return the files ``kind`` needs for the jobs (none for cron); the shift tick's only when
    ``shift`` (default: ``machine_on(layout)``). Raises InputError (bad ``kind`` or ``at``), ConfigError."""
    hour, minute = check_at(at)
    if kind not in KINDS:
        raise InputError(f"--kind {kind!r} is unknown; use one of {', '.join(KINDS)}")
    if shift is None:
        shift = kind != "cron" and machine_on(layout)
    env = environment(layout)
    if kind == "systemd":
        folder = config.systemd_user_dir()

        def service(job: str, argv: list[str], extra: str) -> Unit:
            shown = {"serve": 2, "shift": 2, "skim": 3, "deep": 3}.get(job, 1)
            text = (f"[Unit]\nDescription=sandman {' '.join(argv[-shown:])}\n\n"
                    f"[Service]\n{extra}"
                    + "".join(f"Environment={shlex.quote(key + '=' + value)}\n" for key, value in env.items()) +
                    f"ExecStart={shlex.join(argv)}\n")
            if job == "serve":
                text += "\n[Install]\nWantedBy=default.target\n"
            return Unit(job, folder / f"sandman-{job}.service", text)

        timer = (f"[Unit]\nDescription=sandman reflect, nightly\n\n[Timer]\n"
                 f"OnCalendar=*-*-* {hour:02d}:{minute:02d}:00\nPersistent=true\n\n"
                 "[Install]\nWantedBy=timers.target\n")
        found = [service("reflect", _command("reflect"), "Type=oneshot\n"),
                 Unit("reflect", folder / "sandman-reflect.timer", timer),
                 service("serve", _command("report", "serve"), "Restart=on-failure\n")]
        if shift:
            tick = (f"[Unit]\nDescription=sandman shift tick, every {SHIFT_TICK_S // 60} minutes\n\n[Timer]\n"
                    f"OnCalendar=*:0/{SHIFT_TICK_S // 60}\nPersistent=false\n\n[Install]\nWantedBy=timers.target\n")
            found += [service("shift", _command("shift", "run"), "Type=oneshot\n"),
                      Unit("shift", folder / "sandman-shift.timer", tick)]
            for job, calendar, what in (("skim", f"*-*-* *:{SKIM_MINUTE:02d}:00", "hourly"),
                                        ("deep", f"*-*-* {DEEP_AT[0]:02d}:{DEEP_AT[1]:02d}:00", "daily")):
                timer = (f"[Unit]\nDescription=sandman breathe run {job}, {what}\n\n[Timer]\n"
                         f"OnCalendar={calendar}\nPersistent=false\n\n[Install]\nWantedBy=timers.target\n")
                found += [service(job, _command("breathe", "run", job), "Type=oneshot\n"),
                          Unit(job, folder / f"sandman-{job}.timer", timer)]
        return found
    if kind == "launchd":
        folder = config.launch_agents_dir()
        logs = layout.trace

        def agent(job: str, argv: list[str], extra: dict) -> Unit:
            label = LAUNCHD_LABELS[job]
            data = {"Label": label, "ProgramArguments": argv, "EnvironmentVariables": env,
                    "StandardOutPath": str(logs / f"launchd-{job}.log"),
                    "StandardErrorPath": str(logs / f"launchd-{job}.log"), **extra}
            return Unit(job, folder / f"{label}.plist", plistlib.dumps(data, sort_keys=False).decode("utf-8"))

        found = [agent("reflect", _command("reflect"), {"StartCalendarInterval": {"Hour": hour, "Minute": minute}}),
                 agent("serve", _command("report", "serve"), {"RunAtLoad": True, "KeepAlive": True})]
        if shift:
            found.append(agent("shift", _command("shift", "run"), {"StartInterval": SHIFT_TICK_S}))
            found.append(agent("skim", _command("breathe", "run", "skim"), {"StartCalendarInterval": {
                "Minute": SKIM_MINUTE}}))
            found.append(agent("deep", _command("breathe", "run", "deep"), {"StartCalendarInterval": {
                "Hour": DEEP_AT[0], "Minute": DEEP_AT[1]}}))
        return found
    return []


def cron_line(layout: Layout, at: str = DEFAULT_AT) -> str:
    """The crontab line that runs reflect nightly."""
    hour, minute = check_at(at)
    return f"{minute} {hour} * * * {_cron_env(layout)} {shlex.join(_command('reflect'))}"


def cron_shift_line(layout: Layout) -> str:
    """The crontab line that runs the shift tick every ``SHIFT_TICK_S // 60`` minutes."""
    return f"*/{SHIFT_TICK_S // 60} * * * * {_cron_env(layout)} {shlex.join(_command('shift', 'run'))} >/dev/null 2>&1"


def cron_research_lines(layout: Layout) -> list[str]:
    """The crontab lines of the research runner: the skim hourly, the deep pass daily."""
    env = _cron_env(layout)
    return [f"{SKIM_MINUTE} * * * * {env} {shlex.join(_command('breathe', 'run', 'skim'))} >/dev/null 2>&1",
            f"{DEEP_AT[1]} {DEEP_AT[0]} * * * {env} {shlex.join(_command('breathe', 'run', 'deep'))} >/dev/null 2>&1"]


def _systemd_names(wanted: list[Unit]) -> list[str]:
    """What systemctl enables or disables: the timers and the serve service."""
    return [unit.path.name for unit in wanted if unit.path.suffix == ".timer" or unit.job == "serve"]


def _ask(argv: list[str], change: ScheduleChange) -> None:
    if shutil.which(argv[0]) is None:
        change.notes.append(f"{argv[0]} is not on PATH: run `{shlex.join(argv)}` yourself")
        change.failed.append(shlex.join(argv))
        return
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=ENABLE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        change.notes.append(f"`{shlex.join(argv)}` failed: {error}")
        change.failed.append(shlex.join(argv))
        return
    if done.returncode != 0:
        change.notes.append(f"`{shlex.join(argv)}` exited {done.returncode}: {done.stderr.strip()[:200]}")
        change.failed.append(shlex.join(argv))


def _not_done(change: ScheduleChange, what: str) -> None:
    """Say plainly what the failed scheduler commands left undone, and the commands to run."""
    if change.failed:
        change.notes.append(f"the units were {what}: run {' and '.join(f'`{c}`' for c in change.failed)}")


def _enable(kind: str, written: list[Unit], change: ScheduleChange) -> None:
    if kind == "systemd":
        _ask(["systemctl", "--user", "daemon-reload"], change)
        _ask(["systemctl", "--user", "enable", "--now", *_systemd_names(written)], change)
    elif kind == "launchd":
        for unit in written:
            _ask(["launchctl", "bootout", f"gui/{os.getuid()}", str(unit.path)], change)
            _ask(["launchctl", "bootstrap", f"gui/{os.getuid()}", str(unit.path)], change)


def install(layout: Layout, *, kind: str | None = None, at: str = DEFAULT_AT, enable: bool = True) -> ScheduleChange:
    """Write the jobs' files for ``kind`` (default: ``detect()``); see the module docstring.
    Raises InputError (bad ``kind`` or ``at``), OSError (a unit folder that cannot be written)."""
    from sandman.store.atomic import write_atomic

    kind = kind or detect()
    change = ScheduleChange(kind=kind)
    wanted = units(layout, kind, at)
    if kind == "cron":
        change.notes.append(f"add this line with `crontab -e`: {cron_line(layout, at)}")
        if machine_on(layout):
            change.notes.append(f"and this line for the shift tick: {cron_shift_line(layout)}")
            change.notes += [f"and this line for the research runner: {line}" for line in cron_research_lines(layout)]
        change.notes.append("`report serve` has no cron form; start it at login yourself")
    written = []
    for unit in wanted:
        try:
            current = unit.path.read_text(encoding="utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            current = None
        if current == unit.text:
            change.unchanged.append(unit.path)
            continue
        write_atomic(unit.path, unit.text)
        change.written.append(unit.path)
        written.append(unit)
    if enable and wanted:
        _enable(kind, wanted if kind == "systemd" else written, change)
        _not_done(change, "written but not enabled")
    journal.write(layout, VERB, "installed", kind=kind, at=at, written=len(change.written),
                  unchanged=len(change.unchanged))
    return change


def uninstall(layout: Layout, *, kind: str | None = None, enable: bool = True) -> ScheduleChange:
    """Disable and remove the files ``install`` writes for ``kind``; nothing else. Raises InputError, OSError."""
    kind = kind or detect()
    change = ScheduleChange(kind=kind)
    every = units(layout, kind, shift=True)
    present = [unit for unit in every if unit.path.exists()]
    if enable and present:
        if kind == "systemd":
            _ask(["systemctl", "--user", "disable", "--now", *_systemd_names(present)], change)
        elif kind == "launchd":
            for unit in present:
                _ask(["launchctl", "bootout", f"gui/{os.getuid()}", str(unit.path)], change)
    for unit in every:
        if unit.path.exists():
            unit.path.unlink()
            change.removed.append(unit.path)
        else:
            change.missing.append(unit.path)
    if kind == "systemd" and change.removed and enable:
        _ask(["systemctl", "--user", "daemon-reload"], change)
    _not_done(change, "removed but not disabled in the running scheduler")
    if kind == "cron":
        change.notes.append(f"remove this line with `crontab -e` if you added it: {cron_line(layout)}")
        change.notes.append(f"and the shift tick's, if you added it: {cron_shift_line(layout)}")
        change.notes += [f"and the research runner's, if you added it: {line}" for line in cron_research_lines(layout)]
    journal.write(layout, VERB, "uninstalled", kind=kind, removed=len(change.removed))
    return change


def installed(layout: Layout, kind: str | None = None) -> dict[str, bool]:
    """Return, per file ``install`` would write for ``kind``, whether it is there (any content)."""
    return {str(unit.path): unit.path.is_file() for unit in units(layout, kind or detect())}


def show(layout: Layout, *, kind: str | None = None) -> ScheduleChange:
    """List the files of ``kind``: present ones in ``unchanged``, absent ones in ``missing``."""
    kind = kind or detect()
    change = ScheduleChange(kind=kind)
    for unit in units(layout, kind):
        (change.unchanged if unit.path.is_file() else change.missing).append(unit.path)
    if kind == "cron":
        change.notes.append(f"the crontab line for the nightly reflect: {cron_line(layout)}")
        if machine_on(layout):
            change.notes.append(f"the crontab line for the shift tick: {cron_shift_line(layout)}")
            change.notes += [f"the crontab line for the research runner: {line}" for line in cron_research_lines(layout)]
    return change
