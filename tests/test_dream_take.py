"""End to end: the tenth take spawns a detached dream that routes all ten (fake claude)."""

from __future__ import annotations

import json
import time

from dream_helpers import bank_memories, journal_lines, model, proposal, transcript_lines
from fake_claude import pid_dead
from helpers import sandman
from sandman import config, journal
from sandman.journal import parse_line
from sandman.minds.runner import project_slug
from sandman.pointers import list_pointers


def _take_journal(layout) -> list[tuple[str, dict]]:
    path = layout.trace_file("take", journal.now_utc().strftime("%Y-%m-%d"))
    return [(decision, facts) for _, _, decision, facts in map(parse_line, path.read_text().splitlines())]


def test_tenth_take_spawns_a_detached_dream_that_routes_all_ten(layout, fake_claude, isolated):
    cwd = isolated / "proj"
    cwd.mkdir()
    project = project_slug(cwd)
    sessions = [f"5e55{n:04d}-0000-4000-8000-000000000000" for n in range(10)]
    facts = [("Build with make", "make build compiles everything"), ("Deploy by tag", "pushing a v-tag releases"),
             ("Tests need docker", "integration suite starts postgres containers"),
             ("Lint via ruff", "ruff check replaces flake8 here"), ("Docs in mkdocs", "mkdocs serve previews pages"),
             ("Secrets in vault", "credentials live in hashicorp vault paths"),
             ("Python 3.11 minimum", "pyproject requires python three eleven"),
             ("Owner prefers rebase", "history kept linear without merge commits"),
             ("Logs under var", "service writes journald output only"),
             ("Cache keyed by commit", "artifacts reuse sha addressed storage")]
    rules = [{"match": sid, "result": {"memories": [proposal(cwd, *facts[n])]}} for n, sid in enumerate(sessions)]
    for mind in ("fable", "opus"):
        fake_claude.rules(model(mind), rules)
    folder = config.claude_projects_dir() / project
    folder.mkdir(parents=True)
    for n, sid in enumerate(sessions):
        transcript = folder / f"{sid}.jsonl"
        transcript.write_text(transcript_lines(sid, cwd, f"2026-11-{n + 1:02d}T10:00:00Z", f"fact {n}"))
        payload = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(cwd),
                   "hook_event_name": "SessionEnd", "reason": "other"}
        result = sandman("take", "--hook", stdin=json.dumps(payload).encode())
        assert result.returncode == 0 and result.stdout == b"", result.stderr
        spawned = [facts for decision, facts in _take_journal(layout) if decision == "dream-spawned"]
        assert len(spawned) == (1 if n == 9 else 0), "only the tenth take is due"

    pid = int(spawned[0]["pid"])
    deadline = time.monotonic() + 120  # the detached dream is not our child: wait, bounded, for it to end
    while not pid_dead(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_dead(pid), "the detached dream did not finish"

    pointers = list_pointers(layout)
    assert len(pointers) == 10 and all(pointer.dreamed for pointer in pointers)
    assert len(journal_lines(layout, "routed")) == 10
    names = sorted(memory.name for memory in bank_memories(layout, cwd))
    assert names == sorted(name for name, _ in facts)
    calls = fake_claude.calls()
    assert len(calls) == 30
    for call in calls:  # every mind's own transcript went to .dream/<the sessions' claude project>/
        assert layout.mind_transcript(project, call["session_id"]).is_file()
