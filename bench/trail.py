"""Benchmark the trail and reconcile: `trail log` over a year of events, `reconcile --dry-run`
over a repository of 10,000 commits.

The year is 100,000 events in 365 day files (written directly, as appends would leave them).
``trail.log`` is timed in process against reading the same files and decoding every line
with ``json.loads`` alone (the floor any JSON-lines reader pays); ``sandman trail log --kind``
as a process against ``python -c pass``.

The repository has 10,000 commits (made with pygit2, one file changed each); 100 of them
carry ``Event:`` of the revoked event or one of its 99 descendants, 900 carry other events.
``reconcile --dry-run`` (in process, and ``sandman reconcile --dry-run`` as a process) is
timed against ``git log --format=%H`` with one ``--grep`` per target id on the same
repository: what a person would run by hand to find the same commits. No target is set by
the issues.

    python bench/trail.py [--quick] [--runs N] [--events N] [--commits N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pygit2

from harness import (Row, child_env, interleaved, progress, python_pass, run_timed, sandman_argv, script,
                     timed)
from sandman.layout import Layout
from sandman.machine import trail
from sandman.machine.reconcile import reconcile

RUNS = 7
QUICK = {"runs": 3, "events": 20_000, "commits": 2_000}
EVENTS = 100_000
COMMITS = 10_000
KINDS = ("dream.commit", "upkeep.apply", "upkeep.merge", "reflect.entry", "shift.commit", "shift.start",
         "breath.file", "sync.merge")
START = datetime(2025, 12, 1, tzinfo=timezone.utc)


def build_year(layout: Layout, events: int, seed: int = 11) -> None:
    """Write ``events`` events over 365 day files, as the trail would hold them after a year."""
    rng = random.Random(seed)
    per_day = events // 365
    left = events - per_day * 365
    for day in range(365):
        moment = START + timedelta(days=day)
        lines = []
        for n in range(per_day + (1 if day < left else 0)):
            at = moment + timedelta(seconds=n * 60)
            event = trail.Event(
                f"ev-{at:%Y%m%dT%H%M%SZ}-{rng.randrange(16 ** 6):06x}", at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                rng.choice(KINDS), f"decision {n} of day {day}: " + "word " * rng.randint(3, 12),
                shift=f"s-{moment:%Y%m%d}T0210Z", repo=f"/home/u/code/repo{rng.randrange(20)}",
                model="claude-opus-5", cost_usd=round(rng.random(), 4), data={"n": n})
            lines.append(event.line())
        path = layout.trail_day(moment.strftime("%Y-%m-%d"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def floor(layout: Layout) -> int:
    count = 0
    for path in layout.trail_days():
        for line in path.read_bytes().split(b"\n"):
            if line:
                json.loads(line)
                count += 1
    return count


def build_repo(path: Path, layout: Layout, commits: int) -> tuple[str, list[str]]:
    """A repository of ``commits`` commits on main; return the revoked target and its 100 ids."""
    parent = trail.append(layout, "shift.start", "the night's start", repo=str(path))
    children = [trail.new_event("shift.commit", f"work {n}", parent=parent.id, repo=str(path)) for n in range(99)]
    others = [trail.new_event("shift.commit", f"other {n}", repo=str(path)) for n in range(900)]
    from sandman.banks.commit import bank_transaction

    with bank_transaction(layout, verb="trail", subject="bench events") as tx:
        for event in children + others:
            trail.write(tx, event)
    targets = [parent.id] + [event.id for event in children]
    repo = pygit2.init_repository(str(path), initial_head="main")
    author = pygit2.Signature("bench", "bench@sandman.invalid")
    tip = None
    step = max(commits // 100, 1)
    for n in range(commits):
        blob = repo.create_blob(f"line {n}\n".encode())
        builder = repo.TreeBuilder(repo[tip].tree) if tip is not None else repo.TreeBuilder()
        builder.insert(f"f{n % 50}.txt", blob, pygit2.enums.FileMode.BLOB)
        tree = builder.write()
        trailer = ""
        if n % step == step - 1 and n // step < len(targets):
            trailer = f"\n\nEvent: {targets[n // step]}\nKind: shift.commit\n"
        elif n % 10 == 0:
            trailer = f"\n\nEvent: {others[(n // 10) % len(others)].id}\nKind: shift.commit\n"
        tip = repo.create_commit("refs/heads/main", author, author, f"commit {n}{trailer}", tree,
                                 [] if tip is None else [tip])
    repo.checkout_head(strategy=pygit2.enums.CheckoutStrategy.FORCE)
    trail.revoke(layout, parent.id, "bench")
    return parent.id, targets


def rows(runs: int = RUNS, events: int = EVENTS, commits: int = COMMITS) -> list[Row]:
    """Return the trail log and reconcile --dry-run rows, medians in seconds over ``runs`` runs."""
    with tempfile.TemporaryDirectory(prefix="sandman-bench-trail-") as tmp:
        base = Path(tmp)
        year = Layout(base / "year")
        progress(f"trail: writing {events:,} events over 365 days")
        build_year(year, events)
        assert floor(year) == events
        env = child_env(SANDMAN_ROOT=str(year.root))
        log_cli = sandman_argv() + ["trail", "log", "--kind", "sync.merge", "--since", "2026-11-01"]
        log_row, floor_row, cli_row, pass_row = interleaved([
            lambda: timed(lambda: trail.log(year)),
            lambda: timed(lambda: floor(year)),
            lambda: run_timed(log_cli, env),
            python_pass(env),
        ], runs)

        root = Layout(base / "root")
        os.environ.setdefault("SANDMAN_GIT_NAME", "sandman bench")
        os.environ.setdefault("SANDMAN_GIT_EMAIL", "bench@sandman.invalid")
        progress(f"trail: building a repository of {commits:,} commits")
        repo_path = base / "code" / "app"
        target, ids = build_repo(repo_path, root, commits)
        found = reconcile(root, target, dry_run=True)
        (other,) = [r for r in found.repos if not r.memory_root]
        assert len(other.commits) == min(100, commits // max(commits // 100, 1)), len(other.commits)
        grep = ["git", "-C", str(repo_path), "log", "--format=%H", *[f"--grep=Event: {i}" for i in ids], "main"]
        assert len(subprocess.run(grep, capture_output=True, text=True).stdout.split()) == len(other.commits)
        renv = child_env(SANDMAN_ROOT=str(root.root))
        dry_cli = sandman_argv() + ["reconcile", target, "--dry-run"]
        dry_row, cli_dry_row, grep_row = interleaved([
            lambda: timed(lambda: reconcile(root, target, dry_run=True)),
            lambda: run_timed(dry_cli, renv),
            lambda: run_timed(grep, renv),
        ], runs)
    return [
        Row(f"`trail.log()` in process, {events:,} events in 365 day files", log_row,
            "reading the files + `json.loads` per line", floor_row, runs),
        Row(f"`sandman trail log --kind sync.merge --since …` (process), {events:,} events", cli_row,
            "python -c pass", pass_row, runs),
        Row(f"`reconcile --dry-run` in process, {commits:,} commits, {len(ids)} target events", dry_row,
            f"`git log --grep` × {len(ids)} ids (process)", grep_row, runs),
        Row(f"`sandman reconcile --dry-run` (process), {commits:,} commits", cli_dry_row,
            f"`git log --grep` × {len(ids)} ids (process)", grep_row, runs),
    ]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, help=f"events on the trail (default {EVENTS:,})")
    parser.add_argument("--commits", type=int, help=f"commits in the repository (default {COMMITS:,})")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    main()
