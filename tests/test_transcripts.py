"""The transcript readers: the real corpus, each host's rules, bad lines, mind_text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandman import config
from sandman.errors import UnrecognisedTranscript
from sandman.transcripts import mind_text, read_session, sniff, summarize
from sandman.transcripts.tools import remember_bodies, summary
from corpus_table import CASES, Case

# -- the real corpus ---------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_transcript_reads_its_facts(corpus: Path, case: Case):
    path = corpus / "transcripts" / case.file
    assert sniff(path) == case.host
    session = read_session(path)
    assert (session.host, session.session_id, session.cwd, session.ended, session.title) == (
        case.host, case.session, case.cwd, case.ended, case.title)
    assert session.started is not None and session.started <= session.ended
    assert len(session.title) <= config.TITLE_MAX_CHARS
    assert session.turns, "a real session has turns"
    expected_skips = {"unknown type": 1} if "future_synthetic_record" in path.read_text() else {}
    assert session.skipped == expected_skips


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_summarize_gives_the_same_facts_as_a_full_read(corpus: Path, case: Case):
    path = corpus / "transcripts" / case.file
    full, lean = read_session(path), summarize(path)
    assert (lean.session_id, lean.cwd, lean.started, lean.ended, lean.title, lean.highlights) == (
        full.session_id, full.cwd, full.started, full.ended, full.title, full.highlights)
    assert lean.turns == []


def test_claude_turns_in_order_with_tool_summaries(corpus: Path):
    session = read_session(corpus / "transcripts/claude/spotter/short.jsonl")
    assert [t.role for t in session.turns] == [
        "user", "assistant", "tool_call", "tool_call", "tool_result", "tool_result"]
    calls = [t for t in session.turns if t.role == "tool_call"]
    assert calls[0].text == "Bash: mix phx.server 2>&1 | head -80" and calls[0].tool == "Bash"
    assert calls[1].text == "Glob: mix.exs"
    results = [t for t in session.turns if t.role == "tool_result"]
    assert [r.tool for r in results] == ["Bash", "Glob"]
    assert results[0].text.startswith("The user doesn't want to proceed")
    assert all(t.timestamp and t.timestamp.endswith("Z") for t in session.turns)


def test_command_echoes_caveats_and_interrupts_are_not_prompts(corpus: Path):
    session = read_session(corpus / "transcripts/claude/agentlogs/compact.jsonl")
    assert [t.text for t in session.turns if t.role == "user"] == ["how are you doing"]
    tool_heavy = read_session(corpus / "transcripts/claude/spotter/tool_heavy.jsonl")
    prompts = [t.text for t in tool_heavy.turns if t.role == "user"]
    assert prompts[0] == "start phoenix in background"
    assert not any(p.startswith(("[Request interrupted", "<", "Caveat")) for p in prompts)


def test_compaction_summaries_are_compaction_turns(corpus: Path):
    for name in ("claude/agentlogs/compact.jsonl",
                 "claude/spotter/compact-window/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"):
        session = read_session(corpus / "transcripts" / name)
        compactions = [t for t in session.turns if t.role == "compaction"]
        assert len(compactions) == 1
        assert compactions[0].text.startswith("This session is being continued")


def test_sidechain_turns_are_marked_inline_and_mirrored(corpus: Path):
    inline = read_session(corpus / "transcripts/claude/agentlogs/subagent.jsonl")
    side = [t for t in inline.turns if t.sidechain]
    assert [t.role for t in side] == ["user", "assistant"]
    assert side[0].text.startswith("Hey there! Just checking in")
    mirrored = read_session(corpus / "transcripts/claude/spotter/subagent.jsonl")
    assert any(t.sidechain and t.role == "tool_call" for t in mirrored.turns)
    assert not any(t.sidechain for t in mirrored.turns if t.role == "user" and t.text.startswith("/handgemacht"))


def test_image_in_a_tool_result_reads_as_image(corpus: Path):
    session = read_session(corpus / "transcripts/claude/agentlogs/images.jsonl")
    assert any("[image]" in t.text for t in session.turns if t.role == "tool_result")


def test_codex_injected_context_is_not_a_prompt(corpus: Path):
    session = read_session(corpus / "transcripts/codex/agentlogs/crud.jsonl")
    prompts = [t.text for t in session.turns if t.role == "user"]
    assert len(prompts) == 1 and prompts[0].startswith("create a file `JOKE.md`")
    calls = [t.text for t in session.turns if t.role == "tool_call"]
    assert calls[0].startswith("exec_command: cat <<'EOF' >")
    assert "apply_patch: update /Users/user/dev/agentlogs/fixtures/JOKE.md" in calls


def test_codex_pasted_image_reads_as_image(corpus: Path):
    session = read_session(corpus / "transcripts/codex/agentlogs/images.jsonl")
    first = next(t for t in session.turns if t.role == "user")
    assert first.text == "[image]\nwhy does the claude code label break here on the /team dashboard? [Image #1]"


# -- titles -------------------------------------------------------------------


def _write(tmp_path: Path, lines: list, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def _user(text, uuid="u1", **extra):
    return {"type": "user", "uuid": uuid, "sessionId": "s-1", "cwd": "/w", "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": text}, **extra}


def _bash(command, uuid="a1"):
    return {"type": "assistant", "uuid": uuid, "sessionId": "s-1", "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"t-{uuid}", "name": "Bash", "input": {"command": command}}]}}


def test_title_prefers_rename_then_ai_title_then_own_summary_then_prompt(tmp_path: Path):
    prompt = _user("fix the parser")
    own = {"type": "summary", "summary": "Parser fix", "leafUuid": "u1"}
    other = {"type": "summary", "summary": "Another session", "leafUuid": "elsewhere"}
    ai = {"type": "ai-title", "aiTitle": "AI title", "sessionId": "s-1"}
    custom = {"type": "custom-title", "customTitle": "My name", "sessionId": "s-1"}
    for lines, title in (
        ([other, prompt], "fix the parser"),
        ([own, prompt, other], "Parser fix"),
        ([own, prompt, ai], "AI title"),
        ([custom, own, prompt, ai], "My name"),
    ):
        path = _write(tmp_path, lines)
        assert read_session(path).title == title
        assert summarize(path).title == title


def test_slash_command_with_arguments_is_a_prompt_without_is_an_echo(tmp_path: Path):
    path = _write(tmp_path, [
        _user("<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"),
        _user("<command-name>/review</command-name>\n<command-args>the parser</command-args>", uuid="u2"),
    ])
    assert read_session(path).title == "/review the parser"


def test_long_title_is_cut_to_eighty_characters_on_one_line(tmp_path: Path):
    path = _write(tmp_path, [_user("word " * 40 + "\nsecond line")])
    title = read_session(path).title
    assert len(title) <= config.TITLE_MAX_CHARS and title.endswith("…") and "\n" not in title


def test_meta_lines_and_compaction_are_not_titles(tmp_path: Path):
    path = _write(tmp_path, [
        _user("Create beads (skill body)", isMeta=True),
        _user("This session is being continued from a previous conversation.", uuid="u2", isCompactSummary=True),
        _user("the real ask", uuid="u3"),
    ])
    assert read_session(path).title == "the real ask"


# -- highlights ---------------------------------------------------------------


@pytest.mark.parametrize("command, bodies", [
    ('sandman remember "Run tests with pytest -rs" --type feedback', ["Run tests with pytest -rs"]),
    ("cd /w && /home/u/.local/bin/sandman remember --type project 'Build with make' && echo ok", ["Build with make"]),
    ('python3 -m sandman remember --cwd /w --name N "Body here"', ["Body here"]),
    ("sandman remember - <<'EOF'\nThe deploy key lives in vault\nEOF", ["The deploy key lives in vault"]),
    ('sandman remember "one"; sandman remember "two"', ["one", "two"]),
    ('sandman remember "unbalanced', []),
    ("sandman recall --hook", []),
    ("echo sandman remember", []),
])
def test_remember_bodies_from_shell_commands(command: str, bodies: list[str]):
    assert remember_bodies(command) == bodies


def _result(tool_use_id, text, is_error=False, uuid="r1"):
    return {"type": "user", "uuid": uuid, "sessionId": "s-1", "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": is_error}]}}


def _codex_call(call_id, command):
    return {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item", "payload": {
        "type": "function_call", "name": "exec_command", "call_id": call_id,
        "arguments": json.dumps({"cmd": command})}}


def _codex_output(call_id, output):
    return {"timestamp": "2026-01-01T00:00:02Z", "type": "response_item", "payload": {
        "type": "function_call_output", "call_id": call_id, "output": output}}


def test_highlights_come_from_bash_mcp_and_codex_calls_without_repeats(tmp_path: Path):
    mcp = {"type": "assistant", "uuid": "a3", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t3", "name": "mcp__sandman__remember", "input": {"body": "From MCP"}}]}}
    path = _write(tmp_path, [
        _user("go"), _bash('sandman remember "Keep this"'), _result("t-a1", "/r/memories/x/project_keep_this.md"),
        _bash('sandman remember "Keep this"', uuid="a2"), _result("t-a2", "/r/x.md", uuid="r2"),
        mcp, _result("t3", "/r/memories/x/project_from_mcp.md", uuid="r3"),
    ])
    assert read_session(path).highlights == ["Keep this", "From MCP"]
    assert summarize(path).highlights == ["Keep this", "From MCP"]
    codex = _write(tmp_path, [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "c-1", "cwd": "/w"}},
        _codex_call("c1", 'sandman remember "Codex kept this"'),
        _codex_output("c1", "Process exited with code 0\nOutput:\n/r/memories/w/project_codex.md\n"),
        {"timestamp": "2026-01-01T00:00:02Z", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "c2",
            "arguments": json.dumps({"command": ["bash", "-lc", "sandman remember 'And this'"]})}},
        _codex_output("c2", "/r/memories/w/project_and_this.md"),
    ], "rollout.jsonl")
    assert read_session(codex).highlights == ["Codex kept this", "And this"]
    assert summarize(codex).highlights == ["Codex kept this", "And this"]


def test_a_refused_remember_is_never_a_highlight(tmp_path: Path):
    """A remember the secrets ban refused must not reach recall through the pointer."""
    secret = 'sandman remember "Deploy with 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"'
    refusal = "Exit code 2\nsandman: memory refused: it contains a secret (GitHub Token)"
    mcp = {"type": "assistant", "uuid": "a3", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t3", "name": "mcp__sandman__remember", "input": {"body": "AKIAUJZDE8GXD6NCF10E"}}]}}
    path = _write(tmp_path, [
        _user("go"), _bash(secret), _result("t-a1", refusal, is_error=True),
        mcp, _result("t3", "memory refused: it contains a secret (AWS Access Key)", is_error=True, uuid="r3"),
        _bash('sandman remember "Never answered"', uuid="a4"),  # the session ended before its result
    ])
    assert read_session(path).highlights == [] and summarize(path).highlights == []
    codex = _write(tmp_path, [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "c-1", "cwd": "/w"}},
        _codex_call("c1", secret), _codex_output("c1", "Process exited with code 2\nOutput:\n" + refusal),
    ], "rollout.jsonl")
    assert read_session(codex).highlights == [] and summarize(codex).highlights == []


def test_tool_summary_is_one_line_and_bounded():
    line = summary("Bash", {"command": "echo a\necho b " + "x" * 500})
    assert "\n" not in line and line.startswith("Bash: echo a echo b") and len(line) <= 220
    assert summary("TodoWrite", {"todos": []}) == "TodoWrite"
    assert summary("Read", {"file_path": "/a/b.py", "limit": 5}) == "Read: /a/b.py"


# -- bad input ----------------------------------------------------------------


def test_bad_lines_are_counted_never_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(config, "TRANSCRIPT_LINE_MAX_BYTES", 300_000)
    path = tmp_path / "bad.jsonl"
    good = json.dumps(_user("hello")).encode()
    path.write_bytes(b"\n".join([
        good,
        b"not json at all",
        b"\xff\xfe\x00 invalid utf-8",
        b"[1, 2, 3]",
        json.dumps({"type": "brand-new-kind", "sessionId": "s-1"}).encode(),
        json.dumps({"type": "user", "message": "not an object"}).encode(),
        b"[" * 100_000 + b"]" * 100_000,
        b'{"type": "user", "padding": "' + b"x" * 400_000 + b'"}',
        b"",
        good[: len(good) // 2],  # the last line, cut off mid-write
    ]))
    session = read_session(path)
    assert session.skipped == {"not JSON": 2, "not UTF-8": 1, "not an object": 1, "unknown type": 1,
                               "malformed": 1, "too long": 1, "truncated": 1}
    assert session.title == "hello"
    assert summarize(path).title == "hello"


def test_a_byte_order_mark_does_not_cost_the_first_line(tmp_path: Path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_user("first")).encode() + b"\n")
    assert sniff(path) == "claude" and read_session(path).title == "first"


@pytest.mark.parametrize("content", [b"", b"\n\n", b'{"foo": 1}\n{"bar": 2}\n', b"plain text\n", b"\x00\x01\x02"])
def test_a_file_no_host_claims_is_unrecognised_not_empty(tmp_path: Path, content: bytes):
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    assert sniff(path) is None
    with pytest.raises(UnrecognisedTranscript, match="not a Claude Code transcript or a Codex rollout"):
        read_session(path)


def test_sniff_reads_a_first_line_longer_than_its_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(config, "SNIFF_MAX_BYTES", 256)
    claude = tmp_path / "c.jsonl"
    claude.write_text(json.dumps({"parentUuid": None, "sessionId": "s", "pad": "x" * 5000}) + "\n")
    codex = tmp_path / "x.jsonl"
    codex.write_text(json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"pad": "x" * 5000}}) + "\n")
    assert (sniff(claude), sniff(codex)) == ("claude", "codex")


def test_sniff_skips_damaged_first_lines(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"garbage\n\xff\xff\n" + json.dumps(_user("x")).encode() + b"\n")
    assert sniff(path) == "claude"


# -- mind_text ----------------------------------------------------------------


def test_mind_text_keeps_the_conversation_and_leaves_results_and_thinking_out(corpus: Path):
    text = mind_text(read_session(corpus / "transcripts/claude/spotter/short.jsonl"))
    assert text.startswith("USER: mix phx.server doesnt seem to start")
    assert "TOOL: Bash: mix phx.server 2>&1 | head -80" in text
    assert "doesn't want to proceed" not in text  # a tool result
    assert "trouble starting their Phoenix server" not in text  # thinking
    sidechain = mind_text(read_session(corpus / "transcripts/claude/agentlogs/subagent.jsonl"))
    assert "SUBAGENT USER: Hey there!" in sidechain


def test_mind_text_keeps_head_and_tail_and_marks_the_cut(corpus: Path):
    session = read_session(corpus / "transcripts/claude/spotter/subagent.jsonl")
    whole = mind_text(session)
    capped = mind_text(session, head_chars=1000, tail_chars=2000)
    assert len(whole) > 3000
    assert capped.startswith(whole[:1000]) and capped.endswith(whole[-2000:])
    assert f"[... {len(whole) - 3000:,} characters of the transcript cut here ...]" in capped
    assert mind_text(session, head_chars=len(whole), tail_chars=0) == whole
