"""The secrets ban on the surfaces that are not memories (issue 22; docs/secrets.md): what the minds
read and what the site shows are masked. A pointer's highlights and title: tests/test_take.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dream_helpers import archive_session
from secrets_corpus import credentials
from sandman.pointers import read_pointer, write_pointer
from sandman.site import gather
from sandman.store.repo import ensure_root
from sandman.verbs.dream import dream

SID = "5b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6f"
BY_KIND = dict(credentials())


def _word(text: str, prefix: str) -> str:
    (word,) = [word for word in text.split() if word.startswith(prefix)]
    return word


@pytest.fixture
def cwd(isolated: Path) -> Path:
    path = isolated / "proj"
    path.mkdir()
    return path


def test_the_minds_never_read_a_secret_of_the_session(layout, fake_claude, cwd) -> None:
    in_text, in_title, in_highlight = BY_KIND["stripe-webhook-secret"], BY_KIND["slack-bot"], BY_KIND["cli-sshpass"]
    pointer = archive_session(layout, SID, cwd, ended="2026-11-30T10:00:00Z",
                              text="We deploy with make. " + in_text, title="deploy " + in_title)
    write_pointer(layout, SID, {**read_pointer(pointer).data, "highlights": ["Ops note: " + in_highlight]})
    dream(layout, now=True)
    calls = fake_claude.calls()
    assert calls
    for call in calls:
        prompt = call["prompt"]
        assert "We deploy with make." in prompt and "[secret]" in prompt
        for value in (_word(in_text, "whsec_"), _word(in_title, "xoxb-"), in_highlight.split("'")[1]):
            assert value not in prompt, (call["model"], value)


def test_the_site_masks_a_secret_in_a_queued_pointers_title(layout, cwd) -> None:
    ensure_root(layout)
    token = BY_KIND["github-classic-pat"].split()[1]
    write_pointer(layout, SID, {"host": "claude", "archived": "x.jsonl", "cwd": str(cwd), "started": None,
                                "ended": "2026-11-30T10:00:00Z", "title": f"push with {token}", "highlights": []})
    (queued,) = gather._queue(layout)
    assert queued["title"] == "push with [secret]" and token not in json.dumps(queued)
