"""Benchmark ``sandman recall --prompt-hook`` and ``--file-hook``: the hooks of every prompt and file read.

Builds throwaway roots with 1,000 and 10,000 memories across the five ancestor
banks of one cwd (bench/recall.py's chain, through bank_transaction), and their
search index. Then times, interleaved run by run, real subprocesses of the
installed ``sandman`` against ``python -c pass`` (the baseline):

- ``recall --prompt-hook`` as ``hooks install`` writes it (issue 29): ``<python> -I -S
  <sandman>/fasthook.py recall --prompt-hook``, the fast path (sandman/recall/fast.py);
  its reply is checked to be byte for byte the console script's (the full hook's);
- ``recall --prompt-hook`` with a prompt that every memory shares words with
  (the most ranking work: ``What conventions does module number 424 keep?``),
  a new session each run so that nothing is held and it adds its memories;
- the same hook with a prompt no memory shares a word with (it adds nothing: its four words
  of five letters or more are each looked up for a correction, banks/query.py ``corrections``);
- the installed hook at 10,000 memories with a misspelled prompt (three words corrected);
- ``recall --file-hook`` for a Read of a file two memories name, at 10,000;
- the floors, each leaving by ``os._exit`` as the hooks do: ``import json, re,
  sqlite3`` (any prompt hook in Python that reads its JSON payload, splits the
  prompt into words with ``re``, banks/query.py, and asks the SQLite index), then
  with ``pathlib`` (what sandman's layout and config are written with); and
  ``recall --hook`` on the 10,000-memory root, for scale.

Target (issues 27 and 29): the prompt hook at most 2.0 x ``python -c pass`` at 10,000
memories, measured on the installed command (the fast launcher); the console script's
rows (``sandman recall --prompt-hook``, the full hook) stay for comparison. Before timing, each hook's reply is checked to hold what it should.

    python bench/prompt_hook.py [--quick] [--runs N]
"""

from __future__ import annotations

import itertools
import json
import shlex
import sys
from pathlib import Path

from harness import (PYTHON_PASS, Row, Target, child_env, environment, fill_banks, interleaved, progress,
                     python_pass, run_output, run_timed, sandman_argv, scratch, script)
from sandman.verbs.hooks import hook_command

RUNS = 40
QUICK = {"runs": 9}
CHAIN = ("code", "org", "repo", "pkg")
SIZES = (1_000, 10_000)
HIT = "What conventions does module number 424 keep?"
MISS = "Why is the weather so grey over the harbour today?"
TYPO = "What convetions does modul nubmer 424 kepe?"  # three words no memory holds, each corrected
RATIO_TARGET = Target("≤ 2.0× python -c pass", ratio=2.0)
NAMED = "src/billing/ledger.py"
FLOORS = ("import json, re, sqlite3, os; os._exit(0)", "import json, re, sqlite3, pathlib, os; os._exit(0)")


def build(root: Path, chain: list[Path], memories: int) -> None:
    """Fill ``root`` with ``memories`` memories over the banks of ``chain`` (two of them naming
    NAMED, in the cwd's bank), and build its search index."""
    from sandman.banks import search
    from sandman.banks.commit import bank_transaction
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name
    from sandman.layout import Layout

    layout = Layout(root)
    fill_banks(layout, chain, memories - 2, f"{memories:,} memories")
    with bank_transaction(layout, verb="bench", subject="memories naming a file") as tx:
        for i in range(2):
            tx.write_memory(bank_name(chain[-1]), Memory(
                name=f"Ledger rule {i}", description=f"Rule {i} of the ledger.", type="project",
                body=f"{NAMED} rule {i}: amounts are integer cents.\n", source=["bench"]), directory=str(chain[-1]))
    search.build(layout)


def payloads(cwd: Path) -> tuple:
    """``(prompt payload maker, miss payload maker, file payload maker, misspelled payload maker)``:
    each call a new session id."""
    counter = itertools.count()

    def make(**fields) -> bytes:
        return json.dumps({"session_id": f"bench-{next(counter)}", "cwd": str(cwd), **fields}).encode()

    return (lambda: make(hook_event_name="UserPromptSubmit", prompt=HIT),
            lambda: make(hook_event_name="UserPromptSubmit", prompt=MISS),
            lambda: make(hook_event_name="PostToolUse", tool_name="Read",
                         tool_input={"file_path": str(cwd / NAMED)}, tool_response={}),
            lambda: make(hook_event_name="UserPromptSubmit", prompt=TYPO))


