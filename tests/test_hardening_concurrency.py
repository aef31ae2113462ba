"""take, remember, dream and reflect at once on one root for 30 s (issue 8, "Hardening": concurrency).

Four kinds of real ``sandman`` processes loop side by side until the clock
runs out: ``take`` (by hand and by hook) of transcripts written into the
throwaway Claude Code config dir, two ``remember`` loops, ``dream --now`` with
the fake claude's minds agreeing on every session, and ``reflect``, whose
log mind writes yesterday's entry (memories were backdated to yesterday) and
whose upkeep mind reworks a bank made due on sight (its last pass spent all
six operations, so every pass that applies six keeps it due). takes also
start detached dreams when ten sessions are queued; they are waited for.

Then nothing may be lost: every memory a ``remember`` reported is live or in
``_archive/``, every memory the minds agreed on for a routed session exists,
every take's pointer is there or was swept as dreamed and old, every archived
transcript is byte-identical, and the root is consistent.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path

from hardening import (
    agreeing_minds, assert_consistent, held, journal_lines, make_due, quick_minds, reflect_minds, remember_at,
    sandman_popen, sha, transcript, wait_for_exit,
)
from hardening_minds import claim, loner
from sandman import config, journal
from sandman.banks.names import bank_name
from sandman.layout import Layout
from sandman.pointers import read_pointer

SECONDS = 30
DAY = 86_400


class Loops:
    """The loops' shared record: what each process reported, and any run that misbehaved."""

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.lock = threading.Lock()
        self.remembered: list[tuple[Path, str, str]] = []  # (printed path, name, body)
        self.taken: dict[str, str] = {}  # session -> sha256 of its transcript, once take reported it
        self.spawned: list[int] = []  # detached dreams takes started
        self.runs: dict[str, int] = {}
        self.errors: list[str] = []

    def going(self) -> bool:
        return time.monotonic() < self.deadline

    def ran(self, kind: str, done, ok_codes=(0,)) -> bool:
        with self.lock:
            self.runs[kind] = self.runs.get(kind, 0) + 1
            stderr = done.stderr.decode("utf-8", "replace")
            if done.returncode not in ok_codes or "Traceback" in stderr:
                self.errors.append(f"{kind} exited {done.returncode}: {stderr.strip()[-800:]}")
                return False
        return True


def _remember_loop(loops: Loops, worker: int, project: str) -> None:
    i = 0
    while loops.going():
        body = f"Worker {worker} learned fact number {i}, which is {uuid.uuid4().hex}.\n"
        name = f"remembered {worker} {i}"
        done = sandman_popen("remember", body, "--cwd", project, "--name", name)
        if loops.ran("remember", done):
            with loops.lock:
                loops.remembered.append((Path(done.stdout.decode().strip()), name, body))
        i += 1


def _take_loop(loops: Loops, layout: Layout, project: str) -> None:
    projects = config.claude_projects_dir() / re.sub(r"[^A-Za-z0-9]", "-", project)
    projects.mkdir(parents=True, exist_ok=True)
    ended = journal.iso(journal.now_utc() - timedelta(days=4))  # dreamed, it is old enough to be swept
    i = 0
    while loops.going():
        sid = str(uuid.uuid4())
        live = projects / f"{sid}.jsonl"
        live.write_bytes(transcript(sid, project, ended, f"Session {i}: we settled how the build runs."))
        old = time.time() - 3 * DAY
        os.utime(live, (old, old))  # out of the live window: taken unforced by hand
        digest = sha(live)
        if i % 3 == 2:
            payload = {"session_id": sid, "transcript_path": str(live), "cwd": project,
                       "hook_event_name": "SessionEnd", "reason": "logout"}
            done = sandman_popen("take", "--hook", stdin=json.dumps(payload).encode())
            ok = loops.ran("take --hook", done) and done.stdout == b""
        else:
            done = sandman_popen("take", sid)
            # reflect's backstop for missed endings may take this aged transcript first, or at the same
            # moment: the hand take then says it has nothing new since that take, or that the other take
            # linked it (exit 2), and the backstop's archived line stands for it.
            raced = done.returncode == 2 and (b"has nothing new since its take" in done.stderr
                                              or b"is already archived: another take linked it" in done.stderr)
            ok = raced or loops.ran("take", done)
            spawned = re.search(rb"dream started \(pid (\d+)\)", done.stdout)
            if spawned:
                with loops.lock:
                    loops.spawned.append(int(spawned.group(1)))
        if ok:
            with loops.lock:
                loops.taken[sid] = digest
        i += 1


