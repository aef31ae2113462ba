"""Codex CLI rollouts: ``<codex home>/sessions/<yyyy>/<mm>/<dd>/rollout-<time>-<session id>.jsonl``.

Every line is an envelope ``{"timestamp", "type", "payload"}``:

- ``session_meta``: the session id (``payload.id``) and ``cwd``;
- ``turn_context``: per-turn settings (``cwd`` again);
- ``response_item``: what the model saw and said: ``message`` (roles
  ``user``, ``assistant``; ``developer``/``system`` are instructions, left
  out), ``reasoning`` (left out), ``function_call``/``custom_tool_call``/
  ``local_shell_call``/``web_search_call`` and their ``*_output`` results;
- ``event_msg``: the UI's copy of the same conversation (``user_message``
  is what the person typed: the title comes from the first one), token
  counts and reasoning notes; not turns, or every message would appear twice;
- ``compacted``: the summary that replaced earlier history.

Codex injects context as user messages (AGENTS.md, ``<environment_context>``,
``<user_instructions>``): those are not prompts. An image pasted into a prompt
is an ``input_image`` block between ``<image>`` tags: it reads ``[image]``.
"""

from __future__ import annotations

import re

from sandman import private
from sandman.transcripts import tools
from sandman.transcripts.model import (
    MALFORMED, UNKNOWN_TYPE, Collector, Session, Turn, lines, raw_time, title_text,
)

TOOL_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
QUIET_ITEMS = frozenset({"reasoning", "ghost_snapshot", "compaction_summary"})
_INJECTED = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>",
             "<INSTRUCTIONS>", "<permissions instructions>", "<turn_aborted>", "<user_shell_command>")
_IMAGE_TAG = re.compile(r"</?image\b[^>]*>")


def content_text(content: object) -> str:
    """Return the text of a message's content blocks (``input_text``, ``output_text``, images)."""
    if isinstance(content, str):
        return content
    parts = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind in ("input_image", "image"):
                parts.append("[image]")
            elif isinstance(block.get("text"), str) and not _IMAGE_TAG.fullmatch(block["text"].strip()):
                parts.append(block["text"])
    return "\n".join(parts)


class CodexReader:
    """Reads one Codex rollout into a Session (through ``read``)."""

    def __init__(self, session: Session):
        self.session = session
        self.collector = Collector(session)
        self.tool_names: dict[str, str] = {}
        self.typed: str | None = None  # the first event_msg user_message
        self.prompt: str | None = None  # the first real user message

    def read(self, stream, lean: bool = False) -> Session:
        """Read the binary ``stream``. ``lean`` parses only the lines the pointer's
        facts can come from, taking the others' times from their bytes."""
        for line in lines(stream, self.collector, self.want if lean else None):
            try:
                self.line(line)
            except (TypeError, AttributeError, KeyError, ValueError):
                self.collector.skip(MALFORMED)
        self.session.title = title_text(self.typed or self.prompt)
        return self.collector.finish()

    def want(self, raw: bytes) -> bool:
        session = self.session
        if session.session_id is None or session.cwd is None or b"remember" in raw:
            return True
        if self.collector.awaits(raw):
            return True
        if self.typed is None and b'"user_message"' in raw:
            return True
        if self.typed is None and self.prompt is None and b'"user"' in raw:
            return True
        if b'"user"' in raw and private.TAG_BYTES.search(raw):
            return True  # a prompt that opens or closes a private span: the rest depends on it
        self.collector.time(raw_time(raw))
        return False

    def line(self, line: dict) -> None:
        kind, payload = line.get("type"), line.get("payload")
        stamp = self.collector.time(line.get("timestamp"))
        if not isinstance(payload, dict):
            raise TypeError("payload is not an object")
        session = self.session
        if kind == "session_meta":
            if isinstance(payload.get("id"), str):
                session.session_id = session.session_id or payload["id"]
            self.collector.time(payload.get("timestamp"))
            if isinstance(payload.get("cwd"), str) and payload["cwd"]:
                session.cwd = session.cwd or payload["cwd"]
        elif kind == "turn_context":
            if session.cwd is None and isinstance(payload.get("cwd"), str) and payload["cwd"]:
                session.cwd = payload["cwd"]
        elif kind == "response_item":
            self.item(payload, stamp)
        elif kind == "event_msg":
            if payload.get("type") == "user_message" and self.typed is None:
                message = payload.get("message")
                if isinstance(message, str) and message.strip():
                    # The UI's copy of a prompt the response_item message carries: it must
                    # not count its spans twice (sandman.private).
                    self.typed = self.collector.other(message)
        elif kind == "compacted":
            message = payload.get("message")
            if isinstance(message, str) and message.strip():
                session.turns.append(Turn("compaction", self.collector.other(message).strip(), stamp))
        else:
            self.collector.skip(UNKNOWN_TYPE)

    def item(self, payload: dict, stamp: str | None) -> None:
        kind = payload.get("type")
        turns = self.session.turns
        if kind == "message":
            role, text = payload.get("role"), content_text(payload.get("content")).strip()
            if role == "user" and text and not text.startswith(_INJECTED):
                text = self.collector.person(text)
                self.prompt = self.prompt or text
                turns.append(Turn("user", text, stamp))
            elif role == "assistant" and text:
                turns.append(Turn("assistant", self.collector.other(text), stamp))
        elif kind in TOOL_CALLS:
            name = payload.get("name") or kind.removesuffix("_call")
            if not isinstance(name, str):
                raise TypeError("tool name is not a string")
            value = tools.arguments(payload.get("arguments", payload.get("input", payload.get("action"))))
            if isinstance(payload.get("call_id"), str):
                self.tool_names[payload["call_id"]] = name
            turns.append(Turn("tool_call", self.collector.other(tools.summary(name, value)), stamp, tool=name))
            for body in tools.remembered(name, value):
                self.collector.propose(payload.get("call_id"), body)
        elif kind in TOOL_OUTPUTS:
            output = payload.get("output")
            text = output if isinstance(output, str) else content_text(output)
            turns.append(Turn("tool_result", self.collector.other(text), stamp,
                              tool=self.tool_names.get(str(payload.get("call_id")))))
            self.collector.settle(payload.get("call_id"), text, False)
        elif kind not in QUIET_ITEMS:
            self.collector.skip(UNKNOWN_TYPE)
