"""Every verb has one-line help and a page in docs/ (STYLE.md, sqlite-utils' test_docs habit)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from sandman.cli import app

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = {"mcp": "MCP.md", "report": "site.md", "init": "index.md"}


def _commands() -> dict[str, str]:
    text = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}).output
    listing = text.split("Commands:", 1)[1]
    return dict(re.findall(r"^  (\w+)\s+(.+)$", listing, re.M))


def test_help_lists_every_verb_with_its_whole_duty() -> None:
    commands = _commands()
    assert set(commands) == {"init", "remember", "take", "dream", "forget", "recall", "mcp", "sync",
                             "doctor", "site", "reflect", "hooks", "report", "trail", "reconcile", "import",
                             "banks", "schedule", "search", "handoff", "curate"}
    for name, duty in commands.items():
        assert not duty.endswith("..."), f"{name}'s one-line duty is cut in --help: {duty}"


def test_every_verb_has_a_docs_page_in_the_nav() -> None:
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    for name in _commands():
        page = PAGES.get(name, f"{name}.md")
        assert (DOCS / page).is_file(), f"docs/{page} is missing"
        assert page in nav, f"docs/{page} is not in mkdocs.yml's nav"
        assert f"sandman {name}" in (DOCS / page).read_text(), f"docs/{page} never names `sandman {name}`"
