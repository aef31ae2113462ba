"""Benchmark the floors: what importing the stack's own modules alone costs a process.

Each row is a real subprocess of this venv's interpreter, ``python -c "<imports>"``,
timed interleaved with ``python -c pass`` (the baseline) run by run. They bound
from below what a sandman process that needs those modules can reach against
the issue-18 targets (docs/performance.md, "The floors"): ``recall --hook`` at
most 2.0 x and ``take --hook`` at most 1.8 x ``python -c pass`` (both import
``pathlib``), ``sandman remember`` at most 4 x (it commits with pygit2 and scans
with betterleaks), a help page at most 4 x (typer renders it).

    python bench/floors.py [--quick] [--runs N]
"""

from __future__ import annotations

import sys

from harness import PYTHON_PASS, Row, child_env, interleaved, progress, python_pass, run_timed, script

RUNS = 21
QUICK = {"runs": 7}

# (row name, the code run by python -c)
FLOORS = (
    ("`import re`", "import re"),
    ("`import pathlib` (with re, enum, fnmatch, urllib.parse, ipaddress)", "import pathlib"),
    ("`import json` (it imports re: any hook that reads its JSON payload)", "import json"),
    ("`import json, datetime` (what a hook without pathlib still imports)", "import json, datetime"),
    ("a hook with nothing of sandman's: parse a payload, print 9,000 characters of JSON",
     "import json, sys; payload = json.loads('{\"session_id\": \"s\", \"cwd\": \"/tmp\"}'); "
     "sys.stdout.write(json.dumps({'hookSpecificOutput': {'additionalContext': 'm' * 9000}}))"),
    ("`import sandman.hook, sandman.verbs.recall`", "import sandman.hook, sandman.verbs.recall"),
    ("`import sandman.hook, sandman.verbs.take`", "import sandman.hook, sandman.verbs.take"),
    ("`import typer`", "import typer"),
    ("`import pygit2`", "import pygit2"),
    ("`import betterleaks`", "import betterleaks"),
    ("betterleaks' first `scan_string` (its library and rules load)",
     "import betterleaks; betterleaks.scan_string('no secret here')"),
    ("`import sandman.dispatch, sandman.verbs.remember` (remember's imports)",
     "import sandman.dispatch, sandman.verbs.remember"),
)


# (row name, the code run by python -I -S -c): the floors of the fast launcher (sandman/fasthook.py, issue 29)
BARE_FLOORS = (
    ("`python -I -S -c \"import os; os._exit(0)\"` (no site: the fast launcher's start)", "import os; os._exit(0)"),
    ("`python -I -S -c \"import _json, _sqlite3, os\"` (the prompt hook's fast path's built-ins)",
     "import _json, _sqlite3, os; os._exit(0)"),
)


def rows(runs: int = RUNS) -> list[Row]:
    """Return one row per floor: the median seconds of ``python -c <imports>`` (or ``python -I -S
    -c``) over ``runs`` interleaved runs against ``python -c pass``."""
    env = child_env()
    progress(f"floors: {runs} runs of {len(FLOORS) + len(BARE_FLOORS) + 1} commands")
    trials = [python_pass(env)]
    trials += [lambda code=code: run_timed([sys.executable, "-c", code], env) for _, code in FLOORS]
    trials += [lambda code=code: run_timed([sys.executable, "-I", "-S", "-c", code], env) for _, code in BARE_FLOORS]
    bare, *medians = interleaved(trials, runs)
    return [Row(name, median, PYTHON_PASS, bare, runs)
            for (name, _), median in zip((*FLOORS, *BARE_FLOORS), medians)]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
