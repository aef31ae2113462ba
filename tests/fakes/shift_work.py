#!/usr/bin/env python3
"""A shift session's work for the fake claude (tests/fakes/README.md, "A shift session").

Run as a fixture rule's ``program`` in the shift's worktree, the brief on stdin:
it does what the brief's charter says a commit takes. It reads the start event
(``--parent ev-…``) and the repository (``--repo …``) from the brief, appends a
``shift.commit`` event with ``sandman trail append``, asks ``sandman trail
trailers`` for the lines, edits ``NOTES.md`` and commits with those trailers.
Arguments: ``--untrailered`` adds a second commit with no ``Event:``;
``--handoff TEXT`` calls ``sandman shift handoff`` itself; ``--spike BREATH`` spikes a breath
with ``sandman breathe spike`` (a change in the memory root carrying ``Shift:``); ``--adopt BREATH``
adopts one with ``sandman breathe adopt``, as the shift prompt says once a commit lands it; ``--remember TEXT``
remembers TEXT for the worktree with ``sandman remember``; ``--propose TITLE``
(with ``--propose-body TEXT``) files a proposal with ``sandman report propose``. ``$FAKE_SHIFT_SANDMAN``
is the python that runs sandman (the test's). Prints what it did: the reply.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

GIT = ["git", "-c", "user.name=Fake Shift", "-c", "user.email=fake@shift.invalid", "-c", "commit.gpgsign=false"]


def sandman(*args: str, stdin: str | None = None) -> str:
    command = [os.environ["FAKE_SHIFT_SANDMAN"], "-m", "sandman", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, check=True).stdout.strip()


def main() -> int:
    brief = sys.stdin.read()
    start = re.search(r"--parent (ev-\S+)", brief).group(1)
    repo = re.search(r"--repo ([^\s`]+)", brief).group(1)
    event = sandman("trail", "append", "shift.commit", "edit NOTES.md", "--parent", start, "--repo", repo)
    lines = sandman("trail", "trailers", event).splitlines()
    notes = Path("NOTES.md")
    notes.write_text((notes.read_text() if notes.exists() else "") + "a line the shift wrote\n")
    subprocess.run(GIT + ["add", "NOTES.md"], check=True)
    trailers = [arg for line in lines for arg in ("--trailer", line)]
    subprocess.run(GIT + ["commit", "-q", "-m", "shift: edit NOTES.md", *trailers], check=True)
    if "--untrailered" in sys.argv:
        Path("STRAY.md").write_text("no event\n")
        subprocess.run(GIT + ["add", "STRAY.md"], check=True)
        subprocess.run(GIT + ["commit", "-q", "-m", "stray: no trailer"], check=True)
    if "--propose" in sys.argv:
        body = sys.argv[sys.argv.index("--propose-body") + 1] if "--propose-body" in sys.argv else ""
        print("Proposed " + sandman("report", "propose", "--title", sys.argv[sys.argv.index("--propose") + 1],
                                    "--body-file", "-", stdin=body) + ".")
    if "--remember" in sys.argv:
        sandman("remember", "--cwd", os.getcwd(), sys.argv[sys.argv.index("--remember") + 1])
    if "--spike" in sys.argv:
        sandman("breathe", "spike", sys.argv[sys.argv.index("--spike") + 1])
    if "--adopt" in sys.argv:
        sandman("breathe", "adopt", sys.argv[sys.argv.index("--adopt") + 1], "--why", f"landed under {event}")
    if "--handoff" in sys.argv:
        sandman("shift", "handoff", "-", stdin=sys.argv[sys.argv.index("--handoff") + 1])
    print(f"Edited NOTES.md under {event}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
