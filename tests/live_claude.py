"""The real, pinned Claude Code CLI against a fake Messages API (issue 28; docs/live-tests.md).

Three parts, for any test that must prove how Claude Code itself behaves:

- ``FakeApi``: an Anthropic Messages API on 127.0.0.1 (a threaded ``http.server``).
  ``POST /v1/messages`` streams Server-Sent Events (``message_start``,
  ``content_block_start``/``_delta``/``_stop``, ``message_delta``, ``message_stop``),
  or answers one JSON message when the request does not ask for a stream;
  ``POST /v1/messages/count_tokens`` answers a token count. Every request body is
  kept, in order of arrival, in ``FakeApi.requests``. Replies come from a script:
  ``FakeApi.script(...)`` queues them (a string is a text reply, ``ToolUse`` makes
  Claude Code call a tool, a callable picks the reply from the request body);
  once the script is spent every request gets ``FakeApi.default``.
- ``run_print``: one headless session, ``claude -p <prompt>``, with the test's
  isolated HOME, CLAUDE_CONFIG_DIR and SANDMAN_ROOT (tests/conftest.py), the
  sandman under test first on PATH, and optional settings, plugin folders and
  MCP servers. ``Result`` holds stdout, stderr, the exit code, and the
  requests this run sent.
- ``Tmux``: one interactive session in a detached tmux window, typed into and
  read from its screen.

The binary is the version pinned in ``.ci/claude-code-version``: the one in
``$SANDMAN_TEST_CLAUDE_CODE`` (read when this module is imported: the autouse
fixture clears every ``SANDMAN_*`` variable), else ``.ci/claude-code/package/claude``
where ``.ci/run`` installs it from the npm registry. ``claude_code()`` returns it
or skips the test with the reason it cannot be had.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Union

import pytest

REPO = Path(__file__).resolve().parent.parent
PINNED = (REPO / ".ci" / "claude-code-version").read_text(encoding="utf-8").strip()
CACHED = REPO / ".ci" / "claude-code" / "package" / "claude"
_CONFIGURED = os.environ.get("SANDMAN_TEST_CLAUDE_CODE")
# What Claude Code needs from the plugin's folder; the rest of a checkout (.venv,
# .ci's binary cache) would be copied into every plugin install.
PLUGIN_PARTS = (".claude-plugin", "commands", "hooks", ".mcp.json", "README.md")
# The MCP tool names of sandman's server, as Claude Code 2.1.332 names them.
PLUGIN_TOOL_PREFIX = "mcp__plugin_sandman_sandman__"
SETTINGS_TOOL_PREFIX = "mcp__sandman__"


# --- the binary -------------------------------------------------------------------


def _find() -> tuple[Path | None, str]:
    """The pinned binary and an empty reason, or None and why it cannot be had."""
    candidate = Path(_CONFIGURED) if _CONFIGURED else CACHED
    where = "named by $SANDMAN_TEST_CLAUDE_CODE" if _CONFIGURED else "the cache .ci/run installs it in"
    if not candidate.is_file() or not os.access(candidate, os.X_OK):
        return None, (f"Claude Code {PINNED} is not at {candidate}, {where}: run .ci/run, or set "
                      f"SANDMAN_TEST_CLAUDE_CODE to the package/claude of @anthropic-ai/claude-code-linux-x64@{PINNED}")
    try:
        done = subprocess.run([str(candidate), "--version"], capture_output=True, text=True, timeout=60,
                              env={"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent",
                                   "DISABLE_AUTOUPDATER": "1"})
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"Claude Code at {candidate} does not run: {error}"
    version = done.stdout.split(" ", 1)[0].strip()
    if version != PINNED:
        return None, f"Claude Code at {candidate} is {version or 'unknown'}, the suite is pinned to {PINNED}"
    return candidate, ""


_FOUND: tuple[Path | None, str] | None = None


def claude_code() -> Path:
    """The pinned Claude Code binary, or skip the calling test with the reason."""
    global _FOUND
    if _FOUND is None:
        _FOUND = _find()
    binary, reason = _FOUND
    if binary is None:
        pytest.skip(reason)
    return binary


# --- the fake Messages API ---------------------------------------------------------


@dataclass(frozen=True)
class ToolUse:
    """A reply that calls one tool: ``name`` with ``input`` (a JSON object)."""

    name: str
    input: dict
    id: str = "toolu_live_1"


Reply = Union[str, ToolUse, list, Callable[[dict], object]]


def _blocks(reply: object) -> list[dict]:
    """The content blocks of a reply: a string, a ToolUse, or a list of them."""
    items = reply if isinstance(reply, list) else [reply]
    blocks = []
    for item in items:
        if isinstance(item, ToolUse):
            blocks.append({"type": "tool_use", "id": item.id, "name": item.name, "input": item.input})
        else:
            blocks.append({"type": "text", "text": str(item)})
    return blocks


def _events(model: str, blocks: list[dict]) -> list[tuple[str, dict]]:
    """The SSE events of one streamed message holding ``blocks``."""
    stop = "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"
    events = [("message_start", {"type": "message_start", "message": {
        "id": "msg_live", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 5}}),
               ("message_stop", {"type": "message_stop"})]
    return events


class FakeApi:
    """A Messages API on 127.0.0.1 that logs every request and answers from a script.

    Use as a context manager (or ``start()``/``close()``); ``url`` goes into
    ``ANTHROPIC_BASE_URL``. ``requests`` holds every request as
    ``{"path": str, "body": dict | str}``; ``messages()`` only the message
    requests' bodies (not count_tokens).
    """

    def __init__(self, default: str = "ok") -> None:
        self.default = default
        self.requests: list[dict] = []
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- the script
    def script(self, *replies: Reply) -> "FakeApi":
        """Queue replies for the next message requests, in order."""
        with self._lock:
            self._script.extend(replies)
        return self

    def _reply(self, body: dict) -> list[dict]:
        with self._lock:
            reply = self._script.pop(0) if self._script else self.default
        if callable(reply) and not isinstance(reply, ToolUse):
            reply = reply(body)
        return _blocks(reply)

    # -- the log
    def messages(self) -> list[dict]:
        """The bodies of every /v1/messages request (count_tokens left out), in order."""
        with self._lock:
            return [r["body"] for r in self.requests
                    if r["path"].split("?")[0] == "/v1/messages" and isinstance(r["body"], dict)]

    # -- the server
    @property
    def url(self) -> str:
        assert self._server is not None, "FakeApi.start() first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "FakeApi":
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                with api._lock:
                    api.requests.append({"path": self.path, "body": None})
                self._send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error"}}')

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with api._lock:
                    api.requests.append({"path": self.path, "body": body})
                path = self.path.split("?")[0]
                if path == "/v1/messages/count_tokens":
                    self._send(200, "application/json", b'{"input_tokens": 10}')
                    return
                if path != "/v1/messages" or not isinstance(body, dict):
                    self._send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error"}}')
                    return
                blocks = api._reply(body)
                model = str(body.get("model", "claude"))
                if body.get("stream"):
                    data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n"
                                   for name, event in _events(model, blocks))
                    self._send(200, "text/event-stream", data.encode())
                else:
                    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                    message = {"id": "msg_live", "type": "message", "role": "assistant", "model": model,
                               "content": blocks, "stop_reason": stop, "stop_sequence": None,
                               "usage": {"input_tokens": 10, "output_tokens": 5}}
                    self._send(200, "application/json", json.dumps(message).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "FakeApi":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- reading a request body ---------------------------------------------------------


def texts(body: dict) -> list[tuple[str, str]]:
    """Every text of a request's messages as ``(role, text)``, tool results included."""
    found = []
    for message in body.get("messages", []):
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if block.get("type") == "text":
                found.append((message["role"], block["text"]))
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                for part in [{"type": "text", "text": inner}] if isinstance(inner, str) else inner or []:
                    if part.get("type") == "text":
                        found.append(("tool_result", part["text"]))
    return found


