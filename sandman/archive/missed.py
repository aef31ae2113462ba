"""Whether the SessionStart backstop has anything to do, from stat data alone (issue 29).

Every session start more than ``config.BACKSTOP_EVERY_S`` after the last would spawn
``sandman take --missed`` (sandman/verbs/take_missed.py), a whole sandman process that
usually finds nothing: 22 x ``python -c pass`` of CPU competing with Claude Code's own
start. ``anything_missed`` answers first, with a directory listing and a stat per recent
transcript, whether that process could take anything; when it could not, none is spawned.

It errs towards spawning: True whenever the run might take something. A Claude Code
transcript (``<projects>/<project>/*.jsonl``, not a subagent's ``agent-*.jsonl``) counts
when it was last written at least ``TAKE_LIVE_WINDOW_S`` and less than
``BACKSTOP_LOOKBACK_S`` seconds ago (``take_missed._candidates`` and take_all's live
window), unless:

- it is the starting session's;
- it has a second name (a take's hard link into ``.archive/``) made after its last write:
  its inode changed (``st_ctime``) after its content (``st_mtime``, which a write sets to
  the same moment as ``st_ctime``), so it was taken and nothing was added since (what
  take_all's survey calls ``taken``; a link in the same clock tick as the last write
  reads as not taken, and spawns);
- its ``.started/<sid>.json`` names a process still running (a live session, idle).

A pending take (``pending-takes/*.json``) or a take in progress (``.taking/*.json``)
counts too: the spawned run drains them. What only reading a transcript can tell (a
mind's session, one without a cwd) is left to the run.

Built-in modules only (``os``, and ``_json`` through sandman/plainhook.py): the SessionStart launcher
(sandman/fasthook.py) imports it under ``python -I -S``. The constants are config.py's;
tests/test_backstop_check.py checks each copy equals its source.
"""

from __future__ import annotations

import os

from sandman import fastjson, plainhook

TAKE_LIVE_WINDOW_S = 120
BACKSTOP_LOOKBACK_S = 7 * 86_400
_NS = 1_000_000_000


def _has_entry(folder: str) -> bool:
    """True when ``folder`` holds a ``*.json`` whose name does not start with a dot."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(name.endswith(".json") and not name.startswith(".") for name in names)


def anything_missed(root: str, projects: str, starting: str | None, now: float) -> bool:
    """True when ``take --missed`` run now could take or drain something (see the module's rules).

    ``root`` is the memory root, ``projects`` Claude Code's projects folder (both absolute
    strings), ``starting`` the session starting now (None: none), ``now`` seconds since the
    epoch. Never raises.
    """
    if _has_entry(f"{root}/pending-takes") or _has_entry(f"{root}/.taking"):
        return True
    try:
        projects_fd = os.open(projects, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        return _any_in(projects_fd, root, starting, now)
    finally:
        os.close(projects_fd)


def _any_in(projects_fd: int, root: str, starting: str | None, now: float) -> bool:
    """anything_missed over the project folders of the projects folder open at ``projects_fd``.

    Each folder is listed through a descriptor, so a stat looks up one name, not the whole path
    (a quarter of the check's time at 1,000 transcripts)."""
    try:
        folders = [entry.name for entry in os.scandir(projects_fd) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return False
    newest = (now - TAKE_LIVE_WINDOW_S) * _NS
    oldest = (now - BACKSTOP_LOOKBACK_S) * _NS
    for folder in folders:
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY, dir_fd=projects_fd)
        except OSError:
            continue
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    name = entry.name
                    if name[-6:] != ".jsonl" or name[:6] == "agent-":
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    written = st.st_mtime_ns
                    if written <= oldest or written > newest or st.st_mode & 0o170000 != 0o100000:
                        continue  # outside the window, or not a regular file
                    if st.st_nlink > 1 and st.st_ctime_ns > written:
                        continue  # linked (a take) after its last write: taken, nothing added since
                    session = name[:-6]
                    if session == starting or session in ("", ".", ".."):
                        continue
                    if _live(f"{root}/.started/{session}.json"):
                        continue
                    return True
        except OSError:
            continue
        finally:
            os.close(fd)
    return False


def _live(path: str) -> bool:
    """True when the ``.started`` record at ``path`` names a running process (take_missed._pid_alive)."""
    try:
        with open(path, "rb") as stream:
            record = fastjson.loads(stream.read(4096))
    except OSError:
        return False
    pid = record.get("pid") if isinstance(record, dict) else None
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return True
