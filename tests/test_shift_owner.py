"""What the owner sees of a revoked shift (issue 32, point 7): reconcile of a shift never merged names the
branch and worktree to delete; ``report`` and ``shift status`` mark revoked shifts."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta

from helpers import git
from test_shift import TUESDAY_NIGHT, cli, wait_for_session, world  # noqa: F401 (world is a fixture)

from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails
from sandman.verbs import reconcile as reconcile_verb
from sandman.verbs import report as report_verb
from sandman.verbs import shift as shift_verb


def a_closed_shift(layout) -> str:
    """One shift run by the tick (the fake session commits on its branch) and closed, none after it."""
    started = tick.run(layout, now=TUESDAY_NIGHT)
    assert started.decision == "started", started.reason
    wait_for_session(layout)
    layout.shift_pause.write_text("")
    closed = tick.run(layout, now=TUESDAY_NIGHT + timedelta(minutes=30))
    layout.shift_pause.unlink()
    assert closed.closed == started.shift
    return started.shift


def test_regression_reconcile_of_an_unmerged_shift_was_a_silent_no_op(layout, world):
    ident = a_closed_shift(layout)
    meta = shifts.read_meta(layout, ident)
    repo, worktree = meta["repo"], meta["worktree"]
    trails.revoke(layout, ident, "not wanted")

    result = reconcile_verb.reconcile(layout, ident)

    assert not result.failed
    (line,) = result.unmerged
    assert line == (f"shift/{ident} was never merged into main of {repo}: nothing of shift {ident} is on the trunk "
                    f"to revert. To drop its work, delete its branch and worktree yourself: git -C {repo} worktree "
                    f"remove --force {worktree}; git -C {repo} branch -D shift/{ident}")
    assert line in reconcile_verb.lines(result)
    shown = cli("reconcile", ident)
    assert shown.returncode == 0 and line in shown.stdout.splitlines(), shown.stdout + shown.stderr
    assert json.loads(cli("reconcile", ident, "--json").stdout)["unmerged"] == [line]

    for command in line.split("yourself: ", 1)[1].split("; "):  # the owner runs them as printed
        subprocess.run(command, shell=True, check=True, capture_output=True)
    assert reconcile_verb.reconcile(layout, ident).unmerged == []  # nothing left behind: nothing to say


def test_reconcile_of_a_merged_shift_reverts_it_and_asks_no_deletion(layout, world):
    ident = a_closed_shift(layout)
    repo = shifts.read_meta(layout, ident)["repo"]
    git(repo, "merge", "-q", "--ff-only", f"shift/{ident}")
    trails.revoke(layout, ident, "not wanted")

    result = reconcile_verb.reconcile(layout, ident)

    assert any(r.status == "reverted" for r in result.repos) and result.unmerged == []


def test_regression_report_and_shift_status_did_not_mark_a_revoked_shift(layout, world):
    ident = a_closed_shift(layout)
    assert report_verb.report_list(layout)[0].revoked is None
    revoke, _ = trails.revoke(layout, ident, "not wanted")

    (info,) = report_verb.report_list(layout)
    (recent,) = shift_verb.status(layout)["recent"]

    assert info.revoked == revoke.id and f" · REVOKED by {revoke.id} · " in report_verb.list_line(info)
    assert info.as_json()["revoked"] == revoke.id
    assert recent["revoked"] == revoke.id
    assert f"{ident} " in cli("shift", "status").stdout
    assert f"REVOKED by {revoke.id}" in [l for l in cli("shift", "status").stdout.splitlines() if ident in l][0]
    listed = cli("report").stdout
    assert f"REVOKED by {revoke.id}" in listed
    shown = report_verb.show(layout, ident)
    assert shown.startswith(f"REVOKED by {revoke.id} (`sandman trail show {revoke.id}`); "
                            f"`sandman reconcile {ident}` undoes what of it reached a trunk.\n\n# Shift {ident}")


def test_a_shift_revoked_through_its_start_event_is_marked_too(layout, world):
    ident = a_closed_shift(layout)
    revoke, _ = trails.revoke(layout, shifts.read_meta(layout, ident)["start_event"], "its start was wrong")

    assert report_verb.report_list(layout)[0].revoked == revoke.id
    assert shift_verb.status(layout)["recent"][0]["revoked"] == revoke.id
