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

Built-in modules only (``os``, ``time``, ``_json``): the SessionStart launcher
(sandman/fasthook.py) imports it under ``python -I -S``. The constants are config.py's;
tests/test_recall_served.py checks each copy equals its source.

The start hooks pass ``kept``, the kept scan (``.backstop.kept``, docs/BANK-FORMAT.md
"Started sessions"): what the last look at each project folder found, so a check stats
only what could have changed since. Per folder it keeps the folder's own ``(mtime_ns,
inode)``, when every transcript in it was last looked at (its whole listing), the
transcripts that time or another process can turn into a missed one (written in the live
window, the starting session's, a running session's: watched, looked at by every check)
and the names of the quiet ones (taken since their last write, older than the lookback,
not a regular file), each with its inode as the listing gives it (``d_ino``, free with the
name). A folder as kept is not listed: only its watched transcripts are looked at. A folder
that changed (a transcript made, removed or renamed in it) is listed, and only its names
not kept quiet under the same inode are looked at. ``BACKSTOP_RESCAN_S`` after its whole
listing (or when that time is ahead of the clock), a folder is listed whole again. A quiet
transcript replaced under its name (a rename onto it: its folder changes, its inode too)
is looked at by the next check. One written again in place leaves its folder and inode as
they were: a session resumed after its take whose ending was missed is found at its
folder's next whole listing, at most ``BACKSTOP_RESCAN_S`` later, not at once as the check without ``kept`` finds it. A kept scan that is missing, corrupt or kept for another projects folder is the
check without it, and is written anew.
"""

from __future__ import annotations

import os
import time

import _json

from sandman import fastjson, plainhook, procs

TAKE_LIVE_WINDOW_S = 120
BACKSTOP_LOOKBACK_S = 7 * 86_400
BACKSTOP_RESCAN_S = 3_600
KEPT_FORMAT = 2  # 2: each quiet name kept with its inode
_NS = 1_000_000_000
# A folder changed this shortly before it was looked at may change again within the same
# timestamp tick, its mtime unchanged: its mtime is not kept ("racy", as git's index says) and
# the next check lists it again. Linux stamps a change with the coarse clock, a tick of at
# most 10 ms; a filesystem of whole seconds (FAT: two) stamps it to the second.
_RACY_NS = _NS // 10
_RACY_WHOLE_SECONDS_NS = 3 * _NS
_TYPE, _DIR, _REG = 0o170000, 0o040000, 0o100000
# What a transcript is to the check (_judge).
_QUIET, _WATCH, _MISSED = 0, 1, 2


def _has_entry(folder: str) -> bool:
    """True when ``folder`` holds a ``*.json`` whose name does not start with a dot."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(name.endswith(".json") and not name.startswith(".") for name in names)


