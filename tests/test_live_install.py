"""Installing and starting sandman as a new user would, against the real, pinned Claude Code
(issue 28: faults 3 and 7, the plugin without the executable; tests/live_claude.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from live_claude import REPO, claude

MCP_ADD = re.compile(r"^claude mcp add .*$", re.MULTILINE)


def documented_mcp_add() -> list[str]:
    """The ``claude mcp add ...`` command docs/MCP.md gives, as its words; the README's must be the same."""
    (command,) = set(MCP_ADD.findall((REPO / "docs" / "MCP.md").read_text(encoding="utf-8")))
    readme = REPO / "README.md"
    assert f"`{command}`" in readme.read_text(encoding="utf-8"), f"the README does not give {command!r}"
    return shlex.split(command)


def test_mcp_add_registers_for_one_directory_regression(fake_api, isolated: Path) -> None:
    """Fault 7: ``claude mcp add sandman -- sandman mcp`` registers the server in the local scope,
    for the directory it was typed in only; the documented command must reach every project."""
    here, elsewhere = isolated / "where-it-was-typed", isolated / "another-project"
    here.mkdir()
    elsewhere.mkdir()
    words = documented_mcp_add()
    assert words[:3] == ["claude", "mcp", "add"]
    added = claude(words[1:], here)
    assert added.rc == 0, added.stderr
    got = claude(["mcp", "get", "sandman"], elsewhere)
    assert got.rc == 0, got.stdout + got.stderr
    assert "Connected" in got.stdout
