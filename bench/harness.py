"""What every benchmark shares: the row, the timing loops, the child environment, the table.

A benchmark module (take, recall, remember, consensus, dream, site_render,
sync_spawn, trail) exposes ``rows(**options) -> list[Row]`` and a ``QUICK`` dict of
options for ``--quick``; its ``main()`` and ``bench/run.py`` both print those
rows with ``measure``. Every figure is a median, and every row names a baseline
measured in the same run (interleaved with it where the two are cheap), so a
ratio holds on a busy machine where the absolute figure does not.

Children run with bytecode caches on: ``PYTHONDONTWRITEBYTECODE`` is dropped
from their environment (an installed sandman runs from compiled bytecode, and
the warm-up run writes the caches), and the baseline ``python -c pass`` is this
venv's own interpreter under the same environment.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# ../shared/corpus beside the main checkout; a worktree (/work/wt/<name>) finds it one level further up.
CORPUS = next((base / "shared" / "corpus" for base in REPO.parents if (base / "shared" / "corpus").is_dir()),
              REPO.parent / "shared" / "corpus")
GIT_IDENTITY = {"SANDMAN_GIT_NAME": "sandman bench", "SANDMAN_GIT_EMAIL": "bench@sandman.invalid"}
PYTHON_PASS = "python -c pass"


@dataclass(frozen=True)
class Target:
    """A goal from the issues: the median under ``seconds``, the ratio under ``ratio``, or the
    median at most ``over`` seconds above the baseline's."""

    text: str
    seconds: float | None = None
    ratio: float | None = None
    over: float | None = None

    def met(self, median: float, ratio: float, baseline: float = 0.0) -> bool:
        if self.seconds is not None:
            return median < self.seconds
        if self.over is not None:
            return median - baseline <= self.over
        return ratio < (self.ratio if self.ratio is not None else float("inf"))


class Seconds(float):
    """A median of wall seconds that also carries the median CPU seconds (user + system) of the
    children the same trial ran, or None when unknown; ``interleaved`` returns them."""

    cpu: float | None = None

    def __new__(cls, wall: float, cpu: float | None = None) -> "Seconds":
        value = super().__new__(cls, wall)
        value.cpu = cpu
        return value


@dataclass(frozen=True)
class Row:
    """One line of the table: a median in seconds against a baseline median in seconds."""

    name: str
    median: float
    baseline: str
    baseline_median: float
    runs: int
    target: Target | None = None
    statistic: str = "median"  # what ``median`` and ``baseline_median`` hold: "median", "p99", "max"...

    @property
    def ratio(self) -> float:
        return self.median / self.baseline_median if self.baseline_median else float("inf")

    @property
    def cpu(self) -> str:
        """The CPU-time cell: both medians' CPU seconds and their ratio, when both are known."""
        mine, theirs = getattr(self.median, "cpu", None), getattr(self.baseline_median, "cpu", None)
        if not mine or not theirs:
            return ""
        return f"{duration(mine)} / {duration(theirs)} = {mine / theirs:.2f}"

    @property
    def mark(self) -> str:
        if self.target is None:
            return ""
        return "pass" if self.target.met(self.median, self.ratio, self.baseline_median) else "**miss**"


def duration(seconds: float) -> str:
    """Format seconds as ms below one second, else as s."""
    if seconds < 0.01:
        return f"{seconds * 1000:.2f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


HEADER = ("measure", "median", "baseline", "baseline median", "ratio", "runs", "target", "",
          "CPU: median / baseline = ratio")
HEAD = "| " + " | ".join(HEADER) + " |\n|---|--:|---|--:|--:|--:|---|---|--:|"


def row_line(row: Row) -> str:
    """Return one row of the table (wall medians, their ratio, the target, then CPU time)."""
    shown = "" if row.statistic == "median" else f" ({row.statistic})"
    cells = (row.name, duration(row.median) + shown, row.baseline, duration(row.baseline_median) + shown,
             f"{row.ratio:.2f}", str(row.runs), row.target.text if row.target else "", row.mark, row.cpu)
    return "| " + " | ".join(cells) + " |"


