"""One model of a session, whatever host wrote it, and the line reader both hosts share.

A host transcript is JSON Lines. ``lines`` yields each line's decoded object and
counts, instead of raising, every line it cannot use: not UTF-8, not JSON, cut
off at the end of the file, not a JSON object, longer than
``config.TRANSCRIPT_LINE_MAX_BYTES``. The host readers (claude.py, codex.py) add
"unknown type" and "malformed" (a known type of the wrong shape). A bad line
never stops the read and never raises.

Standard library only: take --hook imports this package.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from collections import namedtuple
from datetime import datetime, timezone
from pathlib import Path

from sandman import config, private

ROLES = ("user", "assistant", "tool_call", "tool_result", "compaction")

# Skip reasons, as counted in Session.skipped.
NOT_UTF8 = "not UTF-8"
NOT_JSON = "not JSON"
TRUNCATED = "truncated"
NOT_OBJECT = "not an object"
TOO_LONG = "too long"
UNKNOWN_TYPE = "unknown type"
MALFORMED = "malformed"

_ISO_UTC = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z")
# A JSON \u escape of a UTF-16 surrogate; json.loads joins a pair into one character and leaves a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SPACE = re.compile(r"\s+")


class Turn(namedtuple("Turn", "role text timestamp sidechain tool", defaults=(None, False, None))):
    """One step of a conversation.

    ``role`` is one of ROLES. ``text`` is the turn's text; for a tool_call a
    one-line summary such as ``Bash: git status``, for a tool_result the
    result's text (images as ``[image]``). ``timestamp`` is the line's own
    time, ISO 8601 UTC ``YYYY-MM-DDTHH:MM:SSZ``, or None. ``sidechain`` marks a
    subagent's turn. ``tool`` names the tool of a tool_call or tool_result.
    """

    __slots__ = ()


class Session:
    """A host transcript read into one model.

    ``host`` is ``claude`` or ``codex``; ``path`` the file read. ``started`` and
    ``ended`` are the earliest and latest line times (``YYYY-MM-DDTHH:MM:SSZ``),
    None when no line carries one. ``title`` is at most
    ``config.TITLE_MAX_CHARS`` characters, one line. ``highlights`` holds the
    bodies of the session's own ``sandman remember`` calls, in order, without
    repeats. ``skipped`` maps a reason (``not JSON``, ``not UTF-8``,
    ``truncated``, ``not an object``, ``too long``, ``unknown type``,
    ``malformed``) to how many lines it cost. ``lines`` counts every line read,
    skipped ones included.
    """

    __slots__ = ("host", "path", "session_id", "cwd", "started", "ended", "title",
                 "turns", "highlights", "skipped", "lines")

    def __init__(self, host: str, path: Path, session_id: str | None = None,
                 cwd: str | None = None, started: str | None = None, ended: str | None = None,
                 title: str | None = None):
        self.host, self.path, self.session_id, self.cwd = host, path, session_id, cwd
        self.started, self.ended, self.title = started, ended, title
        self.turns: list[Turn] = []
        self.highlights: list[str] = []
        self.skipped: dict[str, int] = {}
        self.lines = 0

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Session) and self._fields() == other._fields()

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__ if name != "turns")
        return f"Session({shown}, turns=<{len(self.turns)}>)"


def utc_time(value: object) -> str | None:
    """Return an ISO 8601 time as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC, seconds), or None when unreadable."""
    if not isinstance(value, str):
        return None
    match = _ISO_UTC.fullmatch(value)
    if match:  # the common case: Claude Code and Codex both write UTC with a Z
        return match.group(1) + "Z"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError):
        return None


def one_line(text: str) -> str:
    """Return ``text`` with every run of whitespace (newlines included) as one space, trimmed."""
    return _SPACE.sub(" ", text).strip()


def cut(text: str, limit: int) -> str:
    """Return ``text`` cut to at most ``limit`` characters, at a word boundary when one is
    near, ``…`` marking the cut."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:-") + "…"


def title_text(text: str | None) -> str | None:
    """Return ``text`` as a title: one line, at most ``config.TITLE_MAX_CHARS``; None when empty.

    ``text`` comes through the session's ``Collector.person``/``other`` (its private spans
    already hidden, before the cut: a cut span would show the rest of the title)."""
    if not text:
        return None
    line = one_line(text)
    return cut(line, config.TITLE_MAX_CHARS) if line else None


_FAILED = re.compile(r"(?m)^sandman: |Process exited with code [1-9]|^Exit code [1-9]")


def remember_succeeded(result: str, is_error: bool) -> bool:
    """True when a ``sandman remember`` call's result shows it committed (no error, no
    ``sandman: ...`` refusal line, no non-zero exit)."""
    return not is_error and not _FAILED.search(result)