def anything_missed(root: str, projects: str, starting: str | None, now: float, kept: str | None = None) -> bool:
    """True when ``take --missed`` run now could take or drain something (see the module's rules).

    ``root`` is the memory root, ``projects`` Claude Code's projects folder (both absolute
    strings), ``starting`` the session starting now (None: none), ``now`` seconds since the
    epoch. ``kept``: the path of the kept scan to read and bring up to date (the start hooks'
    ``.backstop.kept``); None looks at every transcript and writes nothing. Never raises.
    """
    if _has_entry(f"{root}/pending-takes") or _has_entry(f"{root}/.taking"):
        return True
    try:
        projects_fd = os.open(projects, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    rules = (root, starting, (now - TAKE_LIVE_WINDOW_S) * _NS, (now - BACKSTOP_LOOKBACK_S) * _NS)
    try:
        if kept is None:
            return _any_in(projects_fd, rules)
        return _any_kept(projects_fd, root, projects, kept, now, rules)
    finally:
        os.close(projects_fd)


def _any_in(projects_fd: int, rules: tuple) -> bool:
    """anything_missed over every transcript of the projects folder open at ``projects_fd``."""
    try:
        folders = os.listdir(projects_fd)
    except OSError:
        return False
    for folder in folders:
        try:
            if _listed(projects_fd, folder, rules, None) is None:
                return True
        except OSError:
            continue  # not a folder (nor a link to one), or unreadable
    return False


def _listed(projects_fd: int, folder: str, rules: tuple, quiet: dict[str, str] | None) -> tuple | None:
    """``(watched, quiet)`` of the project folder ``folder`` of the projects folder open at
    ``projects_fd``, listed: the transcripts to look at again, and the _QUIET ones as ``name/inode``
    joined by ``/`` (no name holds one; nothing collected when ``quiet`` is None); None when one
    is missed. A name ``quiet`` maps to the inode the listing gives it (``d_ino``, decimal) is taken
    as quiet without a stat; one replaced under its name (another inode) is looked at. Raises
    OSError when ``folder`` is not a folder (a link to one included) or cannot be listed.

    The folder is listed through a descriptor, so a stat looks up one name, not the whole path
    (a quarter of the check's time at 1,000 transcripts)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=projects_fd)
    try:
        with os.scandir(fd) as entries:
            listing = {entry.name: str(entry.inode()) for entry in entries}
        watched, still = [], []
        for name, inode in listing.items() - quiet.items() if quiet else listing.items():
            verdict = _judge(fd, name, rules)
            if verdict == _MISSED:
                return None
            if verdict == _WATCH:
                watched.append(name)
            elif quiet is not None and name[-6:] == ".jsonl" and name[:6] != "agent-":
                still.append(f"{name}/{inode}")
        if quiet:
            still.extend(f"{name}/{inode}" for name, inode in listing.items() & quiet.items())
        return watched, "/".join(still)
    finally:
        os.close(fd)


def _watched(projects_fd: int, folder: str, names: list[str], rules: tuple) -> bool:
    """True when one of ``names`` in the project folder ``folder`` is missed."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=projects_fd)
    except OSError:
        return False
    try:
        return any(_judge(fd, name, rules) == _MISSED for name in names)
    finally:
        os.close(fd)


def _judge(fd: int, name: str, rules: tuple) -> int:
    """What the entry ``name`` of the project folder open at ``fd`` is to the check under ``rules``
    (``(root, starting, newest, oldest)``, the live window's and the lookback's bounds in ns).

    _MISSED: a run could take it. _WATCH: not now, but time or another process can change
    that (written in the live window or ahead of the clock, the starting session's, a running
    session's, a stat that failed). _QUIET: only a change to its folder or a write to it can
    (not a transcript, not a regular file, older than the lookback, taken since its last
    write, or gone)."""
    if name[-6:] != ".jsonl" or name[:6] == "agent-":
        return _QUIET
    root, starting, newest, oldest = rules
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return _QUIET  # removed since the listing: its folder changed
    except OSError:
        return _WATCH
    written = st.st_mtime_ns
    if st.st_mode & _TYPE != _REG or written <= oldest:
        return _QUIET
    if written > newest:
        return _WATCH
    if st.st_nlink > 1 and st.st_ctime_ns > written:
        return _QUIET  # linked (a take) after its last write: taken, nothing added since
    session = name[:-6]
    if session in ("", ".", ".."):
        return _QUIET
    if session == starting or _live(root, f"{root}/.started/{session}.json"):
        return _WATCH
    return _MISSED


def _any_kept(projects_fd: int, root: str, projects: str, kept: str, now: float, rules: tuple) -> bool:
    """anything_missed with the kept scan at ``kept`` (the module's docstring): per project folder,
    its watched transcripts only when it is as kept, its new names too when it changed, every
    transcript when its last whole listing is BACKSTOP_RESCAN_S old. Written again when a folder
    was listed and nothing is missed."""
    record = _read_kept(root, kept, projects)
    clock = time.time_ns()
    try:
        own = os.fstat(projects_fd)
    except OSError:
        return False
    key = [own.st_mtime_ns, own.st_ino]
    same = record is not None and record["key"] == key  # no folder made, removed or renamed since
    folders = record["folders"] if record is not None else {}
    try:
        names = record["names"] if same else os.listdir(projects_fd)
    except OSError:
        return False
    written = {}
    changed = not same
    for folder in names:
        try:
            st = os.stat(folder, dir_fd=projects_fd, follow_symlinks=False)
        except OSError:
            changed = True
            continue
        if st.st_mode & _TYPE != _DIR:
            changed = changed or folder in folders
            continue
        entry = folders.get(folder)
        fresh = entry is not None and entry[2] <= now < entry[2] + BACKSTOP_RESCAN_S
        if fresh and entry[0] == st.st_mtime_ns and entry[1] == st.st_ino:
            if entry[3] and _watched(projects_fd, folder, entry[3], rules):
                return True
            written[folder] = entry
            continue
        changed = True
        try:
            listed = _listed(projects_fd, folder, rules, _quiet(entry[4]) if fresh else {})
        except OSError:
            continue  # not kept: listed again next time
        if listed is None:
            return True
        written[folder] = [None if _racy(st.st_mtime_ns, clock) else st.st_mtime_ns, st.st_ino,
                           entry[2] if fresh else now, *listed]
    if changed:
        _write_kept(kept, projects, None if _racy(key[0], clock) else key, written)
    return False


def _quiet(kept: str) -> dict[str, str]:
    """The quiet transcripts of a kept folder entry (``name/inode/name/inode...``) as ``{name: inode}``;
    empty (every name looked at) when it is not of that shape."""
    parts = kept.split("/") if kept else []
    return dict(zip(parts[0::2], parts[1::2])) if len(parts) % 2 == 0 else {}


def _racy(mtime_ns: int, clock_ns: int) -> bool:
    """True when a folder of modification time ``mtime_ns``, looked at when the clock read
    ``clock_ns``, could change again and keep that time (see _RACY_NS)."""
    return mtime_ns > clock_ns - (_RACY_WHOLE_SECONDS_NS if mtime_ns % _NS == 0 else _RACY_NS)


def _read_kept(root: str, kept: str, projects: str) -> dict | None:
    """The kept scan at ``kept`` when it is one, for ``projects``: ``{"key": [mtime_ns or None, inode]
    or None, "names": [folder, ...], "folders": {folder: [mtime_ns or None, inode, listed, [watched
    name, ...], quiet names and their inodes joined by "/"]}}``, ``names`` every folder kept, ``folders`` those whose entry is of
    that shape (any other is listed whole again); None when it is missing or not one. Read by
    plainhook.read_file: a folder, FIFO, device, link or file over KEPT_SCAN_MAX_BYTES is not
    one, with a ``take failed step=backstop-kept`` line in the root's journal (then written anew)."""
    try:
        data = plainhook.read_file(kept, plainhook.KEPT_SCAN_MAX_BYTES)
    except OSError as error:
        plainhook.journal(root, "take", "failed", hook=True, step="backstop-kept", path=kept,
                          error=error.strerror or str(error))
        return None
    record = fastjson.loads(data) if data is not None else None
    if (not isinstance(record, dict) or record.get("format") != KEPT_FORMAT or record.get("projects") != projects
            or not isinstance(record.get("folders"), dict) or not _key_ok(record.get("key"))):
        return None
    names = list(record["folders"])
    if not all(_name_ok(folder) for folder in names):
        return None  # the folder names stand for a listing: one bad name, no listing
    folders = {folder: entry for folder, entry in record["folders"].items()
               if isinstance(entry, list) and len(entry) == 5 and _key_ok(entry[:2])
               and isinstance(entry[2], (int, float)) and isinstance(entry[3], list)
               and all(_name_ok(name) for name in entry[3]) and isinstance(entry[4], str)}
    return {"key": record["key"], "names": names, "folders": folders}


def _key_ok(key: object) -> bool:
    """``[mtime_ns or None, inode]``, or None."""
    return key is None or (isinstance(key, list) and len(key) == 2 and _int(key[1])
                           and (key[0] is None or _int(key[0])))


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _name_ok(name: object) -> bool:
    """A name of one entry of a folder (no ``/``, no NUL, not ``.`` or ``..``)."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name


def _write_kept(kept: str, projects: str, key: list | None, folders: dict) -> None:
    """Write the kept scan (docs/BANK-FORMAT.md, "Started sessions") atomically; a failed write
    only means the next check lists every folder again."""
    string = _json.encode_basestring_ascii  # a name that is not UTF-8 reads back as it was listed

    def number(value: int | float | None) -> str:
        return "null" if value is None else repr(value)

    own = "null" if key is None else f"[{number(key[0])}, {number(key[1])}]"
    entries = ", ".join(f"{string(folder)}: [{number(entry[0])}, {number(entry[1])}, {number(entry[2])}, "
                        f"[{', '.join(map(string, entry[3]))}], {string(entry[4])}]"
                        for folder, entry in folders.items())
    text = f'{{"format": {KEPT_FORMAT}, "projects": {string(projects)}, "key": {own}, "folders": {{{entries}}}}}\n'
    data = text.encode("ascii")
    if len(data) <= plainhook.KEPT_SCAN_MAX_BYTES:
        plainhook.write_atomic(kept, data)
        return
    try:  # more than a read takes (some 20,000 transcripts): no kept scan, every check a whole one
        os.unlink(kept)
    except OSError:
        pass


def _live(root: str, path: str) -> bool:
    """True when the ``.started`` record at ``path`` names a running process (take_missed._pid_alive).
    Read by plainhook.read_file: a folder, FIFO, device, link or file over STARTED_MAX_BYTES names
    none, with a ``take failed step=started-record`` line in the journal of ``root``."""
    try:
        data = plainhook.read_file(path, plainhook.STARTED_MAX_BYTES)
    except OSError as error:
        plainhook.journal(root, "take", "failed", hook=True, step="started-record", path=path,
                          error=error.strerror or str(error))
        return False
    record = fastjson.loads(data) if data is not None else None
    pid = record.get("pid") if isinstance(record, dict) else None
    return isinstance(pid, int) and pid > 1 and procs.running(pid)