def table(rows: Sequence[Row]) -> str:
    """Return the rows as a markdown table (it pastes into docs/performance.md as is)."""
    return "\n".join([HEAD, *(row_line(row) for row in rows)])


def machine() -> dict[str, str]:
    """Return what the figures depend on: CPUs, load average, Python, platform, time (UTC)."""
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": str(os.cpu_count()),
        "load": " ".join(f"{value:.2f}" for value in os.getloadavg()),
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
    }


def measure(title: str, produce: Callable[[], Iterable[Row]]) -> list[str]:
    """Print the machine and the load average at the start, then each row of ``produce()`` as soon
    as it is yielded (flushed: a run stopped midway keeps what it measured), then how long it took,
    the load average at the end and the failures. ``produce`` reports a benchmark that failed by
    yielding a ``Failed``; return those failures' texts (empty when every one ran)."""
    started, clock = machine(), time.monotonic()
    print(f"sandman benchmarks, {title}, {started['date']}")
    print(f"machine: {started['cpus']} CPUs, {started['platform']}; Python {started['python']}")
    print(f"load average (1, 5, 15 min) at start: {started['load']}")
    print()
    print(HEAD, flush=True)
    failures = []
    for row in produce():
        if isinstance(row, Failed):
            failures.append(row.text)
            continue
        print(row_line(row), flush=True)
    ended = machine()
    minutes, seconds = divmod(round(time.monotonic() - clock), 60)
    print()
    print(f"took {minutes} min {seconds:02d} s; load average at end: {ended['load']}")
    for text in failures:
        print(f"FAILED: {text}")
    return failures


@dataclass(frozen=True)
class Failed:
    """What ``measure`` prints after the table for a benchmark that could not finish."""

    text: str


