"""Benchmark ``remember``: one memory committed now, by hand or through the MCP tool, and how its
cost grows with the root.

Builds two throwaway roots, each committed in one commit (memory files written
by banks.memory's own writer, every MEMORY.md by banks.index, the commit by
store.repo.commit_paths: seconds, not the minutes of one transaction per
memory): a root of 1,000 memories (one bank of 1,000) and a root of 50,000
(that bank and 49 more of 1,000 each), so the bank a remember writes is the
same size in both and only the root grows. The banks' directories are named
as a person's projects are, with letters and digits (``/srv/app-2024/project-ab``;
remember does not need them to exist): the secrets ban's pre-check for paths
clears them, so the rule set is not loaded (before it was, at every remember
into such a bank: 16 x; a directory that does carry a credential-like run is
what the secrets bench measures). Then times, each a median over interleaved
runs, wall and CPU:

- ``sandman remember "<body>" --cwd <dir>`` (the installed console script, a
  real subprocess) into each root, against ``python -c pass`` (issue 29: at
  most 10 x at 1,000 memories), and the root of 50,000 against the root of
  1,000 (issue 29: at most 1.1, flat);
- the verb function ``sandman.verbs.remember.remember`` in this process (the
  MCP server's path) into the bank of 1,000 against the same call into a new bank,
  and into the large root against the root of 1,000: in process the git index is
  caught up before it returns (docs/BANK-FORMAT.md, "The index behind HEAD"), so
  this one grows with the root.

Every run commits a different body, so none is skipped as unchanged.

    python bench/remember.py [--quick] [--runs N] [--memories N]
"""

from __future__ import annotations

import itertools
from pathlib import Path

from harness import (PYTHON_PASS, Row, Target, child_env, environment, interleaved, progress, python_pass,
                     run_timed, sandman_argv, scratch, script, timed)

RUNS = 15
QUICK = {"runs": 5, "memories": 10_000}
BANK_SIZE = 1_000
MEMORIES = 50_000
TARGET = Target("≤ 10× python -c pass", ratio=10.0)  # issue 29
FLAT = Target("≤ 1.1 (flat)", ratio=1.1)  # issue 29


def directory(n: int) -> str:
    """The directory of bank ``n``: ``/srv/app-2024/project-aa``, ``/srv/app-2024/project-ab``, ..."""
    return "/srv/app-2024/project-" + chr(97 + n // 26 % 26) + chr(97 + n % 26)


def plant(root: Path, banks: int) -> None:
    """Make ``root`` a memory root of ``banks`` banks of ``BANK_SIZE`` memories, in one commit."""
    from sandman.banks.index import render_index
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name, memory_filename
    from sandman.banks.search import build
    from sandman.layout import Layout
    from sandman.store import repo as store

    layout = Layout(root)
    store.ensure_root(layout)
    paths = []
    for b in range(banks):
        folder = layout.bank(bank_name(directory(b)))
        folder.mkdir(parents=True)
        for i in range(BANK_SIZE):
            body = f"Memory {i} of the bench: the module number {i} keeps its own conventions.\n" * (1 + i % 4)
            memory = Memory(name=f"Bench fact {i}", description=f"The module number {i} keeps its conventions.",
                            type=("project", "feedback", "reference")[i % 3], body=body, source=["bench"],
                            created="2026-12-01T00:00:00Z", updated="2026-12-01T00:00:00Z")
            (folder / memory_filename(memory.type, memory.name)).write_text(memory.text(), encoding="utf-8")
        (folder / "MEMORY.md").write_text(render_index(folder, directory(b)), encoding="utf-8")
        paths += [path.relative_to(root).as_posix() for path in folder.iterdir()]
    repo = store.open_repo(layout)
    store.commit_paths(repo, sorted(paths), f"bench: {banks * BANK_SIZE:,} memories", {"Verb": "bench"})
    build(layout)  # the search index a commit keeps current (a first commit of memories builds it)


def rows(runs: int = RUNS, memories: int = MEMORIES) -> list[Row]:
    """Return the process rows (root of 1,000, root of ``memories``, their ratio) and the in-process
    row, medians in seconds over ``runs`` runs.

    Raises SystemExit when a ``sandman remember`` subprocess fails.
    """
    from sandman.layout import Layout
    from sandman.verbs.remember import remember

    bodies = (f"Run {n} of the bench: the release script reads its version from pyproject." for n in itertools.count())
    banks = max(1, memories // BANK_SIZE)
    with scratch() as base:
        small, large, empty = base / "small", base / "large", Layout(base / "empty")
        with environment(HOME=str(base)):
            progress(f"remember: planting a root of {BANK_SIZE:,} memories")
            plant(small, 1)
            progress(f"remember: planting a root of {banks * BANK_SIZE:,} memories")
            plant(large, banks)
            progress(f"remember: {runs} runs in process")
            in_full, in_empty, in_large = interleaved([
                lambda: timed(lambda: remember(Layout(small), next(bodies), cwd=directory(0))),
                lambda: timed(lambda: remember(empty, next(bodies), cwd=directory(0))),
                lambda: timed(lambda: remember(Layout(large), next(bodies), cwd=directory(0))),
            ], runs)
        small_env = child_env(HOME=str(base), SANDMAN_ROOT=str(small))
        large_env = child_env(HOME=str(base), SANDMAN_ROOT=str(large))
        progress(f"remember: {runs} runs of the process")
        cli_small, cli_large, bare = interleaved([
            lambda: run_timed([*sandman_argv(), "remember", next(bodies), "--cwd", directory(0)], small_env),
            lambda: run_timed([*sandman_argv(), "remember", next(bodies), "--cwd", directory(0)], large_env),
            python_pass(small_env),
        ], runs)
    large_label = f"root of {banks * BANK_SIZE:,}"
    return [
        Row(f"`sandman remember` (process), root of {BANK_SIZE:,}", cli_small, PYTHON_PASS, bare, runs, TARGET),
        Row(f"`sandman remember` (process), {large_label}", cli_large, PYTHON_PASS, bare, runs),
        Row(f"`sandman remember` (process), {large_label}, against the root of {BANK_SIZE:,}", cli_large,
            f"root of {BANK_SIZE:,}", cli_small, runs, FLAT),
        Row(f"`remember()` in process, bank of {BANK_SIZE:,}", in_full, "the same into a new bank", in_empty, runs),
        Row(f"`remember()` in process, {large_label}", in_large, f"root of {BANK_SIZE:,}", in_full, runs),
    ]


def arguments(parser) -> None:
    parser.add_argument("--memories", type=int, help=f"memories in the larger root (default {MEMORIES:,})")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    main()
