"""The reading session's profile in the real Claude Code 2.1.332 (docs/breathe.md, "The runner";
docs/live-tests.md).

The session runs exactly as ``sandman breathe run`` starts it (machine.reading.command: the
sandbox, ``dontAsk``, the guard in its reading mode, ``--max-turns``, ``--max-budget-usd``), in the
memory root, and the fake Messages API answers with ``tool_use`` blocks: ``sandman breathe file``
(a here-document) files a breath; a ``touch`` outside the verbs, a ``Write`` and a ``WebFetch`` of a
host no source names are refused. Needs ``bwrap`` and ``socat``; skips without them, saying so.
"""

from __future__ import annotations

import json
from live_claude import ToolUse, run_print, tool_results
from test_live_guard import needs_the_sandbox, text_of

from sandman.machine import breath, reading
from sandman.machine import trail as trails
from sandman.verbs.init import init


def test_a_reading_session_files_breaths_and_nothing_else_in_the_real_claude_code(layout, tmp_path, fake_api):
    needs_the_sandbox()
    init(layout)
    repo = tmp_path / "code" / "app"
    repo.mkdir(parents=True)
    layout.settings_file.write_text(f'[machine]\nroots = ["{repo.parent}"]\ntime_zone = "UTC"\n'
                                    "budget_usd_day = 5.0\n")
    breath.init(layout)
    made = breath.compose_pass(layout, depth="deep")
    session = "6f1c2a9e-0000-4000-8000-00000000abcd"
    breath.attach(layout, made.id, session)
    argv, env = reading.command(layout, made, session, "deep", 5.0)
    assert argv[argv.index("--max-turns") + 1] == "80" and argv[argv.index("--max-budget-usd") + 1] == "5.00"
    document = json.dumps({"title": "Hooks match by tool", "address": "https://example.org/changelog#2",
                           "source": made.sources[0]["name"], "repo": str(repo), "pass": made.id,
                           "scores": {"bearing": 0.7, "novelty": 0.5, "provenance": 0.9},
                           "body": "The recall hook could skip Bash."})
    outside = tmp_path / "outside.txt"
    fake_api.script(
        ToolUse("Bash", {"command": f"sandman breathe file <<'JSON'\n{document}\nJSON"}, id="toolu_file"),
        ToolUse("Bash", {"command": f"touch {outside}"}, id="toolu_touch"),
        ToolUse("Write", {"file_path": str(layout.root / "note.md"), "content": "x"}, id="toolu_write"),
        ToolUse("WebFetch", {"url": "https://elsewhere.example.com/", "prompt": "read"}, id="toolu_fetch"),
        ToolUse("Bash", {"command": f"sandman breathe close {made.id}"}, id="toolu_close"),
        "done")
    done = run_print("read", layout.root, fake_api, args=argv[2:], env_extra=env)
    assert done.rc == 0, done.stderr
    results = {block["tool_use_id"]: block for body in fake_api.messages() for block in tool_results(body)}
    assert results["toolu_file"].get("is_error") is not True, text_of(results["toolu_file"])
    for refused in ("toolu_touch", "toolu_write", "toolu_fetch"):
        assert results[refused].get("is_error") is True, (refused, text_of(results[refused]))
    assert not outside.exists() and not (layout.root / "note.md").exists()
    [filed] = breath.list_breaths(layout)
    assert filed.pass_id == made.id and filed.repo == str(repo)
    assert json.loads((layout.breath_pass(made.id) / "pass.json").read_text())["closed_at"]
    denied = {e.data["rule"] for e in trails.read(layout).events if e.kind == "guard.deny"}
    assert denied == {"reading-command", "reading-network"}  # the guard refused the touch and the fetch
    assert "No such tool available: Write" in text_of(results["toolu_write"])  # denied by name: not offered
    assert text_of(results["toolu_file"]) == filed.id
