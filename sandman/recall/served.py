"""The SessionStart hook served, not computed: a kept reply checked against the stat of its inputs.

``recall --hook`` at a session's start composes the recall of its cwd (sandman/recall/compose.py):
its imports alone cost 2.7-3 x ``python -c pass`` (issue 29). The full hook keeps what it
answered a ``startup`` in ``.start-replies/<key>.json`` (sandman/recall/startreply.py; docs/BANK-FORMAT.md,
"Start replies"), with the ``(mtime_ns, size, inode, ctime_ns)`` of every file and folder the
composing read or looked for, and the moment the first recent pointer leaves the 72 h window
or a failed dream's wait ends (``expires``). This module, run by sandman/fasthook.py under
``python -I -S`` with built-in modules only, serves that reply when nothing it was built
from changed: the same bytes on stdout, the same journal line and deliveries ledger lines
the full hook writes, and the backstop's start (the ``.started`` record; no
``take --missed`` unless sandman/archive/missed.py finds something to take).

Anything else is FALLBACK (None), decided before anything is written, and the caller runs
the full hook (sandman.hook), which journals and handles it and keeps a fresh reply: a
payload that is not a ``startup`` SessionStart with a usable session id and an absolute
cwd; a root given with ``~`` or not normalized; a ``.settings.toml`` (its switches need
``tomllib``); no reply, or one kept for another cwd, home, root or dream setting; an input
whose stat changed; an expired reply; a backstop run that may take something.
"""

from __future__ import annotations

import os
import time

import _json

from sandman import fastjson, plainhook

FALLBACK = None
FORMAT = 2  # 2: an input's stat holds its ctime (a hand edit that keeps size, inode and mtime)
EVENT = "SessionStart"
SOURCE = "startup"
# The environment a reply depends on besides the root and home: the dream queue's line.
ENV = ("SANDMAN_DREAM_DUE_POINTERS", "SANDMAN_DREAM_WAIT_HOURS")
# config.py's
HOOK_PAYLOAD_MAX_BYTES = 1 << 20
BACKSTOP_EVERY_S = 60
# banks/names.py's bank-name encoding and its cut


def key(cwd: str) -> str | None:
    """The file name (without ``.json``) of ``cwd``'s reply: the cwd as the payload spells it, in
    banks.names.bank_name's encoding (one name per spelling); None when over 200 characters."""
    return plainhook.bank_name(cwd)


def stat_of(path: str) -> list[int] | None:
    """``[mtime_ns, size, inode, ctime_ns]`` of ``path`` (``lstat``: a link is not followed), None when
    it is absent. The ctime, which no user can set, tells a write that kept the other three (a
    hand edit of the same size, its mtime put back with ``touch -d``). Raises OSError for any
    other failure."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]


def reply_of(text: str) -> str:
    """The hook's stdout for ``text``: ``json.dumps`` of the reply object, ``ensure_ascii=False``, and a newline."""
    return ('{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": '
            + _json.encode_basestring(text) + "}}\n")


def projects_dir() -> str | None:
    """config.claude_projects_dir() as a string, None when it is not the plain case."""
    value = os.environ.get("CLAUDE_CONFIG_DIR", "")
    base = os.path.expanduser(value) if value else (plainhook.home() or "") + "/.claude"
    return base + "/projects" if plainhook.plain(base) else None


def _claude_pid() -> int | None:
    value = os.environ.get("CLAUDE_PID", "").strip()
    return int(value) if value.isdigit() and int(value) > 1 else None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kept(base: str, cwd: str, now: float) -> dict | None:
    """The kept reply of ``cwd`` when every check holds, else None."""
    name = key(cwd)
    if name is None:
        return None
    path = f"{base}/.start-replies/{name}.json"
    try:
        data = plainhook.read_file(path, plainhook.START_REPLY_MAX_BYTES)
    except OSError as error:  # a folder, FIFO, device, link or huge file: the full hook writes it anew
        plainhook.journal(base, "recall", "failed", hook=True, step="start-reply", path=path,
                          error=error.strerror or str(error))
        return None
    kept = fastjson.loads(data) if data is not None else None
    return kept if fresh(kept, base, cwd, now) else None


