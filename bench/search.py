"""Benchmark ``sandman search``: the FTS5 index over 50,000 memories, its build and its queries.

Writes a throwaway root of 50,000 memory files over 50 banks (file text made by
banks.memory, the format's own writer; no commits: the index reads files),
bodies of 1 to 6 sentences drawn from a 2,000-word vocabulary so that a word
matches a few hundred memories, and one rare word in 10. Then times:

- the index build from nothing (``banks.search.build``), against reading the
  same 50,000 files once (the floor any build pays);
- a query with the index current, in process (``banks.search.search``: the
  staleness check of one ``stat`` per bank folder and one ``lstat`` per hit, then FTS5), against the same
  question answered without an index (reading every file and looking for the
  word, as grep would);
- a ``stat`` of every memory (what a search pays when every folder changed),
  and an incremental refresh of one bank after one file changed;
- ``sandman search`` as a real subprocess, against ``python -c pass`` (issue 29: at most 4 x
  at 50,000 memories; typer and pydantic are kept off its path by sandman/dispatch.py).

    python bench/search.py [--quick] [--runs N] [--memories N]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from harness import (PYTHON_PASS, Row, Target, child_env, interleaved, progress, python_pass, run_output, run_timed,
                     sandman_argv, scratch, script, timed)

RUNS = 15
BUILD_RUNS = 3
MEMORIES = 50_000
QUICK = {"runs": 5, "memories": 10_000}
BANKS = 50
VOCABULARY = 2_000
QUERY = "word0042"  # a common word: in about 1 memory in 130
RARE = "zeppelin"  # in 1 memory in 10
TARGET = Target("≤ 4× python -c pass", ratio=4.0)  # issue 29, at 50,000 memories


def words(rng: random.Random, count: int) -> str:
    return " ".join(f"word{rng.randrange(VOCABULARY):04d}" for _ in range(count))


def fill(root: Path, memories: int) -> None:
    """Write ``memories`` memory files over ``BANKS`` bank folders of ``root``."""
    from sandman.banks.memory import Memory

    rng = random.Random(19)
    for bank in range(BANKS):
        (root / "memories" / f"-bench-bank-{bank:02d}").mkdir(parents=True)
    for i in range(memories):
        sentences = [words(rng, 12) + "." for _ in range(1 + i % 6)]
        if i % 10 == 0:
            sentences.append(f"The {RARE} note of memory {i}.")
        memory = Memory(name=f"Fact {i} {words(rng, 3)}", description=words(rng, 10), type="project",
                        body="\n".join(sentences) + "\n", created="2026-12-01T00:00:00Z",
                        updated="2026-12-01T00:00:00Z", source=["bench"])
        folder = root / "memories" / f"-bench-bank-{i % BANKS:02d}"
        (folder / f"project_fact_{i}.md").write_text(memory.text(), encoding="utf-8")


def read_all(root: Path) -> int:
    return sum(len(path.read_bytes()) for path in (root / "memories").glob("*/*.md"))


def grep(root: Path, word: str) -> int:
    return sum(word in path.read_text(encoding="utf-8") for path in (root / "memories").glob("*/*.md"))


def rows(runs: int = RUNS, memories: int = MEMORIES) -> list[Row]:
    """Return the rows: build, query, staleness check, refresh, subprocess. Medians in seconds."""
    from sandman.banks import search
    from sandman.banks.listing import bank_folders
    from sandman.layout import Layout

    label = f"{memories:,} memories"
    with scratch() as base:
        root = base / "root"
        progress(f"search: writing {label}")
        fill(root, memories)
        layout = Layout(root)
        progress(f"search: {BUILD_RUNS} builds")
        build, floor = interleaved([lambda: timed(lambda: search.build(layout)),
                                    lambda: timed(lambda: read_all(root))], BUILD_RUNS, warmup=0)
        size = layout.search_index.stat().st_size
        hits = search.search(layout, QUERY, limit=1000)
        rare = search.search(layout, RARE, limit=1000)
        progress(f"search: {QUERY!r} finds {len(hits)}, {RARE!r} finds {len(rare)} (limit 1000); "
                 f"index {size / 1e6:.1f} MB")
        if not hits or grep(root, QUERY) < len(hits):
            raise SystemExit("search found nothing, or more than grep: the bench root is wrong")
        target = root / "memories" / "-bench-bank-00" / "project_fact_0.md"
        original = target.read_text(encoding="utf-8")

        def refresh() -> float:
            target.write_text(original + f"Changed {refresh.count}.\n", encoding="utf-8")
            refresh.count += 1
            return timed(lambda: search.refresh(layout, ["-bench-bank-00"]))
        refresh.count = 0

        def scan() -> float:
            return timed(lambda: [search._live_files(folder) for folder in bank_folders(layout)])

        progress(f"search: {runs} runs of the in-process queries")
        query, rare_query, stale, refreshed, linear = interleaved([
            lambda: timed(lambda: search.search(layout, QUERY)),
            lambda: timed(lambda: search.search(layout, RARE)),
            scan, refresh,
            lambda: timed(lambda: grep(root, QUERY)),
        ], runs, warmup=1)
        env = child_env(HOME=str(base), SANDMAN_ROOT=str(root))
        if QUERY not in run_output([*sandman_argv(), "search", QUERY], env):
            raise SystemExit("sandman search printed no hit")
        progress(f"search: {runs} runs of the subprocess")
        bare, command = interleaved([python_pass(env),
                                     lambda: run_timed([*sandman_argv(), "search", QUERY], env)], runs, warmup=1)
    grep_label = f"no index: read every file for the word ({label})"
    return [
        Row(f"index build from nothing, {label} ({size / 1e6:.0f} MB)", build,
            f"read the {label} once", floor, BUILD_RUNS),
        Row(f"query `{QUERY}` (~{len(hits)} hits, top 20), index current, {label}", query, grep_label, linear, runs),
        Row(f"query `{RARE}` (~{len(rare)} hits, top 20), index current, {label}", rare_query, grep_label, linear,
            runs),
        Row(f"a stat of every memory (what a search pays when every folder changed), {label}", stale, grep_label,
            linear, runs),
        Row(f"refresh of one bank after one file changed, {label}", refreshed, grep_label, linear, runs),
        Row(f"`sandman search {QUERY}` (subprocess), {label}", command, PYTHON_PASS, bare, runs,
            TARGET if memories >= MEMORIES else None),
    ]


def arguments(parser) -> None:
    parser.add_argument("--memories", type=int, help=f"memories in the root (default {MEMORIES:,})")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