def system_text(body: dict) -> str:
    """The request's top-level system prompt, its blocks joined."""
    system = body.get("system") or []
    return system if isinstance(system, str) else "\n".join(block.get("text", "") for block in system)


HOOK_CONTEXT = "SessionStart hook additional context: "


def system_messages(body: dict) -> str:
    """The texts of a request's ``role: "system"`` messages, joined by newlines.

    Claude Code 2.1.332 puts SessionStart hooks' additionalContext there (not in the
    top-level ``system``, not as a ``<system-reminder>``): one text that starts
    ``SessionStart hook additional context: `` and holds each hook's context whole,
    joined by a newline, in the order the hooks finished; after a compaction it
    follows the environment section (docs/live-tests.md).
    """
    return "\n".join(text for role, text in texts(body) if role == "system")


def tool_results(body: dict) -> list[dict]:
    """The tool_result blocks of a request's messages."""
    return [block for message in body.get("messages", []) if isinstance(message["content"], list)
            for block in message["content"] if block.get("type") == "tool_result"]


# --- running the CLI -----------------------------------------------------------------


@dataclass
class Result:
    """One ``claude`` run: its output, exit code, and the API requests it sent."""

    stdout: str
    stderr: str
    rc: int
    requests: list[dict] = field(default_factory=list)

    @property
    def events(self) -> list[dict]:
        """stdout's JSON lines (``--output-format stream-json``), the lines that are not JSON left out."""
        found = []
        for line in self.stdout.splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
        return [event for event in found if isinstance(event, dict)]


