"""``sandman mcp`` end to end: the SDK's own stdio client drives a real ``sandman mcp`` process."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from sandman.banks.names import bank_name
from sandman.layout import Layout

AWS_KEY = "AKIAUJZDE8GXD6NCF10E"
# About 1 MB of distinct words, "make" first (issue 34: such a query ran for minutes at 617 MB).
HUGE_QUERY = "make " + " ".join(f"word{i}" for i in range(110_000))


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


async def session(project: Path, layout: Layout) -> dict[str, object]:
    """Run every call against one server process; return what each answered."""
    server = StdioServerParameters(command=sys.executable, args=["-m", "sandman", "mcp"], env=dict(os.environ))
    seen: dict[str, object] = {}
    async with Client(server, read_timeout_seconds=60) as client:
        seen["tools"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        seen["empty"] = await client.call_tool("banks", {})
        seen["remember"] = await client.call_tool(
            "remember", {"body": "The build runs with make.\nNever by hand.", "cwd": str(project)})
        seen["user"] = await client.call_tool(
            "remember", {"body": "Likes tea.", "cwd": str(project), "type": "user", "name": "Tea",
                         "description": "The user likes tea"})
        seen["secret"] = await client.call_tool(
            "remember", {"body": f"The deploy key {AWS_KEY} opens the bucket", "cwd": str(project)})
        seen["relative"] = await client.call_tool("recall", {"cwd": "relative/dir"})
        seen["recall"] = await client.call_tool("recall", {"cwd": str(project)})
        seen["small"] = await client.call_tool("recall", {"cwd": str(project), "budget": 400})
        seen["banks"] = await client.call_tool("banks", {})
        seen["one"] = await client.call_tool("banks", {"bank": str(project)})
        seen["by-name"] = await client.call_tool("banks", {"bank": "_user"})
        seen["unknown"] = await client.call_tool("banks", {"bank": "/no/such/dir"})
        seen["search"] = await client.call_tool("search", {"query": "make"})
        seen["search-bad"] = await client.call_tool("search", {"query": '""'})
        seen["search-huge"] = await client.call_tool("search", {"query": HUGE_QUERY})
        seen["note"] = await client.call_tool("note", {"note": "Next: ship it.", "cwd": str(project)})
        seen["after-note"] = await client.call_tool("recall", {"cwd": str(project)})
        seen["handoff"] = await client.call_tool(  # the tool's old name, kept one release (issue 33)
            "handoff", {"note": "Next: the old tool name.", "cwd": str(project.parent / "other")})
    return seen


async def trail_session(event_id: str) -> dict[str, object]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "sandman", "mcp"], env=dict(os.environ))
    seen: dict[str, object] = {}
    async with Client(server, read_timeout_seconds=60) as client:
        seen["log"] = await client.call_tool("trail_log", {"kind": "dream"})
        seen["show"] = await client.call_tool("trail_show", {"id": event_id})
        seen["bad"] = await client.call_tool("trail_show", {"id": "ev-nope"})
        seen["since"] = await client.call_tool("trail_log", {"since": "yesterday"})
    return seen


def test_mcp_serves_the_trails_read_side(layout: Layout) -> None:
    from sandman.machine import trail

    event = trail.append(layout, "dream.commit", "dream of session s1", data={"session": "s1"})
    trail.revoke(layout, event.id, "wrong")
    seen = anyio.run(trail_session, event.id)
    assert f"{event.id} dream.commit session=s1" in text(seen["log"]) and "REVOKED by" in text(seen["log"])
    shown = json.loads(text(seen["show"]))
    assert shown["event"]["id"] == event.id and shown["revoked_by"] and len(shown["commits"]) == 1
    assert seen["bad"].is_error and "is not an event id" in text(seen["bad"])
    assert seen["since"].is_error and "is not a date" in text(seen["since"])


def test_mcp_round_trip_over_stdio(layout: Layout, isolated: Path) -> None:
    project = isolated / "proj"
    seen = anyio.run(session, project, layout)
    assert seen["tools"] == ["banks", "forget_memory", "handoff", "note", "recall", "remember", "search",
                             "trail_log", "trail_show"]
    assert text(seen["empty"]).startswith("no banks yet")

    assert not seen["remember"].is_error and text(seen["remember"]).startswith("remembered: ")
    folder = layout.bank(bank_name(project))
    assert [p.name for p in folder.glob("project_*.md")] == ["project_the_build_runs_with_make.md"]
    assert (layout.bank("_user") / "user_tea.md").is_file()

    assert not seen["search"].is_error
    assert text(seen["search"]).splitlines()[1].endswith("project_the_build_runs_with_make.md:1: The build runs with make.")
    assert seen["search-bad"].is_error and "has no word to search for" in text(seen["search-bad"])
    assert len(HUGE_QUERY) > 1_000_000 and not seen["search-huge"].is_error
    assert text(seen["search-huge"]).splitlines()[1].endswith("project_the_build_runs_with_make.md:1: The build runs with make.")
    assert not seen["note"].is_error and text(seen["note"]).startswith(f"note for {project}: ")
    assert text(seen["after-note"]).startswith("## Note from the last session (")
    assert layout.note(bank_name(project)).read_text().count('"delivered": 1') == 1
    assert not seen["handoff"].is_error and text(seen["handoff"]).startswith(f"note for {project.parent / 'other'}: ")

    assert seen["secret"].is_error, "a refused remember is a tool error"
    assert "contains a secret (aws-access-key-id)" in text(seen["secret"]) and AWS_KEY not in text(seen["secret"])
    assert seen["relative"].is_error and "is relative" in text(seen["relative"])

    recalled = text(seen["recall"])
    assert recalled.startswith(f"# sandman recall: {project}") and "  Never by hand." in recalled
    assert len(text(seen["small"])) <= 400

    listing = text(seen["banks"]).splitlines()
    assert listing == [
        f"- {project} · 1 memory · {folder}/ ({folder.name})",
        f"- user-wide · 1 memory · {layout.bank('_user')}/ (_user)",
    ]
    assert text(seen["one"]).splitlines()[1].startswith("- [The build runs with make.")
    assert "- [Tea](user_tea.md) — The user likes tea" in text(seen["by-name"])
    assert seen["unknown"].is_error and "no bank '/no/such/dir'" in text(seen["unknown"])

    # Each tool call is a journal line (issue 17).
    from sandman import journal

    lines = [journal.parse_line(line) for path in sorted(layout.trace.glob("mcp-*.log"))
             for line in path.read_text().splitlines()]
    assert [(decision, facts["tool"]) for _, _, decision, facts in lines] == [
        ("called", "banks"), ("called", "remember"), ("called", "remember"), ("refused", "remember"),
        ("refused", "recall"), ("called", "recall"), ("called", "recall"), ("called", "banks"), ("called", "banks"),
        ("called", "banks"), ("called", "banks"), ("called", "search"), ("refused", "search"), ("called", "search"),
        ("called", "note"),
        ("called", "recall"), ("called", "handoff")]
    assert AWS_KEY not in "".join(path.read_text() for path in layout.trace.glob("mcp-*.log"))


class RawServer:
    """A real ``sandman mcp`` process spoken to line by line, as a client that sends any bytes would."""

    def __init__(self) -> None:
        import subprocess

        self.process = subprocess.Popen([sys.executable, "-m", "sandman", "mcp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ))
        self.ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "raw", "version": "1"}})
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def ask(self, ident: int, method: str, params: dict, raw: bytes | None = None) -> dict:
        """Send a request (``raw`` replaces its JSON) and return the response with its id."""
        import json
        import select

        self.send(raw if raw is not None else json.dumps(
            {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}).encode())
        while True:
            # A deadline only to fail instead of hanging: the bug was a request never answered.
            ready, _, _ = select.select([self.process.stdout], [], [], 60)
            assert ready, f"request {ident} was never answered"
            reply = json.loads(self.process.stdout.readline())
            if reply.get("id") == ident:
                return reply

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def call(ident: int, tool: str, arguments: str) -> bytes:
    return (f'{{"jsonrpc":"2.0","id":{ident},"method":"tools/call",'
            f'"params":{{"name":"{tool}","arguments":{arguments}}}}}').encode()


def test_mcp_answers_a_lone_surrogate_argument_with_a_tool_error(layout: Layout, isolated: Path) -> None:
    server = RawServer()
    try:
        cases = [
            ("recall", '{"cwd":"/tmp/\\ud800"}', "cwd"),
            ("remember", '{"body":"x \\ud800 y","cwd":"/tmp/p"}', "body"),
            ("remember", '{"body":"ok","cwd":"/tmp/p","name":"\\uDFFF"}', "name"),
            ("remember", '{"body":"ok","cwd":"/tmp/\\ud800"}', "cwd"),
            ("banks", '{"bank":"\\ud800"}', "bank"),
        ]
        for ident, (tool, arguments, label) in enumerate(cases, start=10):
            reply = server.ask(ident, "tools/call", {}, raw=call(ident, tool, arguments))
            result = reply["result"]
            assert result["isError"] is True, reply
            # The SDK puts "Error executing tool <name>: " before every tool error.
            assert result["content"][0]["text"].startswith(
                f"Error executing tool {tool}: {label} is not valid UTF-8 (character "), reply
        # Raw bytes that are not UTF-8 are refused the same way, not stored as U+FFFD.
        reply = server.ask(20, "tools/call", {}, raw=call(20, "remember", '{"body":"caf\xe9","cwd":"/tmp/p"}')
                           .replace("\xe9".encode(), b"\xe9"))
        assert reply["result"]["isError"] is True
        assert reply["result"]["content"][0]["text"].startswith(
            "Error executing tool remember: body is not valid UTF-8 (character 4 arrived as U+FFFD")
        # A valid surrogate pair (an emoji) is text like any other, and the server is still there.
        reply = server.ask(21, "tools/call", {}, raw=call(21, "remember", '{"body":"Ship it \\ud83d\\ude80","cwd":"/tmp/p"}'))
        assert reply["result"].get("isError") is not True, reply
        assert "\U0001f680" in next(layout.bank(bank_name("/tmp/p")).glob("project_*.md")).read_text(encoding="utf-8")
    finally:
        server.close()
    assert not list(layout.memories.glob("*/*\ufffd*"))


INITIALIZE = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
              b'"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}\n')


def test_mcp_start_is_slow_regression_the_handshake_imports_no_cli_nor_git(isolated: Path) -> None:
    """Fault 3 of issue 28: ``sandman mcp`` took 2.2-3.1 s to answer ``initialize``. Its start went
    through typer and imported every verb (pygit2, yaml, the secrets scanner) before the handshake;
    now the handshake needs the SDK alone, and a tool imports its verb when it is first called.
    (The handshake itself is answered before the SDK's import: the test with the SDK blocked.)"""
    from helpers import imported

    # A ping is the SDK's to answer: the process waits for the SDK and serves it.
    names = imported("mcp", stdin=INITIALIZE + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                     + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    assert "mcp.server.mcpserver" in names  # the server did start
    # click and rich are the SDK's own imports; typer is sandman's CLI.
    heavy = {name.split(".")[0] for name in names} & {"typer", "pygit2", "yaml", "jinja2", "betterleaks",
                                                       "markdown_it", "filelock"}
    assert heavy == set()
    assert not {name for name in names if name.startswith(("sandman.verbs", "sandman.cli", "sandman.banks.commit"))}


def test_mcp_lingering_after_sigint_regression_it_leaves_at_once(isolated: Path) -> None:
    """Claude Code ends a session's MCP servers with SIGINT, then SIGTERM, and waits for them to
    leave: ``sandman mcp`` ignored SIGINT and left only when killed, holding every ``claude -p``
    open. Both signals, and stdin closing, end it with status 0."""
    import signal
    import subprocess

    # Early: only the handshake answered (the SDK perhaps not imported); then the SDK's, after a ping.
    for ending, stage in [(ending, stage) for ending in ("SIGINT", "SIGTERM", "EOF") for stage in ("early", "sdk")]:
        process = subprocess.Popen([sys.executable, "-m", "sandman", "mcp"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        if stage == "sdk":
            process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                                b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 2
        if ending == "EOF":
            process.stdin.close()
        else:
            process.send_signal(getattr(signal, ending))
        try:
            # A deadline only to fail instead of hanging: the bug was a server that stayed.
            code = process.wait(timeout=30)
        finally:
            process.kill()
        assert (ending, stage, code, process.stderr.read()) == (ending, stage, 0, b"")


def test_mcp_answers_a_request_whose_params_is_not_an_object(layout: Layout, isolated: Path) -> None:
    server = RawServer()
    try:
        for ident, params in enumerate(("[]", '"search"', "7", "[1, 2]", "true"), start=30):
            for method in ("tools/list", "tools/call"):
                raw = f'{{"jsonrpc":"2.0","id":{ident},"method":"{method}","params":{params}}}'.encode()
                reply = server.ask(ident, method, {}, raw=raw)
                assert reply["error"]["code"] == -32602, reply
        deep = b'{"jsonrpc":"2.0","id":40,"method":"tools/call","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        assert server.ask(40, "tools/call", {}, raw=deep)["error"]["code"] == -32602
        deep = b'{"jsonrpc":"2.0","id":42,"method":"tools/list","x":' + b'{"a":' * 5_000 + b"1" + b"}" * 5_001
        assert server.ask(42, "tools/list", {}, raw=deep)["error"]["code"] == -32602
        # The server is still there, and answers as before.
        assert "tools" in server.ask(41, "tools/list", {})["result"]
    finally:
        server.close()


def claude_code_frames() -> list[dict]:
    """What Claude Code 2.1.332 sends a stdio MCP server first (recorded with the real CLI): the
    stateless protocol's discover probe, the listen subscription, discover again, the lists."""
    from sandman.mcp_handshake import CLIENT_ENVELOPE, LISTEN_NOTIFICATIONS, PROTOCOL_VERSION

    meta = {"_meta": {PROTOCOL_VERSION: "2026-07-28", **CLIENT_ENVELOPE}}
    return [{"jsonrpc": "2.0", "id": "server-discover-probe-1", "method": "server/discover", "params": meta},
            {"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen",
             "params": {"notifications": LISTEN_NOTIFICATIONS, **meta}},
            {"method": "server/discover", "jsonrpc": "2.0", "id": 0, "params": meta},
            {"method": "prompts/list", "jsonrpc": "2.0", "id": 1, "params": meta},
            {"method": "resources/list", "jsonrpc": "2.0", "id": 2, "params": meta},
            {"method": "tools/list", "jsonrpc": "2.0", "id": 3, "params": meta}]


class LineServer:
    """A real ``sandman mcp`` process, sent whole frames; every line it writes is kept."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        import subprocess

        self.process = subprocess.Popen([sys.executable, "-m", "sandman", "mcp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or dict(os.environ))
        self.seen: list[dict] = []

    def send(self, *frames: dict | bytes) -> None:
        for frame in frames:
            self.process.stdin.write(frame if isinstance(frame, bytes) else json.dumps(frame).encode() + b"\n")
        self.process.stdin.flush()

    def until(self, done) -> list[dict]:
        """Read lines until ``done(seen)`` is true; return every message seen so far."""
        import select

        while not done(self.seen):
            # A deadline only to fail instead of hanging: the bug was a handshake never answered.
            ready, _, _ = select.select([self.process.stdout], [], [], 60)
            assert ready, f"no answer; seen {self.seen}"
            line = self.process.stdout.readline()
            assert line, f"sandman mcp ended: {self.process.stderr.read()!r}"
            self.seen.append(json.loads(line))
        return self.seen

    def close(self) -> tuple[int, list[dict]]:
        """Close stdin; return the exit status and every message seen, the last ones included."""
        self.process.stdin.close()
        rest = self.process.stdout.read()
        self.seen += [json.loads(line) for line in rest.splitlines()]
        return self.process.wait(timeout=60), self.seen


def answered(*ids: object):
    return lambda seen: set(ids) <= {message.get("id") for message in seen}


def test_mcp_handshake_file_is_what_the_sdk_answers(tmp_path: Path) -> None:
    """sandman/mcp_handshake.json holds the SDK's own answers; after an SDK upgrade or a change
    of a tool, regenerate it with ``python -m sandman.mcp``."""
    from sandman.mcp import handshake_answers
    from sandman.mcp_handshake import HANDSHAKE_FILE

    stored = json.loads(HANDSHAKE_FILE.read_text(encoding="utf-8"))
    assert stored == handshake_answers(Layout(tmp_path)), "stale: run python -m sandman.mcp"
    assert "2025-06-18" in stored["handshake"] and "2026-07-28" in stored["stateless"]


def test_mcp_start_waits_for_the_sdk_regression_the_handshake_needs_no_sdk(isolated: Path, tmp_path: Path) -> None:
    """Fault 3 of issue 28: the handshake waited for the SDK's import (650-780 ms of CPU). With
    the SDK's import blocked for good, Claude Code's handshake and an ``initialize`` are still
    answered, as the SDK answers them, and stdin's end still ends the process."""
    from sandman.mcp_handshake import HANDSHAKE_FILE

    stored = json.loads(HANDSHAKE_FILE.read_text(encoding="utf-8"))
    stub = tmp_path / "stub" / "mcp"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("import threading\nthreading.Event().wait()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stub.parent), os.environ.get("PYTHONPATH", "")])}

    server = LineServer(env)
    server.send(*claude_code_frames())
    seen = server.until(lambda seen: len(seen) == 6)
    by_id = {message["id"]: message["result"] for message in seen if "id" in message}
    modern = stored["stateless"]["2026-07-28"]
    assert by_id == {"server-discover-probe-1": modern["server/discover"]["answer"], 0: modern["server/discover"]["answer"],
                     1: modern["prompts/list"]["answer"], 2: modern["resources/list"]["answer"],
                     3: modern["tools/list"]["answer"]}
    assert [tool["name"] for tool in by_id[3]["tools"]][:2] == ["recall", "remember"]
    ack = [message for message in seen if message.get("method") == "notifications/subscriptions/acknowledged"]
    assert [a["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] for a in ack] == ["listen:0"]
    assert server.close()[0] == 0

    server = LineServer(env)
    server.send(INITIALIZE, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    seen = server.until(answered(1, 2))
    legacy = stored["handshake"]["2025-06-18"]
    assert [(m["id"], m["result"]) for m in seen] == [(1, legacy["initialize"]["answer"]), (2, legacy["tools/list"]["answer"])]
    assert seen[0]["result"]["protocolVersion"] == "2025-06-18"
    assert server.close()[0] == 0


def test_mcp_hands_the_stream_to_the_sdk_answering_each_request_once(isolated: Path) -> None:
    """After the early answers, the SDK serves the session: a tool call works, later requests
    are answered, and nothing the early stage answered is answered twice."""
    call_banks = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "banks", "arguments": {}}}
    for opening in (claude_code_frames(),
                    [json.loads(INITIALIZE), {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]):
        # The stateless protocol wants its envelope on every request.
        envelope = {key: value for key, value in opening[-1].get("params", {}).items() if key == "_meta"}
        server = LineServer()
        server.send(*opening, {**call_banks, "params": {**call_banks["params"], **envelope}})
        server.until(answered(3, 4))
        server.send({**opening[-1], "id": 5})  # tools/list again, now the SDK's
        server.until(answered(5))
        code, seen = server.close()
        ids = [message["id"] for message in seen if "id" in message]
        assert sorted(ids, key=str) == sorted({frame["id"] for frame in opening if "id" in frame} | {4, 5}, key=str)
        assert len(ids) == len(set(ids)), ids
        acks = [message for message in seen if message.get("method") == "notifications/subscriptions/acknowledged"]
        assert len(acks) == (1 if opening[0]["method"] == "server/discover" else 0)
        results = {message["id"]: message.get("result") for message in seen if "id" in message}
        assert "no banks yet" in results[4]["content"][0]["text"]
        assert results[5]["tools"] == results[3]["tools"]
        assert code == 0


def test_mcp_early_stage_leaves_what_it_does_not_know_to_the_sdk(isolated: Path) -> None:
    """An unknown protocol version, a line that is not JSON, params that are not an object: the SDK
    answers them as it would without an early stage."""
    server = LineServer()
    server.send(b"not json\n", INITIALIZE)
    assert server.until(answered(1))[-1]["result"]["protocolVersion"] == "2025-06-18"
    server.close()
    server = LineServer()
    server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}})
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    assert server.until(answered(1))[-1]["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION
    server.close()
    server = LineServer()
    server.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[]}\n')
    assert server.until(answered(7))[-1]["error"]["code"] == -32602
    server.close()
    # Nested too deeply for Python's reader, right after the early answers: the SDK's too.
    server = LineServer()
    server.send(INITIALIZE, b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":' + b"[" * 100_000
                + b"]" * 100_000 + b"}\n")
    assert server.until(answered(1, 8))[-1]["error"]["code"] == -32602
    code, _ = server.close()
    assert (code, server.process.stderr.read()) == (0, b"")


def test_regression_the_mcp_search_never_searches_a_private_span(layout: Layout, isolated: Path) -> None:
    from sandman.verbs.remember import remember

    remember(layout, "The billing reconciler runs nightly on host ledger7.", cwd="/tmp/p")
    server = RawServer()
    try:
        reply = server.ask(30, "tools/call", {}, raw=call(30, "search", '{"query":"<private>ledger7</private> zzzq"}'))
        assert reply["result"].get("isError") is not True, reply
        assert "ledger7" not in reply["result"]["content"][0]["text"].split("matches")[0]
        assert "reconciler" not in reply["result"]["content"][0]["text"]
        reply = server.ask(31, "tools/call", {}, raw=call(31, "search", '{"query":"ledger7 zzzq"}'))
        assert "reconciler" in reply["result"]["content"][0]["text"]  # outside a span it is found
    finally:
        server.close()
