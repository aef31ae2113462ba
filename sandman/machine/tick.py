"""shift run: the tick a scheduler calls every few minutes (docs/shift.md, "The tick", "Whole nights").

In order, under ``.shift.lock`` (a tick that finds it held starts nothing):

1. close a finished or dead shift (shift.recover);
2. start nothing — and say why in the journal (``shift skipped reason=…``) — when
   the machine is off, a shift is open, ``shifts/PAUSE`` exists, the time is
   outside the night window (in ``[machine] time_zone``), the night already
   holds its shifts (``night-done``: ``[machine] shifts_per_night`` opened in it,
   or the rest day's one self-pass; the reason names the night computed), less
   of the night is left than ``min_window_minutes``, the clock is under
   ``min_window_minutes``, or the day's cost (``cost_usd`` of the shift and breath
   events of the night's day) reached ``budget_usd_day``;
3. otherwise open a shift (pick, brief; its deadline no later than the night's
   end), add a worktree on ``shift/<id>`` at ``<repo>/.claude/worktrees/<id>``
   (Claude Code's own place for worktrees; the rest day runs in the memory root,
   no worktree), and start ``claude -p`` there detached: the brief on stdin,
   ``--output-format json`` into ``shifts/<id>/.session.log``, ``--session-id``,
   ``--permission-mode`` and ``--settings`` from the profile, ``$SANDMAN_SHIFT``
   set; then attach.

So a night holds several shifts one after another: each tick that finds the last
one closed opens the next, until the cap, the clock, the budget or the night says
no. ``force`` (``shift run --force``) opens one now whatever the night window and
the cap say; an open shift, ``PAUSE``, the clock, the budget and the rest day's one
self-pass still hold.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sandman import config, journal
from sandman.errors import InputError, RepositoryError
from sandman.layout import Layout
from sandman.machine import shift as shifts
from sandman.machine import trail as trails
from sandman.machine import week
from sandman.store import repos as git
from sandman.store.atomic import write_atomic

_STARTED: list[subprocess.Popen] = []  # kept so a test process does not warn about a live child


@dataclass
class Tick:
    """What one tick did: ``started`` (a shift id), ``skipped`` (``reason``), ``closed`` (a shift)."""

    decision: str
    reason: str = ""
    shift: str | None = None
    closed: str | None = None


def spent_today(layout: Layout, settings: config.Machine, day, trail: trails.Trail) -> float:
    """US dollars the shift and breath events of the night's ``day`` carry; a revoked event (by
    name, an ancestor or its shift: ``Trail.revoked_by``) counts nothing."""
    total = 0.0
    for event in trail.events:
        if event.cost_usd and event.kind.split(".")[0] in ("shift", "breath") and trail.revoked_by(event) is None:
            moment = datetime.fromisoformat(event.at.replace("Z", "+00:00"))
            if week.day_of(settings, moment) == day:
                total += event.cost_usd
    return total


def opened_in_night(layout: Layout, settings: config.Machine, day) -> list[str]:
    """The ids of the shifts opened (``meta.json`` ``opened_at``) in the night of ``day``, oldest
    first; shifts opened by hand or forced outside the window count when their moment falls in it."""
    found = []
    if not layout.shifts.exists():
        return found
    for folder in sorted(layout.shifts.iterdir()):
        meta = shifts.read_meta(layout, folder.name) if trails.is_shift_id(folder.name) else None
        try:
            opened = datetime.fromisoformat(str((meta or {}).get("opened_at")).replace("Z", "+00:00"))
        except ValueError:
            continue
        if week.night_of(settings, opened) == day:
            found.append(folder.name)
    return found


def night_done(layout: Layout, settings: config.Machine, day) -> str | None:
    """Why the night of ``day`` holds no further shift (the reason, starting ``night-done:``), or None.

    The rest day holds one self-pass (any shift of the rest day's night counts); another day
    ``[machine] shifts_per_night``."""
    opened = opened_in_night(layout, settings, day)
    night = week.describe_night(settings, day)
    if week.is_rest(settings, day):
        rest = [ident for ident in opened if (shifts.read_meta(layout, ident) or {}).get("rest")]
        if rest:
            return f"night-done: the rest day's self-pass {rest[0]} already ran in {night}; one a rest day"
        return None
    if len(opened) >= settings.shifts_per_night:
        return (f"night-done: {len(opened)} shift(s) opened in {night} ({', '.join(opened)}); "
                f"machine.shifts_per_night is {settings.shifts_per_night} (`sandman shift run --force` opens "
                "another)")
    return None


def _skip(layout: Layout, reason: str, closed: str | None = None) -> Tick:
    journal.write(layout, shifts.VERB, "skipped", reason=reason)
    return Tick("skipped", reason, closed=closed)


def run(layout: Layout, now: datetime | None = None, *, force: bool = False) -> Tick:
    """One tick at ``now`` (UTC; the real clock when None). ``force``: start a shift even outside the
    night window or past the night's cap (the night's day is then today's local date). Raises
    ConfigError (a bad ``[machine]``); every other reason not to start is a skipped Tick with its
    journal line."""
    now = now or journal.now_utc()
    settings = config.machine(layout)
    if not settings.on:
        return _skip(layout, "the machine is off: no [machine] roots")
    held = shifts.RunLock(layout.shift_lock)
    if not held.acquire():
        return _skip(layout, "another tick holds .shift.lock")
    try:
        closed = shifts.recover(layout, now)
        closed_id = closed.id if isinstance(closed, shifts.Closed) else None
        current = shifts.read_current(layout)
        if current is not None:
            return _skip(layout, f"shift {current.get('shift')} is open", closed_id)
        if layout.shift_pause.exists():
            return _skip(layout, f"paused: {layout.shift_pause} exists", closed_id)
        day = week.night_of(settings, now)
        until = None
        if day is None and not force:
            here = week.local(settings, now).strftime("%H:%M %Z")
            return _skip(layout, f"outside the night window ({here}; `sandman shift run --force` opens a "
                                 "shift now)", closed_id)
        if day is None:
            day = week.day_of(settings, now)
        else:
            until = week.night_end(settings, day)
            done = night_done(layout, settings, day)
            if done is not None and (not force or week.is_rest(settings, day)):
                return _skip(layout, done, closed_id)
            left = (until - now).total_seconds() / 60
            if left < settings.min_window_minutes and not force:
                return _skip(layout, f"the night is nearly over: {left:.0f} minute(s) left of "
                                     f"{week.describe_night(settings, day)} (min {settings.min_window_minutes})",
                             closed_id)
        clock = shifts.clock(layout, now)
        if not clock.room(settings.min_window_minutes):
            return _skip(layout, f"the clock is short: {clock.note} (min {settings.min_window_minutes})", closed_id)
        trail = trails.read(layout)
        if settings.budget_usd_day is not None:
            spent = spent_today(layout, settings, day, trail)
            if spent >= settings.budget_usd_day:
                return _skip(layout, f"over the day's budget: ${spent:.2f} of ${settings.budget_usd_day:.2f}",
                             closed_id)
        if shutil.which(config.claude_bin()) is None:
            return _skip(layout, f"claude not found: {config.claude_bin()} (install Claude Code or set "
                                 "SANDMAN_CLAUDE_BIN)", closed_id)
        try:
            opened = shifts.open_shift(layout, now=now, until=until)
        except InputError as error:
            return _skip(layout, str(error), closed_id)
        try:
            start(layout, opened, settings)
        except (RepositoryError, OSError) as error:
            shifts.handoff(layout, f"(the session could not start: {error})", abandoned=True, shift_id=opened.id)
            journal.write(layout, shifts.VERB, "failed", shift=opened.id, error=str(error))
            return Tick("failed", str(error), opened.id, closed_id)
        if until is None:
            told = f"forced outside the night window: {week.weekday(day)} {day}'s theme"
        else:
            told = (f"{'forced: ' if force else ''}shift {len(opened_in_night(layout, settings, day))} of "
                    f"{week.describe_night(settings, day)}")
        return Tick("started", told, opened.id, closed_id)
    finally:
        held.release()


def add_worktree(layout: Layout, opened: shifts.Opened) -> Path | None:
    """Cut ``shift/<id>`` from the base commit and check it out at ``<repo>/.claude/worktrees/<id>``;
    None on the rest day (no repository, no branch). Raises RepositoryError."""
    if opened.rest:
        return None
    meta = shifts.read_meta(layout, opened.id) or {}
    if not meta.get("base"):
        raise RepositoryError(f"shift {opened.id} has no base commit in its meta.json")
    repo_path = Path(opened.repo)
    folder = repo_path / ".claude" / "worktrees"
    if not (folder / ".gitignore").exists():  # the owner's `git status` stays clean
        write_atomic(folder / ".gitignore", "# sandman shift worktrees (docs/shift.md)\n*\n")
    return git.add_worktree(git.open_at(repo_path), opened.id, repo_path / ".claude" / "worktrees" / opened.id,
                            f"shift/{opened.id}", shifts._oid(meta["base"]))


def start(layout: Layout, opened: shifts.Opened, settings: config.Machine) -> int:
    """Add the worktree (not on the rest day) and start the session detached; attach it. Return its pid."""
    worktree = add_worktree(layout, opened)
    cwd = worktree or Path(opened.repo)
    profile = shifts.profile(layout, opened.id)
    session = str(uuid.uuid4())
    argv = [config.claude_bin(), "-p", "--output-format", "json", "--session-id", session,
            "--permission-mode", profile["permission_mode"], "--settings", json.dumps(profile["settings"])]
    if settings.model:
        argv += ["--model", settings.model]
    env = dict(os.environ)
    env.update(profile["env"])
    env.pop(config.PIPELINE_ENV, None)  # a shift is a real session: its hooks take and recall
    log = layout.shift_dir(opened.id) / ".session.log"
    with (opened.folder / "brief.md").open("rb") as stdin, open(log, "ab") as out:
        try:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=stdin, stdout=out, stderr=out,
                                       start_new_session=True, close_fds=True)
        except FileNotFoundError:
            raise OSError(f"claude not found: {argv[0]} (set SANDMAN_CLAUDE_BIN or install Claude Code)") from None
    _STARTED.append(process)
    current = shifts.read_current(layout) or {}
    current.update({"pid": process.pid, "pid_start": shifts.process_start(process.pid)})
    shifts.write_current(layout, current)
    shifts.attach(layout, session, pid=process.pid, worktree=str(worktree) if worktree else None)
    journal.write(layout, shifts.VERB, "started", shift=opened.id, session=session, pid=process.pid,
                  cwd=str(cwd))
    return process.pid
