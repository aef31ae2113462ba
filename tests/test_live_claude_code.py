"""sandman under the real, pinned Claude Code CLI against a fake Messages API (issue 28).

Each test runs ``claude`` (tests/live_claude.py; docs/live-tests.md) as a user would:
the plugin installed from this repository's marketplace file or loaded with
``--plugin-dir``, sandman's hooks, commands and MCP server, and sandman's dream
running its minds through the same binary. What Claude Code sends is read in the
request bodies the fake API logged. Skipped, with the reason, when the pinned
binary is absent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from live_claude import (HOOK_CONTEXT, PLUGIN_TOOL_PREFIX, SETTINGS_TOOL_PREFIX, FakeApi, ToolUse, claude,
                         plugin_copy, run_print, run_stream, system_messages, system_text, texts, tool_results,
                         wait_for_sandman)
from sandman import config, journal
from sandman.banks.commit import bank_transaction
from sandman.banks.memory import Memory
from sandman.banks.names import bank_name
from sandman.layout import Layout
from sandman.verbs.init import init
from sandman.verbs.recall import recall, utf16_units


@pytest.fixture
def project(isolated: Path) -> Path:
    folder = isolated / "work" / "app"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def hooks_plugin(tmp_path: Path) -> Path:
    """The plugin's parts without its MCP server: the hooks and commands alone start faster."""
    return plugin_copy(tmp_path / "plugin", mcp=False)


def install_plugin(tmp_path: Path, cwd: Path, api: FakeApi) -> str:
    """Add this repository's marketplace and install sandman from it, as the README says; return the listing."""
    market = plugin_copy(tmp_path / "marketplace")
    for args in (["plugin", "marketplace", "add", str(market)], ["plugin", "install", "sandman@sandman"]):
        done = claude(args, cwd, api)
        assert done.rc == 0, (args, done.stdout, done.stderr)
    listing = claude(["plugin", "list"], cwd, api)
    assert listing.rc == 0, listing.stderr
    return listing.stdout


def fill_bank(layout: Layout, directory: Path, count: int = 120) -> None:
    """A bank for ``directory`` past recall's budget, its text full of emoji (two units each) and CJK."""
    with bank_transaction(layout, verb="test", subject="a full bank") as tx:
        for i in range(count):
            tx.write_memory(bank_name(directory), Memory(
                name=f"Fact {i} 記憶 🚀", description=f"The module {i} keeps its 規約 conventions 😀 " * 2,
                type="project", body=f"Body {i}: the module's rule 🚀, told at some length 中文.\n",
                source=["test"]), directory=str(directory))


def units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# --- the plugin, installed from the marketplace file --------------------------------------


def test_the_plugin_installs_from_this_repositorys_marketplace_file(fake_api, tmp_path, project):
    listing = install_plugin(tmp_path, project, fake_api)
    assert "sandman@sandman" in listing and "enabled" in listing
    result = run_print("hello", project, fake_api)
    assert result.rc == 0, result.stderr
    (body,) = fake_api.messages()
    commands = [f"sandman:{name}" for name in ("forget", "recall", "remember", "report")]
    assert all(f"- {command}:" in system_messages(body) for command in commands)
    assert "plugin:sandman:sandman" in system_messages(body)  # its MCP server (connected or still connecting)


def test_regression_remember_could_not_call_its_tool_in_a_plugin_install(fake_api, tmp_path, project, layout):
    install_plugin(tmp_path, project, fake_api)
    call = {"body": "Deploys go through make ship", "cwd": str(project)}
    fake_api.script(ToolUse(PLUGIN_TOOL_PREFIX + "remember", call), "remembered")
    result = run_print("/sandman:remember Deploys go through make ship", project, fake_api,
                       args=["--output-format", "json"])
    assert result.rc == 0, result.stderr
    assert json.loads(result.stdout)["permission_denials"] == []
    first, second = fake_api.messages()
    assert "~~~text\nDeploys go through make ship\n~~~" in "\n".join(text for _, text in texts(first))
    (answer,) = tool_results(second)
    assert answer.get("is_error") is not True and "remembered:" in json.dumps(answer)
    (memory,) = layout.bank(bank_name(project)).glob("project_*.md")
    assert "Deploys go through make ship" in memory.read_text(encoding="utf-8")


