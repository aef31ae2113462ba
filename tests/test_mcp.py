"""``sandman mcp`` end to end: the SDK's own stdio client drives a real ``sandman mcp`` process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from sandman.banks.names import bank_name
from sandman.layout import Layout

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


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
            "remember", {"body": f"The deploy key is {AWS_KEY}", "cwd": str(project)})
        seen["relative"] = await client.call_tool("recall", {"cwd": "relative/dir"})
        seen["recall"] = await client.call_tool("recall", {"cwd": str(project)})
        seen["small"] = await client.call_tool("recall", {"cwd": str(project), "budget": 400})
        seen["banks"] = await client.call_tool("banks", {})
        seen["one"] = await client.call_tool("banks", {"bank": str(project)})
        seen["by-name"] = await client.call_tool("banks", {"bank": "_user"})
        seen["unknown"] = await client.call_tool("banks", {"bank": "/no/such/dir"})
    return seen


def test_mcp_round_trip_over_stdio(layout: Layout, isolated: Path) -> None:
    project = isolated / "proj"
    seen = anyio.run(session, project, layout)
    assert seen["tools"] == ["banks", "recall", "remember"]
    assert text(seen["empty"]).startswith("no banks yet")

    assert not seen["remember"].is_error and text(seen["remember"]).startswith("remembered: ")
    folder = layout.bank(bank_name(project))
    assert [p.name for p in folder.glob("project_*.md")] == ["project_the_build_runs_with_make.md"]
    assert (layout.bank("_user") / "user_tea.md").is_file()

    assert seen["secret"].is_error, "a refused remember is a tool error"
    assert "contains a secret (AWS Access Key)" in text(seen["secret"]) and AWS_KEY not in text(seen["secret"])
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
