"""Benchmark the help pages: ``sandman --help`` and every ``sandman <command> --help``.

Each is a real subprocess of the installed ``sandman`` console script, timed
interleaved with ``python -c pass`` (the baseline) run by run. One row for
``sandman --help``, one for the slowest command's page (named in the row), and
one for the median over all command pages, each in the steady state: a set-up
memory root (a scratch one) where the page was kept the first time typer
rendered it (``<root>/.help/``, sandman/dispatch.py). One more row for the first
request of a page, with nothing kept (its own root, ``.help/`` removed before each run): what
a page costs once per state of the code and terminal width. Target (issue 18):
every page at most 4 x ``python -c pass``.

    python bench/cli_help.py [--quick] [--runs N]
"""

from __future__ import annotations

import shutil
import statistics

from harness import (PYTHON_PASS, Row, Target, child_env, interleaved, progress, python_pass, run_timed, sandman_argv,
                     scratch, script)

RUNS = 15
QUICK = {"runs": 5}
TARGET = Target("≤ 4× python -c pass", ratio=4.0)


def commands() -> list[list[str]]:
    """Every command path of the CLI: each verb, each group, each group's subcommands."""
    import typer.main

    from sandman.cli import app

    group = typer.main.get_command(app)
    found = []
    for name, command in sorted(group.commands.items()):
        found.append([name])
        for sub in sorted(getattr(command, "commands", {})):
            found.append([name, sub])
    return found


def rows(runs: int = RUNS) -> list[Row]:
    """Return the rows: ``sandman --help``, the slowest and the median command page, medians in seconds
    over ``runs`` interleaved runs against ``python -c pass``."""
    paths = commands()
    with scratch() as base:
        root, bare_root = base / "root", base / "root-nothing-kept"
        root.mkdir()
        bare_root.mkdir()
        env = child_env(HOME=str(base), SANDMAN_ROOT=str(root))

        def first_render() -> float:
            shutil.rmtree(bare_root / ".help", ignore_errors=True)
            return run_timed([*sandman_argv(), "remember", "--help"], {**env, "SANDMAN_ROOT": str(bare_root)})

        progress(f"cli_help: {runs} runs of {len(paths) + 3} commands")
        trials = [python_pass(env), first_render, lambda: run_timed([*sandman_argv(), "--help"], env)]
        trials += [lambda path=path: run_timed([*sandman_argv(), *path, "--help"], env) for path in paths]
        bare, first, top, *pages = interleaved(trials, runs)
    slowest = max(range(len(paths)), key=lambda i: pages[i])
    return [
        Row("`sandman remember --help`, nothing kept (typer renders it)", first, PYTHON_PASS, bare, runs),
        Row("`sandman --help`", top, PYTHON_PASS, bare, runs, TARGET),
        Row(f"slowest `sandman <command> --help` of {len(paths)} (`{' '.join(paths[slowest])}`)", pages[slowest],
            PYTHON_PASS, bare, runs, TARGET),
        Row(f"median `sandman <command> --help` of {len(paths)}", statistics.median(pages), PYTHON_PASS, bare,
            runs, TARGET),
    ]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
