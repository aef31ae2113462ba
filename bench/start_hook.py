"""Benchmark the SessionStart hook served, not computed, and the backstop's check (issue 29).

Builds a root with 1,000 memories across the 5 ancestor banks of one cwd, 40 pointers and
30 log entries (bench/recall.py's ``build``), and a Claude Code projects folder of 1,000
transcripts with nothing to take (each taken, by a second name and a newer take record,
and a few older than the backstop's lookback). The full hook's answer to a ``startup`` is
kept (``.start-replies/``); the launcher's answer is checked byte for byte against it.
Then times, interleaved run by run (wall and CPU medians):

- ``python -c pass``: the bare interpreter, the baseline;
- ``<python> -I -S <sandman>/fasthook.py recall --hook``: the served start, what
  ``hooks install`` and the plugin run, within the backstop's minute (no check), and again
  with the minute over (``.backstop.stamp`` removed before the run: the check included, from
  the kept scan of the last check, ``.backstop.kept``), and with the kept scan removed too
  (what a start pays when a folder's hourly whole listing is due: every transcript statted
  and the kept scan written; no target);
- ``sandman recall --hook``: the full hook, composing, for comparison;
- the backstop's check alone (``archive.missed.anything_missed``), in this process, over
  the 1,000 transcripts.

Targets (issue 29): the served start at most 1.2 x ``python -c pass``; the check at most
0.2 x, and no process spawned (the bench exits if the served runs journal a spawn).

    python bench/start_hook.py [--quick] [--runs N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import (PYTHON_PASS, Row, Seconds, Target, child_env, environment, interleaved, progress, python_pass,
                     run_output, run_timed, sandman_argv, scratch, script)
from recall import CHAIN, build, payload

RUNS = 40
QUICK = {"runs": 9}
MEMORIES = 1_000
TRANSCRIPTS = 1_000
SERVED_TARGET = Target("≤ 1.2× python -c pass", ratio=1.2)
CHECK_TARGET = Target("≤ 0.2× python -c pass", ratio=0.2)


def _fasthook() -> list[str]:
    import sandman

    return [sys.executable, "-I", "-S", str(Path(sandman.__file__).with_name("fasthook.py")), "recall", "--hook"]


def _projects(home: Path, root: Path) -> Path:
    """``TRANSCRIPTS`` transcripts with nothing to take: taken (a link under the root, a newer take
    record), one in a hundred older than the lookback."""
    projects = home / ".claude" / "projects"
    archive = root / ".archive" / "claude" / "bench"
    archive.mkdir(parents=True)
    takes = root / ".takes"
    takes.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for n in range(TRANSCRIPTS):
        folder = projects / f"-home-bench-proj-{n % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        sid = f"be{n:06d}-0000-4000-8000-000000000000"
        path = folder / f"{sid}.jsonl"
        path.write_text('{"type":"user"}\n')
        if n % 100 == 0:
            old = now - 30 * 86_400
            os.utime(path, (old, old))
            continue
        written = now - 3600 - n
        os.utime(path, (written, written))
        os.link(path, archive / f"{sid}.jsonl")
        (takes / f"{sid}.json").write_text("{}\n")
    return projects


def _check_timed(root: Path, projects: Path, runs: int) -> Seconds:
    """The check's median wall and CPU seconds in this process; exits if it finds anything."""
    from sandman.archive.missed import anything_missed

    walls, cpus = [], []
    for _ in range(runs + 3):
        wall, cpu = time.perf_counter(), time.process_time()
        found = anything_missed(str(root), str(projects), None, time.time())
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        if found:
            raise SystemExit("the backstop's check found something to take in a folder with nothing to take")
    return Seconds(statistics.median(walls[3:]), statistics.median(cpus[3:]))


def rows(runs: int = RUNS) -> list[Row]:
    """Return the rows: the served start, the full hook and the backstop's check against
    ``python -c pass``. Raises SystemExit when the served bytes differ from the full hook's,
    when a served run falls back or spawns, or when a hook fails."""
    with scratch() as base:
        home = base / "home"
        chain = [home]
        for part in CHAIN:
            chain.append(chain[-1] / part)
        root = base / "root"
        progress(f"start hook: building {MEMORIES:,} memories and {TRANSCRIPTS:,} transcripts")
        with environment(HOME=str(home)):
            build(root, chain, MEMORIES)
        projects = _projects(home, root)
        env = child_env(HOME=str(home), SANDMAN_ROOT=str(root), CLAUDE_CONFIG_DIR=str(home / ".claude"))
        sent = payload(chain[-1])
        full = run_output([*sandman_argv(), "recall", "--hook"], env, sent)  # keeps the reply
        served = run_output(_fasthook(), env, sent)
        if served != full or not json.loads(served)["hookSpecificOutput"]["additionalContext"]:
            raise SystemExit("the served start differs from the full hook's reply")
        progress(f"start hook: the served reply is the full hook's, byte for byte ({len(served):,} bytes)")
        journal = root / ".trace"
        before = sum(1 for path in journal.glob("recall-*.log") for _ in path.open())
        progress(f"start hook: {runs} runs of 5 commands")
        stamp = root / ".backstop.stamp"

        def due() -> float:  # the backstop's minute over: the served start runs the check too
            stamp.unlink(missing_ok=True)
            return run_timed(_fasthook(), env, sent)

        def whole() -> float:  # the check due and no kept scan: every transcript looked at
            (root / ".backstop.kept").unlink(missing_ok=True)
            return due()

        bare, fast, checked, listed, slow = interleaved(
            [python_pass(env), lambda: run_timed(_fasthook(), env, sent), due, whole,
             lambda: run_timed([*sandman_argv(), "recall", "--hook"], env, sent)], runs, warmup=3)
        takes = "".join(path.read_text() for path in journal.glob("take-*.log"))
        if "missed-spawned" in takes:
            raise SystemExit("a start spawned the backstop with nothing to take")
        after = sum(1 for path in journal.glob("recall-*.log") for _ in path.open())
        if after - before != 4 * (runs + 3):
            raise SystemExit("the hooks did not journal one line a run")
        profile = subprocess.run([_fasthook()[0], "-X", "importtime", *_fasthook()[1:]], input=sent, env=env,
                                 capture_output=True).stderr.decode()
        if "sandman.recall.compose" in profile:
            raise SystemExit("the launcher ran the full hook: the kept reply was not served")
        check = _check_timed(root, projects, runs)
    return [Row(f"served `recall --hook` (fasthook.py), {MEMORIES:,} memories, 5 banks", fast, PYTHON_PASS, bare,
                runs, SERVED_TARGET),
            Row(f"served `recall --hook`, the backstop's check due ({TRANSCRIPTS:,} transcripts)", checked,
                PYTHON_PASS, bare, runs, SERVED_TARGET),
            Row("served `recall --hook`, the check due, no kept scan (a folder's hourly whole listing)", listed,
                PYTHON_PASS, bare, runs),
            Row(f"full `sandman recall --hook`, {MEMORIES:,} memories, 5 banks", slow, PYTHON_PASS, bare, runs),
            Row(f"backstop check, {TRANSCRIPTS:,} transcripts, nothing to take (in process)", check, PYTHON_PASS,
                bare, runs, CHECK_TARGET)]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
