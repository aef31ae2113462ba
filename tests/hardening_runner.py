"""The crash tests' runner: sandman imported once, each dream or reflect a forked child.

A trial of tests/test_hardening_crashes.py must be cheap: an interpreter that
imports sandman costs ~0.4 s, a fork of one that did costs milliseconds. The
secrets ban's library (betterleaks, Go) is not loaded before the fork: each
child loads it itself. The
runner reads one JSON command per line on stdin::

    {"verb": "dream", "log": "<file>", "signal": "<fifo>"}
    {"verb": "reflect", "now": "<ISO time>", "log": "<file>", "signal": "<fifo>"}

forks a child that runs the verb exactly as ``sandman dream --now`` or
``sandman reflect`` would (its stdout and stderr appended to ``log``, its
minds told to signal on ``signal``, where it writes ``exit <code>`` last)
and prints ``started <pid>``. The child is
a real process: the test may kill it by pid. The runner reaps it only when the
next line, ``reap``, arrives, so the pid cannot be reused before the test's
kill; then it prints ``ended <exit code>`` (``-9`` for a kill -9).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from datetime import datetime

from sandman import config
from sandman.layout import Layout
from sandman.verbs.dream import dream
from sandman.verbs.reflect import reflect
import sandman.site.render  # noqa: F401 - imported before the fork, as reflect would import it after

EXIT_RAISED = 3
EXIT_STEP_FAILED = 4


def child(command: dict) -> None:
    out = os.open(command["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ["HARDENING_SIGNAL"] = command.get("signal", "")
    code = 0
    try:
        layout = Layout(config.root())
        if command["verb"] == "dream":
            print(dream(layout, now=True).text())
        else:
            summary = reflect(layout, now=datetime.fromisoformat(command["now"]))
            print("\n".join(summary.lines() + summary.errors))
            code = EXIT_STEP_FAILED if summary.errors else 0
    except BaseException:  # noqa: BLE001 - the test reads the traceback in the log
        traceback.print_exc()
        code = EXIT_RAISED
    sys.stdout.flush()
    sys.stderr.flush()
    if command.get("signal"):  # a run that ends before its minds answer must not leave the test waiting
        with open(command["signal"], "w") as fifo:
            fifo.write(f"exit {code}\n")
    os._exit(code)


def main() -> None:
    for line in sys.stdin:
        command = json.loads(line)
        # betterleaks is a Go shared library, and the Go runtime does not survive a fork without
        # exec: a child calling into a runtime its parent started can hang for ever (it did, in
        # CI). So each child loads it on its first scan; the parent never does.
        assert "betterleaks" not in sys.modules, "the runner loaded betterleaks before forking"
        pid = os.fork()
        if pid == 0:
            child(command)
        print(f"started {pid}", flush=True)
        assert sys.stdin.readline().strip() == "reap"
        _, status = os.waitpid(pid, 0)
        print(f"ended {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    main()
