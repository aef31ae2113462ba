"""Benchmark ``report --hook``: the SessionStart digest of unread shift reports (issue 15).

It runs beside ``recall --hook`` at every session start, so it is timed the
same way: real subprocesses of the installed ``sandman``, fed the corpus's live
SessionStart payload, interleaved run by run with ``python -c pass`` (the
baseline). Rows, on one root with ``--shifts`` closed shifts (meta.json,
handoff.md and report.md each, as docs/BANK-FORMAT.md § shifts gives them):

- every report read (the common start: it reads the marks and prints nothing);
- 20 unread (the read marks are removed before each run, so each prints the digest);
- ``recall --hook`` on the same root, for scale.

    python bench/report_hook.py [--quick] [--runs N] [--shifts N]
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from harness import (PYTHON_PASS, Row, child_env, environment, interleaved, progress, python_pass, run_output,
                     run_timed, sandman_argv, scratch, script)
from recall import payload

RUNS = 21
QUICK = {"runs": 7, "shifts": 50}
UNREAD = 20


def build(root: Path, shifts: int) -> list[str]:
    """Write ``shifts`` closed shifts under ``root``/shifts; return their ids, oldest first."""
    from sandman.layout import Layout
    from sandman.verbs.init import init

    layout = Layout(root)
    init(layout)
    start = datetime(2026, 11, 1, 23, 0, tzinfo=timezone.utc)
    ids = []
    for n in range(shifts):
        opened = start + timedelta(hours=n)
        ident = f"s-{opened:%Y%m%dT%H%M}Z"
        folder = layout.shift_dir(ident)
        folder.mkdir(parents=True)
        meta = {"schema": 1, "id": ident, "opened_at": f"{opened:%Y-%m-%dT%H:%M:%SZ}", "repo": f"/code/repo-{n % 7}",
                "outcome": "handed-off" if n % 5 else "abandoned", "closed_at": f"{opened:%Y-%m-%dT%H:30:00Z}",
                "commits": [{"commit": "0" * 40, "subject": f"change {n}", "events": [], "resolves": n % 3 > 0}],
                "findings": [] if n % 3 else [f"commit {n} has no Event: trailer"]}
        (folder / "meta.json").write_text(json.dumps(meta))
        (folder / "handoff.md").write_text(f"Split module {n}; tests green; next: the parser.\n")
        (folder / "report.md").write_text(f"# Shift {ident}: repo-{n % 7}\n\nbench\n")
        ids.append(ident)
    return ids


def mark(ids: list[str]) -> bytes:
    """The ``.reports-read`` bytes marking ``ids`` read (docs/BANK-FORMAT.md § report)."""
    return json.dumps({"schema": 1, "read": {ident: "2026-12-01T00:00:00Z" for ident in ids}}).encode()


def rows(runs: int = RUNS, shifts: int = 200) -> list[Row]:
    """Return the rows: medians of ``runs`` interleaved runs against ``python -c pass``."""
    with scratch() as base:
        root, cwd = base / "root", base / "home" / "project"
        cwd.mkdir(parents=True)
        with environment(HOME=str(base / "home"), SANDMAN_ROOT=str(root)):
            ids = build(root, shifts)
        env = child_env(HOME=str(base / "home"), SANDMAN_ROOT=str(root))
        sent = payload(cwd)
        marks = root / ".reports-read"
        all_read, some_unread = mark(ids), mark(ids[:-UNREAD])

        def report_with(marks_bytes: bytes) -> float:
            marks.write_bytes(marks_bytes)
            return run_timed([*sandman_argv(), "report", "--hook"], env, sent)

        # What is timed is what it claims: the digest printed when 20 are unread, nothing when all are read.
        marks.write_bytes(some_unread)
        shown = json.loads(run_output([*sandman_argv(), "report", "--hook"], env, sent))
        assert f"{UNREAD} unread" in shown["systemMessage"], shown
        marks.write_bytes(all_read)
        assert run_output([*sandman_argv(), "report", "--hook"], env, sent) == ""
        progress(f"report --hook: {runs} runs on {shifts} shifts")
        trials = [python_pass(env), lambda: report_with(all_read), lambda: report_with(some_unread),
                  lambda: run_timed([*sandman_argv(), "recall", "--hook"], env, sent)]
        bare, read, unread, recall = interleaved(trials, runs)
    return [Row(f"`report --hook`, {shifts} reports, all read", read, PYTHON_PASS, bare, runs),
            Row(f"`report --hook`, {shifts} reports, {UNREAD} unread (prints the digest)", unread, PYTHON_PASS, bare,
                runs),
            Row("`recall --hook` on the same root (for scale)", recall, PYTHON_PASS, bare, runs)]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=lambda parser: parser.add_argument(
        "--shifts", type=int, help="closed shifts in the root (default 200)"))


if __name__ == "__main__":
    main()
