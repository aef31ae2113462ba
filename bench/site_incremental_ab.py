"""Compare the incremental site render of two installs in one run, each in a long-lived process.

    python bench/site_incremental_ab.py --before /path/to/old/venv/bin/python --root DIR [--runs N]

``--root`` is a root bench/site_render.py built (5,000 memories). It is copied
twice, one copy per install; the ``--before`` interpreter and the one running
this script (``after``) each start one worker process that renders its copy
once, then, on each request, changes one memory (site_render.change_one: one
new commit) and times ``render_site`` in process, as the bench row does. The
two workers alternate (the order flips every round, so a busy neighbour slows
both alike); two warm-up rounds are not counted. Prints each install's runs
and median (ms) and the ratio after / before, with the load average at start
and end. Run it from outside the checkout the ``--before`` install came from.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARMUP = 2


def worker(root: Path) -> None:
    """Render ``root`` once, then for each round number read on stdin: change one memory, render, print seconds."""
    sys.path.insert(0, str(HERE))
    from harness import environment
    from site_render import change_one

    from sandman.layout import Layout
    from sandman.site.render import render_site

    layout = Layout(root.resolve())
    with environment():
        render_site(layout)
        print("ready", flush=True)
        for line in sys.stdin:
            change_one(layout, int(line))
            started = time.perf_counter()
            render_site(layout)
            print(f"{time.perf_counter() - started:.6f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="the python of the install to compare with")
    parser.add_argument("--root", type=Path, help="a root bench/site_render.py built")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if not args.before or not args.root:
        parser.error("--before and --root are required")
    pythons = {"before": args.before, "after": sys.executable}
    with tempfile.TemporaryDirectory(prefix="site-ab-") as scratch:
        roots = {name: Path(scratch) / name for name in pythons}
        for root in roots.values():
            subprocess.run(["cp", "-a", str(args.root), str(root)], check=True)
        print("load average at start:", " ".join(f"{value:.2f}" for value in os.getloadavg()), flush=True)
        workers = {
            name: subprocess.Popen([pythons[name], str(Path(__file__).resolve()), "--worker", str(roots[name])],
                                   cwd=scratch, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for name in pythons
        }
        for process in workers.values():
            if process.stdout.readline().strip() != "ready":
                sys.exit("a worker failed to render its root")
        times: dict[str, list[float]] = {name: [] for name in pythons}
        for round_ in range(WARMUP + args.runs):
            for name in (("before", "after") if round_ % 2 == 0 else ("after", "before")):
                workers[name].stdin.write(f"{round_}\n")
                workers[name].stdin.flush()
                seconds = float(workers[name].stdout.readline())
                if round_ >= WARMUP:
                    times[name].append(seconds)
        for process in workers.values():
            process.stdin.close()
            process.wait()
        print("load average at end:", " ".join(f"{value:.2f}" for value in os.getloadavg()))
    for name, values in times.items():
        print(f"{name:6} median {statistics.median(values) * 1000:.1f} ms:",
              " ".join(f"{value * 1000:.0f}" for value in values))
    print(f"after / before {statistics.median(times['after']) / statistics.median(times['before']):.2f}")


if __name__ == "__main__":
    main()
