"""``sandman mcp``: the stdio tool server (design, "Verbs", mcp; contract docs/MCP.md).

The tools, over the very functions the CLI calls, so no MCP client
re-implements the bank format:

- ``recall(cwd, budget?)``: sandman.verbs.recall.recall, the text a session starts with;
- ``remember(body, cwd, type?, name?, description?)``: sandman.verbs.remember.remember;
- ``banks(bank?)``: every bank with its directory, memory count and folder, or one
  bank's MEMORY.md lines (sandman.banks.listing);
- ``search(query, bank?, type?, limit?)``: sandman.verbs.search, the hits as lines;
- ``note(note, cwd, once?)``: sandman.verbs.note, the note for the next session (``handoff``,
  its old name, still answers for one release);
- ``forget_memory(file)``: sandman.verbs.forget_memory, one memory out of its bank, retired;
- ``trail_log(since?, kind?, repo?, shift?)`` and ``trail_show(id)``: the trail's
  read side, as ``sandman trail log`` and ``sandman trail show`` print it
  (sandman.verbs.trail).

A deliberate refusal (a secret in a memory, a relative cwd, an unknown type) is
a tool error the client reads (``is_error`` with the one-line reason), never a
crash of the server. The server is built on the official SDK's ``MCPServer``
(``mcp`` 2.x) and speaks JSON-RPC on stdin/stdout; its log goes to stderr.

Text that is not valid UTF-8 is a tool error too (``<argument> is not valid
UTF-8``). The SDK decodes stdin with ``errors="replace"``, so bytes that are
not UTF-8 arrive as U+FFFD; and its JSON parser (pydantic-core) rejects a
lone surrogate escape (``"\\ud800"``) as invalid JSON and drops the request
unanswered, leaving the client waiting forever. ``serve`` therefore reads
stdin itself and turns each lone surrogate into U+FFFD before the SDK parses
the line, and every tool refuses an argument holding U+FFFD.

Start and end are on every ``claude -p``'s path (issue 28, fault 3): Claude Code
waits for the handshake before its first request, and at its end sends SIGINT,
then SIGTERM, and waits for the server to leave. So ``sandman mcp`` is routed
before typer (sandman/__main__.py, dispatch.mcp_command), a tool imports its
verb (pygit2, yaml, the secrets scanner) when it is first called, and SIGINT,
SIGTERM or stdin closing end the process at once (``os._exit(0)``): a write a
signal interrupts is rolled back by the next one, as after ``kill -9``.
The handshake itself is answered before the SDK is imported, from answers
the SDK generated (sandman.mcp_handshake; ``python -m sandman.mcp`` rewrites
them, tests/test_mcp.py checks them): then ``serve_handed_over`` runs this
server on the rest of the stream (docs/performance.md, "sandman mcp's start").
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Annotated

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from pydantic import Field

from sandman import __version__, journal
from sandman.banks.names import MEMORY_TYPES
from sandman.errors import SandmanError
from sandman.layout import Layout
from sandman.mcp_wire import (CLIENT_ENVELOPE, HANDSHAKE_FILE, LISTEN_ACK, LISTEN_NOTIFICATIONS, LISTS,
                              PROTOCOL_VERSION, SUBSCRIPTION, SUBSCRIPTION_ID, Discard, handshake_frame)

# A JSON escape of a surrogate code point; only then can a line hold a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"

INSTRUCTIONS = (
    "sandman is the user's memory engine. Call `recall` with the working directory to read what "
    "its banks, the recent sessions and the voyage log know; call `remember` to commit one memory "
    "now when you learn something worth keeping beyond this session."
)


def check_utf8(**arguments: str | None) -> None:
    """Raise ToolError naming the first argument that holds U+FFFD: what text that
    was not valid UTF-8 (bytes, or a lone surrogate escape) became on the way in."""
    for label, value in arguments.items():
        if value is not None and REPLACEMENT in value:
            raise ToolError(
                f"{label} is not valid UTF-8 (character {value.index(REPLACEMENT) + 1} arrived as U+FFFD: "
                "bytes that are not UTF-8, or a lone surrogate escape); send it as UTF-8"
            )


# The arguments of the note tool and of ``handoff``, its old name (one release).
_NOTE = Annotated[str, Field(description="What the next session in this directory should know or do "
                                         "(at most 2,000 characters).")]
_CWD = Annotated[str, Field(description="Absolute directory whose next session reads it first.")]
_ONCE = Annotated[bool, Field(description="Show it to the next session only (default: until replaced).")]


def _journal(layout: Layout, tool: str, error: SandmanError | None, **facts: object) -> None:
    """One line per tool call in ``.trace/mcp-<date>.log``: ``called``; ``refused`` with the error when the
    call's input was refused (an InputError: a relative path, MEMORY.md given to forget_memory, a
    secret: the caller's mistake, not sandman's, so doctor does not count it); else ``failed``."""
    from sandman.errors import InputError

    if error is None:
        journal.write(layout, "mcp", "called", tool=tool, **facts)
    elif isinstance(error, InputError):
        journal.write(layout, "mcp", "refused", tool=tool, error=str(error), **facts)
    else:
        journal.write(layout, "mcp", "failed", tool=tool, error=str(error), **facts)


def build_server(layout: Layout) -> MCPServer:
    """Return the MCPServer with sandman's tools, bound to the root of ``layout``."""
    server = MCPServer(name="sandman", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(structured_output=False)
    def recall(
        cwd: Annotated[str, Field(description="Absolute working directory to recall for.")],
        budget: Annotated[int | None, Field(description="UTF-16 code units the text may take (default 9000; an emoji is two).")] = None,
    ) -> str:
        """Return the memory surface for a directory: its banks and its ancestors', the user-wide
        bank, the sessions of the last 72 h, the voyage log tail and the tool index."""
        from sandman.verbs.recall import recall as compose_recall

        check_utf8(cwd=cwd)
        try:
            recalled = compose_recall(layout, cwd, budget, deliver=True)
        except SandmanError as error:
            _journal(layout, "recall", error, cwd=cwd)
            raise ToolError(str(error)) from None
        _journal(layout, "recall", None, cwd=cwd, chars=len(recalled.text), trimmed=",".join(recalled.trims) or None)
        return recalled.text

    @server.tool(structured_output=False)
    def remember(
        body: Annotated[str, Field(description="The memory's text (markdown).")],
        cwd: Annotated[str, Field(description="Absolute directory whose bank gets it.")],
        type: Annotated[str, Field(description=f"One of {', '.join(MEMORY_TYPES)}; user memories "
                                               "go to the user-wide bank.")] = "project",
        name: Annotated[str | None, Field(description="Short title (default: the body's first line).")] = None,
        description: Annotated[str | None, Field(description="One line (default: the body's first "
                                                             "sentence).")] = None,
    ) -> str:
        """Commit one memory now, as `sandman remember` does: one file in the bank, one git commit.
        A memory carrying a secret is refused."""
        from sandman.verbs.remember import remember as commit_remembered

        check_utf8(body=body, cwd=cwd, type=type, name=name, description=description)
        try:
            committed = commit_remembered(
                layout, body, cwd=cwd, memory_type=type, name=name, description=description
            )
        except SandmanError as error:
            _journal(layout, "remember", error, cwd=cwd, type=type)
            raise ToolError(str(error)) from None
        _journal(layout, "remember", None, cwd=cwd, type=type, file=committed.path.relative_to(layout.root).as_posix(),
                 commit=(committed.commit or "")[:12] or None)
        if committed.commit is None:
            return f"already remembered: {committed.path}"
        return f"remembered: {committed.path} (commit {committed.commit[:12]})"

    @server.tool(structured_output=False)
    def banks(
        bank: Annotated[str | None, Field(description="A bank name or an absolute directory: show that "
                                                      "bank's index instead of the list.")] = None,
    ) -> str:
        """List the memory banks (directory, memory count, folder), or one bank's MEMORY.md lines."""
        from sandman.banks.listing import find_bank, list_banks
        from sandman.verbs.recall import memories

        check_utf8(bank=bank)
        _journal(layout, "banks", None, bank=bank)
        if bank is None:
            found = [b for b in list_banks(layout) if b.entries]
            if not found:
                return f"no banks yet under {layout.memories}/"
            return "\n".join(f"- {b.label} · {memories(len(b.entries))} · {b.folder}/ ({b.name})" for b in found)
        try:
            one = find_bank(layout, bank)
        except SandmanError as error:
            raise ToolError(str(error)) from None
        if one is None:
            raise ToolError(f"no bank {bank!r} under {layout.memories}/; call banks without arguments to list them")
        lines = [f"# {one.label} · {memories(len(one.entries))} · {one.folder}/"]
        return "\n".join(lines + [entry.line for entry in one.entries])

    @server.tool(structured_output=False)
    def search(
        query: Annotated[str, Field(description='Words to find in memory names, descriptions and bodies; '
                                                '"a phrase" in double quotes.')],
        bank: Annotated[str | None, Field(description="Only this bank (its name or absolute directory).")] = None,
        type: Annotated[str | None, Field(description=f"Only memories of this type: {', '.join(MEMORY_TYPES)}.")] = None,
        limit: Annotated[int, Field(description="At most this many memories (1 to 1000).")] = 20,
    ) -> str:
        """Search every bank's memories, best first: each hit's name, type, bank, file and the
        matching line, as `sandman search` prints them."""
        from sandman.verbs.search import lines as search_lines
        from sandman.verbs.search import no_match
        from sandman.verbs.search import search as search_memories

        check_utf8(query=query, bank=bank, type=type)
        try:
            hits = search_memories(layout, query, bank=bank, memory_type=type, limit=limit)
        except SandmanError as error:
            _journal(layout, "search", error, bank=bank, type=type)
            raise ToolError(str(error)) from None
        _journal(layout, "search", None, bank=bank, type=type, hits=len(hits))
        if not hits:
            return no_match(query)
        return "\n".join(search_lines(layout, hits))

    def leave_note(tool: str, note: str, cwd: str, once: bool) -> str:
        from sandman.verbs.note import leave

        check_utf8(note=note, cwd=cwd)
        try:
            written = leave(layout, note, cwd=cwd, once=once)
        except SandmanError as error:
            _journal(layout, tool, error, cwd=cwd)
            raise ToolError(str(error)) from None
        except OSError as error:
            raise ToolError(f"note not written: {error.strerror or error}") from None
        _journal(layout, tool, None, cwd=cwd, once=once)
        return f"note for {written.data['directory']}: {written.path}"

    @server.tool(structured_output=False)
    def note(note: _NOTE, cwd: _CWD, once: _ONCE = False) -> str:
        """Leave a note, as `sandman note` does: the next session in `cwd` reads it first in its
        recall. It replaces the directory's previous note."""
        return leave_note("note", note, cwd, once)

    @server.tool(structured_output=False)
    def handoff(note: _NOTE, cwd: _CWD, once: _ONCE = False) -> str:
        """Deprecated: the old name of the `note` tool, kept for one release; call `note`."""
        return leave_note("handoff", note, cwd, once)

    @server.tool(structured_output=False)
    def forget_memory(
        file: Annotated[str, Field(description="The memory file: an absolute path, or memories/<bank>/<file>.md "
                                               "as search prints it.")],
    ) -> str:
        """Forget one memory, as `sandman forget --memory` does: it leaves its bank in one commit, a
        dream never learns it again, and `trail revoke` + `reconcile` of the event it names undo it.
        Use it only when the user asks for a memory to be forgotten."""
        from sandman.verbs.forget_memory import forget_memory as forget_one

        check_utf8(file=file)
        try:
            done = forget_one(layout, file)
        except SandmanError as error:
            _journal(layout, "forget_memory", error)
            raise ToolError(str(error)) from None
        _journal(layout, "forget_memory", None, bank=done.bank, file=done.file, event=done.event)
        return (f"forgotten: {done.bank}/{done.file} ({done.name}), commit {(done.commit or '')[:12]}, "
                f"event {done.event} (revoke it, then reconcile, to bring the memory back)")

    @server.tool(structured_output=False)
    def trail_log(
        since: Annotated[str | None, Field(description="Only events of this UTC day (YYYY-MM-DD) and later.")] = None,
        kind: Annotated[str | None, Field(description="Only this kind or family: dream, dream.commit, shift.")] = None,
        repo: Annotated[str | None, Field(description="Only events naming this repository (absolute).")] = None,
        shift: Annotated[str | None, Field(description="Only events of this shift id.")] = None,
    ) -> str:
        """List the machine's events on the trail, oldest first, one line each, revoked ones marked
        (as `sandman trail log` prints them)."""
        from sandman.verbs import trail as verb

        check_utf8(since=since, kind=kind, repo=repo, shift=shift)
        try:
            found, whole = verb.log(layout, since=since, kind=kind, repo=repo, shift=shift)
        except SandmanError as error:
            raise ToolError(str(error)) from None
        lines = [verb.line(event, whole) for event in found.events] or ["no events"]
        if found.skipped:
            lines.append(f"({len(found.skipped)} trail line(s) skipped: not events)")
        return "\n".join(lines)

    @server.tool(structured_output=False)
    def trail_show(
        id: Annotated[str, Field(description="An event id (ev-YYYYMMDDTHHMMSSZ-xxxxxx).")],
    ) -> str:
        """Show one event as JSON: the event, its revoked state, its descendants and the commits
        carrying it in every known repository (as `sandman trail show --json`)."""
        from sandman.verbs import trail as verb

        check_utf8(id=id)
        try:
            shown = verb.show(layout, id)
        except SandmanError as error:
            raise ToolError(str(error)) from None
        return json.dumps({
            "event": shown.event.to_json(),
            "revoked_by": shown.revoked_by.id if shown.revoked_by else None,
            "descendants": [event.to_json() for event in shown.descendants],
            "commits": [{"repo": r, "commit": c, "subject": s} for r, c, s in shown.commits],
        }, ensure_ascii=False, indent=2)

    return server


def _replace_surrogates(value: object) -> object:
    if isinstance(value, str):
        return _SURROGATE.sub(REPLACEMENT, value)
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_replace_surrogates(key): _replace_surrogates(item) for key, item in value.items()}
    return value


