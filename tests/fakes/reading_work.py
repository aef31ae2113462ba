#!/usr/bin/env python3
"""A reading session's work for the fake claude (tests/fakes/README.md, "A reading session").

Run as a fixture rule's ``program`` with a pass's prompt (prompts/breathe.md) on stdin: it does
what the prompt says. It reads the pass id and the first source the prompt lists, files one breath
against ``$FAKE_READING_REPO`` with ``sandman breathe file`` (JSON on stdin, a here-document's
worth), and, unless ``--no-close``, closes the pass with ``sandman breathe close``.
``$FAKE_SHIFT_SANDMAN`` is the python that runs sandman (the test's). Prints what it did: the reply.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys


def sandman(*args: str, stdin: str | None = None) -> str:
    command = [os.environ["FAKE_SHIFT_SANDMAN"], "-m", "sandman", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, check=True).stdout.strip()


def main() -> int:
    prompt = sys.stdin.read()
    pass_id = re.search(r"reading pass (p-\S+)", prompt).group(1)
    source, address = re.search(r"^- (\S+) \(weight [^)]*\): (\S+)$", prompt, re.MULTILINE).groups()
    breath = {"title": f"an idea read in {source}", "address": address + "#idea", "source": source,
              "repo": os.environ["FAKE_READING_REPO"], "pass": pass_id,
              "scores": {"bearing": 0.8, "novelty": 0.6, "provenance": 0.9},
              "body": "What the idea is and how a shift could try it."}
    filed = sandman("breathe", "file", stdin=json.dumps(breath))
    if "--no-close" not in sys.argv:
        sandman("breathe", "close", pass_id)
    print(f"Filed {filed} in {pass_id}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
