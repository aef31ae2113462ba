"""Benchmark the site render: 5,000 memories in 20 banks and 365 voyage entries.

    python bench/site_render.py [--quick] [--root DIR] [--runs N]

Builds the root with real commits through sandman.banks.commit (many memories
per bank_transaction, so building takes half a minute, not an hour), unless
--root names one this script built before. Then times, in process:

- a full render (``.site/`` deleted first, so nothing is cached), against
  gathering alone (the reading half of a render, also cold);
- an incremental render after one memory was changed (one new commit),
  against the full render;

and, as a real subprocess, ``sandman site`` after one change. Targets (issue
18, tighter than issue 7's 15 s and 1.5 s): full < 5 s, incremental < 300 ms,
at 5,000 memories. ``--quick`` builds
500 memories and 73 entries instead; the targets do not apply there.
(Named site_render, not site: a module ``site`` would be Python's own.)
"""

from __future__ import annotations

import argparse
import random
import shutil
from datetime import date, timedelta
from pathlib import Path

from harness import (Row, Target, child_env, environment, interleaved, progress, run_timed, sandman_argv, scratch,
                     script, timed)
from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.index import memory_files
from sandman.banks.memory import Memory, read_memory
from sandman.layout import Layout
from sandman.site.render import render_site
from sandman.voyage import LogEntry, entry_paths, fingerprint, render_log_index

RUNS = 3
QUICK = {"runs": 3, "per_bank": 25, "days": 73}
BANKS = 20
PER_BANK = 250
PER_COMMIT = 50
DAYS = 365
FULL_TARGET_S = 5.0
INCREMENTAL_TARGET_S = 0.3
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
    links = f"- run `make {rng.choice(WORDS)}`\n- see [docs](https://example.org/{rng.choice(WORDS)})\n"
    return "\n\n".join(paragraphs) + "\n\n" + links


def build(layout: Layout, banks: int, per_bank: int, days: int) -> None:
    """Commit ``banks`` x ``per_bank`` memories and ``days`` voyage entries, many per commit."""
    rng = random.Random(1705)
    for b in range(banks):
        directory = f"/home/user/project-{b:02d}"
        for start in range(0, per_bank, PER_COMMIT):
            with bank_transaction(layout, verb="dream", subject=f"{PER_COMMIT} memories") as tx:
                for i in range(start, min(start + PER_COMMIT, per_bank)):
                    memory = Memory(
                        name=f"Memory {i:03d} of bank {b:02d}: {sentence(rng, 4)[:-1]}",
                        description=sentence(rng, 12), type=rng.choice(("project", "feedback", "reference")),
                        body=body(rng), source=[f"session-{b}-{i}"], witnesses=["fable", "opus"],
                    )
                    tx.write_memory(layout.bank(f"-home-user-project_-{b:02d}").name, memory, directory=directory)
    first = date(2025, 11, 30)
    dates = [(first + timedelta(days=n)).isoformat() for n in range(days)]
    for start in range(0, days, 73):
        with bank_transaction(layout, verb="reflect", subject="voyage entries") as tx:
            for n, day in enumerate(dates[start:start + 73], start):
                entry = LogEntry(
                    day=day, position=n + 1, kind=rng.choice(("landfall", "passage", "squall", "refit")),
                    title=sentence(rng, 6)[:60], body=" ".join(sentence(rng, 14) for _ in range(4)) + "\n",
                    next=sentence(rng, 8), fingerprint=fingerprint([(day, day)]),
                    sources=[f"-home-user-project_-{n % banks:02d}/project_x.md"],
                )
                tx.write_file(layout.log_entry(day), entry.text())
            tx.write_file(layout.log_index, render_log_index(layout))


def change_one(layout: Layout, run: int) -> None:
    from sandman.banks.secrets import find_secrets

    # Skip the files whose generated names the secrets ban reads as a token (``replaces`` would
    # be refused): ``feedback_memory_004_of_bank_07_trace_build_session_pointer.md`` is one.
    files = [path for path in memory_files(layout.bank("-home-user-project_-07")) if not find_secrets(path.name)]
    path = files[run]
    old = read_memory(path)
    memory = Memory(name=old.name, description=old.description, type=old.type, created=old.created,
                    body=old.body + f"\nChanged in run {run}.\n")
    commit_memory(layout, memory, directory="/home/user/project-07", verb="remember", replaces=path.name)


def rows(runs: int = RUNS, banks: int = BANKS, per_bank: int = PER_BANK, days: int = DAYS,
         root: Path | None = None) -> list[Row]:
    """Return three rows, medians in seconds over ``runs`` runs each:

    - the full render (``.site/`` deleted first) against gathering alone (every source read
      and parsed cold, the history walked), interleaved;
    - the incremental render after one memory changed against the full render;
    - ``sandman site`` as a whole process after one change against the incremental render.

    The root holds ``banks`` x ``per_bank`` memories and ``days`` voyage entries; it is built in
    ``root`` unless a root is already there (one an earlier run built), else in a throwaway
    folder. The rows name the memories and entries counted in the root; the targets apply
    from 5,000 memories on.
    """
    from contextlib import nullcontext

    from sandman.site.gather import SourceReader, gather

    with (nullcontext(root) if root is not None else scratch()) as folder, environment():
        layout = Layout(folder.resolve() if root is not None else folder / "root")
        if not (layout.root / ".git").exists():
            progress(f"site: building {banks * per_bank:,} memories and {days} entries in {layout.root}")
            build(layout, banks, per_bank, days)
        # Counted, not assumed: a --root built by an earlier run may hold another size.
        memories = sum(len(memory_files(bank)) for bank in layout.memories.iterdir()
                       if bank.is_dir() and not bank.name.startswith("."))
        entries = len(entry_paths(layout))

        def cold(action) -> float:
            shutil.rmtree(layout.site, ignore_errors=True)
            return timed(action)

        progress(f"site: {runs} full renders")
        full, reading = interleaved([lambda: cold(lambda: render_site(layout)),
                                     lambda: cold(lambda: gather(layout, SourceReader(layout, {})))], runs, warmup=0)
        changes = iter(range(2 * runs + 1))
        render_site(layout)  # the incremental renders start from a complete site

        def after_change(action) -> float:
            change_one(layout, next(changes))
            return timed(action)

        progress(f"site: {runs} incremental renders")
        incremental, = interleaved([lambda: after_change(lambda: render_site(layout))], runs, warmup=0)
        env = child_env(SANDMAN_ROOT=str(layout.root))
        process, = interleaved([lambda: after_change(lambda: run_timed([*sandman_argv(), "site"], env))],
                               runs, warmup=1)
    size = f"{memories:,} memories, {entries} entries"
    at_size = memories >= BANKS * PER_BANK
    full_target = Target(f"< {FULL_TARGET_S:g} s", seconds=FULL_TARGET_S) if at_size else None
    incremental_target = (Target(f"< {INCREMENTAL_TARGET_S * 1000:g} ms", seconds=INCREMENTAL_TARGET_S)
                          if at_size else None)
    return [
        Row(f"full site render, {size}", full, "gathering alone (read, parse, walk history)", reading, runs,
            full_target),
        Row(f"incremental site render, one memory changed, {size}", incremental, "full render", full, runs,
            incremental_target),
        Row(f"`sandman site` (process), one memory changed, {size}", process, "incremental render in process",
            incremental, runs),
    ]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, help="a root built by an earlier run (built there if missing)")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    main()