def test_an_mcp_tool_round_trip_with_the_server_registered_by_hand(fake_api, project, layout):
    # `claude mcp add sandman -- sandman mcp` (docs/MCP.md): the tools are mcp__sandman__<name>.
    init(layout)
    fill_bank(layout, project, count=3)
    fake_api.script(ToolUse(SETTINGS_TOOL_PREFIX + "recall", {"cwd": str(project)}), "recalled")
    result = run_print("what do you know here?", project, fake_api,
                       mcp={"mcpServers": {"sandman": {"command": "sandman", "args": ["mcp"]}}},
                       args=["--strict-mcp-config", "--allowedTools", SETTINGS_TOOL_PREFIX + "recall"])
    assert (result.rc, result.stdout.strip()) == (0, "recalled"), result.stderr
    first, second = fake_api.messages()
    assert SETTINGS_TOOL_PREFIX + "recall" in json.dumps(first)
    (answer,) = tool_results(second)
    assert "Fact 0 記憶 🚀" in json.dumps(answer, ensure_ascii=False)


# --- SessionStart: recall whole, the digest beside it, compaction --------------------------


def test_session_start_recall_arrives_whole_with_a_bank_near_the_budget(fake_api, hooks_plugin, project, layout):
    init(layout)
    fill_bank(layout, project)
    expected = recall(layout, str(project)).text
    assert config.RECALL_BUDGET_UTF16 - 300 < utf16_units(expected) <= config.RECALL_BUDGET_UTF16
    assert "🚀" in expected and "記憶" in expected and len(expected) < utf16_units(expected)
    result = run_print("hello", project, fake_api, plugin_dirs=[hooks_plugin])
    assert result.rc == 0, result.stderr
    (body,) = fake_api.messages()
    context = system_messages(body)
    assert HOOK_CONTEXT + expected in context or "\n" + expected in context
    assert "<persisted-output>" not in context


def test_the_start_after_a_session_is_served_from_the_reply_its_take_kept(fake_api, hooks_plugin, project, layout):
    """issue 29: the plugin runs ``recall --hook`` through the fast launcher. A session's end takes it and
    composes the kept SessionStart reply again (its pointer is recalled), so the next start is served
    from that file, which it leaves as it was, with the same recall in the request body."""
    from sandman.recall import served

    init(layout)
    fill_bank(layout, project, count=12)
    result = run_print("hello 0", project, fake_api, plugin_dirs=[hooks_plugin])
    assert result.rc == 0, result.stderr
    wait_for_sandman(layout.root)  # the detached take, which keeps the reply again
    expected = recall(layout, str(project)).text
    assert "## Recent sessions" in expected
    kept = layout.start_reply(served.key(str(project)))
    before = kept.stat()
    result = run_print("hello 1", project, fake_api, plugin_dirs=[hooks_plugin],
                       env_extra={"SANDMAN_NO_TAKE": "1"})  # this session's end leaves the reply alone
    assert result.rc == 0, result.stderr
    context = system_messages(fake_api.messages()[-1])
    assert HOOK_CONTEXT + expected in context or "\n" + expected in context
    after = kept.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # served, not composed
    journal = "".join(path.read_text() for path in layout.trace.glob("recall-*.log"))
    assert journal.count("recall recalled hook=true") == 2


