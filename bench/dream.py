"""Benchmark one whole dream: 20 pointers, three fake minds each answering after a fixed delay.

The three minds of a pointer run at the same time, so the wall time must be
close to 20 x one mind's delay, not 60 x. The run is a real ``sandman dream
--now`` subprocess against a throwaway root, with tests/fakes/claude on
``$SANDMAN_CLAUDE_BIN``; two of the minds agree on one memory per pointer, so
every pointer also commits. The baseline, timed in the same run, is the same
dream with no delay (the overhead: processes, reading, consensus, commits).

    python bench/dream.py [--runs N] [--delay SECONDS]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fakes" / "claude"
POINTERS = 20
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]


def sandman_argv() -> list[str]:
    script = Path(sys.executable).with_name("sandman")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sandman"]


def prepare(home: Path) -> dict[str, str]:
    """Write 20 archived sessions with pointers and the minds' fixtures; return the environment."""
    root, cwd = home / ".sandman", home / "proj"
    cwd.mkdir(parents=True)
    fixtures = home / "fixtures"
    fixtures.mkdir()
    rules = []
    for n in range(POINTERS):
        sid = f"be0c{n:04d}-0000-4000-8000-000000000000"
        relpath = f".archive/claude/2026/11/30/120000--home-user-proj/{sid}.jsonl"
        archived = root / relpath
        archived.parent.mkdir(parents=True, exist_ok=True)
        ended = f"2026-11-{n + 1:02d}T10:00:00Z"
        line = {"type": "user", "sessionId": sid, "cwd": str(cwd), "timestamp": ended, "uuid": "u1",
                "parentUuid": None, "message": {"role": "user", "content": f"We settled on {WORDS[n]}."}}
        archived.write_text(json.dumps(line) + "\n")
        pointer = root / "memories" / ".recent" / f"{sid}.json"
        pointer.parent.mkdir(parents=True, exist_ok=True)
        pointer.write_text(json.dumps({"session": sid, "host": "claude", "archived": relpath, "cwd": str(cwd),
                                       "started": ended, "ended": ended, "title": WORDS[n], "highlights": []}))
        # Word sets no two pointers share by half, so every memory commits (no dedupe).
        memory = {"bank": str(cwd), "type": "project", "name": f"{WORDS[n]} {WORDS[(n + 7) % 20]} policy",
                  "description": f"{WORDS[(n + 3) % 20]} {WORDS[(n + 11) % 20]}", "body": f"{WORDS[n]}."}
        rules.append({"match": sid, "result": {"memories": [memory]}})
    for model in ("claude-fable-5-1", "claude-opus-5"):
        (fixtures / f"{model}.json").write_text(json.dumps(rules))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SANDMAN_", "CLAUDE", "FAKE_CLAUDE_"))}
    env.update(HOME=str(home), SANDMAN_ROOT=str(root), CLAUDE_CONFIG_DIR=str(home / ".claude"),
               SANDMAN_CLAUDE_BIN=str(FAKE), FAKE_CLAUDE_FIXTURES=str(fixtures),
               SANDMAN_GIT_NAME="bench", SANDMAN_GIT_EMAIL="bench@sandman.invalid")
    return env


def one_dream(delay: float) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        env = prepare(Path(scratch))
        env["FAKE_CLAUDE_DELAY"] = str(delay)
        start = time.perf_counter()
        done = subprocess.run([*sandman_argv(), "dream", "--now"], env=env, capture_output=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0 or b"20 routed" not in done.stdout or b"20 memories committed" not in done.stdout:
            raise SystemExit(f"the dream did not route and commit all 20: {done.stdout!r} {done.stderr!r}")
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds each fake mind waits")
    args = parser.parse_args()
    delayed, baseline = [], []
    for _ in range(args.runs):
        baseline.append(one_dream(0.0))
        delayed.append(one_dream(args.delay))
    wall, overhead = statistics.median(delayed), statistics.median(baseline)
    serial, parallel = POINTERS * 3 * args.delay, POINTERS * args.delay
    print(f"one dream of {POINTERS} pointers, 3 minds each answering after {args.delay} s, {args.runs} runs:")
    print(f"  wall time                  median {wall:7.2f} s")
    print(f"  20 x delay (minds overlap)        {parallel:7.2f} s")
    print(f"  60 x delay (minds in series)      {serial:7.2f} s")
    print(f"  ratio wall / (20 x delay)         {wall / parallel:7.2f}x")
    print(f"  baseline: same dream, no delay    {overhead:7.2f} s")
    print(f"  (wall - baseline) / (20 x delay)  {(wall - overhead) / parallel:7.2f}x   (1.00: the minds fully overlap; 3.00: in series)")


if __name__ == "__main__":
    main()
