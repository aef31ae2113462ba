"""The shift's profile in the real Claude Code 2.1.332 (docs/shift.md, "The profile"; docs/live-tests.md).

The fake Messages API answers with a ``tool_use`` of Bash running ``git push origin main`` in a
shift's worktree whose ``origin`` is a local bare repository: the guard hook denies it, the trail
holds the ``guard.deny`` event, the remote's ``main`` is where it was, and the model is told why.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from live_claude import ToolUse, run_print, tool_results

from sandman.layout import Layout
from sandman.machine import profile as profiles
from sandman.machine import shift as shifts
from sandman.machine import trail as trails
from sandman.verbs.init import init

SHIFT = "s-20261205T0100Z"
GIT = ["git", "-c", "user.name=T", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]


def a_shift_in_its_worktree(layout: Layout, tmp_path: Path) -> tuple[Path, Path, str]:
    """A repository with a bare ``origin``, a shift's worktree on ``shift/<id>``, the shift's meta.json;
    returns (worktree, origin, origin's main before)."""
    init(layout)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    repo = tmp_path / "code" / "app"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(GIT + ["-C", str(repo), "add", "a.txt"], check=True)
    subprocess.run(GIT + ["-C", str(repo), "commit", "-q", "-m", "a"], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", str(origin)], check=True)
    subprocess.run(["git", "-C", str(repo), "push", "-q", "origin", "main"], check=True)
    before = subprocess.run(["git", "-C", str(origin), "rev-parse", "main"], capture_output=True, text=True,
                            check=True).stdout.strip()
    (repo / "b.txt").write_text("unpushed\n")
    subprocess.run(GIT + ["-C", str(repo), "add", "b.txt"], check=True)
    subprocess.run(GIT + ["-C", str(repo), "commit", "-q", "-m", "b"], check=True)
    worktree = repo / ".claude" / "worktrees" / SHIFT
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "-b", f"shift/{SHIFT}", str(worktree)],
                   check=True)
    folder = layout.shift_dir(SHIFT)
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"id": SHIFT, "repo": str(repo), "trunk": "main",
                                                  "branch": f"shift/{SHIFT}", "worktree": str(worktree),
                                                  "rest": False}))
    return worktree, origin, before


def test_the_guard_denies_a_push_to_the_trunk_in_the_real_claude_code(layout, tmp_path, fake_api):
    worktree, origin, before = a_shift_in_its_worktree(layout, tmp_path)
    settings = profiles.build(layout, SHIFT, shifts.read_meta(layout, SHIFT))["settings"]
    # This machine has no bwrap: the sandbox is asked for but cannot start here (docs/shift.md);
    # the guard is shown with the rest of the profile as it is.
    settings["sandbox"]["failIfUnavailable"] = False
    fake_api.script(ToolUse("Bash", {"command": "git push origin main"}), "done")
    done = run_print("work", worktree, fake_api, args=["--permission-mode", "dontAsk",
                                                       "--settings", json.dumps(settings)],
                     env_extra={"SANDMAN_SHIFT": SHIFT, "SANDMAN_ROOT": str(layout.root)})
    assert done.rc == 0, done.stderr
    results = [block for body in fake_api.messages() for block in tool_results(body)]
    assert results and results[0].get("is_error") is True
    assert "sandman shift guard" in json.dumps(results[0]) and "trunk" in json.dumps(results[0])
    events = [e for e in trails.read(layout).events if e.kind == "guard.deny"]
    assert len(events) == 1 and events[0].shift == SHIFT and events[0].data["rule"] == "git-push-trunk"
    assert json.loads(events[0].data["input"]) == {"command": "git push origin main"} or \
        "git push origin main" in events[0].data["input"]
    after = subprocess.run(["git", "-C", str(origin), "rev-parse", "main"], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert after == before  # nothing was pushed


def test_the_profile_asks_for_the_sandbox_and_claude_code_refuses_to_start_without_it(layout, tmp_path,
                                                                                      fake_api):
    worktree, origin, before = a_shift_in_its_worktree(layout, tmp_path)
    if not profiles.sandbox_missing():
        import pytest

        pytest.skip("this machine has bwrap and socat: the sandbox can start")
    settings = profiles.build(layout, SHIFT, shifts.read_meta(layout, SHIFT))["settings"]
    fake_api.script(ToolUse("Bash", {"command": "touch ran.txt"}), "done")
    done = run_print("work", worktree, fake_api, args=["--permission-mode", "dontAsk",
                                                       "--settings", json.dumps(settings)],
                     env_extra={"SANDMAN_SHIFT": SHIFT, "SANDMAN_ROOT": str(layout.root)})
    assert done.rc != 0
    assert "sandbox" in (done.stderr + done.stdout).lower()
    assert not (worktree / "ran.txt").exists() and not fake_api.messages()