def rows(runs: int = RUNS) -> list[Row]:
    """Return the rows: medians in seconds over ``runs`` interleaved runs, against ``python -c pass``.

    Raises SystemExit when a hook fails or its reply is not what it should be."""
    with scratch() as base:
        home = base / "home"
        chain = [home]
        for part in CHAIN:
            chain.append(chain[-1] / part)
        cwd = chain[-1]
        envs = {}
        with environment(HOME=str(home)):
            for size in SIZES:
                progress(f"prompt hook: building {size:,} memories and their index")
                root = base / f"root-{size}"
                build(root, chain, size)
                envs[size] = child_env(HOME=str(home), SANDMAN_ROOT=str(root))
        hit, miss, read, typo = payloads(cwd)
        argv = {flag: [*sandman_argv(), "recall", flag] for flag in ("--prompt-hook", "--file-hook")}
        fast = shlex.split(hook_command("recall", "--prompt-hook"))
        for size, env in envs.items():
            added = json.loads(run_output(argv["--prompt-hook"], env, hit()))["hookSpecificOutput"]
            if "module number 424 " not in added["additionalContext"]:
                raise SystemExit(f"the prompt hook did not add memory 424 at {size:,} memories: {added}")
            if "module number 424 " not in json.loads(run_output(fast, env, typo()))["hookSpecificOutput"][
                    "additionalContext"]:
                raise SystemExit(f"the prompt hook did not add memory 424 for a misspelled prompt ({size:,})")
            if run_output(argv["--prompt-hook"], env, miss()) != "":
                raise SystemExit(f"the prompt hook added something for a prompt sharing no word ({size:,})")
            same = run_output(fast, env, hit()), run_output(argv["--prompt-hook"], env, hit())
            if same[0] != same[1] or run_output(fast, env, miss()) != "":
                raise SystemExit(f"the fast launcher's reply differs from the full hook's ({size:,}): {same}")
        named = json.loads(run_output(argv["--file-hook"], envs[SIZES[-1]], read()))["hookSpecificOutput"]
        if named["additionalContext"].count("amounts are integer cents") != 2:
            raise SystemExit(f"the file hook did not add the two memories naming {NAMED}: {named}")
        progress(f"prompt hook: {runs} runs")
        first = envs[SIZES[0]]
        trials = [python_pass(first)]
        for env in envs.values():
            trials += [lambda env=env: run_timed(fast, env, hit()), lambda env=env: run_timed(fast, env, miss())]
        for env in envs.values():
            trials += [lambda env=env: run_timed(argv["--prompt-hook"], env, hit()),
                       lambda env=env: run_timed(argv["--prompt-hook"], env, miss())]
        trials.append(lambda: run_timed(argv["--file-hook"], envs[SIZES[-1]], read()))
        trials += [lambda code=code: run_timed([sys.executable, "-c", code], first) for code in FLOORS]
        start = json.dumps({"session_id": "bench-start", "cwd": str(cwd), "hook_event_name": "SessionStart",
                            "source": "startup"}).encode()
        trials.append(lambda: run_timed([*sandman_argv(), "recall", "--hook"], envs[SIZES[-1]], start))
        trials.append(lambda: run_timed(fast, envs[SIZES[-1]], typo()))
        bare, *timed = interleaved(trials, runs, warmup=3)
        timed, misspelled = timed[:-1], timed[-1]
        fast_timed, timed = timed[:2 * len(SIZES)], timed[2 * len(SIZES):]
        timed, floors, recall_hook = timed[:-3], timed[-3:-1], timed[-1]
    found = []
    for index, size in enumerate(SIZES):
        adds, nothing = fast_timed[2 * index], fast_timed[2 * index + 1]
        target = RATIO_TARGET if size == SIZES[-1] else None
        found.append(Row(f"installed prompt hook (`python -I -S fasthook.py`), {size:,} memories, adds what matches",
                         adds, PYTHON_PASS, bare, runs, target))
        found.append(Row(f"installed prompt hook (`python -I -S fasthook.py`), {size:,} memories, nothing relevant",
                         nothing, PYTHON_PASS, bare, runs))
    for index, size in enumerate(SIZES):
        adds, nothing = timed[2 * index], timed[2 * index + 1]
        found.append(Row(f"`sandman recall --prompt-hook` (the full hook), {size:,} memories, adds what matches",
                         adds, PYTHON_PASS, bare, runs))
        found.append(Row(f"`sandman recall --prompt-hook` (the full hook), {size:,} memories, nothing relevant",
                         nothing, PYTHON_PASS, bare, runs))
    found.append(Row(f"`recall --file-hook`, {SIZES[-1]:,} memories, a Read of a file two name", timed[-1],
                     PYTHON_PASS, bare, runs))
    found += [Row(f"`python -c \"{code}\"` (a floor)", median, PYTHON_PASS, bare, runs)
              for code, median in zip(FLOORS, floors)]
    found.append(Row(f"`recall --hook`, {SIZES[-1]:,} memories (for scale)", recall_hook, PYTHON_PASS, bare, runs))
    found.insert(2 * len(SIZES), Row(
        f"installed prompt hook (`python -I -S fasthook.py`), {SIZES[-1]:,} memories, a misspelled prompt",
        misspelled, PYTHON_PASS, bare, runs, RATIO_TARGET))
    return found


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
