"""The MCP frames both stages of ``sandman mcp`` share (the early stage, sandman.mcp_handshake, and
the SDK's server, sandman.mcp): the stored answers' file, the stateless protocol's keys, and
``Discard``, the early stage's answers the SDK's replies must not repeat. Standard library only.

Below both stages, so neither imports the other for them: the early stage loads the SDK's server
(sandman.mcp.build_server, serve_handed_over), the server never loads the early stage.
"""

from __future__ import annotations

import json
from pathlib import Path

HANDSHAKE_FILE = Path(__file__).with_name("mcp_handshake.json")
LISTS = ("tools/list", "prompts/list", "resources/list")
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
LISTEN_ACK = "notifications/subscriptions/acknowledged"
# The stateless protocol's envelope the stored answers were asked with: Claude Code 2.1.332's
# (the SDK refuses a request without all three keys); a request is answered early only when
# its envelope has these keys, and its other params equal the stored request's.
CLIENT_ENVELOPE = {
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.332",
                                           "description": "Anthropic's agentic coding tool",
                                           "websiteUrl": "https://claude.com/claude-code"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True},
                                                   "elicitation": {"form": {}, "url": {}}},
}
LISTEN_NOTIFICATIONS = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
# Stands for the listen request's id in the stored acknowledgement.
SUBSCRIPTION = "<subscription>"


def handshake_frame(method: str, ident: int | str, params: dict | None) -> dict:
    """Return a JSON-RPC request (a dict), without ``params`` when it is None."""
    frame: dict = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


class Discard:
    """The SDK's replies the early stage already gave: response ids, and subscription ids whose
    acknowledgement was sent. Each is dropped once."""

    def __init__(self) -> None:
        self.ids: list[object] = []
        self.subscriptions: list[object] = []

    def drops(self, line: str) -> bool:
        """True when ``line`` (one JSON-RPC message the SDK wrote) must not reach the client."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to read: the SDK's
            return False
        if not isinstance(message, dict):
            return False
        if "method" not in message and "id" in message and message["id"] in self.ids:
            self.ids.remove(message["id"])
            return True
        if message.get("method") == LISTEN_ACK:
            meta = (message.get("params") or {}).get("_meta") or {}
            if meta.get(SUBSCRIPTION_ID) in self.subscriptions:
                self.subscriptions.remove(meta[SUBSCRIPTION_ID])
                return True
        return False
