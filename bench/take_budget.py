"""Benchmark ``take --hook`` against the plugin's SessionEnd budget: percentiles under load.

Claude Code gives a plugin's SessionEnd hook about 1.5 s whatever timeout the
plugin declares (docs/hooks.md, "The plugin's SessionEnd budget"), so the tail
matters, not the median: this prints the 50th and 99th percentiles and the
maximum of ``take --hook`` (a real subprocess fed a SessionEnd payload, as in
bench/take.py) while every core has a busy neighbour (one spinning process per
CPU) and a writer fsyncs 4 MiB files in a loop, beside ``python -c pass`` timed
under the same load, interleaved. Three cases: the steady state (the root
exists), a first take (no root yet: take also creates the repository), and
the plugin's command, ``take --hook --detach`` on a first take, timed until
the hook process exits (what Claude Code waits for; the detached child is
waited for untimed before the next round).
The load processes are started and stopped by this script.

    python bench/take_budget.py [--quick] [--runs N] [--no-load]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness import (CORPUS, PYTHON_PASS, Row, Target, child_env, progress, run_timed, sandman_argv, scratch,
                     script)

RUNS = 100
QUICK = {"runs": 30}
TRANSCRIPT = CORPUS / "transcripts" / "claude" / "spotter" / "short.jsonl"
SESSION = "00893aaf-19fa-41d2-8238-13269b9b3ca0"
BUDGET = Target("< 1.5 s (plugin SessionEnd budget)", seconds=1.5)
SPIN = "while True:\n    pass\n"
WRITE = ("import os, sys\nbuf = os.urandom(4 << 20)\npath = sys.argv[1]\n"
         "while True:\n    with open(path, 'wb') as f:\n        f.write(buf); f.flush(); os.fsync(f.fileno())\n")


@contextmanager
def load(folder: Path, on: bool) -> Iterator[str]:
    """Keep every CPU busy and the disk syncing while the block runs; yield a description."""
    if not on:
        yield "no load"
        return
    cpus = os.cpu_count() or 1
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(cpus)]
    procs.append(subprocess.Popen([sys.executable, "-c", WRITE, str(folder / "disk-load.bin")]))
    try:
        yield f"{cpus} spinning processes + an fsync writer"
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
            proc.wait()


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value at least ``share`` of the values do not exceed."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))
    return ordered[int(rank) - 1]


def run_detached(argv: list[str], env: dict[str, str], stdin: bytes) -> float:
    """Run ``argv`` and return the seconds until it exits; then wait, untimed, for the
    detached child it leaves (it holds a pipe's write end until it exits)."""
    done_r, done_w = os.pipe()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, pass_fds=[done_w])
    os.close(done_w)
    proc.communicate(stdin)
    elapsed = time.perf_counter() - start
    with os.fdopen(done_r, "rb") as done:
        done.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return elapsed


def trial(folder: Path, first: bool, detach: bool = False) -> float:
    """Take a fresh copy of the corpus transcript through ``take --hook``; return its seconds.

    ``first``: the root does not exist yet, so the hook also creates the repository.
    ``detach``: run the plugin's ``take --hook --detach``, timed until the hook process exits.
    """
    home, root = folder / "home", folder / "root"
    shutil.rmtree(home, ignore_errors=True)
    project = home / ".claude" / "projects" / "-home-user-my-project"
    project.mkdir(parents=True)
    target = project / f"{SESSION}.jsonl"
    shutil.copyfile(TRANSCRIPT, target)
    env = child_env(HOME=str(home), SANDMAN_ROOT=str(root), CLAUDE_CONFIG_DIR=str(home / ".claude"))
    if first:
        shutil.rmtree(root, ignore_errors=True)
    else:
        (root / "memories" / ".recent" / f"{SESSION}.json").unlink(missing_ok=True)
        (root / ".takes" / f"{SESSION}.json").unlink(missing_ok=True)
        shutil.rmtree(root / ".archive", ignore_errors=True)
    payload = json.dumps({"session_id": SESSION, "transcript_path": str(target), "cwd": "/home/user/my-project",
                          "hook_event_name": "SessionEnd", "reason": "other"}).encode()
    if detach:
        elapsed = run_detached([*sandman_argv(), "take", "--hook", "--detach"], env, payload)
    else:
        elapsed = run_timed([*sandman_argv(), "take", "--hook"], env, payload)
    if target.stat().st_nlink != 2:  # taken: a second name in the archive, Claude Code's kept for --resume
        raise SystemExit("take --hook did not archive the transcript")
    return elapsed


def rows(runs: int = RUNS, no_load: bool = False) -> list[Row]:
    """Return p50, p99 and max of ``take --hook`` (steady, first take, detached) and of ``python -c pass``,
    each over ``runs`` interleaved runs under load (unless ``no_load``), in seconds."""
    if not TRANSCRIPT.exists():
        raise SystemExit(f"no transcript to take: the corpus is not at {CORPUS}")
    with scratch() as folder:
        steady_dir, first_dir, detach_dir = folder / "steady", folder / "first", folder / "detach"
        for path in (steady_dir, first_dir, detach_dir):
            path.mkdir()
        env = child_env()
        trial(steady_dir, first=False)  # untimed: bytecode written, the root set up
        times: dict[str, list[float]] = {"steady": [], "first": [], "detach": [], "pass": []}
        with load(folder, not no_load) as what:
            progress(f"{runs} rounds under load: {what}")
            for _ in range(runs):
                times["steady"].append(trial(steady_dir, first=False))
                times["first"].append(trial(first_dir, first=True))
                times["detach"].append(trial(detach_dir, first=True, detach=True))
                times["pass"].append(run_timed([sys.executable, "-c", "pass"], env))
    under = "no load" if no_load else "every CPU busy + fsync writer"
    found = []
    for key, name in (("steady", "`take --hook` (short.jsonl), root set up"),
                      ("first", "`take --hook` (short.jsonl), first take: creates the repository"),
                      ("detach", "`take --hook --detach` (the plugin's command), first take, until the hook exits")):
        for statistic, share in (("p50", 0.50), ("p99", 0.99), ("max", 1.0)):
            found.append(Row(f"{name}, {under}", percentile(times[key], share),
                             f"{PYTHON_PASS}, same load", percentile(times["pass"], share), runs,
                             BUDGET if statistic != "p50" else None, statistic))
    return found


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-load", action="store_true", default=None,
                        help="measure on the machine as it is, without the added load")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    main()
