"""Private spans: ``<private>…</private>`` never reaches a mind, a memory, a pointer or the site,
and the archived transcript stays byte-identical (docs/BANK-FORMAT.md, "Private spans")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dream_helpers import model, proposal
from sandman import private
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.transcripts import read_session, summarize
from sandman.verbs.dream import dream
from sandman.verbs.remember import remember
from sandman.verbs.site import site
from sandman.verbs.take import take

SECRET = "the vault passphrase is orange-kettle-42"
SID = "0a1b2c3d-0000-4000-8000-000000000019"


def test_redact_hides_spans_tags_included_and_an_unclosed_span_to_the_end() -> None:
    assert private.redact("a <private>b</private> c <PRIVATE>d\ne</Private> f") == "a [private] c [private] f"
    assert private.redact("keep <private>cut short at eighty charac") == "keep [private]"
    assert private.redact("a stray </private> stays") == "a stray </private> stays"
    assert private.spans("x <private> one </private> <private>two") == ["one", "two"]


def test_scrub_also_hides_the_text_where_it_recurs_unmarked() -> None:
    assert private.scrub(f"You said {SECRET}.", [SECRET]) == "You said [private]."
    assert private.scrub("yes, and yes", ["yes"]) == "yes, and yes", "a short span is not hunted elsewhere"


def transcript(cwd: Path) -> str:
    lines = [
        {"type": "user", "sessionId": SID, "cwd": str(cwd), "timestamp": "2026-11-30T10:00:00Z", "uuid": "u1",
         "parentUuid": None, "message": {"role": "user", "content":
                                         f"Set up the deploy. <private>{SECRET}</private> Use make."}},
        {"type": "assistant", "sessionId": SID, "cwd": str(cwd), "timestamp": "2026-11-30T10:00:05Z",
         "uuid": "u2", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": f"Understood: {SECRET}."}]}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def everything_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and ".archive" not in path.parts]


def test_a_private_span_reaches_no_mind_memory_pointer_or_page(layout: Layout, isolated: Path, fake_claude) -> None:
    cwd = isolated / "proj"
    cwd.mkdir()
    live = isolated / "live" / f"{SID}.jsonl"
    live.parent.mkdir()
    live.write_text(transcript(cwd), encoding="utf-8")
    original = live.read_bytes()
    # A mind whose reply carries a private span (it never read one: a scripted reply).
    echo = proposal(cwd, "Deploy setup", "How the deploy is set up",
                    body="Use make. <private>a note the mind marked private</private>")
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.answer(model(mind), {"memories": [echo]})

    taken = take(layout, SID, force=True, transcript=live)
    assert taken.archived.read_bytes() == original, "the archive keeps every byte"
    pointer = read_pointer(taken.pointer)
    assert SECRET not in taken.pointer.read_text(encoding="utf-8")
    assert pointer.data["title"] == "Set up the deploy. [private] Use make."
    dream(layout, now=True)

    prompts = [call["prompt"] for call in fake_claude.calls()]
    assert prompts and all(SECRET not in prompt for prompt in prompts)
    assert any("USER: Set up the deploy. [private] Use make." in prompt for prompt in prompts)
    memories = list(layout.memories.glob("*/project_*.md"))
    assert [path.read_text(encoding="utf-8").split("\n---\n\n")[1] for path in memories] == ["Use make. [private]\n"]
    site(layout)
    for path in everything_under(layout.root):
        assert SECRET.encode() not in path.read_bytes(), path


def test_the_readers_hide_private_spans_in_title_turns_and_highlights(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(transcript(tmp_path), encoding="utf-8")
    for session in (read_session(path), summarize(path)):
        assert session.title == "Set up the deploy. [private] Use make."
        assert all(SECRET not in turn.text for turn in session.turns)


def test_remember_hides_a_private_span_and_refuses_a_body_that_is_all_private(layout: Layout,
                                                                             isolated: Path) -> None:
    committed = remember(layout, f"Deploys use make. <private>{SECRET}</private>", cwd=str(isolated))
    text = committed.path.read_text(encoding="utf-8")
    assert SECRET not in text and "Deploys use make. [private]" in text
    with pytest.raises(InputError, match=r"memory body is all <private>…</private>; nothing is left to remember"):
        remember(layout, f"<private>{SECRET}</private>", cwd=str(isolated))