class Collector:
    """What every host reader gathers besides turns: times, skips, highlights."""

    def __init__(self, session: Session):
        self.session = session
        self.skipped: Counter[str] = Counter()
        self._highlights: dict[str, None] = {}
        self._pending: dict[str, list[str]] = {}
        self.spans = private.Spans()

    def person(self, text: str) -> str:
        """Return what the person typed with its private spans hidden; a span it leaves open
        hides the rest of the session (sandman.private)."""
        return self.spans.person(text)

    def other(self, text: str) -> str:
        """Return any other text of the session (a reply, a tool's text, a title) with its
        private spans hidden: all of it while a span the person opened is open."""
        return self.spans.other(text)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def time(self, value: object) -> str | None:
        """Fold one line time into started/ended; return it normalised."""
        stamp = utc_time(value)
        if stamp is not None:
            session = self.session
            if session.started is None or stamp < session.started:
                session.started = stamp
            if session.ended is None or stamp > session.ended:
                session.ended = stamp
        return stamp

    def highlight(self, body: str) -> None:
        if body and body.replace(private.MARK, "").strip() and body not in self._highlights:
            self._highlights[body] = None

    def propose(self, call_id: object, body: str) -> None:
        """Hold a ``sandman remember`` body until its call's result says it was committed.

        A refused remember (a secret, a bad type) must not become a highlight:
        recall would show the very text the secrets ban kept out of the banks.
        A call without an id, or whose result never comes, gives none. ``body`` is
        hidden here, at its place in the session (sandman.private).
        """
        if isinstance(call_id, str) and call_id and body:
            self._pending.setdefault(call_id, []).append(self.other(body))

    def settle(self, call_id: object, result: str, is_error: bool) -> None:
        """Keep the bodies held for ``call_id`` when its result shows success."""
        bodies = self._pending.pop(str(call_id), [])
        if bodies and remember_succeeded(result, is_error):
            for body in bodies:
                self.highlight(body)

    def awaits(self, raw: bytes) -> bool:
        """True when a raw line may hold the result of a call whose bodies are held."""
        return any(call_id.encode() in raw for call_id in self._pending)

    def finish(self) -> Session:
        """Return the session read. Its texts were hidden as they were read (``person``,
        ``other``); a span's text quoted back elsewhere is hidden now, in the title, the
        highlights and every turn's text: what is derived from a session never holds them."""
        session = self.session
        session.skipped = dict(self.skipped)
        scrub = self.spans.scrub
        if session.title:
            session.title = scrub(session.title)
        highlights = list(dict.fromkeys(scrub(text) for text in self._highlights))
        session.turns = [turn._replace(text=scrub(turn.text)) if turn.text else turn
                         for turn in session.turns]
        session.highlights = highlights
        return session


_RAW_TIME = re.compile(rb'"timestamp"\s*:\s*"([^"\\]{10,40})"')


def raw_time(raw: bytes) -> str | None:
    """Return the first ``"timestamp": "..."`` value in a raw line, unparsed (the lean path)."""
    match = _RAW_TIME.search(raw)
    return match.group(1).decode("ascii", "replace") if match else None


def _whole(value: object) -> object:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, dict):
        return {_whole(key): _whole(item) for key, item in value.items()}
    return value


def loads(text: str) -> object:
    """``json.loads`` that returns text: a lone surrogate escape (``"\\ud83d"``) reads as U+FFFD.

    JSON allows the escape, and a JavaScript host writes one whenever it cuts
    a string inside an emoji, but the character it makes is not Unicode text:
    it cannot be encoded as UTF-8, so a title carrying it would fail the
    pointer's write after its transcript was archived. Raises ValueError,
    RecursionError like ``json.loads``.
    """
    value = json.loads(text)
    return _whole(value) if _SURROGATE_ESCAPE.search(text) else value


def lines(stream, collector: Collector, want: Callable[[bytes], bool] | None = None) -> Iterator[dict]:
    """Yield each JSON object line of the binary ``stream``; count every other line as skipped.

    ``want``, when given, sees each raw line first and returns False to pass
    over it unparsed (the lean path: it takes what it needs from the bytes);
    a last line without its newline is always parsed, so a line cut short is
    counted as ``truncated`` on both paths.
    Reads at most ``TRANSCRIPT_LINE_MAX_BYTES`` of any one line into memory.
    Never raises for bad content (only OSError from the stream itself).
    """
    limit = config.TRANSCRIPT_LINE_MAX_BYTES
    first = True
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        collector.session.lines += 1
        if len(raw) > limit:
            while not raw.endswith(b"\n"):  # drain the rest of the long line
                raw = stream.readline(1 << 20)
                if not raw:
                    break
            collector.skip(TOO_LONG)
            continue
        if first:
            first = False
            if raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
        ended = raw.endswith(b"\n")
        # A last line without its newline is parsed even on the lean path: if it was cut
        # short, that is a counted skip (take's journal says so), not a line passed over.
        if not raw.strip() or (want is not None and ended and not want(raw)):
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            collector.skip(NOT_UTF8)
            continue
        try:
            value = loads(text)
        except (ValueError, RecursionError):
            # The last line of a file still being written is cut short: say so.
            collector.skip(NOT_JSON if ended else TRUNCATED)
            continue
        if not isinstance(value, dict):
            collector.skip(NOT_OBJECT)
            continue
        yield value
