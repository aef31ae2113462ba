"""The deliveries ledger: which memories reached which session (docs/BANK-FORMAT.md, "Deliveries").

``<root>/.delivered/<session id>.tsv`` holds one line per memory a session was
given, appended as it is given::

    2026-12-05T08:01:12Z<TAB>recall<TAB>-home-me-app/project_deploys.md

The channel is how it arrived: ``recall`` (its body in the SessionStart
surface), ``recall-line`` (its MEMORY.md line alone, the body trimmed),
``prompt`` (the UserPromptSubmit hook), ``file`` (the file hook, after a read
or an edit of a file it names) or ``search`` (a ``sandman search`` or MCP
``search`` run inside the session). A compaction appends ``compact`` with
``-`` for a path: what was given before it left the context.

Two readers: the prompt and file hooks ask ``held`` (the memories whose body the
session holds now, so they never add one twice), and ``search``, the site and
``curate rot`` ask ``usage`` (how many sessions each memory reached, and when
last). Dotted and git-ignored: what one machine's sessions were given is that
machine's. Appends are one ``write`` on an ``O_APPEND`` descriptor, so
concurrent hooks never interleave within a line, and a ledger is never
rewritten. The hooks' check-and-record (``held``, then ``append`` of what they
add) runs under ``locked``: an exclusive ``flock`` on the session's ledger, so
two hooks racing for one session (a plugin's and ``hooks install``'s, or a
prompt and a file read) never both give the same memory.

Standard library only: the hook paths import this module.
"""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager

from sandman import plainhook
from sandman.layout import Layout

# Channels that put a memory's body in the context: the hooks do not give such a memory again.
BODY_CHANNELS = frozenset(("recall", "prompt", "file"))
CHANNELS = BODY_CHANNELS | {"recall-line", "search"}
COMPACT = "compact"
_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}")


class Usage(tuple):
    """How one memory reached sessions: ``sessions`` (int, distinct sessions), ``deliveries``
    (int, lines in all) and ``last`` (str, the ISO UTC time of the newest, ``YYYY-MM-DDTHH:MM:SSZ``).
    A plain tuple with named fields (no namedtuple class built on the hook paths)."""

    __slots__ = ()
    sessions = property(lambda self: self[0])
    deliveries = property(lambda self: self[1])
    last = property(lambda self: self[2])


def usable_session(session: object) -> bool:
    """True when ``session`` can name a ledger file (pointers.check_session_id's rule: no ``/``, no ``..``)."""
    return isinstance(session, str) and _SESSION.fullmatch(session) is not None and ".." not in session


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def append(layout: Layout, session: str, channel: str, paths: list[str]) -> bool:
    """Append one line per ``<bank>/<file>`` of ``paths`` given to ``session`` by ``channel``.

    ``channel`` is one of CHANNELS, or COMPACT with no paths (one marker line).
    Returns False when nothing could be written (a session id that names no
    file, a read-only root); never raises: a ledger must not fail a hook.
    """
    if not usable_session(session):
        return False
    stamp = _now()
    rows = paths if channel != COMPACT else ["-"]
    if not rows:
        return True
    data = "".join(f"{stamp}\t{channel}\t{path}\n" for path in rows if "\n" not in path and "\t" not in path)
    try:
        fd = _open_ledger(layout, session)
        try:
            os.write(fd, data.encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _open_ledger(layout: Layout, session: str) -> int:
    """A descriptor of ``session``'s ledger open for appending, the file and its folder made when
    missing (plainhook.open_append: a regular file only, a FIFO never waited on). Raises OSError."""
    return plainhook.open_append(str(layout.delivered_ledger(session)))


@contextmanager
def locked(layout: Layout, session: str):
    """Hold ``session``'s ledger exclusively (``fcntl.flock`` on ``.delivered/<session>.tsv``, created
    empty when missing) for a check-and-record: the other hooks of that session wait, those of other
    sessions do not. Released when the block ends or the process dies. A ledger that cannot be
    opened or locked (a read-only root, an unusable id) runs the block unlocked: a ledger must not
    fail a hook. Yields None."""
    fd = -1
    if usable_session(session):
        try:
            fd = _open_ledger(layout, session)
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd >= 0:
                os.close(fd)
            fd = -1
    try:
        yield None
    finally:
        if fd >= 0:
            os.close(fd)  # closing the descriptor releases the lock


def record_start(layout: Layout, session: str, source: str | None, given: tuple) -> None:
    """Append what a SessionStart surface gave ``session`` (``given``: ``(bodies, lines)``, the
    ``<bank>/<file>`` paths recall showed with their body and by their index line alone) as
    ``recall`` and ``recall-line`` lines; a compaction (``source`` ``compact``) first appends the
    ``compact`` marker: what the session was given before has left its context. Never raises."""
    bodies, lines = given or ([], [])
    if source == COMPACT:
        append(layout, session, COMPACT, [])
    append(layout, session, "recall", list(bodies))
    append(layout, session, "recall-line", list(lines))


def _lines(path) -> list[list[str]]:
    try:
        text = (plainhook.read_file(str(path), plainhook.LEDGER_MAX_BYTES) or b"").decode("utf-8", "surrogateescape")
    except OSError:
        return []  # not a regular file, or over the cap: as unreadable
    return [parts for parts in (line.split("\t") for line in text.split("\n")) if len(parts) == 3]


def held(layout: Layout, session: str) -> set[str]:
    """Return the ``<bank>/<file>`` paths whose body ``session`` holds now: given through a
    BODY_CHANNELS channel since its last compaction. Empty for an unknown session."""
    if not usable_session(session):
        return set()
    found: set[str] = set()
    for _, channel, path in _lines(layout.delivered_ledger(session)):
        if channel == COMPACT:
            found.clear()
        elif channel in BODY_CHANNELS:
            found.add(path)
    return found


def usage(layout: Layout) -> dict[str, Usage]:
    """Return, for each ``<bank>/<file>`` any session was given, its Usage over every ledger.

    Reads every ``.delivered/*.tsv``; an unreadable one is skipped. A memory
    absent from the result never reached a session on this machine.
    """
    sessions: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    last: dict[str, str] = {}
    try:
        names = [name for name in os.listdir(layout.delivered) if name.endswith(".tsv")]
    except OSError:
        return {}
    for name in names:
        session = name[: -len(".tsv")]
        for stamp, channel, path in _lines(layout.delivered / name):
            if channel not in CHANNELS:
                continue
            sessions.setdefault(path, set()).add(session)
            counts[path] = counts.get(path, 0) + 1
            if stamp > last.get(path, ""):
                last[path] = stamp
    return {path: Usage((len(found), counts[path], last[path])) for path, found in sessions.items()}
