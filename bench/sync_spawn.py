"""Benchmark what the SessionStart hook pays for the background sync: ``spawn_background_sync``.

The hook calls it with ``sync.fetch_at_start`` on; it must return without
waiting for the fetch. Timed in-process, interleaved with the baseline of
starting ``python3 -c pass`` with subprocess.Popen (no wait), so the ratio
holds on any machine. Each spawned sync runs against a throwaway root whose
remote is a bare repository on disk; the benchmark reaps each child after
timing its spawn.

    python bench/sync_spawn.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygit2

from sandman.layout import Layout
from sandman.verbs.init import init
from sandman.verbs.sync import setup, spawn_background_sync


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="sandman-bench-") as scratch:
        os.environ.setdefault("SANDMAN_GIT_NAME", "bench")
        os.environ.setdefault("SANDMAN_GIT_EMAIL", "bench@sandman.invalid")
        remote = Path(scratch) / "remote.git"
        pygit2.init_repository(str(remote), bare=True, initial_head="main")
        layout = Layout(Path(scratch) / "root")
        init(layout)
        setup(layout, remote.as_uri())
        layout.settings_file.write_text("[sync]\nfetch_at_start = true\n")
        spawn, baseline = [], []
        for _ in range(runs):
            start = time.perf_counter()
            pid = spawn_background_sync(layout)
            spawn.append(time.perf_counter() - start)
            os.waitpid(pid, 0)  # one at a time, so each spawn meets the same machine
            start = time.perf_counter()
            child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
            baseline.append(time.perf_counter() - start)
            child.wait()
    s, b = statistics.median(spawn) * 1000, statistics.median(baseline) * 1000
    print(f"spawn_background_sync: median {s:.2f} ms over {runs} runs")
    print(f"Popen(python -c pass): median {b:.2f} ms (baseline)")
    print(f"ratio: {s / b:.2f}")


if __name__ == "__main__":
    main()
