"""A new user's first commands on a machine with no memory root yet (issue 28, fault 9).

The README says every verb that writes creates the root on first use; doctor said
``verdict: FAIL repository`` on a fresh install, and reflect, import, take --missed
and banks merge answered "run `sandman init` first" where remember just worked.
"""

from __future__ import annotations

import pytest

from helpers import git, sandman
from sandman.layout import Layout


def test_fresh_install_doctor_fails_repository_regression(layout: Layout) -> None:
    done = sandman("doctor")
    lines = done.stdout.decode().splitlines()
    (repository,) = [line for line in lines if line.split()[1:2] == ["repository"]]
    assert repository.split()[0] == "WARN"
    assert repository.endswith(f"{layout.root} does not exist yet: the first `sandman take --all`, `sandman remember` "
                               "or any verb that writes creates it (`sandman init` creates it now)")
    assert not lines[-1].startswith("verdict: FAIL repository")
    assert not layout.root.exists()  # doctor only reads


@pytest.mark.parametrize("verb", [["reflect"], ["import", "claude-memory"], ["take", "--missed"]],
                         ids=" ".join)
def test_first_command_asks_for_sandman_init_regression(layout: Layout, verb: list[str]) -> None:
    done = sandman(*verb)
    assert (done.returncode, b"sandman init" in done.stderr) == (0, False), done.stderr
    assert git(layout.root, "log", "--format=%s").splitlines()[-1] == "init: memory root"
    assert layout.memories.is_dir()
    assert "OK    repository" in sandman("doctor").stdout.decode()


@pytest.mark.parametrize("verb", [["import", "claude-memory", "--dry-run"], ["take", "--missed", "--dry-run"]],
                         ids=" ".join)
def test_a_dry_run_on_a_fresh_install_writes_nothing(layout: Layout, verb: list[str]) -> None:
    done = sandman(*verb)
    assert done.returncode == 0, done.stderr
    assert not layout.root.exists()


def test_banks_merge_on_a_fresh_install_names_the_missing_bank_not_init(layout: Layout) -> None:
    done = sandman("banks", "merge", "old-bank", "/tmp/project")
    assert (done.returncode, done.stderr.decode()) == (
        2, "sandman: FROM 'old-bank' is not a bank; `sandman doctor` lists the banks of worktrees\n")
    assert not layout.root.exists()