_FLAT_HEAD = re.compile(r'\s*\{[^{}\[\]]*')
_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")\s*[,}]')
_METHOD = re.compile(r'"method"\s*:\s*("(?:[^"\\]|\\.){1,200}")')


def parseable_line(line: str) -> str:
    """Return a JSON-RPC line the SDK answers: every lone surrogate (``"\\ud800"``) made U+FFFD,
    and a request whose ``params`` is not an object given params the SDK refuses.

    Python's JSON reader accepts a lone surrogate escape and the SDK's does not.
    The SDK also drops, unanswered, a request whose ``params`` is an array, a
    string or a number (the client would wait forever for that id): its params
    become ``{"_meta": 0}``, which it answers with JSON-RPC error -32602
    (invalid params), or -32601 for a method it does not know; so does a
    request nested too deeply to read whose ``id`` and ``method`` come first. Any other line,
    or one that is not JSON at all, is returned unchanged (the SDK drops a
    line it cannot parse, answering nothing: its behaviour).
    """
    surrogates = _SURROGATE_ESCAPE.search(line) is not None
    try:
        message = json.loads(line)
        cleaned = _replace_surrogates(message) if surrogates else message
    except RecursionError:
        # Nested too deeply to read: answered as invalid params when its id and method come
        # before any nesting (where a client writes them), else dropped as the SDK drops it.
        head = _FLAT_HEAD.match(line)
        ident, method = (_ID.search(head.group(0)), _METHOD.search(head.group(0))) if head else (None, None)
        if ident is None or method is None:
            return line
        return ('{"jsonrpc": "2.0", "id": ' + ident.group(1) + ', "method": ' + method.group(1)
                + ', "params": {"_meta": 0}}\n')
    except ValueError:
        return line
    if (isinstance(cleaned, dict) and "id" in cleaned and isinstance(cleaned.get("method"), str)
            and cleaned.get("params") is not None and not isinstance(cleaned["params"], dict)):
        cleaned = {**cleaned, "params": {"_meta": 0}}
    return line if cleaned is message or cleaned == message else json.dumps(cleaned, ensure_ascii=False) + "\n"


