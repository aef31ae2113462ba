"""Claude Code 2.1.332 as it really behaves (issue 21), on the corpus's live payloads and environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dream_helpers import archive_session, model, proposal
from sandman.verbs.dream import dream

SID = "9b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6e"
# What a session's hook process carries and no mind may see (corpus/hooks, live 2.1.332).
SESSION_VARIABLES = ("CLAUDECODE", "CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PID",
                     "CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE", "CLAUDE_CODE_MESSAGING_SOCKET",
                     "CLAUDE_CODE_MESSAGING_TOKEN", "AI_AGENT", "CLAUDE_CODE_CHILD_NOTES_DIR",
                     "CLAUDE_CODE_SESSION_ATTENDED", "CLAUDE_CODE_ENTRYPOINT")


def live_environment(corpus: Path) -> dict[str, str]:
    return json.loads((corpus / "hooks" / "hook-environment.session-start.live-2.1.332.json").read_text())


def test_a_dream_under_the_live_hook_environment_starts_blind_minds(layout, fake_claude, corpus, monkeypatch,
                                                                      isolated):
    cwd = isolated / "proj"
    cwd.mkdir()
    for name, value in live_environment(corpus).items():
        if name != "CLAUDE_CONFIG_DIR":  # the test's isolated config dir stays
            monkeypatch.setenv(name, value)
    archive_session(layout, SID, cwd, ended="2026-11-30T10:00:00Z")
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.answer(model(mind), {"memories": [proposal(cwd, "Build with make", "make builds it")]})
    dream(layout, now=True)
    calls = fake_claude.calls()
    assert len(calls) == 3
    for call in calls:
        env, argv = call["environ"], call["argv"]
        assert [name for name in SESSION_VARIABLES if name in env] == [], call["model"]
        assert (env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"], env["CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS"],
                env["CLAUDE_CODE_DISABLE_CLAUDE_MDS"]) == ("1", "1", "1")
        assert argv[argv.index("--tools") + 1] == ""
        assert "--strict-mcp-config" in argv and "--disable-slash-commands" in argv


