"""Compare two installs of sandman in one run: the same commands, interleaved, on the same roots.

    python bench/compare.py --before /path/to/old/venv/bin/sandman [--runs N] [--site-root DIR]

Each figure is a median over ``--runs`` rounds; every round runs ``python -c
pass``, then each command with the ``--before`` executable and with the
``sandman`` beside this interpreter (``after``), so a busy neighbour slows
both alike. The roots are built once by this checkout (1,000 and 10,000
memories as bench/recall.py builds them; a bank of 1,000 for remember), and
each install reads them as it would (an older install ignores the recall
cache). With ``--site-root`` (a root bench/site_render.py built), the root is
copied twice, one copy per install, and ``sandman site`` is timed after one
memory changed (incremental) and, once each, from an empty ``.site/`` (full),
both as a whole process and in process (the ``python`` beside each executable
times ``render_site`` alone, without the interpreter's start and the imports).
``--site-only`` skips everything else. Prints one table: the two medians, and each against ``python -c pass``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

import recall as recall_bench
import site_render
import take as take_bench
from harness import (child_env, duration, environment, fill_banks, machine, progress, python_pass, run_timed,
                     sandman_argv, scratch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the sandman executable of the install to compare with")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--site-root", type=Path, help="a 5,000-memory root bench/site_render.py built")
    parser.add_argument("--site-runs", type=int, default=3)
    parser.add_argument("--site-full-runs", type=int, default=1, help="full renders in process, each install")
    parser.add_argument("--site-only", action="store_true", help="time the site only (needs --site-root)")
    args = parser.parse_args()
    installs = {"before": [args.before], "after": sandman_argv()}
    started = machine()
    rows: list[tuple[str, float, float, float]] = []
    with scratch() as base:
        home = base / "home"
        project = home / "project"
        project.mkdir(parents=True)
        plain = child_env(HOME=str(home))
        if args.site_only:
            if args.site_root is None:
                parser.error("--site-only needs --site-root")
            bare = statistics.median(python_pass(plain)() for _ in range(args.runs))
            rows += site_rows(args.site_root, base, installs, args.site_runs, bare, args.site_full_runs)
            report(args, started, bare, rows)
            return
        cwd, built = recall_bench.roots(base)
        sent = recall_bench.payload(cwd)
        bank = base / "bank-1000"
        with environment(HOME=str(home), SANDMAN_ROOT=str(bank)):
            fill_banks(__import__("sandman.layout", fromlist=["Layout"]).Layout(bank), [project], 1_000, "bank")
        # Help pages in a set-up root (an install that keeps pages keeps them there after the warm-up round).
        helped = child_env(HOME=str(home), SANDMAN_ROOT=str(bank))
        counter = iter(range(10**9))
        commands = {
            "`sandman --help`": (["--help"], helped, b""),
            "`sandman remember --help`": (["remember", "--help"], helped, b""),
            "`sandman hooks install --help`": (["hooks", "install", "--help"], helped, b""),
            "`sandman recall --help`": (["recall", "--help"], helped, b""),
            "`recall --hook`, 1,000 memories": (["recall", "--hook"],
                                                child_env(HOME=str(home), SANDMAN_ROOT=str(built["1,000 memories"])), sent),
            "`recall --hook`, 10,000 memories": (["recall", "--hook"],
                                                 child_env(HOME=str(home), SANDMAN_ROOT=str(built["10,000 memories"])), sent),
        }
        bank_env = child_env(HOME=str(home), SANDMAN_ROOT=str(bank))
        take_folder = {name: base / f"take-{name}" for name in installs}
        transcript = take_bench.TRANSCRIPTS[0]

        def take_trial(name: str) -> float:
            take_bench.sandman_argv = lambda: installs[name]  # the trial runs this install
            return take_bench.trial(transcript, take_folder[name])

        trials = {"python -c pass": python_pass(plain)}
        for label, (argv, env, stdin) in commands.items():
            for name, exe in installs.items():
                trials[f"{label}|{name}"] = lambda exe=exe, argv=argv, env=env, stdin=stdin: run_timed([*exe, *argv], env, stdin)
        for name, exe in installs.items():
            trials[f"`sandman remember` (process), bank of 1,000|{name}"] = lambda exe=exe: run_timed(
                [*exe, "remember", f"Compare run {next(counter)}: the release script reads pyproject.", "--cwd",
                 str(project)], bank_env)
            trials[f"`take --hook` ({transcript.name})|{name}"] = lambda name=name: take_trial(name)
        progress(f"compare: {args.runs} rounds of {len(trials)} commands")
        for trial in trials.values():  # warm-up: bytecode, page cache
            trial()
        times: dict[str, list[float]] = {key: [] for key in trials}
        for _ in range(args.runs):
            for key, trial in trials.items():
                times[key].append(trial())
        medians = {key: statistics.median(values) for key, values in times.items()}
        bare = medians.pop("python -c pass")
        labels = list(dict.fromkeys(key.split("|")[0] for key in medians))
        rows += [(label, medians[f"{label}|before"], medians[f"{label}|after"], bare) for label in labels]
        if args.site_root is not None:
            rows += site_rows(args.site_root, base, installs, args.site_runs, bare, args.site_full_runs)
    report(args, started, bare, rows)


def report(args: argparse.Namespace, started: dict, bare: float, rows: list) -> None:
    """Print the machine, the load average at start and end, and the table."""
    ended = machine()
    print(f"sandman before/after, `python bench/compare.py --before {args.before}`, {started['date']}")
    print(f"machine: {started['cpus']} CPUs, {started['platform']}; Python {started['python']}")
    print(f"load average (1, 5, 15 min): {started['load']} at start, {ended['load']} at end")
    print(f"python -c pass: {duration(bare)} (median of {args.runs})")
    print()
    print("| measure | before | after | after / before | before / python -c pass | after / python -c pass |")
    print("|---|--:|--:|--:|--:|--:|")
    for label, before, after, base_median in rows:
        print(f"| {label} | {duration(before)} | {duration(after)} | {after / before:.2f} | "
              f"{before / base_median:.2f} | {after / base_median:.2f} |")


# Run by the python beside each install's executable: render_site timed inside the process.
IN_PROCESS = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from sandman.layout import Layout\n"
    "from sandman.site.render import render_site\n"
    "layout = Layout(Path(sys.argv[1]))\n"
    "start = time.perf_counter()\n"
    "render_site(layout)\n"
    "print(time.perf_counter() - start)\n"
)


def in_process(exe: list[str], root: Path, env: dict[str, str]) -> float:
    """Return the seconds ``render_site`` took inside a process of the install of ``exe``."""
    import subprocess

    python = Path(exe[0]).parent / "python"
    done = subprocess.run([str(python), "-c", IN_PROCESS, str(root)], env=env, capture_output=True, cwd=root)
    if done.returncode != 0:
        raise SystemExit(f"{python} render_site exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return float(done.stdout.decode().strip())


def site_rows(source: Path, base: Path, installs: dict, runs: int, bare: float, full_inside_runs: int = 1) -> list:
    """``sandman site`` after one change, and from an empty .site/, for each install on its own copy,
    as a process and ``render_site`` in process (full: 1 run each; incremental: ``runs`` each)."""
    from sandman.layout import Layout

    roots = {}
    for name in installs:
        progress(f"compare: copying the site root for {name}")
        roots[name] = base / f"site-{name}"
        shutil.copytree(source, roots[name], symlinks=True)
        shutil.rmtree(roots[name] / ".site", ignore_errors=True)
    envs = {name: child_env(SANDMAN_ROOT=str(roots[name])) for name in installs}
    full, full_inside = {}, {}
    for name, exe in installs.items():
        progress(f"compare: full render, {name}")
        full[name] = run_timed([*exe, "site"], envs[name])
    full_runs: dict[str, list[float]] = {name: [] for name in installs}
    for _ in range(full_inside_runs):
        for name, exe in installs.items():
            progress(f"compare: full render in process, {name}")
            shutil.rmtree(roots[name] / ".site", ignore_errors=True)
            full_runs[name].append(in_process(exe, roots[name], envs[name]))
    for name in installs:
        progress(f"compare: {name} full in process: " + ", ".join(f"{value:.2f}" for value in full_runs[name]))
        full_inside[name] = statistics.median(full_runs[name])
    changes = iter(range(100, 10**6))
    incremental: dict[str, list[float]] = {name: [] for name in installs}
    inside: dict[str, list[float]] = {name: [] for name in installs}
    with environment():
        for _ in range(runs):
            for name, exe in installs.items():
                site_render.change_one(Layout(roots[name]), next(changes) % 150)
                incremental[name].append(run_timed([*exe, "site"], envs[name]))
            for name, exe in installs.items():
                site_render.change_one(Layout(roots[name]), next(changes) % 150)
                inside[name].append(in_process(exe, roots[name], envs[name]))
    for name in installs:
        progress(f"compare: {name} incremental in process: " + ", ".join(f"{value:.3f}" for value in inside[name]))
    return [
        ("`sandman site` (process), full render, 5,000 memories (1 run)", full["before"], full["after"], bare),
        (f"`sandman site` (process), one memory changed, 5,000 memories ({runs} runs)",
         statistics.median(incremental["before"]), statistics.median(incremental["after"]), bare),
        (f"`render_site` in process, full render, 5,000 memories ({full_inside_runs} runs)", full_inside["before"],
         full_inside["after"], bare),
        (f"`render_site` in process, one memory changed, 5,000 memories ({runs} runs)",
         statistics.median(inside["before"]), statistics.median(inside["after"]), bare),
    ]


if __name__ == "__main__":
    main()
