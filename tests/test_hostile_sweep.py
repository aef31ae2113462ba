"""A short seeded sweep of hostile input and kill -9 (tests/hostile_sweep.py; issue 34): no
traceback, no hang, no broken root. The long sweeps run by hand with the same module:
``python tests/hostile_sweep.py --seed 34 --fuzz 2000 --kills 400``."""

from __future__ import annotations

from pathlib import Path

import hostile_sweep


def test_hostile_sweep_fuzz_seed_34_has_no_traceback_hang_or_failed_hook(tmp_path: Path) -> None:
    counts = hostile_sweep.fuzz(tmp_path / "fuzz", seed=34, cases=24)
    assert counts["cases"] == 24 and counts["mcp-frames"] == 5
    assert (counts["tracebacks"], counts["hangs"], counts["hook-failures"]) == (0, 0, 0), dict(counts)


def test_hostile_sweep_kills_seed_34_leave_no_broken_root(tmp_path: Path) -> None:
    counts = hostile_sweep.kills(tmp_path / "kills", seed=34, count=5)
    assert counts["kills"] == 5 and counts["broken"] == 0, dict(counts)
