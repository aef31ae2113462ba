"""Benchmark one whole dream: 20 pointers, three fake minds each answering after a fixed delay.

The three minds of a pointer run at the same time, so the wall time must be
close to 20 x one mind's delay, not 60 x (issue 4). The run is a real
``sandman dream --now`` subprocess against a throwaway root, with
tests/fakes/claude on ``$SANDMAN_CLAUDE_BIN``; two of the minds agree on one
memory per pointer, so every pointer also ends in the commit lock: 8 of those
memories commit and 12 are deduped against one committed before them (the
check below). The baselines are 20 x and
60 x the delay; the same dream with no delay, timed in the same run
(interleaved), is the overhead (processes, reading, consensus, commits), and
the delayed dream minus it is what the delays cost: 1 x 20 x delay when the
minds fully overlap, 3 x when they run in series.

    python bench/dream.py [--quick] [--runs N] [--delay SECONDS]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path

from harness import REPO, Row, Target, child_env, interleaved, progress, sandman_argv, scratch, script
from sandman.config import MINDS

RUNS = 3
QUICK = {"runs": 1}
DELAY = 1.0
FAKE = REPO / "tests" / "fakes" / "claude"
POINTERS = 20
# Of the 20 agreed memories, those that commit; the 12 others are already held (see prepare).
COMMITTED = 8
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]


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
        # Pointer n's memory has the words n, n+7, n+3, n+11 and "policy"; pointer n+4's shares
        # n+7, n+11 and "policy" with it: 3 of 5 words each, a Dice overlap of 6/10 >= 5/9, so
        # sandman.minds.evidence.same calls them one fact and the later one is deduped.
        memory = {"bank": str(cwd), "type": "project", "name": f"{WORDS[n]} {WORDS[(n + 7) % 20]} policy",
                  "description": f"{WORDS[(n + 3) % 20]} {WORDS[(n + 11) % 20]}", "body": f"{WORDS[n]}."}
        rules.append({"match": sid, "result": {"memories": [memory]}})
    for _variable, model in (MINDS["fable"], MINDS["opus"]):  # the third mind answers nothing
        (fixtures / f"{model}.json").write_text(json.dumps(rules))
    return child_env(HOME=str(home), SANDMAN_ROOT=str(root), CLAUDE_CONFIG_DIR=str(home / ".claude"),
                     SANDMAN_CLAUDE_BIN=str(FAKE), FAKE_CLAUDE_FIXTURES=str(fixtures))


def trial(delay: float) -> float:
    """Run one whole dream of 20 fresh pointers, each mind waiting ``delay`` seconds; return its seconds."""
    with scratch() as home:
        env = prepare(home)
        env["FAKE_CLAUDE_DELAY"] = str(delay)
        start = time.perf_counter()
        done = subprocess.run([*sandman_argv(), "dream", "--now"], env=env, capture_output=True)
        elapsed = time.perf_counter() - start
        counts = re.search(rb"(\d+) memories committed, (\d+) deduped", done.stdout)
        if (done.returncode != 0 or f"{POINTERS} routed".encode() not in done.stdout or counts is None
                or int(counts[1]) + int(counts[2]) != POINTERS or int(counts[1]) != COMMITTED):
            raise SystemExit(f"the dream did not route all {POINTERS} and commit {COMMITTED} (the rest deduped): "
                             f"{done.stdout!r} {done.stderr!r}")
        return elapsed


def rows(runs: int = RUNS, delay: float = DELAY) -> list[Row]:
    """Return three rows: the delayed dream against 20 and 60 x ``delay``, and the delay's
    share (delayed minus undelayed dream, both measured) against 20 x ``delay``; medians
    in seconds over ``runs`` interleaved runs.

    Raises SystemExit when a dream does not route all 20 pointers, commit 8 memories and dedupe 12.
    """
    progress(f"dream: {runs} runs of a {POINTERS}-pointer dream, minds waiting {delay} s and 0 s")
    wall, overhead = interleaved([lambda: trial(delay), lambda: trial(0.0)], runs, warmup=0)
    name = f"`dream`, {POINTERS} pointers, 3 minds each waiting {delay:g} s"
    overlap, serial = POINTERS * delay, POINTERS * 3 * delay
    return [
        Row(name, wall, f"{POINTERS} × delay (minds overlap)", overlap, runs, Target("ratio < 1.5", ratio=1.5)),
        Row(name, wall, f"{POINTERS * 3} × delay (minds in series)", serial, runs),
        Row(f"the delays' share: that dream − the same with no delay ({overhead:.2f} s)", wall - overhead,
            f"{POINTERS} × delay", overlap, runs, Target("ratio < 1.2 (3 in series)", ratio=1.2)),
    ]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--delay", type=float, help=f"seconds each fake mind waits (default {DELAY})")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    main()
