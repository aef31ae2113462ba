"""``sandman mcp``: the stdio tool server (design, "Verbs", mcp; contract docs/MCP.md).

Three tools, over the very functions the CLI calls, so no MCP client
re-implements the bank format:

- ``recall(cwd, budget?)``: sandman.verbs.recall.recall, the text a session starts with;
- ``remember(body, cwd, type?, name?, description?)``: sandman.verbs.remember.remember;
- ``banks(bank?)``: every bank with its directory, memory count and folder, or one
  bank's MEMORY.md lines (sandman.banks.listing).

A deliberate refusal (a secret in a memory, a relative cwd, an unknown type) is
a tool error the client reads (``is_error`` with the one-line reason), never a
crash of the server. The server is built on the official SDK's ``MCPServer``
(``mcp`` 2.x) and speaks JSON-RPC on stdin/stdout; its log goes to stderr.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from sandman import __version__
from sandman.banks.listing import find_bank, list_banks
from sandman.banks.names import MEMORY_TYPES
from sandman.errors import SandmanError
from sandman.layout import Layout
from sandman.verbs.recall import memories
from sandman.verbs.recall import recall as compose_recall
from sandman.verbs.remember import remember as commit_remembered

INSTRUCTIONS = (
    "sandman is the user's memory engine. Call `recall` with the working directory to read what "
    "its banks, the recent sessions and the voyage log know; call `remember` to commit one memory "
    "now when you learn something worth keeping beyond this session."
)


def build_server(layout: Layout) -> MCPServer:
    """Return the MCPServer with sandman's three tools, bound to the root of ``layout``."""
    server = MCPServer(name="sandman", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(structured_output=False)
    def recall(
        cwd: Annotated[str, Field(description="Absolute working directory to recall for.")],
        budget: Annotated[int | None, Field(description="Characters the text may take (default 9000).")] = None,
    ) -> str:
        """Return the memory surface for a directory: its banks and its ancestors', the user-wide
        bank, the sessions of the last 72 h, the voyage log tail and the tool index."""
        try:
            return compose_recall(layout, cwd, budget).text
        except SandmanError as error:
            raise ToolError(str(error)) from None

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
        try:
            committed = commit_remembered(
                layout, body, cwd=cwd, memory_type=type, name=name, description=description
            )
        except SandmanError as error:
            raise ToolError(str(error)) from None
        if committed.commit is None:
            return f"already remembered: {committed.path}"
        return f"remembered: {committed.path} (commit {committed.commit[:12]})"

    @server.tool(structured_output=False)
    def banks(
        bank: Annotated[str | None, Field(description="A bank name or an absolute directory: show that "
                                                      "bank's index instead of the list.")] = None,
    ) -> str:
        """List the memory banks (directory, memory count, folder), or one bank's MEMORY.md lines."""
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

    return server


def serve(layout: Layout) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    build_server(layout).run("stdio")
