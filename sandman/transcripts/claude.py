"""Claude Code transcripts: ``<config dir>/projects/<project slug>/<session id>.jsonl``.

Every line is an object with a ``type``. The ones that carry the conversation:

- ``user``: a prompt (``message.content`` a string or blocks), tool results
  (``tool_result`` blocks), and also what Claude Code injects on the user's
  behalf, which is not a prompt: ``isMeta`` lines (skill bodies, the
  ``Caveat:`` line, system reminders), slash-command echoes
  (``<command-name>``, ``<local-command-stdout>``), interrupt markers
  (``[Request interrupted by user...]``), and the compaction summary
  (``isCompactSummary``, or text beginning "This session is being continued").
- ``assistant``: one content block per line in 2.1.x: ``text``, ``thinking``
  (left out), ``tool_use``.
- ``progress`` with ``data.type: agent_progress``: a subagent's message
  mirrored into the parent (2.1.x); read as a sidechain turn.
- ``attachment`` of type ``queued_command``: a prompt typed while a turn
  was running (no ``user`` line is written for it); read as a user turn.
- ``summary`` (``leafUuid`` names the last message it summarises; only a
  summary whose leaf is in this file is this session's own), ``custom-title``
  (the user's /rename), ``ai-title``: the host's titles.

The title is the latest ``custom-title``, else the latest ``ai-title``, else
the latest own ``summary``, else the first real prompt, else (the prompts were
compacted out of the file) the "Primary Request and Intent" of a compaction
summary, else a subagent's first prompt.

Lines with ``isSidechain: true`` (2.0.x inline subagents, and every line of a
``<session>/subagents/agent-*.jsonl`` file) become sidechain turns.

A slash command typed with arguments (``/review the parser``) is a real
prompt: its ``<command-args>`` are what the user wrote. Without arguments
(``/clear``, ``/model``) it is an echo.
"""

from __future__ import annotations

import re

from sandman import private
from sandman.transcripts import tools
from sandman.transcripts.model import (
    MALFORMED, UNKNOWN_TYPE, Collector, Session, Turn, lines, raw_time, title_text,
)

# Line types that carry nothing a session model needs: known, never counted as unknown.
# The second group is what Claude Code 2.1.332 writes in every session (corpus/hooks
# README, "Captured from Claude Code 2.1.332"); the third its session-metadata entries.
QUIET_TYPES = frozenset({
    "file-history-snapshot", "queue-operation", "attachment", "agent-name", "last-prompt",
    "tag", "mode", "permission-mode", "pr-link", "system",
    "atis-latch", "api-request", "api-request-shape", "api-request-blob", "cost-state", "tools-used",
    "agent-color", "agent-setting", "task-summary", "attribution-snapshot", "speculation-accept",
    "worktree-state", "content-replacement", "fork-context-ref", "bridge-session", "isolation-latch",
    "marble-origami-commit", "marble-origami-snapshot", "marble-origami-reset",
})
COMPACT_PREFIX = "This session is being continued from a previous conversation"
_NOT_A_PROMPT = (
    "<local-command-", "<bash-", "<system-reminder>", "<user-prompt-submit-hook>",
    "Caveat: The messages below were generated", "[Request interrupted by user",
)
_COMMAND_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_RAW_UUID = re.compile(rb'"uuid"\s*:\s*"([^"\\]{1,100})"')
# Title lines are short and begin with their type: the lean path looks for
# these in a line's first bytes only (a scan of every whole line costs ~1 ms per MB).
_TITLE_MARKS = (b'"custom-title"', b'"ai-title"', b'"summary"')
_INTENT = re.compile(r"Primary Request and Intent:\s*(.+?)(?:\n\s*\n|\n\s*\d+\.|$)", re.S)


def prompt_text(text: str) -> str | None:
    """Return ``text`` when it is something the person wrote, None when Claude Code wrote it."""
    stripped = text.strip()
    if not stripped or stripped.startswith(_NOT_A_PROMPT):
        return None
    if stripped.startswith(("<command-name>", "<command-message>")):
        name, args = _COMMAND_NAME.search(stripped), _COMMAND_ARGS.search(stripped)
        if name is None or args is None or not args.group(1).strip():
            return None
        return f"{name.group(1)} {args.group(1).strip()}"
    return stripped


