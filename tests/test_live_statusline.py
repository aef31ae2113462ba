"""The status line, proven with the real Claude Code 2.1.332 in tmux (tests/live_claude.py): it runs the
command ``hooks install --statusline`` writes, gives it the JSON docs/statusline.md describes, and shows
the line of the open shift under the prompt."""

from __future__ import annotations

import json
import shlex

from live_claude import Tmux, write_settings

from sandman.verbs import hooks

SHIFT = "s-20261201T2300Z"


def test_claude_code_runs_the_status_line_and_shows_the_open_shift(fake_api, isolated, layout):
    (layout.shifts / SHIFT).mkdir(parents=True)
    layout.shift_current.write_text(json.dumps({"shift": SHIFT, "state": "open", "repo": "/code/app"}))
    (layout.shifts / SHIFT / "meta.json").write_text(json.dumps(
        {"id": SHIFT, "weekday": "Tuesday", "theme": "Refactor", "repo": "/code/app", "rest": False}))
    payload = isolated / "statusline-payload.json"
    command = f"tee {shlex.quote(str(payload))} | {hooks.statusline_command()}"  # keeps what Claude Code sent
    write_settings({"statusLine": {"type": "command", "command": command, "padding": 0}})
    fake_api.script("ok")

    with Tmux(isolated, fake_api) as session:
        session.wait_for("❯")
        session.send("hello")
        session.wait_for(f"sandman {SHIFT} · Tuesday Refactor · app")  # under the prompt
        session.send("/exit")
        session.wait_for(session.exited)

    sent = json.loads(payload.read_text())
    assert {"session_id", "cwd", "model", "workspace", "cost"} <= set(sent)
    assert sent["workspace"]["current_dir"] == str(isolated) and isinstance(sent["model"]["id"], str)


def test_the_trail_and_shift_commands_carry_todays_events_and_the_shifts_at_once(fake_api, isolated, layout,
                                                                                  tmp_path):
    from live_claude import plugin_copy, run_print, texts

    from sandman.machine import trail as trails
    from sandman.verbs.init import init

    init(layout)
    event = trails.append(layout, "shift.commit", "split the parser")  # today, on the real clock
    layout.shift_current.parent.mkdir(parents=True, exist_ok=True)
    layout.shift_current.write_text(json.dumps({"shift": SHIFT, "state": "open", "repo": "/code/app"}))
    plugin = plugin_copy(tmp_path / "plugin", mcp=False)

    for command, expected in (("/sandman:trail", f"{event.id}"), ("/sandman:shift", f"open: {SHIFT} (open)")):
        fake_api.script("shown")
        result = run_print(command, isolated, fake_api, plugin_dirs=[plugin], args=["--output-format", "json"])
        assert result.rc == 0, result.stderr
        assert json.loads(result.stdout)["permission_denials"] == []
        said = "\n".join(text for role, text in texts(result.requests[0]["body"]) if role == "user")
        assert expected in said, said  # the command's output is in the prompt: no tool call needed
        assert len(result.requests) == 1  # one answer, no tool round
