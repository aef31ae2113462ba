"""Benchmark what the SessionStart hook pays for the background sync: ``spawn_background_sync``.

The hook calls it with ``sync.fetch_at_start`` on; it must return without
waiting for the fetch. Timed in-process, interleaved with the baseline of
starting ``python3 -c pass`` with subprocess.Popen (no wait), so the ratio
holds on any machine. Each spawned sync runs against a throwaway root whose
remote is a bare repository on disk; the benchmark reaps each child after
timing its spawn. No target is set by the issues.

    python bench/sync_spawn.py [--quick] [--runs N]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pygit2
from harness import Row, child_env, environment, interleaved, scratch, script

from sandman.layout import Layout
from sandman.verbs.init import init
from sandman.verbs.sync import setup, spawn_background_sync

RUNS = 30
QUICK = {"runs": 7}


def rows(runs: int = RUNS) -> list[Row]:
    """Return the spawn row: ``spawn_background_sync`` against ``Popen(python -c pass)``,
    medians in seconds over ``runs`` interleaved runs."""
    with scratch() as folder, environment(HOME=str(folder)):
        remote = folder / "remote.git"
        pygit2.init_repository(str(remote), bare=True, initial_head="main")
        layout = Layout(folder / "root")
        init(layout)
        setup(layout, remote.as_uri())
        layout.settings_file.write_text("[sync]\nfetch_at_start = true\n")
        env = child_env()

        def spawn() -> float:
            start = time.perf_counter()
            pid = spawn_background_sync(layout)
            elapsed = time.perf_counter() - start
            os.waitpid(pid, 0)  # one at a time, so each spawn meets the same machine
            return elapsed

        def popen() -> float:
            start = time.perf_counter()
            child = subprocess.Popen([sys.executable, "-c", "pass"], env=env, start_new_session=True)
            elapsed = time.perf_counter() - start
            child.wait()
            return elapsed

        spawned, baseline = interleaved([spawn, popen], runs)
    return [Row("`spawn_background_sync` (recall --hook, sync on)", spawned, "`Popen(python -c pass)`, no wait",
                baseline, runs)]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
