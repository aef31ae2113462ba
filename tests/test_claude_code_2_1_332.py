"""Claude Code 2.1.332 as it really behaves (issue 21), on the corpus's live payloads and environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dream_helpers import archive_session, model, proposal
from sandman import config
from sandman.banks.index import render_index
from sandman.banks.memory import Memory
from sandman.banks.names import USER_BANK, bank_name, slug
from sandman.transcripts import mind_text, read_session
from sandman.verbs.dream import dream
from sandman.verbs.recall import recall, utf16_units

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


# --- the recall budget in UTF-16 code units --------------------------------------


# Emoji (two UTF-16 units each), CJK, combining marks, and plain text.
WIDE = st.sampled_from(["😀", "🚀", "👩‍💻", "🇯🇵", "𝔘", "中", "文", "記", "憶", "e\u0301", "a\u0308\u0323",
                        "\u0915\u094d\u0937", " ", "x", "-", "."])
TEXT = st.lists(WIDE, min_size=1, max_size=80).map("".join)
# A body: a few generated lines, repeated so it is long without much generated data.
BODY = st.tuples(st.lists(st.lists(WIDE, min_size=20, max_size=60).map("".join), min_size=1, max_size=3),
                 st.integers(8, 30)).map(lambda parts: "\n".join(parts[0] * parts[1]))


def units(text: str) -> int:
    """UTF-16 code units, counted here independently of the code under test."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _write_bank(layout, directory, memories) -> None:
    folder = layout.bank(bank_name(directory) if directory else USER_BANK)
    folder.mkdir(parents=True, exist_ok=True)
    for i, (name, description, body) in enumerate(memories):
        memory = Memory(name=f"{name} {i}", description=description, type="project", body=body)
        (folder / f"project_{slug(name) or 'm'}_{i}.md").write_text(memory.text(), encoding="utf-8")
    (folder / "MEMORY.md").write_text(render_index(folder, str(directory) if directory else None),
                                      encoding="utf-8")


def test_utf16_units_count_as_claude_code_does() -> None:
    assert utf16_units("abc") == 3
    assert utf16_units("😀") == 2 and len("😀") == 1
    assert utf16_units("e\u0301") == 2 and utf16_units("中文") == 2
    assert utf16_units("\ud800") == 1  # a lone surrogate from a transcript's JSON is one unit


def test_regression_a_recall_of_8891_characters_was_11441_units(tmp_path) -> None:
    # The fault the issue names: characters under the budget, UTF-16 units far over the cap.
    from sandman.layout import Layout

    layout = Layout(tmp_path / "root")
    cwd = tmp_path / "proj"
    body = "Deploy 🚀 with care 😀.\n" * 60
    _write_bank(layout, cwd, [(f"Emoji fact {n}", "Rockets 🚀🚀🚀 land 😀 " * 6, body) for n in range(200)])
    text = recall(layout, str(cwd)).text
    assert units(text) <= config.RECALL_BUDGET_UTF16
    assert len(text) < units(text)  # the surface does hold emoji


# A bank: a few generated (name, description, body) triples repeated ``count`` times, so its
# index alone passes the budget and the cut falls line by line, close to the budget.
DESCRIPTION = st.lists(WIDE, min_size=30, max_size=80).map("".join)
BANK = st.tuples(st.lists(st.tuples(TEXT, DESCRIPTION, BODY), min_size=1, max_size=3),
                 st.integers(150, 260)).map(lambda parts: [parts[0][i % len(parts[0])] for i in range(parts[1])])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(banks=st.lists(BANK, min_size=1, max_size=2), user=st.lists(st.tuples(TEXT, TEXT, TEXT), max_size=5))
def test_a_recall_never_exceeds_the_hook_cap_in_utf16_units(tmp_path_factory, banks, user) -> None:
    from sandman.layout import Layout

    base = tmp_path_factory.mktemp("bank")
    layout = Layout(base / "root")
    cwd = base / "home" / "a" / "b"
    directories = [cwd.parent, cwd][-len(banks):]
    for directory, memories in zip(directories, banks):
        _write_bank(layout, directory, memories)
    if user:
        _write_bank(layout, None, user)
    text = recall(layout, str(cwd)).text
    assert units(text) <= config.RECALL_BUDGET_UTF16 < config.HOOK_CONTEXT_MAX_UTF16


# --- the reader: queued prompts and the record types of 2.1.332 -----------------


QUEUED = "also rename the flag to --dry-run while you are at it"


