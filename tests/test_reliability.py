"""Concurrent and killed writers (issue 2, "Bad input, reliability")."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import git
from sandman.banks.index import memory_files, render_index
from sandman.banks.listing import index_entries
from sandman.banks.memory import read_memory
from sandman.layout import Layout

WORKER = textwrap.dedent(
    """
    import sys
    from sandman import config
    from sandman.layout import Layout
    from sandman.verbs.remember import remember
    layout = Layout(config.root())
    worker, count, cwd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    for i in range(count):
        remember(layout, f"Fact {i} from worker {worker}.", cwd=cwd, name=f"fact {worker} {i}")
        print(i, flush=True)
    """
)


def spawn(worker: str, count: int, cwd: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, worker, str(count), cwd],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ,
    )


def assert_root_consistent(layout: Layout) -> None:
    assert git(layout.root, "status", "--porcelain") == ""
    subprocess.run(["git", "-C", str(layout.root), "fsck", "--strict"], check=True, capture_output=True)
    for folder in layout.memories.iterdir():
        if folder.name.startswith("."):
            continue
        assert (folder / "MEMORY.md").read_text() == render_index(folder)
        for path in memory_files(folder):
            read_memory(path)  # no half-written file
    leftovers = [p for p in layout.root.rglob(".*.tmp") if ".git" not in p.parts]
    assert leftovers == []


def test_eight_processes_remembering_into_one_bank(layout: Layout, tmp_path: Path) -> None:
    workers = [spawn(str(w), 25, str(tmp_path)) for w in range(8)]
    for process in workers:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err.decode()
    bank = next(p for p in layout.memories.iterdir() if not p.name.startswith("."))
    assert len(memory_files(bank)) == 200
    assert len(index_entries(bank)) == 200
    subjects = git(layout.root, "log", "--format=%s").splitlines()
    assert len([s for s in subjects if s.startswith("remember: ")]) == 200
    assert_root_consistent(layout)


def test_kill_9_mid_commit_leaves_a_consistent_root_after_the_next_commit(layout: Layout, tmp_path: Path) -> None:
    rng = random.Random(1705)
    survivors = 0
    for trial in range(12):
        process = spawn(f"k{trial}", 1000, str(tmp_path))
        for _ in range(rng.randint(1, 3)):
            assert process.stdout.readline(), process.stderr.read().decode()
        # The worker is now somewhere inside its next commit_memory.
        for _ in range(rng.randint(0, 20_000)):
            pass
        process.send_signal(signal.SIGKILL)
        process.wait()
        after = spawn(f"after{trial}", 1, str(tmp_path))
        assert after.wait(timeout=120) == 0, after.stderr.read().decode()
        assert_root_consistent(layout)
        survivors += 1
    assert survivors == 12