class _Filtered:
    """The SDK's stdout after a handover (sandman.mcp_handshake): drops the SDK's own answers to
    the frames the early stage already answered, writes every other line through ``write``."""

    def __init__(self, write: Callable[[bytes], None], discard: Discard) -> None:
        self.write_line, self.discard = write, discard

    async def write(self, text: str) -> None:
        for line in text.splitlines():
            if line and not self.discard.drops(line):
                self.write_line(line.encode() + b"\n")

    async def flush(self) -> None:
        return None


def serve_handed_over(server: MCPServer, replay: list[str], next_line: Callable[[], str | None],
                      write: Callable[[bytes], None], discard: Discard) -> None:
    """Run ``server`` on a stream whose first frames the early stage (sandman.mcp_handshake) read.

    ``replay``: those frames' lines (str, each ending in a newline), fed first; ``next_line()``
    blocks for the next line of stdin and returns None at its end; ``write(bytes)`` writes one
    line to stdout; ``discard`` drops the SDK's replies the early stage already gave. Returns
    when stdin ends."""

    async def lines() -> AsyncIterator[str]:
        for line in replay:
            yield parseable_line(line)
        while (line := await anyio.to_thread.run_sync(next_line, abandon_on_cancel=True)) is not None:
            yield parseable_line(line)

    async def run() -> None:
        async with stdio_server(stdin=lines(), stdout=_Filtered(write, discard)) as (read_stream, write_stream):
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(run)


