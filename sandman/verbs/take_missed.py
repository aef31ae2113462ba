"""The backstop for missed endings: sessions whose SessionEnd never fired (issue 17).

A crash, a killed terminal or a closed laptop ends a session without its
SessionEnd hook, so ``take --hook`` never runs and the session would never be
remembered. The backstop finds such transcripts and takes them, unforced,
through take_all's survey and take's ``take_source``. It runs:

- at every SessionStart that is not a compaction: ``recall --hook`` calls
  ``start``, which records the starting session (``.started/<sid>.json``,
  the Claude Code pid from ``$CLAUDE_PID``) and spawns ``sandman take
  --missed --except <sid>`` fully detached, at most once per
  ``config.BACKSTOP_EVERY_S`` (``.backstop.stamp``) and only when a stat of the
  recent transcripts says it could take something (sandman/archive/missed.py),
  so the hook never waits for it and a quiet start spawns nothing;
- in every ``reflect`` pass (its ``missed`` step).

A transcript under Claude Code's projects folder is taken when it was last
written more than the live window (120 s) ago and less than
``config.BACKSTOP_LOOKBACK_S`` ago (older sessions are the backfill's,
``take --all``: taking a user's whole history is their decision, since
every session taken costs a dream), and it is not:

- the session that is starting (``--except``), nor any session whose
  ``.started`` record names a Claude Code process still running (an idle
  live session's transcript can be hours old);
- held by a live job (``locate.live_job``), a dream mind's own session, a
  subagent transcript, or anything else take_all's survey skips.

A take leaves Claude Code's name of a transcript in place (for --resume), so a
transcript its take record shows unchanged is passed over as ``taken``; one
that grew since (a resumed session whose ending was missed) is taken from
where its last take ended.
Each session taken is take's own ``archived`` line; a batch that looked at
any transcript is one ``missed`` line in ``.trace/take-<date>.log`` with the
skips counted by reason.

``start`` and everything it imports are standard library only: it runs on the
SessionStart hook's path.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sandman import config, journal
from sandman.layout import Layout
from sandman.store.atomic import write_atomic
from sandman.store.detach import sandman_argv, spawn_detached

VERB = "take"


# --- on the hook's path -----------------------------------------------------------


def record_start(layout: Layout, session: str, pid: int | None) -> None:
    """Write ``.started/<sid>.json`` (``{"pid", "at"}``) for a starting session; never raises.

    ``session`` must already be a safe id (the caller checks). Nothing is
    written without a pid: the record only says which process to ask. Not
    fsynced: a record lost to a power cut only means a live session is judged
    by its transcript's age alone.
    """
    if pid is None:
        return
    record = {"pid": pid, "at": journal.iso(journal.now_utc())}
    try:
        write_atomic(layout.started_record(session), json.dumps(record) + "\n", durable=False)
    except OSError as error:
        journal.write(layout, VERB, "failed", hook=True, step="started-record", session=session, error=str(error))


def _due(layout: Layout, now: float) -> bool:
    try:
        return now - layout.backstop_stamp.stat().st_mtime >= config.BACKSTOP_EVERY_S
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _stamp(layout: Layout, now: float) -> None:
    """Set ``.backstop.stamp``'s mtime to ``now`` (made when missing). Raises OSError."""
    layout.backstop_stamp.touch()
    os.utime(layout.backstop_stamp, (now, now))


def spawn(layout: Layout, session: str | None) -> int | None:
    """Start ``sandman take --missed [--except <session>]`` detached when one is due; return its pid.

    Due: no SessionStart started one, or found nothing for one to take, in the last
    ``config.BACKSTOP_EVERY_S`` seconds (``.backstop.stamp``); then a run is started only when
    the stat data says it could take something (archive/missed.py ``anything_missed``), and the
    stamp is set either way. Never raises and never waits: a failed spawn is a journal line.
    """
    now = time.time()
    if not _due(layout, now):
        return None
    from sandman.archive.missed import anything_missed

    if not anything_missed(str(layout.root), str(config.claude_projects_dir()), session, now):
        # Nothing a run could take: no process (issue 29); asked again a minute on.
        try:
            _stamp(layout, now)
        except OSError:
            pass  # an unset stamp only means the next start asks again
        return None
    try:
        _stamp(layout, now)
        argv = sandman_argv("take", "--missed", "--background", *(("--except", session) if session else ()))
        log = layout.trace_file(VERB, journal.now_utc().strftime("%Y-%m-%d"))
        pid = spawn_detached(argv, log, {**os.environ, "SANDMAN_ROOT": str(layout.root)})
    except OSError as error:
        journal.write(layout, VERB, "failed", hook=True, step="missed-spawn", error=str(error))
        return None
    journal.write(layout, VERB, "missed-spawned", hook=True, pid=pid, starting=session)
    return pid


