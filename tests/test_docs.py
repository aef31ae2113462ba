"""Every verb has one-line help and a page in docs/ (STYLE.md, sqlite-utils' test_docs habit)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from sandman.cli import app

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = {"mcp": "MCP.md", "init": "index.md"}


def _commands() -> dict[str, str]:
    text = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}).output
    listing = text.split("Commands:", 1)[1]
    return dict(re.findall(r"^  (\w+)\s+(.+)$", listing, re.M))


def test_help_lists_every_verb_with_its_whole_duty() -> None:
    commands = _commands()
    assert set(commands) == {"init", "remember", "take", "dream", "forget", "recall", "mcp", "sync",
                             "doctor", "site", "reflect", "hooks", "report", "trail", "reconcile", "import",
                             "banks", "schedule", "breathe", "shift", "search", "note", "curate", "score",
                             "statusline"}
    for name, duty in commands.items():
        assert not duty.endswith("..."), f"{name}'s one-line duty is cut in --help: {duty}"


def test_every_verb_has_a_docs_page_in_the_nav() -> None:
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    for name in _commands():
        page = PAGES.get(name, f"{name}.md")
        assert (DOCS / page).is_file(), f"docs/{page} is missing"
        assert page in nav, f"docs/{page} is not in mkdocs.yml's nav"
        assert f"sandman {name}" in (DOCS / page).read_text(), f"docs/{page} never names `sandman {name}`"


def test_the_readme_set_up_says_how_a_mind_is_found(monkeypatch, tmp_path) -> None:
    """Issue 20, fault 9: nothing before docs/dream.md told a new user about SANDMAN_CLAUDE_BIN, the
    model variables, or what doctor's `FAIL claude … not found` means for them."""
    from sandman import config
    from sandman.doctor import checks as doctor

    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Install and run", 1)[1].split("\n## ", 1)[0]
    assert "SANDMAN_CLAUDE_BIN" in setup
    for variable, default in [*config.MINDS.values(), config.MIND_LOG, config.MIND_UPKEEP]:
        assert f"${variable}" in setup and f"`{default}`" in setup, variable
    monkeypatch.setenv("PATH", str(tmp_path))  # no claude anywhere
    failed = doctor._claude()
    assert failed.status == doctor.FAIL
    assert f"FAIL  claude      {failed.message}" in setup


def test_the_docs_build_strict_with_every_link_and_anchor_found(tmp_path) -> None:
    """A code fence left open in BANK-FORMAT.md swallowed its later sections, and 12 links into them
    broke while `mkdocs build --strict` passed (mkdocs reports broken anchors at INFO unless
    mkdocs.yml's `validation` raises them; `-q` hides them from strict mode too): the build must fail on any of them (issue 33)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(DOCS.parent / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "anchors: warn" in (DOCS.parent / "mkdocs.yml").read_text()