def script(doc: str, rows: Callable[..., list[Row]], quick: dict, *, runs: int,
           arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """Run one benchmark as a script: parse ``--quick``, ``--runs`` (``runs`` is ``rows``'
    default) and the module's own options (each defaulting to None, so ``rows``' own
    defaults hold), then print its rows."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="a quicker measurement: " + ", ".join(f"{k}={v}" for k, v in quick.items()))
    parser.add_argument("--runs", type=int, help=f"runs per figure (default {runs})")
    if arguments is not None:
        arguments(parser)
    options = vars(parser.parse_args())
    title = " ".join(["`python", sys.argv[0], *sys.argv[1:]]) + "`"
    chosen = dict(quick) if options.pop("quick") else {}
    chosen.update({name: value for name, value in options.items() if value is not None})
    if measure(title, lambda: rows(**chosen)):
        raise SystemExit(1)


def progress(message: str) -> None:
    """Say on stderr what is being built or measured (stdout holds the table)."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# --- processes ---------------------------------------------------------------


def sandman_argv() -> list[str]:
    """Return the command of the installed ``sandman`` beside this interpreter (else ``-m sandman``)."""
    script = Path(sys.executable).with_name("sandman")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sandman"]


def child_env(**values: str) -> dict[str, str]:
    """Return this environment for a child: bytecode writing on, no SANDMAN_/CLAUDE_/GIT_ variable
    of the developer's own, a fixed git identity, then ``values``."""
    env = {name: value for name, value in os.environ.items()
           if name != "PYTHONDONTWRITEBYTECODE"
           and not name.startswith(("SANDMAN_", "CLAUDE", "GIT_", "FAKE_CLAUDE_"))}
    env.update(GIT_CONFIG_NOSYSTEM="1", **GIT_IDENTITY)
    env.update(values)
    return env


def run_timed(argv: Sequence[str], env: dict[str, str], stdin: bytes = b"") -> float:
    """Run ``argv`` to completion and return its wall time in seconds; exit when it fails."""
    start = time.perf_counter()
    done = subprocess.run(list(argv), input=stdin, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return elapsed


def run_output(argv: Sequence[str], env: dict[str, str], stdin: bytes = b"") -> str:
    """Run ``argv`` to completion and return its stdout; exit when it fails."""
    done = subprocess.run(list(argv), input=stdin, env=env, capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode(errors="replace")


def python_pass(env: dict[str, str]) -> Callable[[], float]:
    """Return the baseline trial: this interpreter starting and doing nothing."""
    return lambda: run_timed([sys.executable, "-c", "pass"], env)


def interleaved(trials: Sequence[Callable[[], float]], runs: int, warmup: int = 1) -> list[float]:
    """Return the median seconds of each trial over ``runs`` rounds (``Seconds``: each also carries
    the median CPU time of the child processes the trial waited for, its set-up's children included,
    or, for a trial that returns ``timed``'s ``Seconds``, the CPU time it measured in this process).

    A trial does its own untimed set-up and returns the seconds it measured.
    The trials alternate within each round, so a busy neighbour slows them all
    alike; ``warmup`` untimed rounds first write bytecode and fill the page cache.
    """
    for _ in range(warmup):
        for trial in trials:
            trial()
    times: list[list[float]] = [[] for _ in trials]
    cpus: list[list[float]] = [[] for _ in trials]
    for _ in range(runs):
        for i, trial in enumerate(trials):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            value = trial()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[i].append(float(value))
            # A trial in this process (``timed``) carries its own CPU time; else its children's.
            own = getattr(value, "cpu", None)
            cpus[i].append(own if own is not None else after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    # No child CPU (an in-process trial): None, not a difference of float sums that rounds near zero.
    return [Seconds(statistics.median(values), cpu if (cpu := statistics.median(spent)) > 1e-4 else None)
            for values, spent in zip(times, cpus)]


def _cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process and the children it waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(action: Callable[[], object]) -> Seconds:
    """Return the wall seconds ``action()`` took in this process, carrying the CPU seconds it used
    (this process's and its waited-for children's) as ``Seconds.cpu``."""
    start, cpu = time.perf_counter(), _cpu_seconds()
    action()
    return Seconds(time.perf_counter() - start, _cpu_seconds() - cpu)


def import_profile(args: Sequence[str], env: dict[str, str], stdin: bytes = b"", top: int = 8) -> list[str]:
    """Run this interpreter with ``-X importtime`` and ``args`` (e.g. ``-m sandman recall --hook``)
    once; return a summary line and the ``top`` imports by self time, costliest first."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], input=stdin, env=env, capture_output=True)
    found = []
    for line in done.stderr.decode(errors="replace").splitlines():
        parts = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[0].strip().isdigit():
            found.append((int(parts[0]), int(parts[1]), parts[2].strip()))
    found.sort(reverse=True)
    lines = [f"{len(found)} modules imported, {sum(f[0] for f in found) / 1000:.1f} ms of import in all; "
             "the costliest by self time:"]
    lines += [f"  {self_us / 1000:6.2f} ms self {total_us / 1000:6.2f} ms cumulative  {name}"
              for self_us, total_us, name in found[:top]]
    return lines


# --- throwaway roots -----------------------------------------------------------


@contextmanager
def scratch() -> Iterator[Path]:
    """Yield a throwaway directory, removed afterwards."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="sandman-bench-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set ``values`` and the bench git identity in os.environ for in-process work; restore after.

    In-process builds commit through sandman, which reads its git identity
    from the environment; bench/run.py runs every benchmark in one process,
    so nothing one sets may leak into the next.
    """
    saved = dict(os.environ)
    os.environ.update(GIT_CONFIG_NOSYSTEM="1", **GIT_IDENTITY, **values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def fill_banks(layout, directories: Sequence[Path], count: int, subject: str) -> None:
    """Commit ``count`` short memories spread round-robin over the banks of ``directories``,
    in one bank_transaction (the one writer), so a bank of thousands builds in seconds."""
    from sandman.banks.commit import bank_transaction
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name

    with bank_transaction(layout, verb="bench", subject=subject) as tx:
        for i in range(count):
            directory = directories[i % len(directories)]
            body = f"Memory {i} of the bench: the module number {i} keeps its own conventions.\n" * (1 + i % 4)
            tx.write_memory(
                bank_name(directory),
                Memory(name=f"Bench fact {i}", description=f"The module number {i} keeps its conventions.",
                       type=("project", "feedback", "reference")[i % 3], body=body, source=["bench"]),
                directory=str(directory),
            )
