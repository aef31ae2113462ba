"""The repository is a complete Claude Code plugin and its own marketplace (issue 17).

Every file is checked against the format Claude Code documents for plugins
(code.claude.com/docs/en/plugins-reference, plugin-marketplaces): the manifest,
the marketplace's required keys, commands as markdown with YAML frontmatter,
the MCP server declaration; and every command they run is one sandman has.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from sandman.cli import app

REPO = Path(__file__).resolve().parent.parent
KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
SEMVER = re.compile(r"\d+\.\d+\.\d+")
COMMANDS = ("remember", "recall", "forget", "report", "shift", "trail", "statusline")
FRONTMATTER_KEYS = {"description", "argument-hint", "allowed-tools", "model", "disable-model-invocation"}


def _json(path: str) -> dict:
    data = json.loads((REPO / path).read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def _command(name: str) -> tuple[dict, str]:
    text = (REPO / "commands" / f"{name}.md").read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert match, f"commands/{name}.md has no frontmatter"
    front = yaml.safe_load(match.group(1))
    assert isinstance(front, dict)
    return front, match.group(2)


def _verbs() -> set[str]:
    listing = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "120"}).output.split("Commands:", 1)[1]
    return set(re.findall(r"^\W*(\w+)\s", listing, re.M))


def _mcp_tools() -> set[str]:
    import anyio

    from sandman.layout import Layout
    from sandman.mcp import build_server

    server = build_server(Layout(Path("/nonexistent-root")))
    return {tool.name for tool in anyio.run(server.list_tools)}


def test_the_manifest_names_a_kebab_case_plugin_with_a_version():
    manifest = _json(".claude-plugin/plugin.json")
    assert KEBAB.fullmatch(manifest["name"]) and SEMVER.fullmatch(manifest["version"])


def test_the_marketplace_lists_this_plugin_so_plugin_marketplace_add_works():
    market = _json(".claude-plugin/marketplace.json")
    assert KEBAB.fullmatch(market["name"])
    assert isinstance(market["owner"], dict) and market["owner"]["name"]
    (entry,) = market["plugins"]
    manifest = _json(".claude-plugin/plugin.json")
    assert entry["name"] == manifest["name"] and entry["version"] == manifest["version"]
    assert entry["source"].startswith("./")
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()


def test_the_mcp_server_is_declared_and_runs_sandman_mcp():
    servers = _json(".mcp.json")["mcpServers"]
    assert servers == {"sandman": {"command": "sandman", "args": ["mcp"]}}
    assert "mcp" in _verbs()


def test_each_command_is_markdown_with_valid_frontmatter_and_calls_existing_code_paths():
    verbs, tools = _verbs(), _mcp_tools()
    found = sorted(path.stem for path in (REPO / "commands").glob("*.md"))
    assert found == sorted(COMMANDS)
    for name in COMMANDS:
        front, body = _command(name)
        assert set(front) <= FRONTMATTER_KEYS, name
        assert isinstance(front["description"], str) and 0 < len(front["description"]) <= 120
        allowed = [tool.strip() for tool in str(front["allowed-tools"]).split(",")]
        for tool in allowed:
            bash = re.fullmatch(r"Bash\(sandman (\w+):\*\)", tool)
            mcp = re.fullmatch(r"mcp__plugin_sandman_sandman__(\w+)", tool)
            assert bash or mcp, f"{name}: {tool} is neither a sandman command nor a sandman MCP tool"
            if bash:
                assert bash.group(1) in verbs, f"{name}: sandman {bash.group(1)} does not exist"
            else:
                assert mcp.group(1) in tools, f"{name}: the MCP server has no tool {mcp.group(1)}"
        for inline in re.findall(r"!`([^`]*)`", body):
            assert any(inline.startswith(f"sandman {tool[len('Bash(sandman '):-len(':*)')]}")
                       for tool in allowed if tool.startswith("Bash(")), f"{name}: !`{inline}` is not allowed"
        if "$ARGUMENTS" in body:
            assert "argument-hint" in front and "~~~text\n$ARGUMENTS\n~~~" in body, \
                f"{name}: arguments must be fenced as data"


def test_regression_remember_named_its_tool_as_a_hand_registered_server_does():
    # A plugin's MCP tools are mcp__plugin_<plugin>_<server>__<tool> in Claude Code 2.1.332 (confirmed
    # live: tests/test_live_claude_code.py); allowed-tools naming mcp__sandman__remember denied the call.
    for path in sorted((REPO / "commands").glob("*.md")):
        front, _ = _command(path.stem)
        assert "mcp__sandman__" not in str(front.get("allowed-tools", "")), path.name
    front, body = _command("remember")
    assert front["allowed-tools"] == "mcp__plugin_sandman_sandman__remember"


def test_regression_plugin_validate_warned_of_no_author_and_no_icon():
    # `claude plugin validate .` (2.1.332) warns without an author, and without a square PNG icon of
    # 512 to 2048 px under 2 MB; the live suite runs the validator itself.
    import struct

    manifest = _json(".claude-plugin/plugin.json")
    assert manifest["author"]["name"]
    icon = (REPO / manifest["icon"]).read_bytes()
    assert icon[:8] == b"\x89PNG\r\n\x1a\n" and len(icon) < 2_000_000
    width, height = struct.unpack(">II", icon[16:24])
    assert width == height and 512 <= width <= 2048
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert not re.search(r"http://", readme), "the validator takes a README URL as documentationUrl: https only"


def test_regression_the_docs_named_commands_claude_code_does_not_have():
    # Claude Code 2.1.332 names a plugin's commands /sandman:<name>; /remember answers "no command
    # with that name" (tests/test_live_claude_code.py). The one bare name left says exactly that.
    bare = re.compile(r"(?<![\w:/.<>-])/(remember|recall|forget|report)(?![\w./-])")
    found = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
                 *sorted((REPO / ".claude-plugin").glob("*.json"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.name}:{number}" for match in bare.finditer(line)
                      if "no command has that name" not in line[match.end():match.end() + 60]]
    assert found == []
    hooks = (REPO / "docs" / "hooks.md").read_text(encoding="utf-8")
    row = next(line for line in hooks.splitlines() if line.startswith("| `commands/report.md`"))
    assert "lists the shifts' reports" in row and "`sandman report show`" in row