def _dream_loop(loops: Loops) -> None:
    while loops.going():
        # Exit 1: a dream a take started holds the lock; that one does this run's work.
        done = sandman_popen("dream", "--now")
        if loops.ran("dream", done, ok_codes=(0, 1)) and done.returncode == 1:
            assert b"another dream is running" in done.stderr, done.stderr


def _reflect_loop(loops: Loops) -> None:
    while loops.going():
        loops.ran("reflect", sandman_popen("reflect"))


def test_take_remember_dream_and_reflect_at_once_lose_nothing(layout: Layout, fake_claude, monkeypatch,
                                                               tmp_path: Path) -> None:
    project = str(tmp_path / "proj")
    quick_minds(monkeypatch)
    agreeing_minds(fake_claude)
    reflect_minds(fake_claude, monkeypatch)
    yesterday = journal.now_utc() - timedelta(days=1)
    for n in range(8):
        remember_at(layout, yesterday.replace(hour=10, minute=n), f"Yesterday's fact {n}", project)
    make_due(layout, bank_name(project), yesterday)

    loops = Loops(time.monotonic() + SECONDS)
    threads = [threading.Thread(target=_remember_loop, args=(loops, w, project)) for w in range(2)]
    threads += [threading.Thread(target=_take_loop, args=(loops, layout, project)),
                threading.Thread(target=_dream_loop, args=(loops,)),
                threading.Thread(target=_reflect_loop, args=(loops,))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wait_for_exit(loops.spawned)
    print(f"runs: {loops.runs}; detached dreams: {len(loops.spawned)}")
    assert loops.errors == []

    # No lost memory: what remember reported is live, or in _archive/ (upkeep merged, retitled or pruned it).
    for path, name, body in loops.remembered:
        assert held(path.parent, name, body) is not None, path

    # Every claim the minds agreed on for a routed session exists; the loner never committed.
    dreams = journal_lines(layout, "dream")
    routed = {facts["session"] for decision, facts in dreams if decision == "routed"}
    folder = layout.bank(bank_name(project))
    for sid in routed:
        agreed = claim(sid, project, 0)
        assert held(folder, agreed["name"], agreed["body"]) is not None, sid
        assert held(folder, loner(sid, project)["name"], loner(sid, project)["body"]) is None, sid
    for decision, facts in dreams:
        if decision == "committed":
            assert (layout.root / facts["file"]).exists() or any(
                (layout.root / facts["file"]).parent.glob(f"_archive/*_{Path(facts['file']).name}")), facts

    # No lost pointer: each take left its pointer, or reflect swept it after dream routed it.
    swept = {facts["session"] for decision, facts in journal_lines(layout, "reflect") if decision == "swept"}
    archived = {facts["session"]: facts["archived"] for decision, facts in journal_lines(layout, "take")
                if decision == "archived"}
    for sid, digest in loops.taken.items():
        pointer = read_pointer(layout.pointer(sid))
        assert pointer is not None or (sid in swept and sid in routed), sid
        assert pointer is None or pointer.data["archived"] == archived[sid]
        assert sha(layout.root / archived[sid]) == digest, sid

    # Each kind of run did its work while the others ran.
    reflected = journal_lines(layout, "reflect")
    assert {"remember", "take", "take --hook", "dream", "reflect"} <= set(loops.runs)
    assert routed and swept
    assert any(decision == "written" for decision, _ in reflected)
    assert any(decision == "applied" for decision, _ in reflected)
    assert_consistent(layout)
