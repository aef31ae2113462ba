"""Benchmark ``remember``: one memory committed now, by hand or through the MCP tool.

Builds a throwaway root whose bank holds 1,000 memories (one bank_transaction)
and a second, empty root. Then times, each a median over interleaved runs:

- ``sandman remember "<body>" --cwd <dir>`` (the installed console script, a
  real subprocess: typer, pygit2 and the secrets scan load each time) against
  ``python -c pass``;
- the verb function ``sandman.verbs.remember.remember`` in this process (the
  MCP server's path: the secrets scan, the slug, MEMORY.md regenerated, one
  commit) into the bank of 1,000 against the same call into a new bank.

Every run commits a different body, so none is skipped as unchanged. The
target for the process (issue 18): at most 4 x ``python -c pass``.

    python bench/remember.py [--quick] [--runs N]
"""

from __future__ import annotations

import itertools

from harness import (PYTHON_PASS, Row, Target, child_env, environment, fill_banks, interleaved, progress, python_pass,
                     run_timed, sandman_argv, scratch, script, timed)

RUNS = 20
QUICK = {"runs": 5}
BANK_SIZE = 1_000
TARGET = Target("≤ 4× python -c pass", ratio=4.0)  # issue 18


def rows(runs: int = RUNS) -> list[Row]:
    """Return the CLI row and the in-process row, medians in seconds over ``runs`` runs.

    Raises SystemExit when a ``sandman remember`` subprocess fails.
    """
    from sandman.layout import Layout
    from sandman.verbs.remember import remember

    bodies = (f"Run {n} of the bench: the release script reads its version from pyproject." for n in itertools.count())
    with scratch() as base:
        home, full, empty = base / "home", Layout(base / "full"), Layout(base / "empty")
        directory = home / "project"
        directory.mkdir(parents=True)
        with environment(HOME=str(home), SANDMAN_ROOT=str(full.root)):
            progress(f"remember: building a bank of {BANK_SIZE:,} memories")
            fill_banks(full, [directory], BANK_SIZE, f"{BANK_SIZE:,} memories")
            progress(f"remember: {runs} runs")
            in_full, in_empty = interleaved([
                lambda: timed(lambda: remember(full, next(bodies), cwd=str(directory))),
                lambda: timed(lambda: remember(empty, next(bodies), cwd=str(directory))),
            ], runs)
        env = child_env(HOME=str(home), SANDMAN_ROOT=str(full.root))
        cli, bare = interleaved([
            lambda: run_timed([*sandman_argv(), "remember", next(bodies), "--cwd", str(directory)], env),
            python_pass(env),
        ], runs)
    return [
        Row(f"`sandman remember` (process), bank of {BANK_SIZE:,}", cli, PYTHON_PASS, bare, runs, TARGET),
        Row(f"`remember()` in process, bank of {BANK_SIZE:,}", in_full, "the same into a new bank", in_empty, runs),
    ]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
