"""Memory at each prompt and at each file, proven with the real Claude Code 2.1.332 (tests/live_claude.py).

The hooks are installed as ``sandman hooks install`` writes them; the fake Messages API logs
every request body, so what the model would read is checked there, not in sandman's output.
The memories asked for sit in the user-wide bank behind 300 others, so that the start recall
(9,000 UTF-16 units) cuts their index lines: they reach the session only through these hooks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from live_claude import ToolUse, run_print, texts

FILLERS = 300
ZEPPELIN = "Zeppelin releases are cut by running make release-zeppelin from a clean checkout."
LEDGER = "In src/billing/ledger.py every amount is an integer count of cents, never a float."


def _remember(layout, memories: list[tuple[str, str]]) -> None:
    from sandman.banks.commit import bank_transaction
    from sandman.banks.memory import Memory
    from sandman.banks.names import USER_BANK

    with bank_transaction(layout, verb="test", subject="live moments") as tx:
        for name, body in memories:
            tx.write_memory(USER_BANK, Memory(name=name, description=f"About {name.lower()}", type="user", body=body + "\n",
                                              source=["test"]), directory=None)


@pytest.fixture
def root(layout, isolated):
    """A root whose user-wide bank holds 300 fillers and the two memories asked for (named to sort
    last, so the start recall cuts their lines), its search index built, and sandman's hooks
    installed in the test's Claude settings. Returns the project directory."""
    from sandman.banks import search
    from sandman.verbs.hooks import install
    from sandman.verbs.init import init

    init(layout)
    fillers = [(f"Filler fact {i:03d}", f"Filler fact {i:03d}: the module number {i} keeps its own conventions "
                f"for naming and layout, written down at length so that the index line is long.")
               for i in range(FILLERS)]
    _remember(layout, [*fillers, ("Zz zeppelin release", ZEPPELIN), ("Zz billing ledger cents", LEDGER)])
    search.open_index(layout).close()
    install()
    project = isolated / "project"
    (project / "src" / "billing").mkdir(parents=True)
    (project / "src" / "billing" / "ledger.py").write_text("TOTAL = 0\n", encoding="utf-8")
    return project


def _count(body: dict, text: str) -> int:
    return sum(part.count(text) for _, part in texts(body))


def _carriers(body: dict, text: str) -> list[tuple[str, str]]:
    """The role of each text block of ``body`` that holds ``text``, and what comes before ``sandman:`` in it."""
    return [(role, part.split("sandman:", 1)[0]) for role, part in texts(body) if text in part]


def _ledger(layout, channel: str) -> list[str]:
    return [line.split("\t")[2] for path in layout.delivered.glob("*.tsv")
            for line in path.read_text().splitlines() if line.split("\t")[1] == channel]


def test_a_prompt_gets_the_memory_its_words_match_that_the_start_recall_left_out(fake_api, root, layout):
    fake_api.script("noted")
    result = run_print("How do we ship a new zeppelin release?", root, fake_api)
    assert result.rc == 0, result.stderr
    (body,) = fake_api.messages()
    start = [line for line in _ledger(layout, "recall") + _ledger(layout, "recall-line") if "zz_" in line]
    assert start == []  # the start recall did not give it, not even its index line
    assert _count(body, ZEPPELIN) >= 1  # the prompt hook did
    assert _count(body, LEDGER) == 0  # nothing else: the other memory shares no word with the prompt
    assert [path.split("/")[1] for path in _ledger(layout, "prompt")] == ["user_zz_zeppelin_release.md"]
    # Claude Code 2.1.332 sends it in a system message, after the start's context, named by its event.
    [(role, before)] = _carriers(body, ZEPPELIN)
    assert role == "system" and before.endswith("UserPromptSubmit hook additional context: ")


def test_a_read_of_a_file_a_memory_names_gets_that_memory_once(fake_api, root, layout):
    target = str(root / "src" / "billing" / "ledger.py")
    fake_api.script(ToolUse("Read", {"file_path": target}, id="toolu_live_1"),
                    ToolUse("Read", {"file_path": target}, id="toolu_live_2"), "read twice")
    result = run_print("Look at the totals module", root, fake_api, args=["--allowedTools", "Read"])
    assert (result.rc, result.stdout.strip()) == (0, "read twice"), result.stderr
    first, after_one, after_two = fake_api.messages()
    assert _count(first, LEDGER) == 0
    assert _count(after_one, LEDGER) == 1  # beside the first read's result
    assert _count(after_two, LEDGER) == 1  # the second read of the same file adds it no more
    assert [path.split("/")[1] for path in _ledger(layout, "file")] == ["user_zz_billing_ledger_cents.md"]
    # Claude Code 2.1.332 sends it after the tool result, as a system message of its own.
    assert _carriers(after_one, LEDGER) == [("system", "PostToolUse:Read hook additional context: ")]


def test_the_plugins_hooks_bring_the_same_memories(fake_api, root, layout, tmp_path):
    from live_claude import plugin_copy, write_settings

    write_settings({})  # the settings hooks out: the plugin's hooks/hooks.json alone
    plugin = plugin_copy(tmp_path / "plugin")
    target = str(root / "src" / "billing" / "ledger.py")
    fake_api.script(ToolUse("Read", {"file_path": target}), "done")
    result = run_print("How do we ship a new zeppelin release?", root, fake_api, plugin_dirs=[plugin],
                       args=["--allowedTools", "Read"])
    assert result.rc == 0, result.stderr
    first, second = fake_api.messages()
    assert _count(first, ZEPPELIN) >= 1 and _count(second, LEDGER) == 1


def test_a_search_the_model_runs_is_counted_for_its_session(fake_api, root, layout):
    fake_api.script(ToolUse("Bash", {"command": "sandman search zeppelin", "description": "search memory"}), "found")
    result = run_print("What do we know about zeppelin?", root, fake_api, args=["--allowedTools", "Bash"])
    assert result.rc == 0, result.stderr
    # Claude Code 2.1.332 gives the commands it runs $CLAUDE_CODE_SESSION_ID: the search lands in that session's ledger.
    [session] = [path.stem for path in layout.delivered.glob("*.tsv")
                 if any(line.split("\t")[1] == "search" for line in path.read_text().splitlines())]
    channels = [line.split("\t")[1] for line in layout.delivered_ledger(session).read_text().splitlines()]
    assert "recall-line" in channels  # the same session's start surface, recorded by recall --hook
    assert "user_zz_zeppelin_release.md" in layout.delivered_ledger(session).read_text()
