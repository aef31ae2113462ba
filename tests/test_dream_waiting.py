"""Learning arrives by the next morning (issue 27, item 6): a session waiting past a set time is
dreamt by the nightly reflect though the queue never reached its depth; both are settings; recall
says how many sessions wait and since when."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from dream_helpers import bank_memories, model, proposal, transcript_lines
from helpers import sandman
from reflect_helpers import LOG_MODEL, entry_reply, minds
from sandman import config, dreamqueue, journal
from sandman.errors import ConfigError
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.verbs import take as take_module
from sandman.verbs.recall import recall
from sandman.verbs.reflect import reflect

assert minds  # a fixture, used by name below
SID = "5e550000-0000-4000-8000-00000000aa01"


def _take_one(layout: Layout, isolated, cwd) -> None:
    folder = config.claude_projects_dir() / "-proj"
    folder.mkdir(parents=True)
    transcript = folder / f"{SID}.jsonl"
    transcript.write_text(transcript_lines(SID, cwd, "2026-12-01T10:00:00Z", "Deploys go through make release"))
    payload = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(cwd),
               "hook_event_name": "SessionEnd", "reason": "other"}
    assert sandman("take", "--hook", stdin=json.dumps(payload).encode()).returncode == 0
    assert read_pointer(layout.pointer(SID)) is not None


def _age_pointer(layout: Layout, hours: float) -> None:
    path = layout.pointer(SID)
    data = json.loads(path.read_text())
    data["taken"] = journal.iso(journal.now_utc() - timedelta(hours=hours))
    path.write_text(json.dumps(data))


@pytest.fixture
def cwd(isolated):
    folder = isolated / "proj"
    folder.mkdir()
    return folder


def test_one_session_and_a_nights_reflect_later_its_memories_are_committed(layout: Layout, minds, cwd,
                                                                            isolated) -> None:
    _take_one(layout, isolated, cwd)
    deploy = proposal(cwd, "Deploys go through make release", "make release tags and publishes")
    for mind in ("fable", "opus", "sonnet"):
        minds.answer(model(mind), {"memories": [deploy]})
    minds.answer(LOG_MODEL, entry_reply())
    first = reflect(layout)  # the same evening: it has not waited 12 h
    assert first.dream is not None and first.dream.stopped == "not due" and bank_memories(layout, cwd) == []
    _age_pointer(layout, 13)  # the night went by
    summary = reflect(layout)
    assert dreamqueue.queue(layout) == []
    assert [m.name for m in bank_memories(layout, cwd)] == ["Deploys go through make release"]
    assert summary.dream.total("committed") == 1
    assert any(line.startswith("dream: 1 pointer(s) tried: 1 routed") for line in summary.lines())


def test_a_take_starts_the_dream_once_a_session_has_waited(layout: Layout, cwd, isolated,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _take_one(layout, isolated, cwd)
    assert dreamqueue.due_reason(layout) == (None, 1)
    _age_pointer(layout, 12.5)
    assert dreamqueue.due_reason(layout) == ("waited", 1)
    spawned = []
    monkeypatch.setattr(take_module, "spawn_dream", lambda layout_, lock=None: spawned.append(1) or 4242)
    assert take_module.dream_if_due(layout) == 4242 and spawned == [1]


def test_the_depth_and_the_wait_are_settings(layout: Layout, cwd, isolated, monkeypatch: pytest.MonkeyPatch) -> None:
    _take_one(layout, isolated, cwd)
    monkeypatch.setenv("SANDMAN_DREAM_DUE_POINTERS", "1")
    assert dreamqueue.due_reason(layout) == ("queue", 1)
    monkeypatch.setenv("SANDMAN_DREAM_DUE_POINTERS", "5")
    monkeypatch.setenv("SANDMAN_DREAM_WAIT_HOURS", "0.001")  # 3.6 s
    _age_pointer(layout, 0.01)
    assert dreamqueue.due_reason(layout) == ("waited", 1)


@pytest.mark.parametrize("name, value, message", [
    ("SANDMAN_DREAM_DUE_POINTERS", "0", "SANDMAN_DREAM_DUE_POINTERS='0' must be 1 or more"),
    ("SANDMAN_DREAM_DUE_POINTERS", "ten", "SANDMAN_DREAM_DUE_POINTERS='ten' is not a whole number"),
    ("SANDMAN_DREAM_WAIT_HOURS", "-1", "SANDMAN_DREAM_WAIT_HOURS='-1' must be a finite number greater than 0"),
    ("SANDMAN_DREAM_WAIT_HOURS", "soon", "SANDMAN_DREAM_WAIT_HOURS='soon' is not a number"),
])
def test_a_bad_setting_is_one_line_and_exit_2(layout: Layout, monkeypatch: pytest.MonkeyPatch,
                                                name: str, value: str, message: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        dreamqueue.due_reason(layout)
    done = sandman("dream")
    assert (done.returncode, done.stderr.decode()) == (2, f"sandman: {message}\n")


def test_recall_says_how_many_sessions_wait_and_since_when(layout: Layout, cwd, isolated) -> None:
    assert "Waiting to be dreamt" not in recall(layout, str(cwd)).text
    _take_one(layout, isolated, cwd)
    _age_pointer(layout, 3)
    since = (journal.now_utc() - timedelta(hours=3)).strftime("%Y-%m-%d %H:%M")
    lines = recall(layout, str(cwd)).text.splitlines()
    assert lines[1] == (f"Waiting to be dreamt: 1 session, the oldest since {since} UTC "
                        "(a dream is due at 10, or once one has waited 12 h).")
