"""Keeping a SessionStart reply to be served: the recall of a ``startup`` and what it was built from.

The full ``recall --hook`` composes a ``startup``'s recall here (``recall_and_keep``) and
writes ``.start-replies/<key>.json`` (docs/BANK-FORMAT.md, "Start replies"), which
sandman/recall/served.py serves at the next start in the same cwd while every input is as
it was. The inputs are recorded, not listed by hand: while the recall is composed, an
audit hook (``sys.addaudithook``) notes every file opened and every folder listed, with its
stat at that moment; the folders and files whose absence or place the composing decides
on by a stat alone (the banks of the chain, ``.git`` up to the nearest, the note,
the settings file, ``.commit.undo``) are added by name. A reply is kept only when every
input read the same at the end as when it was first seen (no write raced the composing;
the recall cache recall itself rewrites is recorded as it ends), none is a symbolic link,
and no note was there to deliver.

``expires``: the first moment the same inputs compose another text, the time alone having
changed: a recent pointer leaving the 72 h window, or a failed dream's wait ending (the
dream queue's line).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from datetime import datetime, timedelta, timezone

from sandman import config, journal, plainhook
from sandman.banks.names import USER_BANK, ancestors, bank_name, normalize_directory
from sandman.banks.worktrees import bank_directory
from sandman.errors import SandmanError
from sandman.layout import Layout
from sandman.recall import served
from sandman.recall.budget import utf16_units
from sandman.recall.compose import VERB, Recalled, recall
from sandman.store.atomic import write_atomic

# The replies a writer composes again at most: the cwds most recently started in.
REFRESH_MAX = 8
_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class _Recorder:
    """The files and folders read while it is the current recorder, each with its first stat."""

    current: _Recorder | None = None
    installed = False

    def __init__(self, root: str) -> None:
        self.under = root.rstrip("/") + "/"
        self.first: dict[str, list[int] | None | str] = {}
        self.written: set[str] = set()

    def see(self, path: object, writing: bool) -> None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path.startswith(self.under):
            return  # a descriptor, or a module's source imported meanwhile: not the root's
        if writing:
            self.written.add(path)
        elif path not in self.first:
            try:
                self.first[path] = served.stat_of(path)
            except OSError:
                self.first[path] = "unreadable"


def _audit(event: str, args: tuple) -> None:
    recorder = _Recorder.current
    if recorder is None:
        return
    try:
        if event == "open":
            path, mode, flags = args
            writing = bool(flags & _WRITING) if isinstance(flags, int) else bool(mode and set(mode) & set("wax+"))
            recorder.see(path, writing)
        elif event in ("os.listdir", "os.scandir"):
            recorder.see(args[0], False)
        elif event == "os.rename":
            recorder.see(args[1], True)
    except Exception:  # noqa: BLE001 - an audit hook that raises would fail the read it watches
        pass


def _named_inputs(layout: Layout, cwd: str, directory: str) -> list[str] | None:
    """What the composing decides on by a stat alone: the banks of ``directory``'s chain and their
    MEMORY.md, ``.git`` from ``cwd`` up to the nearest (banks/worktrees.py), the note (and its old place), the
    settings file, ``.commit.undo``, ``memories/.recent`` and ``log/``. None when the nearest
    ``.git`` is not a folder (a linked worktree's file: its banks are decided by files outside the
    root, so its recall is composed every time). Raises OSError."""
    names = [str(layout.memories), str(layout.settings_file), str(layout.commit_undo), str(layout.recent),
             str(layout.log), str(layout.note(bank_name(directory))),
             str(layout.old_handoff_note(bank_name(directory)))]
    for folder in [normalize_directory(cwd), *normalize_directory(cwd).parents]:
        git = folder / ".git"
        names.append(str(git))
        if served.stat_of(str(git)) is not None:
            if not stat.S_ISDIR(os.lstat(git).st_mode):
                return None
            break
    banks = [layout.bank(USER_BANK)] + [layout.bank(bank_name(path))
                                        for path in ancestors(directory, config.user_home())]
    for bank in banks:
        names += [str(bank), str(bank / "MEMORY.md")]
    return names


def _expires(layout: Layout, now: datetime) -> float | None:
    """The first moment after ``now`` when the time alone changes the recall (None: never)."""
    from sandman import dreamqueue
    from sandman.pointers import list_pointers, parse_time

    moments = []
    for pointer in list_pointers(layout):
        if pointer.ended is not None:
            moments.append(pointer.ended + timedelta(hours=config.RECALL_POINTER_HOURS))
        tried, attempts = parse_time(pointer.data.get("tried")), pointer.data.get("attempts")
        if not pointer.dreamed and tried is not None and isinstance(attempts, int) and not isinstance(attempts, bool):
            moments.append(tried + timedelta(seconds=dreamqueue.retry_after_s(attempts)))
    later = [moment.timestamp() for moment in moments if moment > now]
    return min(later) if later else None


def recall_and_keep(layout: Layout, cwd: str, session: str | None, *, deliver: bool = True) -> Recalled:
    """``recall(layout, cwd, deliver=deliver, session=session)``, a ``startup``'s, and its reply kept in
    ``.start-replies/`` when it can be served again (see the module). Raises what recall raises;
    a reply that cannot be written is a journal line."""
    name = served.key(cwd)
    if name is None or layout.settings_file.exists():
        return recall(layout, cwd, deliver=deliver, session=session)
    if not _Recorder.installed:
        sys.addaudithook(_audit)
        _Recorder.installed = True
    recorder = _Recorder(str(layout.root))
    built = time.time()
    directory = str(bank_directory(layout, normalize_directory(cwd)))
    try:
        names = _named_inputs(layout, cwd, directory)
        named = {path: served.stat_of(path) for path in names} if names is not None else None
    except OSError:
        named = None
    if named is None:
        return recall(layout, cwd, deliver=deliver, session=session)
    _Recorder.current = recorder
    try:
        recalled = recall(layout, cwd, deliver=deliver, session=session)
        expires = _expires(layout, datetime.fromtimestamp(built, timezone.utc))
    finally:
        _Recorder.current = None
    inputs = _inputs(named, recorder)
    bank = bank_name(directory)
    if inputs is None or any(named[str(path)] is not None for path in (layout.note(bank), layout.old_handoff_note(bank))):
        return recalled
    bodies, lines = recalled.given or ([], [])
    kept = {"format": served.FORMAT, "cwd": cwd, "root": str(layout.root), "home": str(config.user_home()),
            "env": [os.environ.get(variable, "") for variable in served.ENV], "built": built, "expires": expires,
            "inputs": inputs, "text": recalled.text, "units": utf16_units(recalled.text),
            "trimmed": ",".join(recalled.trims) or None, "bodies": list(bodies), "lines": list(lines)}
    try:
        data = (json.dumps(kept, ensure_ascii=False) + "\n").encode("utf-8")
        if len(data) > plainhook.START_REPLY_MAX_BYTES:
            return recalled  # more than the launcher reads: composed every time
        write_atomic(layout.start_reply(name), data, durable=False)
    except (OSError, UnicodeEncodeError) as error:
        journal.write(layout, VERB, "failed", hook=True, step="start-reply", error=str(error))
    return recalled


def _inputs(named: dict, recorder: _Recorder) -> list | None:
    """``[[path, stat or None]]`` of every input, or None when one changed while it was read, is a
    symbolic link, or could not be stat'ed."""
    found = dict(recorder.first)
    found.update(named)
    inputs = []
    for path in sorted(found):
        try:
            now = served.stat_of(path)
        except OSError:
            return None
        if path not in recorder.written and now != found[path]:
            return None
        if now is not None and stat.S_ISLNK(os.lstat(path).st_mode):
            return None
        inputs.append([path, now])
    return inputs


