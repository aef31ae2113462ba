"""Benchmark the site's machine pages over a year of trail: 100,000 events in 365 day files.

    python bench/site_trail.py [--quick] [--runs N] [--events N]

The year is written as bench/trail.py writes it (no memories, so the figures are the
trail's alone). Times, in process: a full render (``.site/`` deleted first) and a render
with nothing changed, against ``trail.read`` of the same files (what any reader of the
whole trail pays). A day's page is keyed by its file's SHA-256 and the facts about its
events from elsewhere, so an unchanged day is neither rebuilt nor written; the
unchanged render is the trail read plus those keys. No target is set by the issues.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from harness import Row, interleaved, progress, script, timed
from sandman.layout import Layout
from sandman.machine import trail
from sandman.site.render import render_site
from trail import build_year

RUNS = 3
QUICK = {"runs": 3, "events": 20_000}
EVENTS = 100_000


def rows(runs: int = RUNS, events: int = EVENTS) -> list[Row]:
    """Return the full and unchanged render rows, medians in seconds over ``runs`` runs."""
    with tempfile.TemporaryDirectory(prefix="sandman-bench-site-trail-") as tmp:
        layout = Layout(Path(tmp) / "root")
        layout.root.mkdir()
        progress(f"site trail: writing {events:,} events over 365 days")
        build_year(layout, events)

        def full() -> None:
            shutil.rmtree(layout.site, ignore_errors=True)
            render_site(layout)

        full_row, read_row = interleaved([lambda: timed(full), lambda: timed(lambda: trail.read(layout))], runs)
        render_site(layout)
        same_row, read_again = interleaved([lambda: timed(lambda: render_site(layout)),
                                            lambda: timed(lambda: trail.read(layout))], runs)
    return [
        Row(f"full site render, {events:,} trail events (365 day pages)", full_row,
            "`trail.read()` of the same files", read_row, runs),
        Row(f"site render, nothing changed, {events:,} trail events", same_row,
            "`trail.read()` of the same files", read_again, runs),
    ]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, help=f"events on the trail (default {EVENTS:,})")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    main()
