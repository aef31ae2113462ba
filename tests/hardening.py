"""Shared by the hardening tests (tests/test_hardening_*.py): the fake minds, transcripts, the root's invariants."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from unittest import mock

from helpers import git
from sandman import journal
from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.index import memory_files, render_index
from sandman.banks.memory import Memory, read_memory
from sandman.layout import BANK_ARCHIVE, BANK_REFLECT, Layout
from sandman.store.atomic import TEMP_NAME
from sandman.voyage import render_log_index

MINDS = Path(__file__).resolve().parent / "hardening_minds.py"
DREAM_MODELS = ("claude-fable-5-1", "claude-opus-5", "claude-sonnet-5")  # config.MINDS' defaults
LOG_MODEL = "log-model"
UPKEEP_MODEL = "upkeep-model"
MERGE_MATCH = "# Merge:"  # the first line of prompts/merge.md
ENTRY = {"kind": "passage", "title": "A day of hardening", "body": "I learned what the day's memories say.\n",
         "next": "Watch the banks."}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def quick_minds(monkeypatch) -> None:
    """Run the fake claude (``#!/usr/bin/env python3``) under this interpreter: a ``python3`` found
    first on PATH may be a slow shim, and a hardening test starts hundreds of minds."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def agreeing_minds(fake, *, claims: int = 1, jitter: float = 0) -> None:
    """Make the three dream minds agree on ``claims`` memories per session; fable adds a loner.

    Each waits a random 0 to ``jitter`` seconds before it answers."""
    for model in DREAM_MODELS:
        program = [str(MINDS), "dream", "--claims", str(claims), "--jitter", str(jitter)]
        fake.rules(model, {"program": program + (["--loner"] if "fable" in model else [])})


def reflect_minds(fake, monkeypatch, *, max_ops: int = 6, jitter: float = 0) -> None:
    """The log mind writes a fixed entry; the upkeep mind plans from its listing; merges get a body."""
    monkeypatch.setenv("SANDMAN_MIND_LOG", LOG_MODEL)
    monkeypatch.setenv("SANDMAN_MIND_UPKEEP", UPKEEP_MODEL)
    fake.answer(LOG_MODEL, ENTRY)
    timing = ["--jitter", str(jitter)]
    fake.rules(UPKEEP_MODEL, [{"match": MERGE_MATCH, "program": [str(MINDS), "merge", *timing]},
                              {"program": [str(MINDS), "upkeep", "--max", str(max_ops), *timing]}])


def transcript(sid: str, cwd: str, ended: str, text: str) -> bytes:
    """A Claude Code transcript of session ``sid``: the person's prompt and the assistant's answer."""
    lines = [
        {"type": "user", "sessionId": sid, "cwd": cwd, "timestamp": ended, "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": text}},
        {"type": "assistant", "sessionId": sid, "cwd": cwd, "timestamp": ended, "uuid": "u2", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def remember_at(layout: Layout, moment: datetime, name: str, directory: str, body: str | None = None) -> Path:
    """Commit a memory as if written at ``moment`` (UTC); return its path."""
    memory = Memory(name=name, description=f"{name}.", type="project", body=body or f"{name}, in the body.\n",
                    source=["s1"], witnesses=["fable", "opus"])
    with mock.patch("sandman.banks.commit.now_utc", lambda: moment):
        return commit_memory(layout, memory, directory=directory, verb="remember").path


def make_due(layout: Layout, bank: str, at: datetime) -> None:
    """Commit a ``_reflect.json`` that makes ``bank`` due on sight: its last pass spent all 6 operations."""
    with bank_transaction(layout, verb="remember", subject="baseline") as tx:
        tx.write_file(layout.bank(bank) / BANK_REFLECT,
                      json.dumps({"at": journal.iso(at), "count": 0, "last_ops": 6}) + "\n")


def journal_lines(layout: Layout, verb: str) -> list[tuple[str, dict]]:
    """Every journal line of ``verb``, all days, as ``(decision, facts)``."""
    found = []
    for path in sorted(layout.trace.glob(f"{verb}-*.log")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("20"):  # a detached dream's own output shares its journal file
                found.append(journal.parse_line(line)[2:])
    return found


def banks(layout: Layout) -> list[Path]:
    return sorted(p for p in layout.memories.iterdir() if p.is_dir() and not p.name.startswith("."))


def held(folder: Path, name: str, body: str) -> Path | None:
    """The file of ``folder``, live or in ``_archive/``, holding a memory of this name and body."""
    for path in [*memory_files(folder), *sorted((folder / BANK_ARCHIVE).glob("*.md"))]:
        memory = read_memory(path)
        if (memory.name, memory.body) == (name, body):
            return path
    return None


def temp_files(layout: Layout) -> list[Path]:
    """Temp files of killed writers left where the commit lock's writers write: banks, _archive/, log/."""
    folders = [layout.log, *banks(layout)] + [bank / BANK_ARCHIVE for bank in banks(layout)]
    return [path for folder in folders if folder.is_dir() for path in folder.iterdir()
            if TEMP_NAME.fullmatch(path.name)]


def assert_consistent(layout: Layout) -> None:
    """The root after any run: committed, intact, every derived file what its sources give."""
    status = git(layout.root, "status", "--porcelain", "--untracked-files=all")
    assert status == "", status
    fsck = subprocess.run(["git", "-C", str(layout.root), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    for folder in banks(layout):
        assert (folder / "MEMORY.md").read_text(encoding="utf-8") == render_index(folder), folder
        for path in memory_files(folder):
            read_memory(path)
    if layout.log.is_dir():
        assert layout.log_index.read_text(encoding="utf-8") == render_log_index(layout)
    assert temp_files(layout) == []


def wait_for_exit(pids: list[int], timeout: float = 120) -> None:
    """Block until every pid (not necessarily our child) has exited: a pidfd turns readable then."""
    import select

    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            assert poller.poll(timeout * 1000), f"pid {pid} still runs after {timeout} s"
        finally:
            os.close(fd)


def sandman_popen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m sandman <args>`` to completion, as a person or Claude Code would."""
    return subprocess.run([sys.executable, "-m", "sandman", *args], input=stdin, capture_output=True,
                          env=os.environ.copy(), timeout=300)
