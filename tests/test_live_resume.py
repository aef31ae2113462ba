"""Resume after a take, with the real Claude Code 2.1.332 against a fake Messages API (issue 27, item 1).

A session ends (its SessionEnd hook runs ``sandman take --hook``), is resumed by
``--resume <id>`` and by ``--continue`` with its earlier turns in the request
body, ends again and is taken again; the dream (fake minds) learns each part
once; ``forget`` leaves no copy. docs/take.md, "Resume after a take".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dream_helpers import bank_memories, journal_lines, model, proposal
from live_claude import run_print, texts, write_settings
from sandman.archive import parts
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.dream.run import run_queue

FIRST = "Remember this: deploys go through make release"
SECOND = "And the staging server listens on port 8443"
THIRD = "One more thing: the nightly job runs at 03:30"
# As `hooks install` writes it: a settings hook's timeout is honoured (SessionEnd's default is 1.5 s).
SETTINGS = {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "sandman take --hook",
                                                  "timeout": 30}]}]}}


def _answering(replies: dict[str, str]):
    """A reply picked by the request's last message, not by arrival order: an interactive Claude Code
    also asks the API for other things (a session title, say), which must not take a scripted reply."""
    def reply(body: dict) -> str:
        # The last message a person sent (2.1.332 puts hook context in a "system" message after it).
        last = [m for m in body.get("messages", []) if m.get("role") == "user"][-1:]
        text = " ".join(t for _, t in texts({"messages": last}))
        return next((answer for prompt, answer in replies.items() if prompt in text), "ok")
    return reply


def _said(body: dict) -> list[str]:
    return [text for role, text in texts(body) if role in ("user", "assistant")]


def _files_holding(root: Path, needle: bytes) -> list[Path]:
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            try:
                if needle in path.read_bytes():
                    found.append(path)
            except OSError:
                continue
    return sorted(found)


def test_a_taken_session_resumes_ends_again_is_dreamt_once_and_forget_leaves_no_copy(
        fake_api, isolated: Path, layout: Layout, fake_claude, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    write_settings(SETTINGS)
    fake_api.default = _answering({FIRST: "Noted: make release.", SECOND: "Noted: 8443.", THIRD: "Noted: 03:30."})

    first = run_print(FIRST, project, fake_api, args=["--output-format", "json"])
    assert first.rc == 0, first.stderr
    sid = json.loads(first.stdout)["session_id"]
    pointer = read_pointer(layout.pointer(sid))
    assert pointer is not None, "the SessionEnd hook took the session"
    live = Path(pointer.data["origin"])
    archived = layout.root / pointer.data["archived"]
    assert os.path.samefile(live, archived)  # Claude Code's name stays: one file, two names
    first_bytes = pointer.data["bytes"]

    # The first part dreamt: the minds agree on the deploy fact.
    deploy = proposal(project, "Deploys go through make release", "make release tags and publishes")
    port = proposal(project, "Staging listens on 8443", "the staging server port is 8443")
    nightly = proposal(project, "Nightly job at 03:30", "the nightly job runs at 03:30 UTC")
    rules = [{"match": "03:30", "result": {"memories": [port, nightly]}},
             {"match": "8443", "result": {"memories": [port]}},
             {"match": "make release", "result": {"memories": [deploy]}}]
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.rules(model(mind), rules)
    run_queue(layout, everything=True)
    assert [m.name for m in bank_memories(layout, project)] == ["Deploys go through make release"]

    # --resume <id>: the same session, its earlier turns in the request body.
    resumed = run_print(SECOND, project, fake_api, resume=sid, args=["--output-format", "json"])
    assert resumed.rc == 0, resumed.stderr
    assert json.loads(resumed.stdout)["session_id"] == sid
    (body,) = [r["body"] for r in resumed.requests if r["path"].split("?")[0] == "/v1/messages"]
    said = _said(body)
    assert any(FIRST in text for text in said) and "Noted: make release." in said and SECOND in said

    # --continue: the most recent session of this directory, the same one.
    continued = run_print(THIRD, project, fake_api, continue_=True, args=["--output-format", "json"])
    assert continued.rc == 0, continued.stderr
    assert json.loads(continued.stdout)["session_id"] == sid
    (body,) = [r["body"] for r in continued.requests if r["path"].split("?")[0] == "/v1/messages"]
    said = _said(body)
    assert any(FIRST in text for text in said) and any(SECOND in text for text in said) and THIRD in said

    # Each ending was taken: one file, the pointer names what came after the dreamt part.
    assert os.path.samefile(live, archived) and list(layout.archive.rglob("*.jsonl")) == [archived]
    pointer = read_pointer(layout.pointer(sid)).data
    assert pointer["offset"] == first_bytes and pointer["bytes"] == live.stat().st_size
    assert parts.read_record(layout, sid).bytes == live.stat().st_size

    # The second dream reads only what is new: the port and the nightly job, never the deploy fact again.
    calls_before = len(fake_claude.calls())
    run_queue(layout, everything=True)
    prompts = [call["prompt"] for call in fake_claude.calls()[calls_before:]]
    assert len(prompts) == 3 and all("Noted: make release." not in p and "8443" in p and "03:30" in p
                                      for p in prompts)
    names = sorted(m.name for m in bank_memories(layout, project))
    assert names == ["Deploys go through make release", "Nightly job at 03:30", "Staging listens on 8443"]
    assert not journal_lines(layout, "deduped")

    # forget: no copy of the session is left, under either name.
    from helpers import sandman

    assert sandman("forget", sid).returncode == 0  # the memories it taught stay (forget --memories takes them)
    assert not live.exists() and not archived.exists() and not layout.take_record(sid).exists()
    assert _files_holding(isolated / ".claude" / "projects", b"Noted: 8443.") == []
    assert _files_holding(layout.root, b"Noted: 8443.") == []
    left = [p.relative_to(layout.root).as_posix() for p in _files_holding(layout.root, sid.encode())]
    assert all(p.startswith(("memories/-", ".git/", "trail/")) for p in left), left  # knowledge, not copies


def _type(session, text: str) -> None:
    """Type a prompt, then press Enter once the input shows it (typed fast, Enter is read as part of a paste)."""
    session.send(text, enter=False)
    session.wait_for(text, timeout=30)
    session.keys("Enter")


def test_the_resume_picker_lists_a_taken_session_and_resumes_it_whole(fake_api, isolated: Path, layout: Layout,
                                                                     tmp_path: Path) -> None:
    """The picker lists interactive sessions only (a `claude -p` one never shows there, taken or not)."""
    from live_claude import Tmux, seed_interactive_config

    project = tmp_path / "proj"
    project.mkdir()
    write_settings(SETTINGS)
    seed_interactive_config(project)
    fake_api.default = _answering({FIRST: "Noted: make release.", SECOND: "Picked up where we left off."})
    with Tmux(project, fake_api) as session:
        session.wait_for("❯", timeout=60)
        _type(session, FIRST)
        session.wait_for("Noted: make release.", timeout=60)
        session.send("/exit")
        session.wait_for(session.exited, timeout=60)
    (pointer,) = [p for p in layout.recent.glob("*.json")]  # the SessionEnd hook took it
    sid = pointer.stem
    taken = json.loads(pointer.read_text())
    live, archived = Path(taken["origin"]), layout.root / taken["archived"]
    assert os.path.samefile(live, archived)

    with Tmux(project, fake_api, args=["--resume"]) as picker:
        picker.wait_for("make release", timeout=60)  # listed by its first prompt
        picker.keys("Enter")
        picker.wait_for("Noted: make release.", timeout=60)  # resumed whole: its earlier turns on screen
        before = len(fake_api.messages())
        _type(picker, SECOND)
        picker.wait_for("Picked up where we left off.", timeout=60)
        picker.send("/exit")
        picker.wait_for(picker.exited, timeout=60)
    bodies = fake_api.messages()[before:]
    assert any(any(FIRST in text for text in _said(body)) and any(SECOND in text for text in _said(body))
               for body in bodies)
    # The interactive resume appended to the same file and left the taken bytes as they were.
    assert os.path.samefile(live, archived) and parts.digest(live, taken["bytes"]) == taken["sha256"]
    pointer = json.loads(layout.pointer(sid).read_text())  # the second ending took what came after the first
    assert pointer["offset"] == 0 and pointer["bytes"] == live.stat().st_size  # (the first was not dreamt)
