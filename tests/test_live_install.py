"""Installing and starting sandman as a new user would, against the real, pinned Claude Code
(issue 28: faults 3 and 7, the plugin without the executable; tests/live_claude.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from live_claude import REPO, Tmux, claude, plugin_copy, run_print

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
    added = claude(words[1:], here, fake_api)
    assert added.rc == 0, added.stderr
    got = claude(["mcp", "get", "sandman"], elsewhere, fake_api)
    assert got.rc == 0, got.stdout + got.stderr
    assert "Connected" in got.stdout


# --- the plugin installed alone, with no sandman command on PATH ------------------------

SAID = "sandman plugin: the sandman command is not installed"
NO_SANDMAN = {"PATH": "/usr/bin:/bin"}


def said(stream_json: str) -> list[str]:
    """The systemMessages the hooks of one ``claude -p --output-format stream-json`` run printed."""
    found = []
    for line in stream_json.splitlines():
        event = json.loads(line)
        if event.get("subtype") == "hook_response" and event.get("output", "").strip():
            message = json.loads(event["output"]).get("systemMessage")
            if message:
                found.append(message)
    return found


def test_plugin_without_sandman_fails_silently_at_every_hook_regression(fake_api, isolated: Path) -> None:
    """The plugin installed from its marketplace alone ran ``sandman ...`` at every hook: command not
    found, exit 127, nothing said. Now the first session start tells the person what to install
    (in the transcript too), once; every hook exits 0."""
    assert not any((Path(folder) / "sandman").exists() for folder in NO_SANDMAN["PATH"].split(":"))
    plugin = plugin_copy(isolated / "plugin")
    project = isolated / "project"
    project.mkdir()
    stream = ["--output-format", "stream-json", "--verbose"]
    first = run_print("hi", project, fake_api, plugin_dirs=[plugin], env_extra=NO_SANDMAN, args=stream)
    assert first.rc == 0, first.stderr
    (message,) = said(first.stdout)
    assert message.startswith(SAID) and "pipx install sandman-memory" in message
    events = [json.loads(line) for line in first.stdout.splitlines()]
    assert {event.get("exit_code") for event in events if event.get("subtype") == "hook_response"} == {0}
    transcript = "".join(path.read_text(encoding="utf-8") for path in
                         (Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects").rglob("*.jsonl"))
    assert '"type":"hook_system_message","content":"' + SAID in transcript
    # Said once: the next session starts in silence, and still without a failing hook.
    second = run_print("hi again", project, fake_api, plugin_dirs=[plugin], env_extra=NO_SANDMAN, args=stream)
    assert second.rc == 0 and said(second.stdout) == []


def test_plugin_without_sandman_says_what_to_install_on_the_persons_screen(fake_api, isolated: Path) -> None:
    plugin = plugin_copy(isolated / "plugin")
    project = isolated / "project"
    project.mkdir()
    with Tmux(project, fake_api, env_extra=NO_SANDMAN, args=["--plugin-dir", str(plugin)]) as session:
        screen = session.wait_for("pipx install sandman-memory", timeout=60)
    assert SAID in " ".join(screen.split())


# --- the plugin and hooks install together ---------------------------------------------


def test_hooks_install_beside_the_installed_plugin_doubled_every_hook_regression(fake_api, isolated: Path) -> None:
    """With the plugin installed as Claude Code installs it (``plugin marketplace add`` + ``plugin install
    sandman@sandman``), ``sandman hooks install`` registered every hook a second time and said nothing:
    each session start sent the recall surface twice. It now refuses in one line, and doctor warns
    when both are registered anyway (--force)."""
    from helpers import sandman

    from sandman.verbs.doctor import doctor

    plugin = plugin_copy(isolated / "plugin", mcp=False)
    for args in (["plugin", "marketplace", "add", str(plugin)], ["plugin", "install", "sandman@sandman"]):
        done = claude(args, isolated, fake_api)
        assert done.rc == 0, done.stdout + done.stderr
    settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    assert json.loads(settings.read_text())["enabledPlugins"] == {"sandman@sandman": True}
    before = settings.read_bytes()
    refused = sandman("hooks", "install")
    assert refused.returncode != 0 and len(refused.stderr.decode().splitlines()) == 1
    assert "claude plugin disable sandman@sandman" in refused.stderr.decode() and settings.read_bytes() == before
    assert sandman("hooks", "install", "--force").returncode == 0
    hooks = next(check for check in doctor().checks if check.name == "hooks")
    assert hooks.status == "warn" and "registered twice" in hooks.message
