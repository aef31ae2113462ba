"""The backstop's substance (issue 17; docs/take.md, "The backstop"): which sessions' endings were missed.

On SessionStart's path, ``start`` records the starting session
(``.started/<sid>.json``) and ``spawn`` starts ``sandman take --missed``
detached when one is due and a stat of the recent transcripts says it could
take something (sandman/archive/missed.py). For that run, ``live_sessions``
names the sessions whose Claude Code process still runs and ``candidates``
the transcripts inside the lookback. The run itself is the verb's
(sandman/verbs/take_missed.py ``take_missed``), over take_all's survey.

Module level is standard library and sandman's light modules only: ``start``
runs on the SessionStart hook's path. Nothing here imports sandman.verbs or
sandman.cli.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from sandman import config, journal, plainhook, procs
from sandman.layout import Layout
from sandman.store.atomic import is_regular, write_atomic
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
    """True when no start asked in the last BACKSTOP_EVERY_S seconds, by ``.backstop.stamp``'s ``lstat``:
    one that is not a regular file (a folder, FIFO, device, link) is as none, a journal line."""
    try:
        st = layout.backstop_stamp.lstat()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        journal.write(layout, VERB, "failed", hook=True, step="backstop-stamp", path=str(layout.backstop_stamp),
                      error="not a regular file")
        return True
    return now - st.st_mtime >= config.BACKSTOP_EVERY_S


def _stamp(layout: Layout, now: float) -> None:
    """Set ``.backstop.stamp``'s mtime to ``now``: made anew (atomically) when it is missing or not a
    regular file, never following a link. Raises OSError."""
    if not is_regular(layout.backstop_stamp):
        write_atomic(layout.backstop_stamp, "", durable=False)
    os.utime(layout.backstop_stamp, (now, now), follow_symlinks=False)


def spawn(layout: Layout, session: str | None) -> int | None:
    """Start ``sandman take --missed [--except <session>]`` detached when one is due; return its pid.

    Due: no SessionStart started one, or found nothing for one to take, in the last
    ``config.BACKSTOP_EVERY_S`` seconds (``.backstop.stamp``); then a run is started only when
    the stat data says it could take something (archive/missed.py ``anything_missed``, with the
    kept scan ``.backstop.kept``), and the stamp is set either way. Never raises and never waits:
    a failed spawn is a journal line.
    """
    now = time.time()
    if not _due(layout, now):
        return None
    from sandman.archive.missed import anything_missed

    if not anything_missed(str(layout.root), str(config.claude_projects_dir()), session, now,
                           str(layout.backstop_kept)):
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
    """True when ``pid`` is a running process other than init (procs.running)."""
    return isinstance(pid, int) and pid > 1 and procs.running(pid)


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
            data = plainhook.read_file(entry.path, plainhook.STARTED_MAX_BYTES)  # no FIFO waited on
            if data is None:
                continue  # gone since the listing
            record = json.loads(data)
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


def candidates(now: float) -> list[Path]:
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