def start(layout: Layout, session: str | None) -> int | None:
    """What SessionStart does for the backstop: record ``session`` (when a safe id), then ``spawn``."""
    from sandman.pointers import check_session_id
    from sandman.errors import InputError

    try:
        session = check_session_id(session) if session else None
    except InputError:
        session = None
    if session is not None:
        record_start(layout, session, config.claude_pid())
    return spawn(layout, session)


# --- the detached run ---------------------------------------------------------------


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process holds the pid: alive
    except OSError:
        return False
    return True


def live_sessions(layout: Layout) -> set[str]:
    """Return the sessions whose ``.started`` record names a running process; delete the others' records.

    A record that cannot be read counts as live while it is younger than a
    day (it may be mid-write), and is deleted after.
    """
    live: set[str] = set()
    try:
        entries = list(os.scandir(layout.started))
    except OSError:
        return live
    now = time.time()
    for entry in entries:
        if not entry.name.endswith(".json") or entry.name.startswith("."):
            continue
        session = entry.name[: -len(".json")]
        try:
            record = json.loads(Path(entry.path).read_bytes())
            pid = record.get("pid") if isinstance(record, dict) else None
            unreadable = not isinstance(record, dict)
        except (OSError, ValueError, RecursionError):
            pid, unreadable = None, True
        if _pid_alive(pid):
            live.add(session)
            continue
        try:
            if unreadable and now - entry.stat().st_mtime < 86_400:
                live.add(session)
                continue
            os.unlink(entry.path)
        except OSError:
            continue
    return live


def _candidates(now: float) -> list[Path]:
    """Claude Code transcripts last written inside the lookback (a stat each, nothing read)."""
    projects = config.claude_projects_dir()
    found = []
    from sandman.transcripts import locate

    for path in locate.session_files():
        if projects not in path.parents:
            continue
        try:
            age = now - path.lstat().st_mtime
        except OSError:
            continue
        if age < config.BACKSTOP_LOOKBACK_S:
            found.append(path)
    return found


def take_missed(layout: Layout, *, starting: str | None = None, dry_run: bool = False, drain_after: bool = True,
                dream_after: bool = True):
    """Take the sessions whose ending was missed (docs/take.md, "The backstop"); return a take_all.Backfill.

    ``starting`` is the session whose SessionStart started this run: never
    taken. ``drain_after`` False leaves the pending-take ledger to the caller
    (reflect drains it next), ``dream_after`` False the dream (reflect dreams
    what is due itself, and must not find a detached dream holding the lock). A root that does
    not exist yet is created first, except by a dry run, which writes nothing; what init raises
    when it cannot be. Never raises for a
    transcript (each is an Item, skipped with a reason).
    """
    from sandman.verbs import take_all
    from sandman.verbs.take import dream_if_due, drain

    if not layout.memories.is_dir() and not dry_run:
        from sandman.verbs.init import init

        init(layout)  # the first use creates the root, as every verb that writes does
    now = time.time()
    live = live_sessions(layout)
    items = take_all.survey(layout, config.TAKE_LIVE_WINDOW_S, None, paths=_candidates(now), orphans=False)
    for item in items:
        if item.reason is not None:
            continue
        if starting is not None and item.session == starting:
            item.skip("starting")
        elif item.session in live:
            item.skip("live-session")
    result = take_all.Backfill(items=items, older_than_s=config.TAKE_LIVE_WINDOW_S, project=None, dry_run=dry_run)
    if dry_run:
        return result
    for item in result.taken:
        take_all.take_item(layout, item)
    if drain_after:
        result.reclaimed = drain(layout)
    result.dream_pid = dream_if_due(layout) if dream_after else None
    if not result.items:
        return result  # nothing under the projects folder is recent: no line for a quiet start
    reasons = ",".join(f"{reason}:{count}" for reason, count in sorted(result.reasons().items()))
    journal.write(layout, VERB, "missed", taken=len(result.taken), skipped=len(result.skipped),
                  sessions=",".join(item.session for item in result.taken) or None,
                  starting=starting, reasons=reasons or None)
    return result


def take_missed_background(layout: Layout, starting: str | None) -> None:
    """``take --missed --background``: ``take_missed`` with every failure a journal line, never output."""
    from sandman.errors import SandmanError

    try:
        take_missed(layout, starting=starting)
    except (SandmanError, OSError) as error:
        journal.write(layout, VERB, "failed", step="missed", error=f"{type(error).__name__}: {error}")
