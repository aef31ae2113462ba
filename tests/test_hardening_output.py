"""A mind that prints hundreds of MB cannot take dream's memory with it (issue 20, fault 2).

Three fake minds each print 200 MB of non-JSON and exit 0; dream used to hold
every byte (647 MB resident). It now keeps at most
``config.MIND_OUTPUT_MAX_BYTES`` of a mind's stdout, kills the mind past it,
and journals the abstention. The figure is dream's peak resident set, the ``VmHWM`` of the
``sandman dream`` process as it exits.
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
# Runs sandman and, as it exits, writes its own peak resident set (VmHWM, kB) to argv[1]. Not
# wait4's ru_maxrss: the kernel carries into it the high-water mark of the process before exec,
# here a copy of pytest itself.
PEAK = """
import atexit, sys
out = sys.argv[1]
def peak():
    with open("/proc/self/status") as status:
        kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(out, "w") as file:
        file.write(kb)
atexit.register(peak)
from sandman.__main__ import main
main(sys.argv[2:])
"""
SID = "0b0e5e00-0000-4000-8000-000000000000"


def test_a_200_mb_mind_reply_keeps_dream_under_150_mb_resident(layout, fake_claude, isolated, monkeypatch):
    quick_minds(monkeypatch)
    archive_session(layout, SID, isolated, ended="2026-11-20T10:00:00Z")
    for mind in config.MINDS:
        fake_claude.mode(model(mind), "garbage", stdout="not json " * (MB // 9), repeat=200)
    peak_file = isolated / "peak.txt"
    proc = subprocess.run([sys.executable, "-c", PEAK, str(peak_file), "dream", "--now"], capture_output=True,
                          env=os.environ.copy(), timeout=300)
    out, err = proc.stdout, proc.stderr
    peak_mb = int(peak_file.read_text()) / 1024  # VmHWM: kilobytes
    print(f"dream peak resident memory with three 200 MB replies: {peak_mb:.1f} MB")
    assert proc.returncode == 0, err
    assert b"Traceback" not in err
    assert peak_mb < 150
    reasons = {line["mind"]: line["reason"] for line in journal_lines(layout, "abstained")}
    limit = f"output over {config.MIND_OUTPUT_MAX_BYTES:,} bytes"
    assert reasons == {mind: limit for mind in config.MINDS}, out
    assert not read_pointer(layout.pointer(SID)).dreamed  # no quorum: the session stays queued