def environment(api: FakeApi, env_extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a claude run: the test's (isolated) one, the fake API, sandman first on PATH."""
    # Nothing of a developer's own API set-up (a real key, a proxy, a model) leaks into a run.
    env = {name: value for name, value in os.environ.items() if not name.startswith("ANTHROPIC_")}
    env.update({
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "ANTHROPIC_BASE_URL": api.url,
    })
    env.update(env_extra or {})
    return env


def write_settings(settings: dict, config_dir: Path | None = None) -> Path:
    """Write the user settings of the test's Claude config dir; return the file."""
    path = (config_dir or Path(os.environ["CLAUDE_CONFIG_DIR"])) / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings), encoding="utf-8")
    return path


def plugin_copy(dest: Path, mcp: bool = True) -> Path:
    """Copy the plugin's parts of this repository (PLUGIN_PARTS) into ``dest``; return it.

    ``mcp=False`` leaves out ``.mcp.json``: a session then starts no sandman MCP server,
    for tests of the hooks and commands alone.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for part in PLUGIN_PARTS:
        if part == ".mcp.json" and not mcp:
            continue
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, dest / part)
        else:
            shutil.copy2(source, dest / part)
    return dest


def claude(args: list[str], cwd: Path, api: FakeApi, env_extra: dict[str, str] | None = None,
           stdin: str | None = None, timeout: float = 120) -> Result:
    """Run the pinned CLI with ``args`` in ``cwd``; the requests are those this run added.

    ``api`` even for subcommands that send no request (``plugin install``): without
    ``ANTHROPIC_BASE_URL`` 2.1.332 waits about 18 s on the unreachable real API first.
    """
    binary = claude_code()
    before = len(api.requests)
    done = subprocess.run([str(binary), *args], cwd=cwd, env=environment(api, env_extra), input=stdin or "",
                          capture_output=True, text=True, timeout=timeout)
    return Result(done.stdout, done.stderr, done.returncode, api.requests[before:])


def run_print(prompt: str, cwd: Path, api: FakeApi, *, env_extra: dict[str, str] | None = None,
              settings: dict | None = None, plugin_dirs: list[Path] = (), mcp: dict | None = None,
              resume: str | None = None, continue_: bool = False, args: list[str] = (),
              timeout: float = 120) -> Result:
    """One headless session: ``claude -p <prompt>`` in ``cwd`` against ``api``.

    ``settings`` replaces the user settings.json of the test's CLAUDE_CONFIG_DIR;
    ``plugin_dirs`` are loaded with ``--plugin-dir``; ``mcp`` is an
    ``{"mcpServers": ...}`` object passed with ``--mcp-config``; ``resume`` (a
    session id) and ``continue_`` pick up an earlier session. ``Result.requests``
    are the requests of this run only.
    """
    if settings is not None:
        write_settings(settings)
    argv = ["-p", prompt]
    for folder in plugin_dirs:
        argv += ["--plugin-dir", str(folder)]
    if mcp is not None:
        argv += ["--mcp-config", json.dumps(mcp)]
    if resume:
        argv += ["--resume", resume]
    if continue_:
        argv += ["--continue"]
    return claude([*argv, *args], cwd, api, env_extra, timeout=timeout)


def run_stream(prompts: list[str], cwd: Path, api: FakeApi, *, env_extra: dict[str, str] | None = None,
               plugin_dirs: list[Path] = (), args: list[str] = (), timeout: float = 120) -> Result:
    """One headless session of several turns: ``prompts`` as stream-json user messages on stdin.

    A prompt may be a slash command (``/compact``); ``Result.events`` holds what
    Claude Code printed (hook_started/hook_response, init, assistant, result, ...).
    """
    argv = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
    for folder in plugin_dirs:
        argv += ["--plugin-dir", str(folder)]
    stdin = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n"
                    for prompt in prompts)
    return claude([*argv, *args], cwd, api, env_extra, stdin=stdin, timeout=timeout)


def wait_for_sandman(root: Path, timeout: float = 60) -> None:
    """Wait until no process of this user runs with ``SANDMAN_ROOT=root`` (a detached take, a dream).

    Claude Code does not wait for ``take --hook --detach``'s child; this finds such
    processes in /proc by their environment and waits on a pidfd for each, without
    polling, then looks again, until a look finds none (a parent may fork a child
    after the first look).
    """
    import select

    marker = f"SANDMAN_ROOT={root}".encode()
    deadline = time.monotonic() + timeout
    while True:
        running = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    running.append(os.pidfd_open(int(entry.name)))
            except OSError:
                continue  # gone, or another user's
        if not running:
            return
        try:
            for handle in running:
                poller = select.poll()
                poller.register(handle, select.POLLIN)
                left = max(deadline - time.monotonic(), 0)
                if not poller.poll(left * 1000):
                    raise AssertionError(f"a process of {root} still runs after {timeout} s")
        finally:
            for handle in running:
                os.close(handle)


# --- an interactive session ----------------------------------------------------------


def seed_interactive_config(cwd: Path) -> Path:
    """Write ``$CLAUDE_CONFIG_DIR/.claude.json`` as a person who finished onboarding left it.

    Without it an interactive 2.1.332 starts onboarding, which calls the real API
    and stops ("Unable to connect to Anthropic services"); the folder's trust dialog
    and the custom API key question are answered too. Keys already there are kept.
    """
    path = Path(os.environ["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data.update({"hasCompletedOnboarding": True, "theme": "dark", "numStartups": 1,
                 "customApiKeyResponses": {"approved": ["dummy"], "rejected": []}})
    projects = data.setdefault("projects", {})
    projects.setdefault(str(cwd), {}).update({"hasTrustDialogAccepted": True,
                                              "hasCompletedProjectOnboarding": True})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


class Tmux:
    """One interactive ``claude`` in a detached tmux session of its own socket.

    ``send(text)`` types text and Enter; ``wait_for(text)`` polls the screen until it
    shows ``text`` (or raises after ``timeout`` seconds); ``close()`` kills the session.
    """

    def __init__(self, cwd: Path, api: FakeApi, env_extra: dict[str, str] | None = None,
                 args: list[str] = (), width: int = 200, height: int = 50) -> None:
        if shutil.which("tmux") is None:
            pytest.skip("tmux is not installed: the interactive Claude Code tests need it")
        binary = claude_code()
        seed_interactive_config(cwd)
        self.socket = str(Path(os.environ["HOME"]) / ".tmux-live")
        # A new socket starts a new tmux server from this call: the session inherits this environment.
        subprocess.run(["tmux", "-S", self.socket, "new-session", "-d", "-s", "live", "-x", str(width),
                        "-y", str(height), "-c", str(cwd), str(binary), *args],
                       env=environment(api, env_extra), check=True)
        subprocess.run(["tmux", "-S", self.socket, "set-option", "-t", "live", "remain-on-exit", "on"],
                       check=True)

    def screen(self) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, "capture-pane", "-p", "-t", "live"],
                              capture_output=True, text=True)
        return done.stdout

    def send(self, text: str, enter: bool = True) -> None:
        subprocess.run(["tmux", "-S", self.socket, "send-keys", "-t", "live", "-l", text], check=True)
        if enter:
            subprocess.run(["tmux", "-S", self.socket, "send-keys", "-t", "live", "Enter"], check=True)

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "-S", self.socket, "send-keys", "-t", "live", *keys], check=True)

    def wait_for(self, predicate: Union[str, Callable[[], bool]], timeout: float = 30) -> str:
        """Poll until the screen shows ``predicate`` (a string) or ``predicate()`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if (predicate in screen) if isinstance(predicate, str) else predicate():
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {predicate!r}; the screen:\n{screen}")
            time.sleep(0.1)

    def exited(self) -> bool:
        """True once claude has exited (its pane stays, dead, for the screen to be read)."""
        done = subprocess.run(["tmux", "-S", self.socket, "display-message", "-p", "-t", "live", "#{pane_dead}"],
                              capture_output=True, text=True)
        return done.stdout.strip() == "1"

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)

    def __enter__(self) -> "Tmux":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