def test_claude_code_caps_each_hooks_context_on_its_own_at_10000_units(fake_api, project, tmp_path):
    # The fact the digest's budget rests on: three hooks of 10,000, 10,000 and 6,000 units all
    # arrive whole; one of 10,001 is saved to a file and the model sees a preview.
    script = tmp_path / "context.py"
    script.write_text(
        "import json, sys\n"
        "units, char = int(sys.argv[1]), sys.argv[2]\n"
        "width = len(char.encode('utf-16-le')) // 2\n"
        "text = char * (units // width) + 'x' * (units % width)\n"
        "sys.stdin.read()\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'SessionStart', 'additionalContext': text}}))\n",
        encoding="utf-8")

    def hook(size: int, char: str) -> dict:
        return {"hooks": [{"type": "command", "command": f"{sys.executable} {script} {size} {char}"}]}

    whole = {"😀": 10_000, "中": 10_000, "a": 6_000}
    result = run_print("hello", project, fake_api, settings={"hooks": {"SessionStart": [
        hook(size, char) for char, size in whole.items()]}})
    assert result.rc == 0, result.stderr
    context = system_messages(fake_api.messages()[0])
    for char, size in whole.items():
        assert char * (size // units(char)) in context
    fake_api.requests.clear()
    result = run_print("hello", project, fake_api, settings={"hooks": {"SessionStart": [hook(10_001, "a")]}})
    context = system_messages(fake_api.messages()[0])
    assert "a" * 10_001 not in context and "<persisted-output>" in context


def test_regression_the_report_digest_dropped_every_handoff_line(fake_api, hooks_plugin, project, layout):
    from test_report import write_shift

    from sandman.machine import report as reports

    init(layout)
    fill_bank(layout, project)
    for day in range(1, 7):
        write_shift(layout, f"s-202612{day:02d}T2300Z", findings=day % 2,
                    handoff=f"Night {day}: moved the 記録 parser to tomllib 🚀; the fuzz corpus grew {day * 10}.")
    expected, shown = reports.digest(reports.worst_first(reports.unread_reports(layout)), config.REPORT_DIGEST_UTF16)
    recalled = recall(layout, str(project)).text
    result = run_print("hello", project, fake_api, plugin_dirs=[hooks_plugin])
    assert result.rc == 0, result.stderr
    context = system_messages(fake_api.messages()[0])
    assert shown == 6 and expected in context and recalled in context  # each whole, beside the other
    assert expected.count("  handoff: Night ") == 6
    assert utf16_units(recalled) + utf16_units(expected) > config.HOOK_CONTEXT_MAX_UTF16
    assert reports.unread(layout) == []


def test_compaction_starts_the_session_again_with_the_whole_recall(fake_api, hooks_plugin, project, layout):
    init(layout)
    fill_bank(layout, project, count=5)
    expected = recall(layout, str(project)).text
    # The summary in <summary> tags, as the compaction prompt asks: without them Claude Code asks again.
    fake_api.script("first answer", "<summary>The session said hello.</summary>")
    result = run_stream(["hello", "/compact", "after the compaction"], project, fake_api,
                        plugin_dirs=[hooks_plugin])
    assert result.rc == 0, result.stderr
    hooks = [event["hook_name"] for event in result.events if event.get("subtype") == "hook_response"]
    assert "SessionStart:compact" in hooks
    start, summary, last = fake_api.messages()
    assert expected in system_messages(start)
    said = [text for role, text in texts(last) if role == "user"]
    assert "hello" not in said and "after the compaction" in said  # the context was compacted
    assert any("The session said hello." in text for text in said)
    assert expected in system_messages(last)
    assert "source=compact" in layout.trace_file("recall", journal.now_utc().strftime("%Y-%m-%d")).read_text()


# --- SessionEnd: the plugin takes the session --------------------------------------------------


def test_session_end_archives_the_transcript_and_drops_a_pointer(fake_api, hooks_plugin, project, layout, isolated):
    result = run_print("remember that the build uses make", project, fake_api, plugin_dirs=[hooks_plugin],
                       args=["--output-format", "json"])
    assert result.rc == 0, result.stderr
    session = json.loads(result.stdout)["session_id"]
    wait_for_sandman(layout.root)  # take --hook --detach finishes in a child of its own
    pointer = json.loads(layout.pointer(session).read_text(encoding="utf-8"))
    archived = layout.root / pointer["archived"]
    assert "remember that the build uses make" in archived.read_text(encoding="utf-8")
    # Linked, not copied: Claude Code's name stays (claude --resume keeps working) and is the same file.
    (live,) = (isolated / ".claude" / "projects").rglob(f"{session}.jsonl")
    assert live.stat().st_ino == archived.stat().st_ino and archived.stat().st_nlink == 2


# --- each plugin command ---------------------------------------------------------------------


def test_the_recall_command_puts_sandman_recall_in_the_prompt(fake_api, hooks_plugin, project, layout):
    init(layout)
    fill_bank(layout, project, count=3)
    result = run_print("/sandman:recall", project, fake_api, plugin_dirs=[hooks_plugin])
    assert result.rc == 0, result.stderr
    said = "\n".join(text for role, text in texts(fake_api.messages()[0]) if role == "user")
    assert "<command-name>/sandman:recall</command-name>" in said
    assert "# sandman recall: " + str(project) in said and "Fact 0 記憶 🚀" in said


def test_the_report_command_lists_the_reports_and_may_read_one(fake_api, hooks_plugin, project, layout):
    from test_report import write_shift

    init(layout)
    write_shift(layout, "s-20261201T2300Z", handoff="Moved the parser.")
    fake_api.script(ToolUse("Bash", {"command": "sandman report show s-20261201T2300Z"}), "summarised")
    result = run_print("/sandman:report s-20261201T2300Z", project, fake_api, plugin_dirs=[hooks_plugin],
                       args=["--output-format", "json"])
    assert result.rc == 0, result.stderr
    assert json.loads(result.stdout)["permission_denials"] == []
    first, second = fake_api.messages()
    said = "\n".join(text for role, text in texts(first) if role == "user")
    assert "s-20261201T2300Z" in said and "~~~text\ns-20261201T2300Z\n~~~" in said
    (answer,) = tool_results(second)
    assert "Moved the parser." in json.dumps(answer)


def test_the_forget_command_runs_sandman_forget_when_allowed(fake_api, hooks_plugin, project, layout):
    from dream_helpers import archive_session

    init(layout)
    session = "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"
    archive_session(layout, session, project, ended="2026-12-01T10:00:00Z")
    fake_api.script(ToolUse("Bash", {"command": f"sandman forget {session}"}), "forgotten")
    result = run_print(f"/sandman:forget {session}", project, fake_api, plugin_dirs=[hooks_plugin],
                       args=["--output-format", "json"])
    assert result.rc == 0, result.stderr
    assert json.loads(result.stdout)["permission_denials"] == []
    said = "\n".join(text for role, text in texts(fake_api.messages()[0]) if role == "user")
    assert f"~~~text\n{session}\n~~~" in said
    assert not layout.pointer(session).exists()


def test_a_bare_command_name_does_not_exist_in_2_1_332(fake_api, hooks_plugin, project):
    # The docs named /remember; Claude Code 2.1.332 names a plugin's commands /<plugin>:<command>.
    result = run_print("/remember the build uses make", project, fake_api, plugin_dirs=[hooks_plugin])
    assert result.rc == 0, result.stderr
    said = "\n".join(text for role, text in texts(fake_api.messages()[0]) if role == "user")
    assert "the slash command /remember, but no command with that name is available" in said
    assert "/sandman:remember" in said


# --- blind minds: the dream's claude -p ----------------------------------------------------------


def test_the_dreams_minds_run_blind_under_the_real_claude_code(fake_api, project, layout, isolated, monkeypatch):
    from dream_helpers import archive_session, proposal

    from live_claude import claude_code, environment
    from sandman.verbs.dream import dream

    init(layout)
    fill_bank(layout, project, count=2)
    (isolated / ".claude").mkdir(exist_ok=True)
    (isolated / ".claude" / "CLAUDE.md").write_text("USER CLAUDE.md MARKER\n", encoding="utf-8")
    session = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"
    archive_session(layout, session, project, ended="2026-12-01T10:00:00Z", text="We deploy with make ship.")
    reply = json.dumps({"memories": [proposal(project, "Deploy with make ship", "make ship deploys it")]})
    fake_api.default = reply
    for name, value in environment(fake_api).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SANDMAN_CLAUDE_BIN", str(claude_code()))
    dream(layout, now=True)
    minds = fake_api.messages()
    assert len(minds) == 3 and {body["model"] for body in minds} == {
        config.model(config.MINDS[mind]) for mind in ("fable", "opus", "sonnet")}
    for body in minds:
        everything = json.dumps(body, ensure_ascii=False)
        assert body.get("tools", []) == []
        assert "We deploy with make ship." in everything  # the transcript, in the prompt
        prompt = " ".join(" ".join(text for role, text in texts(body) if role == "user").split())
        assert "you have no tools and cannot open it; the session is included below" in prompt
        assert "CLAUDE.md MARKER" not in everything
        assert "# Memory" not in system_text(body) and "persistent file-based memory" not in everything
        assert "# gitStatus" not in everything and "Recent commits:" not in everything
        assert "Fact 0 記憶" not in everything and "sandman recall" not in everything  # no memory surface
        assert "SessionStart hook additional context" not in everything
    (memory,) = [path for path in layout.bank(bank_name(project)).glob("project_deploy*.md")]
    assert "make ship" in memory.read_text(encoding="utf-8")
    # The control: a plain claude -p in the same folder sees all of it, so the checks above can fail.
    fake_api.requests.clear()
    assert run_print("hello", layout.dream_dir, fake_api).rc == 0
    plain = json.dumps(fake_api.messages()[0], ensure_ascii=False)
    assert all(part in plain for part in ("USER CLAUDE.md MARKER", "# gitStatus", "persistent file-based memory"))
    assert fake_api.messages()[0]["tools"]


# --- the plugin validates clean ------------------------------------------------------------------


def test_regression_plugin_validate_warned_of_no_author_no_icon_and_an_http_url(fake_api, tmp_path):
    from conftest import REPO

    done = claude(["plugin", "validate", str(REPO)], REPO, fake_api)
    assert done.rc == 0, done.stdout + done.stderr
    assert "warning" not in done.stdout.lower(), done.stdout
    assert "Validation passed" in done.stdout
