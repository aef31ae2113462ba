"""Run every sandman benchmark and print one table: medians, their baselines, the targets.

    python bench/run.py            the full measurement (about 5 minutes on 2 cores)
    python bench/run.py --quick    fewer runs and a 500-memory site (about 2 minutes)

Each benchmark module of bench/ exposes ``rows(**options)``, run here with its
defaults or its ``QUICK`` options; each is also a script of its own. Progress
goes to stderr; stdout is the machine (CPUs, load average at start and end,
Python) and one markdown table, ready for docs/performance.md, each module's
rows printed as soon as it has measured them. A module that fails (an
exception, or a check of its output that exits) is named with its error after
the table and the others still run; the exit status is then 1. The benchmarks
run one after another in this process, so run it on a machine as quiet as you
can find: the load average is printed so a reader can judge.
"""

from __future__ import annotations

import argparse

import backstop
import cli_help
import floors
import mcp_start
import prompt_hook
import start_hook
import consensus
import consensus_quality
import dream
import recall
import remember
import report_hook
import retrieval
import search
import secrets_ban
import secrets_public
import site_render
import site_trail
import statusline
import sync_spawn
import take
import take_budget
import trail
from harness import Failed, measure, progress

MODULES = (take, take_budget, recall, start_hook, prompt_hook, report_hook, backstop, sync_spawn, remember, cli_help, floors,
           mcp_start, secrets_ban, secrets_public, consensus, consensus_quality, dream, site_render, site_trail, trail, search,
           retrieval, statusline)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer runs and a smaller site root, to see the table in a couple of minutes")
    parser.add_argument("--only", action="append", choices=[module.__name__ for module in MODULES],
                        help="run only this benchmark (repeatable)")
    args = parser.parse_args(argv)
    chosen = [module for module in MODULES if not args.only or module.__name__ in args.only]

    def every_row():
        for module in chosen:
            progress(f"{module.__name__} ...")
            try:
                yield from module.rows(**(module.QUICK if args.quick else {}))
            except (Exception, SystemExit) as error:  # noqa: BLE001 - one failing benchmark must not lose the rest
                text = f"bench/{module.__name__}.py: {type(error).__name__}: {error}"
                progress(text)
                yield Failed(text)

    command = "python bench/run.py" + (" --quick" if args.quick else "")
    command += "".join(f" --only {name}" for name in args.only or [])
    if measure(f"`{command}`" + ("" if args.quick or args.only else " (full)"), every_row):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
