"""Benchmark ``sandman statusline``: the live shift in Claude Code's status line (issue 32).

Claude Code runs the status line command after each assistant message, so it is held to
≤ 1.5× ``python -c pass``. Timed as ``hooks install --statusline`` writes it
(``<python> -I -S <sandman>/fasthook.py statusline``), fed a real-shaped payload (the
2.1.332 CLI's fields, with ``rate_limits.five_hour``), interleaved run by run with
``python -c pass``. Rows, on a root with an open shift, its meta.json and a trail day of
``--events`` events:

- the status line with a shift open and the payload's window;
- the status line with no shift open (the common day);
- ``sandman statusline`` through the console script (what a hand-written settings entry
  would run), for scale.

    python bench/statusline.py [--quick] [--runs N] [--events N]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from harness import PYTHON_PASS, Row, Target, child_env, interleaved, progress, python_pass, run_output, run_timed, \
    sandman_argv, scratch, script

RUNS = 21
QUICK = {"runs": 7, "events": 200}
TARGET = Target("≤ 1.5× python -c pass", ratio=1.5)
SHIFT = "s-20261201T2300Z"
FASTHOOK = Path(__file__).resolve().parent.parent / "sandman" / "fasthook.py"


def build(root: Path, events: int) -> None:
    """An open shift with its meta.json, and today's trail file holding ``events`` events."""
    now = time.time()
    (root / "shifts" / SHIFT).mkdir(parents=True)
    (root / "shifts" / ".current.json").write_text(json.dumps(
        {"shift": SHIFT, "state": "open", "pid": None, "repo": "/code/app"}))
    (root / "shifts" / SHIFT / "meta.json").write_text(json.dumps(
        {"id": SHIFT, "weekday": "Tuesday", "theme": "Refactor", "repo": "/code/app", "rest": False,
         "deadline": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 3 * 3600))}))
    day = root / "trail" / time.strftime("%Y/%m/%d.jsonl", time.gmtime(now))
    day.parent.mkdir(parents=True)
    with day.open("w") as handle:
        for n in range(events):
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - (events - n) * 10))
            handle.write(json.dumps({"id": f"ev-{n}", "at": at, "kind": "shift.commit", "parent": None,
                                     "shift": SHIFT, "repo": "/code/app", "summary": f"change {n}",
                                     "model": None, "cost_usd": None, "data": {}}) + "\n")


def payload(cwd: Path) -> bytes:
    return json.dumps({"session_id": "3f9a1c2b-0000-4000-8000-000000000000", "cwd": str(cwd),
                       "model": {"id": "claude-opus-4", "display_name": "Opus"},
                       "workspace": {"current_dir": str(cwd), "project_dir": str(cwd)},
                       "cost": {"total_cost_usd": 0.12},
                       "rate_limits": {"five_hour": {"used_percentage": 40, "resets_at": int(time.time()) + 7200}},
                       }).encode()


def rows(runs: int = RUNS, events: int = 2000) -> list[Row]:
    """Return the rows: medians of ``runs`` interleaved runs against ``python -c pass``."""
    with scratch() as base:
        root, cwd = base / "root", base / "home" / "project"
        cwd.mkdir(parents=True)
        build(root, events)
        idle = base / "idle"
        (idle / "shifts").mkdir(parents=True)
        env = child_env(HOME=str(base / "home"), SANDMAN_ROOT=str(root))
        env_idle = child_env(HOME=str(base / "home"), SANDMAN_ROOT=str(idle))
        fast = [sys.executable, "-I", "-S", str(FASTHOOK), "statusline"]
        sent = payload(cwd)
        shown = run_output(fast, env, sent)  # what is timed is what it claims: the line of the open shift
        assert shown.startswith(f"sandman {SHIFT} · Tuesday Refactor · app") and "window 1h59m" in shown, shown
        assert run_output(fast, env_idle, sent).startswith("sandman no shift open"), run_output(fast, env_idle, sent)
        progress(f"statusline: {runs} runs, {events} events today")
        trials = [python_pass(env), lambda: run_timed(fast, env, sent), lambda: run_timed(fast, env_idle, sent),
                  lambda: run_timed([*sandman_argv(), "statusline"], env, sent)]
        bare, live, quiet, script_ = interleaved(trials, runs)
    return [Row("status line, a shift open (`-I -S fasthook.py statusline`)", live, PYTHON_PASS, bare, runs, TARGET),
            Row("status line, no shift open", quiet, PYTHON_PASS, bare, runs, TARGET),
            Row("`sandman statusline` through the console script (for scale)", script_, PYTHON_PASS, bare, runs)]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=lambda parser: parser.add_argument(
        "--events", type=int, help="events in today's trail file (default 2000)"))


if __name__ == "__main__":
    main()