def sdk_answers(frames: list[dict], layout: Layout) -> list[dict]:
    """Return every message the SDK server of ``build_server(layout)`` writes when sent ``frames``
    (JSON-RPC messages, in order), in-process; once each request with an id is answered
    (``subscriptions/listen`` stays open: its acknowledgement counts) the stream ends."""
    server = build_server(layout)
    outputs: list[dict] = []
    awaited = {frame["id"] for frame in frames if "id" in frame}

    async def run() -> None:
        done = anyio.Event()

        class Collect:
            async def write(self, text: str) -> None:
                for line in text.splitlines():
                    message = json.loads(line)
                    outputs.append(message)
                    awaited.discard(message.get("id"))
                    awaited.discard(message.get("params", {}).get("_meta", {}).get(SUBSCRIPTION_ID))
                    if not awaited:
                        done.set()

            async def flush(self) -> None:
                return None

        async def lines() -> AsyncIterator[str]:
            for frame in frames:
                yield json.dumps(frame) + "\n"
            await done.wait()

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                async def session() -> None:
                    async with stdio_server(stdin=lines(), stdout=Collect()) as (read_stream, write_stream):
                        lowlevel = server._lowlevel_server
                        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

                group.start_soon(session)
                await done.wait()
                group.cancel_scope.cancel()

    anyio.run(run)
    return outputs


