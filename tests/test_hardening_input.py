"""Fuzzed transcripts through the whole loop: take, dream, recall, reflect, site (issue 8, "Hardening").

The take issue's fuzz generators (tests/test_transcripts_fuzz.py: truncated
lines, flipped bits, random bytes, values of the wrong type, lines run
together) make the corpus into damaged transcripts; a few more are made by
hand: a line longer than the reader takes, lone surrogate escapes (a
JavaScript host cutting a string inside an emoji), NUL and bidi escapes, a
file of random bytes, an empty one, one whose name is not UTF-8. Each goes
through the loop as Claude Code would drive it: ``take --hook`` (by hand with
``--transcript`` for the odd name), ``dream --now`` with two minds quoting
what they were shown into a memory and a third answering garbage, ``recall
--hook`` from every recorded cwd, the next night's ``reflect`` and ``sandman
site``. Nothing raises out; every take archives the exact bytes; dream routes,
abstains or skips each pointer with a journal line.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from datetime import timedelta
from pathlib import Path

from hardening import (
    DREAM_MODELS, MINDS, assert_consistent, journal_lines, quick_minds, reflect_minds, sandman_popen, sha,
)
from sandman import config, journal
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.store.runlock import RunLock
from sandman.verbs.reflect import reflect
from test_transcripts_fuzz import _mutated_files

FUZZED = 12  # of the fuzz generators' files; with the hand-made ones, one dream run (20 pointers) routes all


def _line(sid: str, cwd: str, text: str, kind: str = "user") -> bytes:
    message = ({"role": "user", "content": text} if kind == "user"
               else {"role": "assistant", "content": [{"type": "text", "text": text}]})
    return json.dumps({"type": kind, "sessionId": sid, "cwd": cwd, "timestamp": "2026-11-28T10:00:00Z",
                       "uuid": f"{kind}-1", "message": message}).encode() + b"\n"


def _hand_made(cwd: str) -> dict[str, bytes]:
    """Damage the generators do not make, each a session of its own."""
    rng = random.Random(8)
    remember = {"type": "assistant", "sessionId": "s-surrogate", "cwd": cwd, "timestamp": "2026-11-28T10:01:00Z",
                "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                              "input": {"command": 'sandman remember "half \\ud83d"'}}]}}
    return {
        "s-long-line": _line("s-long-line", cwd, "before the flood")
        + b'{"type":"user","message":{"role":"user","content":"' + b"x" * (config.TRANSCRIPT_LINE_MAX_BYTES + 10)
        + b'"}}\n' + _line("s-long-line", cwd, "after the flood", "assistant"),
        "s-surrogate": _line("s-surrogate", cwd, "").replace(b'"content": ""', b'"content": "cut \\ud83d here \\udc00"')
        + json.dumps(remember).replace("\\\\ud83d", "\\ud83d").encode() + b"\n",
        "s-nul-bidi": _line("s-nul-bidi", cwd, "a nul \x00, an override \u202e and a bell \x07 in the prompt"),
        "s-random": rng.randbytes(4096),
        "s-empty": b"",
        "s-relative-cwd": _line("s-relative-cwd", "not/absolute", "my cwd is relative"),
        "s-truncated": _line("s-truncated", cwd, "the last line is cut")
        + _line("s-truncated", cwd, "cut here", "assistant")[:37],
    }


def test_fuzzed_transcripts_go_through_take_dream_recall_reflect_and_the_site(
        corpus: Path, layout: Layout, fake_claude, monkeypatch, tmp_path: Path) -> None:
    cwd = str(tmp_path / "fuzz")
    quick_minds(monkeypatch)
    for model in DREAM_MODELS[:2]:
        fake_claude.rules(model, {"program": [str(MINDS), "quote"]})
    fake_claude.mode(DREAM_MODELS[2], "garbage")
    reflect_minds(fake_claude, monkeypatch)

    projects = config.claude_projects_dir() / "-fuzz"
    projects.mkdir(parents=True)
    sessions = {f"s-fuzz-{n}": path.read_bytes() for n, (_, path) in
                enumerate(_mutated_files(corpus, tmp_path)[:FUZZED])}
    sessions.update(_hand_made(cwd))
    digests = {sid: hashlib.sha256(data).hexdigest() for sid, data in sessions.items()}

    # take --hook, as Claude Code runs it at every session end. A held lock stands in for a running
    # dream, so the tenth take starts none: this test runs the dream itself, below.
    lock = RunLock(layout.dream_lock)
    assert lock.acquire()
    for sid, data in sessions.items():
        live = projects / f"{sid}.jsonl"
        live.write_bytes(data)
        payload = {"session_id": sid, "transcript_path": str(live), "cwd": cwd, "hook_event_name": "SessionEnd",
                   "reason": "other"}
        done = sandman_popen("take", "--hook", stdin=json.dumps(payload).encode())
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), (sid, done.stderr)
        assert live.stat().st_nlink == 2, sid  # archived, and still where Claude Code resumes it
    # A transcript whose file name is not UTF-8, taken by hand.
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/exports/session-\xff.jsonl"))
    odd.parent.mkdir()
    odd.write_bytes(_line("s-odd-name", cwd, "my file name is not UTF-8"))
    digests["s-odd-name"] = sha(odd)
    done = sandman_popen("take", "s-odd-name", "--force", "--transcript", str(odd))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    lock.release()

    taken = journal_lines(layout, "take")
    assert [decision for decision, _ in taken if decision not in ("archived", "dream-spawned", "dream-running")] == []
    for sid, digest in digests.items():
        pointer = read_pointer(layout.pointer(sid))
        assert pointer is not None, sid
        assert sha(layout.root / pointer.data["archived"]) == digest, sid
    pointer = read_pointer(layout.pointer("s-surrogate")).data
    # The remember call has no result in the transcript: not known to be committed, so no highlight.
    assert pointer["title"] == "cut \ufffd here \ufffd" and pointer["highlights"] == []
    assert read_pointer(layout.pointer("s-odd-name")).data["origin"] == str(odd)

    # dream: every pointer routed, left queued or skipped, each with its journal line.
    done = sandman_popen("dream", "--now")
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    decided = {facts["session"]: decision for decision, facts in journal_lines(layout, "dream")
               if decision in ("routed", "queued", "skipped")}
    assert sorted(decided) == sorted(digests)
    assert "routed" in decided.values() and decided["s-relative-cwd"] == "skipped"
    abstained = [facts for decision, facts in journal_lines(layout, "dream") if decision == "abstained"]
    assert {facts["mind"] for facts in abstained} >= {"sonnet"}

    # recall --hook from every cwd a pointer recorded: a payload within budget, or nothing.
    cwds = {read_pointer(layout.pointer(sid)).data.get("cwd") for sid in digests}
    for where in cwds:
        payload = {"session_id": "s-next", "cwd": where, "hook_event_name": "SessionStart", "source": "startup"}
        done = sandman_popen("recall", "--hook", stdin=json.dumps(payload).encode())
        assert done.returncode == 0 and done.stderr == b"", (where, done.stderr)
        if done.stdout:
            context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            assert len(context) <= config.RECALL_BUDGET_UTF16

    # The next night's reflect (its log mind reads the quoted memories), then the site by hand.
    summary = reflect(layout, now=journal.now_utc() + timedelta(days=1))
    assert summary.errors == [] and summary.entry.decision == "written", summary
    done = sandman_popen("site")
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert_consistent(layout)
