"""Helpers for the dream tests: archived sessions with pointers, fixtures per mind, the journal."""

from __future__ import annotations

import json
from pathlib import Path

from sandman import config, journal
from sandman.banks.index import memory_files
from sandman.banks.memory import read_memory
from sandman.banks.names import bank_name
from sandman.layout import Layout
from sandman.pointers import write_pointer

PROJECT = "-home-user-proj"


def model(mind: str) -> str:
    """The model id the dream gives ``mind`` (the config default in tests)."""
    return config.model(config.MINDS[mind])


def transcript_lines(sid: str, cwd: Path, ended: str, text: str) -> str:
    """A two-turn Claude Code transcript (JSON lines) of session ``sid`` in ``cwd``."""
    lines = [
        {"type": "user", "sessionId": sid, "cwd": str(cwd), "timestamp": ended, "uuid": "u1",
         "parentUuid": None, "message": {"role": "user", "content": text}},
        {"type": "assistant", "sessionId": sid, "cwd": str(cwd), "timestamp": ended, "uuid": "u2",
         "parentUuid": "u1", "message": {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def archive_session(layout: Layout, sid: str, cwd: Path, *, ended: str, text: str = "We build with make.",
                    title: str | None = None, project: str = PROJECT) -> Path:
    """Write a small Claude Code transcript into the archive and its pointer; return the pointer path."""
    relpath = f".archive/claude/2026/11/30/160112-{project}/{sid}.jsonl"
    path = layout.root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(transcript_lines(sid, cwd, ended, text), encoding="utf-8")
    return write_pointer(layout, sid, {
        "host": "claude", "archived": relpath, "cwd": str(cwd), "started": ended, "ended": ended,
        "title": title or f"session {sid}", "highlights": [],
    })


def proposal(cwd: Path, name: str, description: str, *, type_: str = "project", body: str | None = None) -> dict:
    return {"bank": "user" if type_ == "user" else str(cwd), "type": type_, "name": name,
            "description": description, "body": body or f"{description}."}


def bank_memories(layout: Layout, directory: Path | None) -> list:
    """The live memories of a directory's bank, as Memory objects with ``.file`` set."""
    found = []
    for path in memory_files(layout.bank(bank_name(directory))):
        memory = read_memory(path)
        memory.file = path.name
        found.append(memory)
    return found


def journal_lines(layout: Layout, decision: str | None = None) -> list[dict]:
    """Today's dream journal, parsed: ``{"decision": ..., **facts}`` per line."""
    path = layout.trace_file("dream", journal.now_utc().strftime("%Y-%m-%d"))
    if not path.exists():
        return []
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("20"):
            continue  # a detached dream's own output shares the file (take's spawn appends it)
        _, _, found, facts = journal.parse_line(line)
        if decision is None or found == decision:
            lines.append({"decision": found, **facts})
    return lines