def transcript_2_1_332(sid: str, cwd: Path) -> str:
    """A transcript in 2.1.332's shape: every record type it writes in a session, a queued prompt."""
    at = "2026-11-30T10:00:00.000Z"
    base = {"sessionId": sid, "cwd": str(cwd), "timestamp": at, "version": "2.1.332"}
    records = [
        {"type": "atis-latch", "latched": True, **base},
        {"type": "mode", "mode": "default", "sessionId": sid},
        {"type": "user", "uuid": "u1", "parentUuid": None, **base,
         "message": {"role": "user", "content": "add a --check flag to the build script"}},
        {"type": "api-request", "requestId": "r1", **base},
        {"type": "api-request-shape", "requestId": "r1", "shape": {"messages": 1}, **base},
        {"type": "api-request-blob", "requestId": "r1", "blob": "…", **base},
        {"type": "queue-operation", "operation": "enqueue", "content": QUEUED, **base},
        {"type": "attachment", "uuid": "a1", "parentUuid": "u1", **base,
         "attachment": {"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
                        "prompt": QUEUED}},
        {"type": "queue-operation", "operation": "remove", "reason": "absorbed_mid_turn", **base},
        {"type": "attachment", "uuid": "a2", **base,
         "attachment": {"type": "queued_command", "commandMode": "prompt", "isMeta": True,
                        "prompt": "META PROMPT NOT TYPED"}},
        {"type": "attachment", "uuid": "a3", **base,
         "attachment": {"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "plugin"},
                        "prompt": "PLUGIN PROMPT NOT TYPED"}},
        {"type": "attachment", "uuid": "a4", **base,
         "attachment": {"type": "queued_command", "commandMode": "task-notification",
                        "prompt": "<task-notification>NOTIFICATION NOT TYPED</task-notification>"}},
        {"type": "attachment", "uuid": "a5", **base,
         "attachment": {"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
                        "prompt": [{"type": "text", "text": "and keep the old flag as an alias"}]}},
        {"type": "attachment", "uuid": "a6", **base, "attachment": {"type": "hook_success", "content": "ok"}},
        {"type": "assistant", "uuid": "u2", "parentUuid": "a1", **base,
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Done: --check and --dry-run."}]}},
        {"type": "cost-state", "totalCostUsd": 0.01, **base},
        {"type": "tools-used", "tools": ["Edit"], **base},
        {"type": "last-prompt", "lastPrompt": QUEUED, "sessionId": sid},
    ]
    return "".join(json.dumps(record) + "\n" for record in records)


def test_a_2_1_332_transcript_has_no_unknown_lines_and_keeps_the_queued_prompt(tmp_path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(transcript_2_1_332(SID, tmp_path / "proj"), encoding="utf-8")
    session = read_session(path)
    assert session.skipped == {}
    users = [turn.text for turn in session.turns if turn.role == "user"]
    assert users == ["add a --check flag to the build script", QUEUED, "and keep the old flag as an alias"]
    text = mind_text(session, config.MIND_TRANSCRIPT_HEAD_CHARS, config.MIND_TRANSCRIPT_TAIL_CHARS)
    assert QUEUED in text
    assert "NOT TYPED" not in text


def test_regression_a_mind_never_saw_a_queued_prompt(layout, fake_claude, isolated) -> None:
    from sandman.pointers import write_pointer

    cwd = isolated / "proj"
    cwd.mkdir()
    relpath = f".archive/claude/2026/11/30/100000-proj/{SID}.jsonl"
    (layout.root / relpath).parent.mkdir(parents=True)
    (layout.root / relpath).write_text(transcript_2_1_332(SID, cwd), encoding="utf-8")
    write_pointer(layout, SID, {"host": "claude", "archived": relpath, "cwd": str(cwd),
                                "started": "2026-11-30T10:00:00Z", "ended": "2026-11-30T10:00:00Z",
                                "title": "flags", "highlights": []})
    dream(layout, now=True)
    calls = fake_claude.calls()
    assert calls and all(QUEUED in call["prompt"] for call in calls)


# --- the plugin's SessionEnd budget: take --hook --detach ------------------------


LIVE_SID = "dfc45ed6-cad1-409a-b518-e3cd2434929f"


def test_take_hook_detach_returns_at_once_and_the_child_takes(corpus, isolated, layout) -> None:
    source = corpus / "transcripts" / "claude" / "spotter" / "short.jsonl"
    text = source.read_text(encoding="utf-8")
    first = json.loads(text.splitlines()[0])
    live = isolated / ".claude" / "projects" / "-home-user-proj" / f"{LIVE_SID}.jsonl"
    live.parent.mkdir(parents=True)
    named = first.get("sessionId")
    live.write_text(text.replace(named, LIVE_SID) if named else text, encoding="utf-8")
    payload = (corpus / "hooks" / "session-end.other.live-2.1.332.json").read_text()
    payload = payload.replace("/home/user/.claude", str(isolated / ".claude"))
    done_r, done_w = os.pipe()  # the detached child holds done_w until it exits: EOF says it is done
    proc = subprocess.Popen([sys.executable, "-m", "sandman", "take", "--hook", "--detach"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=[done_w])
    os.close(done_w)
    out, err = proc.communicate(payload.encode(), timeout=120)
    assert (proc.returncode, out, err) == (0, b"", b"")
    with os.fdopen(done_r, "rb") as done:
        assert done.read() == b""  # blocks until the child has exited
    pointer = json.loads(layout.pointer(LIVE_SID).read_text())
    assert (layout.root / pointer["archived"]).is_file()
    assert os.path.samefile(live, layout.root / pointer["archived"])  # taken, and still resumable


def test_the_plugin_takes_detached_and_settings_hooks_do_not(isolated) -> None:
    from conftest import REPO

    plugin = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    assert plugin["SessionEnd"][0]["hooks"][0]["command"] == 'sh "${CLAUDE_PLUGIN_ROOT}/hooks/sandman" take --hook --detach'
    from sandman.verbs.hooks import install

    install(None)
    settings = json.loads((isolated / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    assert command.endswith("take --hook") and "--detach" not in command


def test_detach_without_hook_is_refused(isolated) -> None:
    from helpers import sandman

    done = sandman("take", "--detach")
    assert done.returncode == 2 and b"--detach goes with --hook" in done.stderr
