"""``sandman mcp``'s early stage: the handshake answered before the SDK is imported (issue 28, fault 3).

Importing the official ``mcp`` SDK costs 650 to 780 ms of CPU (docs/performance.md,
"sandman mcp's start"), and Claude Code waits for the handshake before a session's
first request. So ``serve`` starts with the standard library only: a thread imports
the SDK and builds the server (sandman.mcp.build_server) while the main thread reads
the first frames and answers the handshake from ``sandman/mcp_handshake.json``,
answers the SDK itself generated (``python -m sandman.mcp`` writes the file;
tests/test_mcp.py asks the SDK the same requests and checks the file is equal).

Answered early, each only in the shape the file holds:

- ``initialize`` (protocol versions reached by the handshake: 2024-11-05 to 2025-11-25),
  when the client's ``protocolVersion`` is one the file holds: the SDK's answer for it;
  then ``notifications/initialized``;
- ``server/discover``, ``subscriptions/listen`` (its acknowledgement) in the stateless
  protocol (2026-07-28, each request's ``params._meta`` names its version): what Claude
  Code 2.1.332 sends instead of ``initialize``;
- ``tools/list``, ``prompts/list``, ``resources/list`` without a cursor, in either.

Once the SDK is ready it takes over the stream (sandman.mcp.serve_handed_over): it is
fed the frames that change a session's state (``initialize``, ``notifications/initialized``,
``subscriptions/listen``), its own replies to them are dropped (``Discard``, matched by
id or subscription id), and every later frame goes to it. Any other frame (a
``tools/call``, an unknown method or version, a line that is not a JSON object, params
that are not an object) waits for the SDK, which answers it and everything after it,
as without an early stage. SIGINT, SIGTERM and stdin's end leave at once.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading

from sandman.mcp_wire import (CLIENT_ENVELOPE, HANDSHAKE_FILE, LISTEN_ACK, LISTEN_NOTIFICATIONS, LISTS,
                              PROTOCOL_VERSION, SUBSCRIPTION, SUBSCRIPTION_ID, Discard, handshake_frame)

__all__ = ["CLIENT_ENVELOPE", "HANDSHAKE_FILE", "LISTEN_ACK", "LISTEN_NOTIFICATIONS", "LISTS", "PROTOCOL_VERSION",
           "SUBSCRIPTION", "SUBSCRIPTION_ID", "Discard", "Early", "handshake_frame", "serve"]

# The niceness of the thread importing the SDK (Linux: per thread; 19 is the lowest priority).
NICE = 19
# The reader's and the builder's messages to the main thread, beside stdin's lines.
_READY = object()


class Early:
    """The early stage's state: the stored answers, the negotiated version, what the SDK is owed."""

    def __init__(self, answers: dict, write) -> None:
        self.answers, self.write = answers, write
        self.version: str | None = None  # negotiated by initialize
        self.replay: list[str] = []
        self.discard = Discard()

    def _reply(self, ident: object, result: dict) -> None:
        self.write((json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}, ensure_ascii=False,
                               separators=(",", ":")) + "\n").encode())

    def answer(self, line: str) -> bool:
        """Answer ``line`` from the stored answers and return True, or return False: the SDK's."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to read: the SDK's
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method, params, ident = message.get("method"), message.get("params"), message.get("id")
        if params is not None and not isinstance(params, dict):
            return False
        params = params or {}
        if method == "notifications/initialized" and "id" not in message and self.version is not None:
            self.replay.append(line)
            return True
        if not (isinstance(ident, str) or isinstance(ident, int) and not isinstance(ident, bool)):
            return False
        if method == "initialize":
            stored = self.answers.get("handshake", {}).get(params.get("protocolVersion"), {}).get("initialize")
            if self.version is not None or not isinstance(stored, dict) or "answer" not in stored or not isinstance(
                    params.get("capabilities", {}), dict):
                return False
            self.version = params["protocolVersion"]
            self.replay.append(line)
            self.discard.ids.append(ident)
            self._reply(ident, stored["answer"])
            return True
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else None
        if "_meta" in params and meta is None:
            return False
        asked = {key: value for key, value in params.items() if key != "_meta"}
        if meta is not None and PROTOCOL_VERSION in meta:
            if self.version is not None or set(meta) != {PROTOCOL_VERSION, *CLIENT_ENVELOPE} or not all(
                    isinstance(meta[key], dict) for key in CLIENT_ENVELOPE):
                return False
            stored = self.answers.get("stateless", {}).get(meta[PROTOCOL_VERSION], {}).get(method)
        elif self.version is not None and method in LISTS:
            stored = self.answers.get("handshake", {}).get(self.version, {}).get(method)
        else:
            return False
        if not isinstance(stored, dict) or stored.get("params") != asked or "answer" not in stored:
            return False
        if method == "subscriptions/listen":
            ack = json.loads(json.dumps(stored["answer"]).replace(json.dumps(SUBSCRIPTION), json.dumps(ident)))
            self.replay.append(line)
            self.discard.subscriptions.append(ident)
            self.write((json.dumps(ack, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
            return True
        self._reply(ident, stored["answer"])
        return True


def _leave_now(signum: int, frame: object) -> None:
    # The client is leaving: no answer is awaited (sandman.mcp: a write a signal interrupts is
    # rolled back by the next one, as after kill -9).
    os._exit(0)


def serve(layout) -> None:
    """Run ``sandman mcp`` on stdin/stdout for the root of ``layout`` (a sandman.layout.Layout):
    the early stage, then the SDK's server. Returns when the client closes stdin; SIGINT and
    SIGTERM end the process with 0. Errors: whatever building the SDK server raises."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _leave_now)
    lines: queue.Queue = queue.Queue()
    built: list = []
    # The wire on private descriptors; fd 1 is stderr and fd 0 the null device from here on, so
    # a tool's child process (git) can neither write into the protocol nor read from it (what
    # the SDK's stdio_server does with the descriptors it is not given).
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    wire_in = os.fdopen(os.dup(0), "rb")
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    lock = threading.Lock()

    def write(data: bytes) -> None:
        with lock:
            out.write(data)
            out.flush()

    def read() -> None:
        while True:
            line = wire_in.readline()
            if not line:
                lines.put(None)
                return
            lines.put(line.decode("utf-8", errors="replace"))

    def build() -> None:
        try:
            # The SDK's import is CPU the client wants during its own start: this thread (alone,
            # on Linux) yields to it. A frame that needs the SDK waits for the import either way.
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        except (AttributeError, OSError):
            pass
        try:
            from sandman.mcp import build_server

            built.append(build_server(layout))
        except BaseException as error:  # handed to the main thread, which raises it
            built.append(error)
        lines.put(_READY)

    builder = threading.Thread(target=build, name="sandman-mcp-sdk", daemon=True)
    builder.start()
    threading.Thread(target=read, name="sandman-mcp-stdin", daemon=True).start()
    try:
        answers = json.loads(HANDSHAKE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        answers = {}
    early = Early(answers if isinstance(answers, dict) else {}, write)
    pending: list[str] = []  # frames for the SDK that the early stage did not answer
    ready = False
    while True:
        line = lines.get()
        if line is _READY:
            ready = True
            break
        if line is None:
            return
        if not early.answer(line):
            pending.append(line)
            break
    while not ready:  # a frame waits for the SDK: keep stdin's end for it, as the SDK reads it
        item = lines.get()
        if item is _READY:
            ready = True
        else:
            pending.append(item)
    if isinstance(built[0], BaseException):
        raise built[0]
    from sandman.mcp import serve_handed_over

    ended = None in pending  # stdin ended while the SDK was being imported
    queued = pending[:pending.index(None)] if ended else pending

    def next_line() -> str | None:
        return None if ended else lines.get()

    serve_handed_over(built[0], early.replay + queued, next_line, write, early.discard)
