"""A mind that prints hundreds of MB cannot take dream's memory with it (issue 20, fault 2).

Three fake minds each print 200 MB of non-JSON and exit 0; dream used to hold
every byte (647 MB resident). It now keeps at most
``config.MIND_OUTPUT_MAX_BYTES`` of a mind's stdout, kills the mind past it,
and journals the abstention. The figure is dream's peak resident set, from
``wait4``'s rusage of the ``sandman dream`` process.
"""

from __future__ import annotations

import os
import subprocess
import sys

from dream_helpers import archive_session, journal_lines, model
from hardening import quick_minds
from sandman import config
from sandman.pointers import read_pointer

MB = 1024 * 1024
SID = "0b0e5e00-0000-4000-8000-000000000000"


def test_a_200_mb_mind_reply_keeps_dream_under_150_mb_resident(layout, fake_claude, isolated, monkeypatch):
    quick_minds(monkeypatch)
    archive_session(layout, SID, isolated, ended="2026-11-20T10:00:00Z")
    for mind in config.MINDS:
        fake_claude.mode(model(mind), "garbage", stdout="not json " * (MB // 9), repeat=200)
    proc = subprocess.Popen([sys.executable, "-m", "sandman", "dream", "--now"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=os.environ.copy())
    # Read while it runs (its own output is small), then reap it with its resource usage.
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak_mb = usage.ru_maxrss / 1024  # Linux: kilobytes
    print(f"dream peak resident memory with three 200 MB replies: {peak_mb:.1f} MB")
    assert proc.returncode == 0, err
    assert b"Traceback" not in err
    assert peak_mb < 150
    reasons = {line["mind"]: line["reason"] for line in journal_lines(layout, "abstained")}
    limit = f"output over {config.MIND_OUTPUT_MAX_BYTES:,} bytes"
    assert reasons == {mind: limit for mind in config.MINDS}, out
    assert not read_pointer(layout.pointer(SID)).dreamed  # no quorum: the session stays queued
