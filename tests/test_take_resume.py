"""Resume after a take (issue 27, item 1): the live name stays, a second ending takes only what is new.

Claude Code 2.1.332 appends a resumed session to the very file it was taken
from (same inode, same session id; checked live, docs/take.md "Resume after a
take"). These tests append the way it does: ``open(path, "ab")``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path

import pytest

from dream_helpers import bank_memories, journal_lines, model, proposal
from helpers import sandman
from sandman import journal
from sandman.archive import parts
from sandman.errors import ArchiveChanged, NothingNew
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.dream.run import run_queue
from sandman.verbs.forget import forget
from sandman.verbs.take import take
from sandman.verbs.take_all import backfill

SID = "7c1f0a2b-3d4e-4f50-8a6b-7c8d9e0f1a2b"


def _line(text: str, role: str = "user", uuid: str = "u1", cwd: str = "/home/user/proj") -> bytes:
    content = text if role == "user" else [{"type": "text", "text": text}]
    return (json.dumps({"type": role, "sessionId": SID, "cwd": cwd, "uuid": uuid,
                        "timestamp": "2026-11-30T10:00:00.000Z",
                        "message": {"role": role, "content": content}}) + "\n").encode()


def _live(home: Path, content: bytes, cwd: str = "/home/user/proj", age: float = 600) -> Path:
    folder = "-" + cwd.strip("/").replace("/", "-")
    path = home / ".claude" / "projects" / folder / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    _age(path, age)
    return path


def _age(path: Path, age: float) -> None:
    moment = time.time() - age
    os.utime(path, (moment, moment))


def _resume(path: Path, content: bytes, age: float = 600) -> None:
    """What `claude --resume` does to the transcript: append, in place."""
    with open(path, "ab") as stream:
        stream.write(content)
    _age(path, age)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fenced(prompt: str, label: str) -> str:
    found = re.search(rf'<(data-[0-9a-f]+) label="{label}">(.*?)</\1>', prompt, re.S)
    assert found, prompt[:500]
    return found.group(2)


def _stamp_dreamed(layout: Layout) -> None:
    path = layout.pointer(SID)
    data = json.loads(path.read_text())
    data["dreamed"] = "2026-11-30T12:00:00Z"
    path.write_text(json.dumps(data))


def test_regression_take_left_no_transcript_for_claude_resume(isolated: Path, layout: Layout):
    """`claude --resume <id>` after a take said "No conversation found": take had moved the file away."""
    first = _line("Fix the upload test") + _line("Done.", "assistant", "u2")
    live = _live(isolated, first)
    taken = take(layout, SID)
    assert live.read_bytes() == first  # Claude Code finds its transcript where it left it
    assert os.path.samefile(live, taken.archived)  # one file, not a copy
    pointer = read_pointer(layout.pointer(SID)).data
    assert (pointer["offset"], pointer["bytes"], pointer["sha256"]) == (0, len(first), _sha(first))
    record = parts.read_record(layout, SID)
    assert (record.archived, record.bytes, record.sha256) == (pointer["archived"], len(first), _sha(first))


def test_a_resumed_session_is_taken_again_from_where_the_dreamt_take_ended(isolated: Path, layout: Layout):
    first = _line("Fix the upload test") + _line("Done.", "assistant", "u2")
    live = _live(isolated, first)
    taken = take(layout, SID)
    _stamp_dreamed(layout)
    more = _line("Now make the retry bounded", uuid="u3") + _line("Bounded at 3.", "assistant", "u4")
    _resume(live, more)
    again = take(layout, SID)
    assert again.archived == taken.archived  # the same file grew: no second name, no copy
    pointer = read_pointer(layout.pointer(SID)).data
    assert (pointer["offset"], pointer["bytes"], pointer["sha256"]) == (len(first), len(first + more),
                                                                         _sha(first + more))
    assert "earlier" not in pointer and "dreamed" not in pointer  # queued again, for the new part only
    assert parts.read_record(layout, SID).bytes == len(first + more)
    assert [f for f in layout.archive.rglob("*.jsonl")] == [taken.archived]


def test_a_second_ending_before_the_dream_keeps_the_queued_part(isolated: Path, layout: Layout):
    first = _line("Fix the upload test")
    live = _live(isolated, first)
    take(layout, SID)
    _resume(live, _line("And the download one", uuid="u3"))
    take(layout, SID)
    pointer = read_pointer(layout.pointer(SID)).data
    assert pointer["offset"] == 0 and pointer["bytes"] == live.stat().st_size  # nothing was dreamt yet


def test_a_session_with_nothing_new_is_not_taken_again(isolated: Path, layout: Layout):
    live = _live(isolated, _line("Fix the upload test"))
    take(layout, SID)
    with pytest.raises(NothingNew, match=rf"session {SID} has nothing new since its take: its \d+ bytes are "
                                         r"archived as \.archive/claude/"):
        take(layout, SID)
    payload = {"session_id": SID, "transcript_path": str(live), "cwd": "/home/user/proj",
               "hook_event_name": "SessionEnd", "reason": "other"}
    assert sandman("take", "--hook", stdin=json.dumps(payload).encode()).returncode == 0
    lines = layout.trace_file("take", journal.now_utc().strftime("%Y-%m-%d")).read_text().splitlines()
    assert journal.parse_line(lines[-1])[2:] == ("declined", {"reason": "nothing-new", "session": SID,
                                                              "hook": "true"})


def test_a_transcript_written_anew_is_taken_whole_and_the_old_file_kept(isolated: Path, layout: Layout):
    live = _live(isolated, _line("Fix the upload test"))
    first = take(layout, SID)
    live.unlink()  # Claude Code's cleanup, then the same id written again (another file)
    _live(isolated, _line("Something else entirely"))
    second = take(layout, SID)
    pointer = read_pointer(layout.pointer(SID)).data
    assert pointer["offset"] == 0 and second.archived != first.archived
    assert pointer["earlier"] == [first.archived.relative_to(layout.root).as_posix()]


def test_dream_reads_only_the_part_and_refuses_changed_bytes(isolated: Path, layout: Layout):
    first = _line("We deploy with make release") + _line("Noted.", "assistant", "u2")
    live = _live(isolated, first)
    taken = take(layout, SID)
    _stamp_dreamed(layout)
    more = _line("The staging port is 8443", uuid="u3")
    _resume(live, more)
    take(layout, SID)
    _resume(live, _line("Written after the second take", uuid="u5"))  # the next part's
    pointer = read_pointer(layout.pointer(SID)).data
    data = parts.read_part(taken.archived, pointer["offset"], pointer["bytes"], pointer["sha256"])
    assert data == more
    with open(live, "r+b") as stream:  # a prefix rewritten in place: the minds must not read it
        stream.write(b"[")
    with pytest.raises(ArchiveChanged, match="changed since they were taken"):
        parts.read_part(taken.archived, pointer["offset"], pointer["bytes"], pointer["sha256"])


def test_a_resumed_session_is_dreamt_without_a_duplicate(isolated: Path, layout: Layout, fake_claude):
    cwd = isolated / "proj"
    cwd.mkdir()
    first = _line("Deploys go through make release", cwd=str(cwd)) + _line("Noted.", "assistant", "u2", str(cwd))
    live = _live(isolated, first, cwd=str(cwd))
    deploy = proposal(cwd, "Deploys go through make release", "make release tags and publishes")
    port = proposal(cwd, "Staging listens on 8443", "the staging server port is 8443")
    # Each mind proposes what its transcript holds: the deploy fact from the first part, the port from the second.
    rules = [{"match": "staging", "result": {"memories": [port]}},
             {"match": "make release", "result": {"memories": [deploy]}}]
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.rules(model(mind), rules)
    take(layout, SID)
    run_queue(layout, everything=True)
    assert [m.name for m in bank_memories(layout, cwd)] == ["Deploys go through make release"]
    _resume(live, _line("The staging port is 8443", uuid="u3", cwd=str(cwd))
            + _line("Noted.", "assistant", "u4", str(cwd)))
    take(layout, SID)
    run_queue(layout, everything=True)
    assert sorted(m.name for m in bank_memories(layout, cwd)) == ["Deploys go through make release",
                                                                  "Staging listens on 8443"]
    second = [_fenced(call["prompt"], "transcript") for call in fake_claude.calls()[3:]]
    assert len(second) == 3 and all("staging port" in text and "make release" not in text for text in second)
    assert not journal_lines(layout, "deduped")


def test_take_all_passes_over_a_taken_transcript_and_takes_one_that_grew(isolated: Path, layout: Layout):
    live = _live(isolated, _line("Fix the upload test"), age=3 * 86_400)
    take(layout, SID)
    result = backfill(layout, older_than="2d")
    assert [item.reason for item in result.skipped] == ["taken"] and not result.taken
    _resume(live, _line("More", uuid="u3"), age=3 * 86_400)  # resumed; its ending missed
    result = backfill(layout, older_than="2d")
    assert [item.session for item in result.taken] == [SID]
    assert read_pointer(layout.pointer(SID)).data["offset"] == 0  # the first part was never dreamt


def test_forget_destroys_both_names_the_companion_links_and_the_record(isolated: Path, layout: Layout):
    live = _live(isolated, _line("Fix the upload test"))
    companion = live.with_suffix("")
    (companion / "subagents").mkdir(parents=True)
    (companion / "subagents" / "agent-1.jsonl").write_text("{}\n")
    taken = take(layout, SID)
    assert taken.companion is not None and (taken.companion / "subagents" / "agent-1.jsonl").is_file()
    assert companion.is_dir()  # left for the resumed session
    forget(layout, SID)
    assert not live.exists() and not companion.exists() and not taken.archived.exists()
    assert not taken.companion.exists() and not layout.take_record(SID).exists()
    assert not [p for p in layout.archive.rglob("*") if p.is_file()]
