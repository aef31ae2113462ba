"""The journal's gaps closed (issue 17): recall by hand and hooks install/uninstall leave a line."""

from __future__ import annotations

from pathlib import Path

from helpers import sandman
from sandman import journal
from sandman.layout import Layout
from sandman.verbs.remember import remember


def _lines(layout: Layout, verb: str) -> list[tuple[str, dict]]:
    return [journal.parse_line(line)[2:] for path in sorted(layout.trace.glob(f"{verb}-*.log"))
            for line in path.read_text().splitlines()]


def test_recall_by_hand_writes_a_recalled_line(layout: Layout, isolated: Path):
    remember(layout, "The build runs with make.", cwd=str(isolated / "proj"))
    done = sandman("recall", "--cwd", str(isolated / "proj"), "--budget", "300")
    assert done.returncode == 0, done.stderr
    ((decision, facts),) = _lines(layout, "recall")
    assert decision == "recalled" and facts["hook"] == "false" and facts["cwd"] == str(isolated / "proj")
    assert int(facts["chars"]) == len(done.stdout.decode()) and facts["trimmed"] != "-"


def test_hooks_install_and_uninstall_each_write_a_line(layout: Layout, isolated: Path):
    remember(layout, "Anything.", cwd=str(isolated / "proj"))
    assert sandman("hooks", "install").returncode == 0
    assert sandman("hooks", "install").returncode == 0
    assert sandman("hooks", "uninstall").returncode == 0
    lines = _lines(layout, "hooks")
    assert [(d, f["written"], f["added"], f["removed"]) for d, f in lines] == [
        ("installed", "true", "5", "0"), ("installed", "false", "0", "0"), ("uninstalled", "true", "0", "5")]


def test_hooks_install_never_creates_the_memory_root(layout: Layout):
    assert sandman("hooks", "install").returncode == 0
    assert not layout.root.exists()
