"""A burst of session endings starts one dream, not one per take (issue 20, fault 1).

30 ``take --hook`` processes at once with the queue at 9: each take that finds
the queue due used to see the dream lock free (the dream it or a sibling had
just spawned had not taken it yet) and spawn its own; 21 of 22 then exited
``dream busy`` into the dream journal. take now takes the lock before the
spawn and hands it to the dream.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from dream_helpers import archive_session, model
from hardening import quick_minds, wait_for_exit
from sandman import config, journal
from sandman.minds.runner import project_slug

BURST = 30


def _dreams_alive(root: str) -> list[int]:
    """The pids of live ``python -m sandman dream`` processes working on ``root``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            if argv[1:4] != [b"-m", b"sandman", b"dream"]:
                continue
            environ = Path(entry.path, "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"SANDMAN_ROOT={root}".encode() in environ:
            found.append(int(entry.name))
    # A dream's child between its fork and its exec (a mind being started) still shows the
    # dream's argv: it is that dream, not a second one.
    return [pid for pid in found if _parent(pid) not in found]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_a_burst_of_endings_spawns_one_dream_not_one_per_take(layout, fake_claude, isolated, monkeypatch):
    quick_minds(monkeypatch)
    cwd = isolated / "proj"
    cwd.mkdir()
    for n in range(9):  # the queue at 9: the first take of the burst makes it due
        archive_session(layout, f"9a9e{n:04d}-0000-4000-8000-000000000000", cwd, ended="2026-11-20T10:00:00Z")
    for mind in config.MINDS:
        fake_claude.answer(model(mind), {"memories": []}, delay=0.2)
    folder = config.claude_projects_dir() / project_slug(cwd)
    folder.mkdir(parents=True)
    payloads = []
    for n in range(BURST):
        sid = f"b0b0{n:04d}-0000-4000-8000-000000000000"
        path = folder / f"{sid}.jsonl"
        line = {"type": "user", "sessionId": sid, "cwd": str(cwd), "timestamp": "2026-11-30T10:00:00Z",
                "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": f"burst {n}"}}
        path.write_text(json.dumps(line) + "\n")
        payloads.append(json.dumps({"session_id": sid, "transcript_path": str(path), "cwd": str(cwd),
                                    "hook_event_name": "SessionEnd", "reason": "other"}).encode())

    root = os.environ["SANDMAN_ROOT"]
    most, seen, stop = [0], set(), threading.Event()

    def watch() -> None:  # samples /proc while the burst and its dreams run
        while not stop.is_set():
            alive = _dreams_alive(root)
            seen.update(alive)
            most[0] = max(most[0], len(alive))
            stop.wait(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        procs = [subprocess.Popen([sys.executable, "-m", "sandman", "take", "--hook"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(BURST)]
        for proc, payload in zip(procs, payloads):
            proc.stdin.write(payload)
            proc.stdin.close()
        for proc in procs:
            assert proc.wait(timeout=120) == 0
            assert proc.stdout.read() == b"" and proc.stderr.read() == b""
        take_log = layout.trace_file("take", journal.now_utc().strftime("%Y-%m-%d")).read_text()
        lines = [journal.parse_line(line) for line in take_log.splitlines()]
        spawned = [int(facts["pid"]) for _, _, decision, facts in lines if decision == "dream-spawned"]
        wait_for_exit(spawned)
    finally:
        stop.set()
        watcher.join()

    skipped = [facts for _, _, decision, facts in lines if decision == "dream-running"]
    archived = [facts for _, _, decision, facts in lines if decision == "archived"]
    print(f"burst of {BURST}: {len(spawned)} dream(s) spawned, {len(skipped)} spawn(s) skipped, "
          f"at most {most[0]} alive at once, {len(seen)} seen")
    assert len(archived) == BURST
    assert spawned, "the burst made the queue due: one dream starts"
    assert most[0] <= 1, f"{most[0]} dreams alive at once"
    assert len(seen) == len(spawned)
    assert skipped, "a take that found the lock held journals the spawn it skipped"
    dream_log = layout.trace_file("dream", journal.now_utc().strftime("%Y-%m-%d")).read_text()
    assert "busy" not in dream_log and "another dream is running" not in dream_log