def handshake_answers(layout: Layout) -> dict:
    """Return the answers sandman.mcp_handshake gives before the SDK is imported, as the SDK gives
    them (the shape of sandman/mcp_handshake.json, documented in sandman.mcp_handshake):
    for each protocol version reached by ``initialize``, its answer and the lists' answers;
    for each stateless version (``_meta`` per request), ``server/discover``'s, the lists' and
    ``subscriptions/listen``'s acknowledgement with its id as ``SUBSCRIPTION``."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    found: dict = {"server": {"name": "sandman", "version": __version__}, "handshake": {}, "stateless": {}}
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        frames = [handshake_frame("initialize", 1, {"protocolVersion": version, "capabilities": {},
                                                    "clientInfo": {"name": "sandman", "version": __version__}}),
                  {"jsonrpc": "2.0", "method": "notifications/initialized"}]
        frames += [handshake_frame(method, index, None) for index, method in enumerate(LISTS, start=2)]
        answers = {message["id"]: message["result"] for message in sdk_answers(frames, layout) if "id" in message}
        found["handshake"][version] = {"initialize": {"params": None, "answer": answers[1]}, **{
            method: {"params": {}, "answer": answers[index]} for index, method in enumerate(LISTS, start=2)}}
    for version in MODERN_PROTOCOL_VERSIONS:
        asked = {"server/discover": {}, "subscriptions/listen": {"notifications": LISTEN_NOTIFICATIONS},
                 **{method: {} for method in LISTS}}
        frames = [handshake_frame(method, index, {**params, "_meta": {**CLIENT_ENVELOPE, PROTOCOL_VERSION: version}})
                  for index, (method, params) in enumerate(asked.items(), start=1)]
        messages = sdk_answers(frames, layout)
        answers = {message["id"]: message["result"] for message in messages if "id" in message}
        ack = next(message for message in messages if message.get("method") == LISTEN_ACK)
        ack["params"]["_meta"][SUBSCRIPTION_ID] = SUBSCRIPTION
        found["stateless"][version] = {
            method: {"params": params, "answer": ack if method == "subscriptions/listen" else answers[index]}
            for index, (method, params) in enumerate(asked.items(), start=1)}
    return found


def write_handshake(layout: Layout) -> None:
    """Write handshake_answers(layout) to sandman/mcp_handshake.json (after an SDK upgrade or a
    change of a tool: tests/test_mcp.py says when the file and the SDK differ)."""
    HANDSHAKE_FILE.write_text(json.dumps(handshake_answers(layout), ensure_ascii=False, indent=1, sort_keys=True)
                              + "\n", encoding="utf-8")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        write_handshake(Layout(scratch))