def block_text(content: object) -> str:
    """Return the text of a string or of text/image blocks (images as ``[image]``)."""
    if isinstance(content, str):
        return content
    parts = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") == "image":
                parts.append("[image]")
    return "\n".join(parts)


class ClaudeReader:
    """Reads one Claude Code transcript into a Session (through ``read``)."""

    def __init__(self, session: Session):
        self.session = session
        self.collector = Collector(session)
        self.tool_names: dict[str, str] = {}
        self.uuids: set[str] = set()
        self.summaries: list[tuple[str, str]] = []  # (leafUuid, summary)
        self.titles: dict[str, str] = {}  # "custom-title" / "ai-title" -> latest
        self.prompts: dict[bool, str] = {}  # sidechain -> first real prompt
        self.intent: str | None = None  # a compaction summary's "Primary Request and Intent"

    def read(self, stream, lean: bool = False) -> Session:
        """Read the binary, seekable ``stream``. ``lean`` parses only the lines the
        pointer's facts can come from, taking the others' times from their bytes."""
        for line in lines(stream, self.collector, self.want if lean else None):
            try:
                self.line(line)
            except (TypeError, AttributeError, KeyError, ValueError):
                self.collector.skip(MALFORMED)
        if lean and self.summaries and not self.titles:
            # Is a summary this session's own? Its leaf must be a line of this file.
            stream.seek(0)
            self.uuids.update(uuid.decode("utf-8", "replace") for uuid in _RAW_UUID.findall(stream.read()))
        return self.finish()

    def want(self, raw: bytes) -> bool:
        session = self.session
        if session.session_id is None or session.cwd is None or b"remember" in raw:
            return True
        if self.collector.awaits(raw):
            return True
        head = raw[:200]
        if any(mark in head for mark in _TITLE_MARKS):
            return True
        if False not in self.prompts and (b'"user"' in raw or b"agent_progress" in raw or b"queued_command" in raw):
            return True
        if (b'"user"' in raw or b"queued_command" in raw) and private.TAG_BYTES.search(raw):
            return True  # a prompt that opens or closes a private span: the rest depends on it
        self.collector.time(raw_time(raw))
        return False

    def line(self, line: dict) -> None:
        kind = line.get("type")
        stamp = self.collector.time(line.get("timestamp"))
        uuid = line.get("uuid")
        if isinstance(uuid, str):
            self.uuids.add(uuid)
        session = self.session
        if session.session_id is None and isinstance(line.get("sessionId"), str):
            session.session_id = line["sessionId"]
        if session.cwd is None and isinstance(line.get("cwd"), str) and line["cwd"]:
            session.cwd = line["cwd"]
        sidechain = line.get("isSidechain") is True
        if kind == "user":
            self.user(line, stamp, sidechain)
        elif kind == "assistant":
            self.assistant(line, stamp, sidechain)
        elif kind == "progress":
            data = line.get("data")
            if isinstance(data, dict) and data.get("type") == "agent_progress" and isinstance(data.get("message"), dict):
                inner = data["message"]
                inner_stamp = self.collector.time(inner.get("timestamp")) or stamp
                if inner.get("type") == "user":
                    self.user(inner, inner_stamp, True)
                elif inner.get("type") == "assistant":
                    self.assistant(inner, inner_stamp, True)
        elif kind == "attachment":
            self.attachment(line.get("attachment"), stamp, sidechain)
        elif kind == "summary":
            if isinstance(line.get("summary"), str):
                self.summaries.append((str(line.get("leafUuid")), self.collector.other(line["summary"])))
        elif kind == "file-history-snapshot" and isinstance(line.get("snapshot"), dict):
            self.collector.time(line["snapshot"].get("timestamp"))
        elif kind in ("custom-title", "ai-title"):
            value = line.get("customTitle" if kind == "custom-title" else "aiTitle")
            if isinstance(value, str) and value.strip():
                self.titles[kind] = self.collector.other(value)
        elif kind not in QUIET_TYPES:
            self.collector.skip(UNKNOWN_TYPE)

    def user(self, line: dict, stamp: str | None, sidechain: bool) -> None:
        message = line["message"]
        content = message["content"]
        if line.get("isCompactSummary") or (isinstance(content, str) and content.startswith(COMPACT_PREFIX)):
            text = self.collector.other(block_text(content))
            intent = _INTENT.search(text)
            if intent and not sidechain:
                self.intent = intent.group(1)
            self.turn("compaction", text, stamp, sidechain)
            return
        if line.get("isMeta"):
            return
        if isinstance(content, str):
            self.prompt(content, stamp, sidechain)
            return
        if not isinstance(content, list):
            raise TypeError("user content is neither text nor blocks")
        texts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                tool = self.tool_names.get(str(block.get("tool_use_id")))
                result = block_text(block.get("content"))
                self.session.turns.append(Turn("tool_result", self.collector.other(result), stamp, sidechain, tool))
                self.collector.settle(block.get("tool_use_id"), result, block.get("is_error") is True)
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif block.get("type") == "image":
                texts.append("[image]")
        if texts:
            self.prompt("\n".join(texts), stamp, sidechain)

    def attachment(self, attachment: object, stamp: str | None, sidechain: bool) -> None:
        """Read a prompt typed while a turn was running (``queued_command``) as a user turn.

        Claude Code stores it as ``{"type": "attachment", "attachment": {"type":
        "queued_command", "commandMode": "prompt", "prompt": <text or blocks>,
        "origin": {"kind": "human"}}}`` and writes no ``user`` line for it. One
        marked ``isMeta``, of another ``commandMode`` (a task notification) or
        of an origin other than a person (a plugin, another session) is not what
        the person typed. Every other attachment carries nothing a session needs.
        """
        if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
            return
        if attachment.get("isMeta") is True or attachment.get("commandMode", "prompt") != "prompt":
            return
        origin = attachment.get("origin")
        if origin is not None and (not isinstance(origin, dict) or origin.get("kind", "human") != "human"):
            return
        text = block_text(attachment.get("prompt"))
        if text:
            self.prompt(text, stamp, sidechain)

    def prompt(self, text: str, stamp: str | None, sidechain: bool) -> None:
        prompt = prompt_text(text)
        if prompt is not None and prompt != "[image]":
            # A subagent's prompt is the model's text, not the person's.
            prompt = self.collector.other(prompt) if sidechain else self.collector.person(prompt)
            self.prompts.setdefault(sidechain, prompt)
            self.turn("user", prompt, stamp, sidechain)

    def assistant(self, line: dict, stamp: str | None, sidechain: bool) -> None:
        content = line["message"]["content"]
        if isinstance(content, str):
            self.turn("assistant", self.collector.other(content), stamp, sidechain)
            return
        if not isinstance(content, list):
            raise TypeError("assistant content is neither text nor blocks")
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self.turn("assistant", self.collector.other(block["text"]), stamp, sidechain)
            elif block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                name, value = block["name"], block.get("input")
                if isinstance(block.get("id"), str):
                    self.tool_names[block["id"]] = name
                summary = self.collector.other(tools.summary(name, value))
                self.session.turns.append(Turn("tool_call", summary, stamp, sidechain, name))
                for body in tools.remembered(name, value):
                    self.collector.propose(block.get("id"), body)

    def turn(self, role: str, text: str, stamp: str | None, sidechain: bool) -> None:
        if text.strip():
            self.session.turns.append(Turn(role, text.strip(), stamp, sidechain))

    def finish(self) -> Session:
        own = [text for leaf, text in self.summaries if leaf in self.uuids]
        title = (
            self.titles.get("custom-title")
            or self.titles.get("ai-title")
            or (own[-1] if own else None)
            or self.prompts.get(False)
            or self.intent  # the prompts were compacted away (a transcript cut short)
            or self.prompts.get(True)
        )
        self.session.title = title_text(title)
        return self.collector.finish()