def fresh(kept: object, base: str, cwd: str, now: float) -> bool:
    """True when the reply ``kept`` (a parsed reply file) answers a start in ``cwd`` under the root
    ``base`` at ``now``: its format, cwd, root, home and environment this process's, ``now`` between
    its ``built`` and ``expires``, every input's stat as recorded."""
    if not isinstance(kept, dict) or kept.get("format") != FORMAT or kept.get("cwd") != cwd:
        return False
    if kept.get("root") != base or kept.get("home") != plainhook.home():
        return False
    if kept.get("env") != [os.environ.get(variable, "") for variable in ENV]:
        return False
    built, expires = kept.get("built"), kept.get("expires")
    if not isinstance(built, (int, float)) or now < built or expires is not None and not now < expires:
        return False
    inputs = kept.get("inputs")
    if not isinstance(inputs, list) or not isinstance(kept.get("text"), str):
        return False
    try:
        for path, recorded in inputs:
            if stat_of(path) != recorded:
                return False
    except (OSError, TypeError, ValueError):
        return False
    return True


def _backstop_quiet(base: str, session: str, now: float) -> bool:
    """True when the backstop would spawn nothing now (take_missed.spawn): not due, or nothing to take
    (the stamp then set, as take_missed.spawn sets it), by the kept scan (``.backstop.kept``) as spawn's."""
    stamp = f"{base}/.backstop.stamp"
    try:
        st = os.lstat(stamp)
        regular = st.st_mode & 0o170000 == 0o100000
        due = not regular or now - st.st_mtime >= BACKSTOP_EVERY_S
    except FileNotFoundError:
        regular, due = False, True
    except OSError:
        regular, due = True, False
    if not regular and due and os.path.lexists(stamp):  # a folder, FIFO, device or link: made a file anew
        plainhook.journal(base, "take", "failed", hook=True, step="backstop-stamp", path=stamp,
                          error="not a regular file")
    if not due:
        return True
    from sandman.archive import missed  # only when due: 0.02 x python -c pass at every other start

    projects = projects_dir()
    if projects is None or missed.anything_missed(base, projects, session, now, f"{base}/.backstop.kept"):
        return False
    try:  # backstop._stamp: asked again a minute on
        if not regular and not plainhook.write_atomic(stamp, b""):
            return True
        os.utime(stamp, (now, now), follow_symlinks=False)
    except OSError:
        pass
    return True


def _record_start(base: str, session: str) -> bool:
    """take_missed.record_start: ``.started/<sid>.json`` written atomically; False when it failed."""
    pid = _claude_pid()
    if pid is None:
        return True
    moment, _ = plainhook.now_iso()
    data = f'{{"pid": {pid}, "at": "{moment}"}}\n'.encode()
    return plainhook.write_atomic(f"{base}/.started/{session}.json", data)


def serve(payload: bytes) -> str | None:
    """The hook's stdout for ``payload`` served from its kept reply, its files written; or FALLBACK
    (None), with nothing written, when this is not the plain case: run the full hook then."""
    base = plainhook.root()
    if base is None or len(payload) > HOOK_PAYLOAD_MAX_BYTES:
        return FALLBACK
    data = fastjson.loads(payload)
    if not isinstance(data, dict) or data.get("hook_event_name") != EVENT or data.get("source") != SOURCE:
        return FALLBACK
    session, cwd = data.get("session_id"), data.get("cwd")
    if plainhook.too_long(cwd):  # hookpayload.session_start's decline, before any walk
        plainhook.journal(base, "recall", "declined", hook=True, reason="path-too-long",
                          session=session if isinstance(session, str) else None, chars=len(cwd))
        return ""
    if (not plainhook.session_ok(session) or not isinstance(cwd, str) or not cwd.startswith("/")
            or "\0" in cwd or not _utf8(cwd)):
        return FALLBACK
    if not os.path.isdir(base + "/memories") or os.path.lexists(base + "/.settings.toml"):
        return FALLBACK
    now = time.time()
    kept = _kept(base, cwd, now)
    if kept is None or not _backstop_quiet(base, session, now) or not _record_start(base, session):
        return FALLBACK
    text = kept["text"]
    stamp, _ = plainhook.now_iso()
    rows = [f"{stamp}\t{channel}\t{path}\n" for channel, paths in (("recall", kept.get("bodies")),
                                                                   ("recall-line", kept.get("lines")))
            for path in paths or () if isinstance(path, str) and "\n" not in path and "\t" not in path]
    if rows:
        plainhook.append(f"{base}/.delivered/{session}.tsv", "".join(rows).encode("utf-8", "surrogateescape"))
    plainhook.journal(base, "recall", "recalled", hook=True, session=session, source=SOURCE, cwd=cwd,
                      chars=len(text), units=kept.get("units"), trimmed=kept.get("trimmed"))
    return reply_of(text)