def refresh(layout: Layout) -> list[str]:
    """Compose again the kept replies that are stale (an input changed, or the reply expired), so the
    next start in their cwds is served: what a writer calls once it changed what recall reads (take's
    hook, after the pointer). At most ``REFRESH_MAX`` replies, the most recently kept first; one that is
    unreadable is removed. Returns the cwds composed again. Never raises: a reply left stale only means
    the next start there runs the full hook."""
    try:
        entries = sorted(((entry.stat().st_mtime_ns, entry.path) for entry in os.scandir(layout.start_replies)
                          if entry.name.endswith(".json") and not entry.name.startswith(".")), reverse=True)
    except OSError:
        return []
    done = []
    for _, path in entries[:REFRESH_MAX]:
        try:
            data = plainhook.read_file(path, plainhook.START_REPLY_MAX_BYTES)  # no FIFO waited on
            if data is None:
                continue  # removed since the listing
            kept = json.loads(data)
            cwd = kept["cwd"]
            if served.fresh(kept, str(layout.root), cwd, time.time()):
                continue
            recall_and_keep(layout, cwd, None, deliver=False)
            done.append(cwd)
        except (OSError, ValueError, KeyError, TypeError, SandmanError) as error:
            journal.write(layout, VERB, "failed", step="start-reply-refresh", reply=path, error=str(error))
            try:
                os.unlink(path)
            except OSError:
                pass
    return done
