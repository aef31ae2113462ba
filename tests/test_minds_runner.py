"""The mind runner (sandman/minds/runner.py) against the fake claude."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from fake_claude import pid_dead
from sandman import config
from sandman.minds import runner
from sandman.minds.runner import (MIND_SETTINGS, mind_env, parse_output, project_folders, project_slug,
                                  run_mind, run_minds)

PROMPT = "Distill the session below into memories. " * 3


def _run(layout, prompt=PROMPT, *, model="m", timeout=30.0, **kwargs):
    return run_mind(prompt, mind="opus", model=model, cwd=layout.dream_dir, timeout=timeout, **kwargs)


def test_answer_is_the_result_text_with_cost_and_tokens(layout, fake_claude):
    fake_claude.answer("m", {"memories": []}, cost=0.25, tokens=[10, 20])
    result = _run(layout)
    assert result.status == "answered" and result.reason is None
    assert json.loads(result.text) == {"memories": []}
    assert result.cost_usd == 0.25
    assert result.tokens["input_tokens"] == 10 and result.tokens["output_tokens"] == 20
    assert (result.mind, result.model) == ("opus", "m")
    assert str(uuid.UUID(result.session_id)) == result.session_id


def test_mind_never_reenters_hooks(layout, fake_claude, monkeypatch):
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("CLAUDE_CODE_ENTRYPOINT", "cli")
    result = _run(layout)
    (call,) = fake_claude.calls()
    argv = call["argv"]
    assert json.loads(argv[argv.index("--settings") + 1])["disableAllHooks"] is True
    assert argv[argv.index("--session-id") + 1] == result.session_id
    assert argv[argv.index("--model") + 1] == "m"
    assert argv[argv.index("--output-format") + 1] == "json"
    assert "--no-session-persistence" not in argv
    assert call["env"]["CLAUDE_MEMORY_PIPELINE"] == "1"
    # A dream started inside a Claude Code session must not look nested.
    assert call["env"]["CLAUDECODE"] is None and call["env"]["CLAUDE_CODE_ENTRYPOINT"] is None
    assert Path(call["cwd"]) == layout.dream_dir
    assert call["pgid"] == call["pid"], "a mind leads its own process group"


def test_prompt_goes_on_stdin_even_past_the_argv_limit(layout, fake_claude):
    # 300,000 characters, 900,000 bytes of UTF-8: far past MAX_ARG_STRLEN (131,071 bytes).
    prompt = "é€" * 100_000 + "x" * 100_000
    fake_claude.answer("m", "noted")
    result = _run(layout, prompt)
    assert result.status == "answered"
    (call,) = fake_claude.calls()
    assert call["prompt_via"] == "stdin" and call["prompt"] == prompt
    assert not any(prompt[:50] in arg for arg in call["argv"])


def test_lone_surrogates_in_a_prompt_do_not_stop_the_mind(layout, fake_claude):
    result = _run(layout, PROMPT + "broken \ud800 pair")
    assert result.status == "answered"
    assert fake_claude.calls()[0]["prompt"].endswith("broken ? pair")


def test_verbose_array_output_takes_the_last_result(layout, fake_claude):
    fake_claude.answer("m", "the answer", verbose=True)
    assert _run(layout).text == "the answer"


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"mode": "fail"}, "exit 1"),
        ({"mode": "fail", "exit": 3}, "exit 3"),
        ({"mode": "is_error"}, "is_error: Not logged in"),
        ({"mode": "is_error", "exit": 1}, "exit 1"),
        ({"mode": "garbage"}, "unparseable output"),
        ({"mode": "echo"}, "echo"),
        ({"mode": "refusal"}, "refusal"),
        ({"mode": "no_model"}, "no model call"),
        ({"result": "   "}, "no result"),
        ({"result": "fine", "exit": 1}, "exit 1"),
    ],
)
def test_abstentions_name_their_reason(layout, fake_claude, spec, reason):
    fake_claude.rules("m", spec)
    result = _run(layout)
    assert (result.status, result.reason, result.text) == ("abstained", reason, None)


def test_failure_keeps_the_stderr_line_as_detail(layout, fake_claude):
    fake_claude.mode("m", "fail", stderr="boom\nNot logged in\n")
    assert _run(layout).detail == "Not logged in"


def test_unknown_cost_is_none_never_zero(layout, fake_claude):
    fake_claude.answer("m", "ok", cost=None)
    result = _run(layout)
    assert result.status == "answered" and result.cost_usd is None


def test_missing_binary_abstains(layout, monkeypatch):
    monkeypatch.setenv("SANDMAN_CLAUDE_BIN", str(layout.root / "no-such-claude"))
    result = _run(layout)
    assert result.status == "abstained" and result.reason.startswith("spawn failed")


def test_hung_mind_is_killed_with_its_process_group(layout, fake_claude):
    fake_claude.mode("m", "hang")
    result = _run(layout, timeout=3.0)  # long enough for the fake to start and record itself under load
    assert (result.status, result.reason) == ("abstained", "timeout")
    (call,) = fake_claude.calls()
    assert pid_dead(call["pid"])
    _await_dead(call["child_pid"])


def test_mind_ignoring_sigterm_is_killed(layout, fake_claude, monkeypatch):
    monkeypatch.setattr(runner, "KILL_GRACE_S", 0.2)
    fake_claude.mode("m", "hang", ignore_term=True)
    result = _run(layout, timeout=3.0)  # long enough for the fake to start and record itself under load
    assert result.reason == "timeout"
    (call,) = fake_claude.calls()
    assert pid_dead(call["pid"])
    _await_dead(call["child_pid"])


def _await_dead(pid: int) -> None:
    """SIGKILL is delivered asynchronously: wait (bounded) for the kernel to finish the child."""
    import time

    deadline = time.monotonic() + 10
    while not pid_dead(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pid_dead(pid), f"process {pid} outlived its mind"


@pytest.mark.parametrize("mode", ["answer", "fail", "hang"])
def test_transcript_is_kept_on_every_outcome(layout, fake_claude, mode):
    fake_claude.mode("m", mode)
    # Only the hung mind needs the short timeout; under load 1 s can cut a mind that answers.
    result = _run(layout, timeout=1.0 if mode == "hang" else 60.0, keep=(layout, "-home-user-proj"))
    target = layout.mind_transcript("-home-user-proj", result.session_id)
    assert result.transcript == target and target.is_file()
    assert not any(config.claude_projects_dir().rglob(f"{result.session_id}.jsonl"))
    first = json.loads(target.read_text().splitlines()[0])
    assert first["sessionId"] == result.session_id


def test_unsafe_project_name_keeps_in_orphans(layout, fake_claude):
    result = _run(layout, keep=(layout, ".."))
    assert result.transcript == layout.mind_transcript(runner.ORPHANS, result.session_id)


def test_failed_move_never_changes_the_outcome(layout, fake_claude, monkeypatch):
    fake_claude.answer("m", "kept?")

    def refuse(*_args):
        raise OSError("disk full")

    monkeypatch.setattr(runner, "move_no_replace", refuse)
    result = _run(layout, keep=(layout, "p"))
    assert (result.status, result.text, result.transcript) == ("answered", "kept?", None)


def test_no_persistence_writes_no_transcript(layout, fake_claude):
    result = _run(layout, persist=False, keep=(layout, "p"))
    (call,) = fake_claude.calls()
    assert "--no-session-persistence" in call["argv"]
    assert result.transcript is None
    claude_projects = config.claude_projects_dir()
    assert not claude_projects.exists() or not any(claude_projects.rglob("*.jsonl"))


def test_run_minds_returns_results_in_job_order(layout, fake_claude):
    for model in ("a", "b", "c"):
        fake_claude.answer(model, f"from {model}")
    fake_claude.mode("b", "fail")
    results = run_minds(
        [("fable", "a", PROMPT), ("opus", "b", PROMPT), ("sonnet", "c", PROMPT)],
        cwd=layout.dream_dir, timeout=30,
    )
    assert [r.mind for r in results] == ["fable", "opus", "sonnet"]
    assert [r.status for r in results] == ["answered", "abstained", "answered"]
    assert len({r.session_id for r in results}) == 3


def test_real_cli_outputs(layout, fake_claude, corpus):
    cli = corpus / "cli"
    expected = {
        "claude-p-json.result.success.json": ("answered", None),
        "claude-p-json.result.unknown-skill.json": ("abstained", "no model call"),
        "claude-p-json.result.error-shape.json": ("abstained", "is_error: Not logged in; api status 401"),
    }
    for name, (status, reason) in expected.items():
        fake_claude.mode("m", "replay", file=str(cli / name))
        result = _run(layout)
        assert (result.status, result.reason) == (status, reason), name
    fake_claude.mode("m", "replay", file=str(cli / "claude-p-json.result.success.json"))
    assert _run(layout).cost_usd == 0.2416735


def test_parse_output_shapes():
    result = {"type": "result", "result": "x"}
    assert parse_output(json.dumps(result).encode()) == result
    assert parse_output(json.dumps([{"type": "system"}, result, {"type": "assistant"}]).encode()) == result
    for bad in (b"", b"\xff", b"[1, 2]", b'"text"', b'{"type": "assistant"}', b"[]"):
        assert parse_output(bad) is None


def test_project_slug_is_claude_codes():
    assert project_slug(Path("/home/u/.sandman/.dream")) == "-home-u--sandman--dream"


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "-5", "soon"])
def test_a_mind_timeout_that_is_not_a_finite_positive_number_is_a_config_error(monkeypatch, value):
    from sandman import config
    from sandman.errors import ConfigError

    monkeypatch.setenv("SANDMAN_MIND_TIMEOUT", value)
    with pytest.raises(ConfigError, match="SANDMAN_MIND_TIMEOUT"):
        config.mind_timeout()


def test_project_slug_over_200_characters_is_cut_and_found_by_its_prefix(tmp_path):
    # Claude Code cuts a sanitized name over 200 characters at 200 and appends "-<hash>".
    deep = Path("/home/u/" + "a" * 250)
    assert project_slug(deep) == ("-home-u-" + "a" * 250)[:200]
    projects = tmp_path / "projects"
    (projects / (project_slug(deep) + "-1x2y3z")).mkdir(parents=True)
    (projects / (project_slug(deep) + "x")).mkdir()  # not "-": another, longer path's folder
    assert [p.name for p in project_folders(projects, deep)] == [project_slug(deep) + "-1x2y3z"]
    short = Path("/home/u/p")
    assert project_folders(projects, short) == [projects / "-home-u-p"]
    # A character outside the BMP is two UTF-16 code units: two dashes.
    assert project_slug(Path("/a/\U0001f600b")) == "-a---b"


def test_a_mind_under_a_deep_root_keeps_its_transcript(tmp_path, fake_claude, monkeypatch):
    from sandman.layout import Layout

    layout = Layout(tmp_path / ("r" * 230))
    fake_claude.answer("m", "noted")
    result = run_mind(PROMPT, mind="opus", model="m", cwd=layout.dream_dir, timeout=30.0, keep=(layout, "p"))
    assert result.status == "answered"
    assert result.transcript is not None and result.transcript.is_file()


LEAKED = ("CLAUDECODE", "CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PID", "CLAUDE_PROJECT_DIR",
          "CLAUDE_ENV_FILE", "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN", "AI_AGENT",
          "CLAUDE_CODE_CHILD_NOTES_DIR", "CLAUDE_CODE_SESSION_ATTENDED", "CLAUDE_CODE_ENTRYPOINT",
          "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "TRACEPARENT")


def _live_hook_environment(corpus: Path) -> dict[str, str]:
    return json.loads((corpus / "hooks" / "hook-environment.session-start.live-2.1.332.json").read_text())


def test_a_mind_is_blind_under_the_live_hook_environment(layout, fake_claude, monkeypatch, corpus):
    live = _live_hook_environment(corpus)
    live.pop("CLAUDE_CONFIG_DIR")  # the test's own isolated config dir stays
    for name, value in {**live, "CLAUDE_PLUGIN_ROOT": "/p", "CLAUDE_PLUGIN_DATA": "/d",
                        "TRACEPARENT": "00-1-2-01", "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS": "x",
                        "ANTHROPIC_API_KEY": "sk-test", "CLAUDE_CODE_USE_BEDROCK": "1"}.items():
        monkeypatch.setenv(name, value)
    assert _run(layout).status == "answered"
    (call,) = fake_claude.calls()
    env, argv = call["environ"], call["argv"]
    assert [name for name in LEAKED if name in env] == []
    # Auto memory, git instructions and CLAUDE.md files off; the pipeline marker on.
    assert env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert env["CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS"] == "1"
    assert env["CLAUDE_CODE_DISABLE_CLAUDE_MDS"] == "1"
    assert env["CLAUDE_MEMORY_PIPELINE"] == "1"
    # What authentication and the provider need survives.
    assert env["ANTHROPIC_API_KEY"] == "sk-test" and env["CLAUDE_CODE_USE_BEDROCK"] == "1"
    assert env["ANTHROPIC_BASE_URL"] == live["ANTHROPIC_BASE_URL"]
    # No tools, no MCP server, no skills; settings repeat auto memory and git instructions off.
    assert argv[argv.index("--tools") + 1] == ""
    assert "--strict-mcp-config" in argv and "--mcp-config" not in argv
    assert "--disable-slash-commands" in argv
    settings = json.loads(argv[argv.index("--settings") + 1])
    assert settings == {"disableAllHooks": True, "autoMemoryEnabled": False, "includeGitInstructions": False}
    assert argv[argv.index("--settings") + 1] == MIND_SETTINGS


def test_mind_env_strips_every_session_variable_of_the_live_file(corpus):
    live = _live_hook_environment(corpus)
    env = mind_env({**live, "PATH": "/usr/bin", "HOME": "/home/user"})
    kept = {name for name in live if name in env}
    assert kept == {"CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"}
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/home/user"


@pytest.mark.parametrize(("spec", "reason"), [
    ({"errors": ["API Error: 529 overloaded", "retry failed"], "terminal_reason": "api_error"},
     "is_error: API Error: 529 overloaded (+1 more); terminal_reason api_error"),
    ({"errors": [], "api_error_status": 401}, "is_error: Not logged in; api status 401"),
    ({"terminal_reason": "max_turns", "errors": ["Reached maximum number of turns (1)"]},
     "is_error: Reached maximum number of turns (1); terminal_reason max_turns"),
])
def test_error_envelope_sharpens_the_abstention_reason(layout, fake_claude, spec, reason):
    fake_claude.mode("m", "is_error", **spec)
    result = _run(layout)
    assert (result.status, result.reason) == ("abstained", reason)


def test_error_envelope_reason_is_cut_at_200_characters(layout, fake_claude):
    fake_claude.mode("m", "is_error", errors=["x" * 500])
    assert len(_run(layout).reason) == 200
