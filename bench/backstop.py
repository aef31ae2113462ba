"""Benchmark what the backstop for missed endings costs the SessionStart hook (issue 17).

``sandman recall --hook`` (the installed console script, a real subprocess)
starts ``take --missed`` detached and must not wait for it, so its time must
not grow with what the backstop has to read. Times, interleaved run by run:

- ``python -c pass``: the bare interpreter, the baseline;
- the hook when no backstop is due (one started in the last 60 s);
- the hook starting the backstop over an empty projects folder;
- the hook starting the backstop over a projects folder of 1,000 transcripts
  (all written "in the future", so each is read and skipped as live and the
  next run finds them again).

After each run that started a backstop, the bench waits (outside the timed
region) for that detached child to finish, so it never slows the next trial.
Target (issue 17): the hook with 1,000 transcripts against the hook with none,
ratio under 1.10.

    python bench/backstop.py [--quick] [--runs N]
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness import (PYTHON_PASS, Row, Target, child_env, environment, interleaved, progress, python_pass,
                     run_timed, sandman_argv, scratch, script)

RUNS = 25
QUICK = {"runs": 7}
TRANSCRIPTS = 1_000
TARGET = Target("ratio < 1.10", ratio=1.10)


def _transcript(folder: Path, n: int) -> None:
    sid = f"be{n:06d}-0000-4000-8000-000000000000"
    path = folder / f"{sid}.jsonl"
    line = {"type": "user", "sessionId": sid, "cwd": "/home/bench/proj", "timestamp": "2026-11-01T10:00:00Z",
            "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": f"session {n}"}}
    path.write_text(json.dumps(line) + "\n")
    future = time.time() + 30 * 86_400  # always inside the live window: read, skipped, never taken
    os.utime(path, (future, future))


def _build(base: Path, transcripts: int) -> dict[str, str]:
    from sandman.layout import Layout
    from sandman.verbs.remember import remember

    home = base / "home"
    home.mkdir(parents=True)
    env = {"HOME": str(home), "SANDMAN_ROOT": str(home / ".sandman"), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    with environment(**env):
        remember(Layout(home / ".sandman"), "The project builds with make.", cwd="/home/bench/proj")
    folder = home / ".claude" / "projects" / "-home-bench-proj"
    folder.mkdir(parents=True)
    for n in range(transcripts):
        _transcript(folder, n)
    return child_env(**env)


def _wait_for_backstop(root: Path) -> None:
    """Wait until the detached child the last hook started has exited (never timed)."""
    from sandman import journal
    from sandman.layout import Layout

    layout = Layout(root)
    pids = []
    for path in layout.trace.glob("take-*.log"):
        for line in path.read_text().splitlines():
            _, _, decision, facts = journal.parse_line(line)
            if decision == "missed-spawned":
                pids.append(int(facts["pid"]))
    if not pids:
        return
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            os.kill(pids[-1], 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def rows(runs: int = RUNS) -> list[Row]:
    """Return the rows: the hook not due, due over none, due over 1,000 transcripts; medians in seconds."""
    with scratch() as base:
        progress(f"building two roots, one with {TRANSCRIPTS:,} transcripts in its projects folder")
        empty = _build(base / "empty", 0)
        full = _build(base / "full", TRANSCRIPTS)
        sent = json.dumps({"session_id": "bench-start", "cwd": "/home/bench/proj", "source": "startup",
                           "hook_event_name": "SessionStart", "transcript_path": "/dev/null"}).encode()
        hook = [*sandman_argv(), "recall", "--hook"]

        def not_due() -> float:
            stamp = Path(empty["SANDMAN_ROOT"]) / ".backstop.stamp"
            stamp.touch()
            return run_timed(hook, empty, sent)

        def due(env: dict[str, str]) -> float:
            root = Path(env["SANDMAN_ROOT"])
            (root / ".backstop.stamp").unlink(missing_ok=True)
            elapsed = run_timed(hook, env, sent)
            _wait_for_backstop(root)
            return elapsed

        progress(f"timing the hook, {runs} interleaved runs")
        bare, quiet, none, many = interleaved(
            [python_pass(empty), not_due, lambda: due(empty), lambda: due(full)], runs, warmup=2)
    return [
        Row("`recall --hook`, no backstop due", quiet, PYTHON_PASS, bare, runs),
        Row("`recall --hook` starting the backstop, empty projects folder", none, PYTHON_PASS, bare, runs),
        Row(f"`recall --hook` starting the backstop, {TRANSCRIPTS:,} transcripts", many,
            "the same hook, empty projects folder", none, runs, TARGET),
    ]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
