"""Helpers for the reflect and upkeep tests: memories dated on a chosen day, the two minds, the journal."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from unittest import mock

import pytest

from helpers import git
from sandman import journal
from sandman.banks.commit import commit_memory
from sandman.banks.memory import Memory
from sandman.layout import Layout

DAY = "2026-11-29"
# The pass runs at 03:30 UTC the next morning: the day that ended is DAY.
NOW = datetime(2026, 11, 30, 3, 30, tzinfo=timezone.utc)
PROJECT = "/home/user/proj"
BANK = "-home-user-proj"
LOG_MODEL = "log-model"
UPKEEP_MODEL = "upkeep-model"
MERGE_MATCH = "# Merge:"  # the first line of prompts/merge.md: tells a merge call from a plan


@pytest.fixture
def minds(fake_claude, monkeypatch):
    """The fake claude, with the log and upkeep minds on models of their own."""
    monkeypatch.setenv("SANDMAN_MIND_LOG", LOG_MODEL)
    monkeypatch.setenv("SANDMAN_MIND_UPKEEP", UPKEEP_MODEL)
    return fake_claude


def at(text: str) -> datetime:
    """``2026-11-29T10:00`` as an aware UTC datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def remember_on(layout: Layout, moment: str, name: str, body: str | None = None, *, type_: str = "project",
                directory: str | None = PROJECT, description: str | None = None,
                replaces: str | None = None) -> Path:
    """Commit a memory as if written at ``moment`` (``YYYY-MM-DDTHH:MM``); return its path."""
    memory = Memory(name=name, description=description or f"{name}.", type=type_,
                    body=body or f"{name}, in the body.\n", source=["s1"], witnesses=["fable", "opus"])
    with mock.patch("sandman.banks.commit.now_utc", lambda: at(moment)):
        return commit_memory(layout, memory, directory=None if type_ == "user" else directory,
                             verb="remember", replaces=replaces).path


def entry_reply(**changes: str) -> dict:
    """A usable log reply, with ``changes`` applied."""
    reply = {"kind": "passage", "title": "The proj bank learned its build",
             "body": "I learned that the build runs with make.\n", "next": "Watch the build."}
    reply.update(changes)
    return reply


def head(layout: Layout) -> str:
    return git(layout.root, "rev-parse", "HEAD").strip()


def commits(layout: Layout) -> int:
    return int(git(layout.root, "rev-list", "--count", "HEAD"))


def journal_lines(layout: Layout, decision: str | None = None) -> list[dict]:
    """Every reflect journal line, parsed: ``{"decision": ..., **facts}``."""
    lines = []
    for path in sorted(layout.trace.glob("reflect-*.log")):
        for line in path.read_text(encoding="utf-8").splitlines():
            _, _, found, facts = journal.parse_line(line)
            if decision is None or found == decision:
                lines.append({"decision": found, **facts})
    return lines


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path: git, the journal, the site, the minds' folder
    and the lock files left out (they change on every run by design)."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.suffix != ".lock"
        and not {".git", ".trace", ".site", ".dream"} & set(path.relative_to(folder).parts)
    }
