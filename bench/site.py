"""Benchmark the site render: 5,000 memories in 20 banks and 365 voyage entries.

    python bench/site.py [--root DIR] [--runs 3]

Builds the root with real commits through sandman.banks.commit (many memories
per bank_transaction, so building takes seconds, not minutes), unless --root
names one this script built before. Then times, in process:

- a full render (``.site/`` deleted first, so nothing is cached), and
- an incremental render after one memory was changed (one new commit),

and prints the medians against the targets (full < 15 s, incremental < 1.5 s).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.index import memory_files
from sandman.banks.memory import Memory, read_memory
from sandman.layout import Layout
from sandman.site.render import render_site
from sandman.voyage import LogEntry, fingerprint, render_log_index

BANKS = 20
PER_BANK = 250
PER_COMMIT = 50
DAYS = 365
FULL_TARGET_S = 15.0
INCREMENTAL_TARGET_S = 1.5
WORDS = (
    "build test deploy cache retry upload schema index branch commit review lint format parser "
    "session memory bank dream recall reflect voyage pointer archive config token budget timeout "
    "fixture golden render template search history diff merge prune retitle upkeep journal trace"
).split()


def sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def body(rng: random.Random) -> str:
    paragraphs = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(3)) for _ in range(2)]
    return "\n\n".join(paragraphs) + f"\n\n- run `make {rng.choice(WORDS)}`\n- see [docs](https://example.org/{rng.choice(WORDS)})\n"


def build(layout: Layout) -> None:
    rng = random.Random(1705)
    for b in range(BANKS):
        directory = f"/home/user/project-{b:02d}"
        for start in range(0, PER_BANK, PER_COMMIT):
            with bank_transaction(layout, verb="dream", subject=f"{PER_COMMIT} memories") as tx:
                for i in range(start, start + PER_COMMIT):
                    memory = Memory(
                        name=f"Memory {i:03d} of bank {b:02d}: {sentence(rng, 4)[:-1]}",
                        description=sentence(rng, 12), type=rng.choice(("project", "feedback", "reference")),
                        body=body(rng), source=[f"session-{b}-{i}"], witnesses=["fable", "opus"],
                    )
                    tx.write_memory(layout.bank(f"-home-user-project_-{b:02d}").name, memory, directory=directory)
        print(f"  bank {b + 1}/{BANKS}", file=sys.stderr, end="\r")
    first = date(2025, 11, 30)
    days = [(first + timedelta(days=n)).isoformat() for n in range(DAYS)]
    for start in range(0, DAYS, 73):
        with bank_transaction(layout, verb="reflect", subject="voyage entries") as tx:
            for n, day in enumerate(days[start:start + 73], start):
                entry = LogEntry(
                    day=day, position=n + 1, kind=rng.choice(("landfall", "passage", "squall", "refit")),
                    title=sentence(rng, 6)[:60], body=" ".join(sentence(rng, 14) for _ in range(4)) + "\n",
                    next=sentence(rng, 8), fingerprint=fingerprint([(day, day)]),
                    sources=[f"-home-user-project_-{n % BANKS:02d}/project_x.md"],
                )
                tx.write_file(layout.log_entry(day), entry.text())
            tx.write_file(layout.log_index, render_log_index(layout))
    print(file=sys.stderr)


def change_one(layout: Layout, run: int) -> None:
    path = memory_files(layout.bank("-home-user-project_-07"))[run]
    old = read_memory(path)
    memory = Memory(name=old.name, description=old.description, type=old.type, created=old.created,
                    body=old.body + f"\nChanged in run {run}.\n")
    commit_memory(layout, memory, directory="/home/user/project-07", verb="remember", replaces=path.name)


def timed(action) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="a root built by an earlier run (built there if missing)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("SANDMAN_GIT_NAME", "sandman bench")
    os.environ.setdefault("SANDMAN_GIT_EMAIL", "bench@sandman.invalid")
    temp = None
    if args.root is None:
        temp = tempfile.TemporaryDirectory(prefix="sandman-bench-")
        args.root = Path(temp.name) / "root"
    layout = Layout(args.root.resolve())
    if not (layout.root / ".git").exists():
        print(f"building {BANKS * PER_BANK:,} memories and {DAYS} entries in {layout.root} ...", file=sys.stderr)
        seconds, _ = timed(lambda: build(layout))
        print(f"built in {seconds:.1f} s", file=sys.stderr)

    full, incremental, cli = [], [], []
    for run in range(args.runs):
        shutil.rmtree(layout.site, ignore_errors=True)
        seconds, stats = timed(lambda: render_site(layout))
        full.append(seconds)
        print(f"full {run + 1}: {seconds:.2f} s, {stats.pages:,} pages written, "
              f"{stats.commits_walked} commits walked", file=sys.stderr)
    for run in range(args.runs):
        change_one(layout, run)
        seconds, stats = timed(lambda: render_site(layout))
        incremental.append(seconds)
        print(f"incremental {run + 1}: {seconds:.3f} s, {stats.written} of {stats.pages:,} pages written",
              file=sys.stderr)
    for run in range(args.runs):
        change_one(layout, args.runs + run)
        env = {**os.environ, "SANDMAN_ROOT": str(layout.root)}
        seconds, _ = timed(lambda: subprocess.run([sys.executable, "-m", "sandman", "site"], env=env,
                                                   check=True, capture_output=True))
        cli.append(seconds)

    memories = BANKS * PER_BANK
    print(f"site render, {memories:,} memories in {BANKS} banks, {DAYS} voyage entries, {args.runs} runs each:")
    for label, values, target in (("full render", full, FULL_TARGET_S),
                                  ("incremental render (one memory changed)", incremental, INCREMENTAL_TARGET_S),
                                  ("`sandman site` after one change, whole process", cli, None)):
        median = statistics.median(values)
        against = f"target < {target:.1f} s, ratio {median / target:.2f}" if target else "no target"
        print(f"  {label}: median {median:.3f} s ({against})")
    if temp is not None:
        temp.cleanup()


if __name__ == "__main__":
    main()
