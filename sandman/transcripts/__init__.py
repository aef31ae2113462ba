"""Host transcript readers: Claude Code sessions and Codex rollouts, read into one model.

    sniff(path) -> "claude" | "codex" | None       which host wrote it, from the head of the file
    read_session(path) -> Session                  the whole file: turns, times, title, highlights
    summarize(path) -> Session                     the same facts without the turns, faster (take --hook)
    mind_text(session) -> str                      what a dream mind reads

The host is sniffed from the file itself, never from its name or place: a
Codex rollout is ``{timestamp, type, payload}`` envelopes, a Claude Code line
an object whose ``type`` is one of Claude Code's or that carries its
``sessionId``/``parentUuid`` fields. A file that matches neither raises
UnrecognisedTranscript: an unreadable file is not an empty session.

Standard library only: take --hook imports this package.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from sandman import config
from sandman.errors import UnrecognisedTranscript
from sandman.transcripts.claude import QUIET_TYPES, ClaudeReader
from sandman.transcripts.codex import CodexReader
from sandman.transcripts.model import Session, Turn

__all__ = ["HOSTS", "Session", "Turn", "mind_text", "read_session", "sniff", "summarize"]

HOSTS = ("claude", "codex")
CLAUDE_TYPES = QUIET_TYPES | {"user", "assistant", "progress", "summary", "custom-title", "ai-title"}
_CLAUDE_KEYS = ("sessionId", "parentUuid", "leafUuid")
# For a first line too long to parse inside the sniff window.
_CODEX_HEAD = re.compile(rb'^\s*\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"[a-z_]+"\s*,\s*"payload"\s*:\s*\{')
_CLAUDE_HEAD = re.compile(rb'^\s*\{[^\n]{0,400}?"(?:parentUuid|sessionId|isSidechain|leafUuid)"\s*:')


def _host_of(line: object) -> str | None:
    if not isinstance(line, dict):
        return None
    kind = line.get("type")
    if isinstance(kind, str) and isinstance(line.get("payload"), dict) and "timestamp" in line:
        return "codex"
    if (isinstance(kind, str) and kind in CLAUDE_TYPES) or any(isinstance(line.get(k), str) for k in _CLAUDE_KEYS):
        return "claude"
    return None


def sniff(path: Path) -> str | None:
    """Return ``"claude"``, ``"codex"`` or None (neither) for the transcript at ``path``.

    Reads at most ``config.SNIFF_MAX_BYTES`` from the head; the first line that
    names a host decides, bad lines are passed over. Raises OSError when the
    file cannot be read.
    """
    with open(path, "rb") as stream:
        head = stream.read(config.SNIFF_MAX_BYTES)
    chunks = head.split(b"\n")
    if len(head) == config.SNIFF_MAX_BYTES and len(chunks) > 1:
        chunks.pop()  # the last chunk was cut by the window
    for chunk in chunks:
        try:
            host = _host_of(json.loads(chunk.decode("utf-8").lstrip("\ufeff")))
        except (ValueError, RecursionError):
            continue
        if host is not None:
            return host
    first = head.lstrip(b"\xef\xbb\xbf")
    if _CODEX_HEAD.match(first):
        return "codex"
    if _CLAUDE_HEAD.match(first):
        return "claude"
    return None


def read_session(path: Path, host: str | None = None, *, start: int = 0, end: int | None = None,
                 data: bytes | None = None) -> Session:
    """Read the transcript at ``path`` into a Session.

    ``host`` (``claude`` or ``codex``) skips the sniff, for a caller that knows
    where the file came from. ``start`` and ``end`` (bytes) read only that
    range of the file (a pointer's part: sandman.archive); ``data``, the bytes
    to read instead of the file's (already read and checked by the caller).
    Bad lines are counted in ``Session.skipped``, never raised. Raises
    UnrecognisedTranscript when the file matches no host, OSError when it
    cannot be read.
    """
    return _read(path, host, lean=False, start=start, end=end, data=data)


def summarize(path: Path, host: str | None = None, *, start: int = 0, end: int | None = None) -> Session:
    """Read the facts a pointer needs: id, cwd, start and end, title, highlights.

    Parses only the lines those can come from (the head, user prompts until
    the first real one, titles, ``remember`` calls) and takes every other
    line's time from its bytes: several times faster than read_session on a
    long session, which take --hook must be. ``turns`` is left empty and
    ``skipped`` counts only the lines parsed. Raises as read_session does.
    """
    session = _read(path, host, lean=True, start=start, end=end)
    session.turns = []
    return session


def _read(path: Path, host: str | None, lean: bool, start: int = 0, end: int | None = None,
          data: bytes | None = None) -> Session:
    host = host or sniff(path)
    if host not in HOSTS:
        raise UnrecognisedTranscript(
            f"{path}: not a Claude Code transcript or a Codex rollout (its first lines match neither)"
        )
    session = Session(host=host, path=path)
    reader = ClaudeReader(session) if host == "claude" else CodexReader(session)
    if data is not None:
        return reader.read(io.BytesIO(data), lean=lean)
    with open(path, "rb") as stream:
        if start == 0 and end is None:
            return reader.read(stream, lean=lean)
        stream.seek(start)
        part = stream.read() if end is None else stream.read(max(end - start, 0))
    return reader.read(io.BytesIO(part), lean=lean)


_LABELS = {
    "user": "USER",
    "assistant": "ASSISTANT",
    "tool_call": "TOOL",
    "compaction": "COMPACTION SUMMARY",
}


def mind_text(
    session: Session,
    head_chars: int = config.MIND_TRANSCRIPT_HEAD_CHARS,
    tail_chars: int = config.MIND_TRANSCRIPT_TAIL_CHARS,
) -> str:
    """Return the transcript as a dream mind reads it (design station ④).

    User and assistant text in order, each tool call as its one-line summary,
    compaction summaries marked; tool results and thinking left out. A
    subagent's turn is prefixed ``SUBAGENT``. Over ``head_chars + tail_chars``
    characters, the first ``head_chars`` and the last ``tail_chars`` are kept
    and a line in between says how many characters were cut.
    """
    blocks = []
    for turn in session.turns:
        label = _LABELS.get(turn.role)
        if label is None:
            continue
        if turn.sidechain:
            label = "SUBAGENT " + label
        blocks.append(f"{label}: {turn.text}")
    text = "\n\n".join(blocks)
    if len(text) <= head_chars + tail_chars:
        return text
    cut = len(text) - head_chars - tail_chars
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    return f"{text[:head_chars]}\n\n[... {cut:,} characters of the transcript cut here ...]\n\n{tail}"
