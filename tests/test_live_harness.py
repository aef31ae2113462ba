"""The live harness itself (tests/live_claude.py): the fake API speaks what Claude Code 2.1.332 reads."""

from __future__ import annotations

import json

from live_claude import ToolUse, run_print, system_text, texts, tool_results


def test_a_headless_session_prints_the_fake_apis_reply_and_the_fake_logs_its_request(fake_api, isolated):
    fake_api.script("PONG from the fake API")
    result = run_print("ping", isolated, fake_api)
    assert (result.rc, result.stdout.strip()) == (0, "PONG from the fake API")
    assert [request["path"] for request in result.requests] == ["/v1/messages?beta=true"]
    (body,) = [request["body"] for request in result.requests]
    assert body["stream"] is True and body["model"]
    assert ("user", "ping") in texts(body)
    assert "Claude" in system_text(body)


def test_a_tool_use_reply_runs_the_tool_and_its_result_comes_back(fake_api, isolated):
    (isolated / "note.txt").write_text("the note's text", encoding="utf-8")
    fake_api.script(ToolUse("Read", {"file_path": str(isolated / "note.txt")}), "read it")
    result = run_print("read note.txt", isolated, fake_api, args=["--allowedTools", "Read"])
    assert (result.rc, result.stdout.strip()) == (0, "read it")
    first, second = fake_api.messages()
    assert tool_results(first) == []
    (result_block,) = tool_results(second)
    assert "the note's text" in json.dumps(result_block)


def test_an_interactive_session_in_tmux_answers_and_exits(fake_api, isolated):
    from live_claude import Tmux

    fake_api.script("INTERACTIVE REPLY")
    with Tmux(isolated, fake_api) as session:
        session.wait_for("❯")
        session.send("hello")
        session.wait_for("INTERACTIVE REPLY")
        session.send("/exit")
        session.wait_for(session.exited)
    assert ("user", "hello") in texts(fake_api.messages()[0])
