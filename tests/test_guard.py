"""The shift's guard and the owner's decisions (issue 31 items 1, 2, 3, 10; docs/shift.md, "The guard";
docs/trail.md, "Owner decisions")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_shift import SHIFT_WORK, TUESDAY_NIGHT, git, world  # noqa: F401  (the fixture)

from sandman.errors import InputError
from sandman.machine import guard
from sandman.machine import proposals
from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails
from sandman.machine.reconcile import reconcile
from sandman.verbs import trail as trail_verb

HOSTILE = Path(__file__).resolve().parent / "fakes" / "hostile_shift.py"
SHIFT = "s-20261205T0100Z"


@pytest.fixture
def context(tmp_path: Path) -> guard.Context:
    root, repo = tmp_path / "root", tmp_path / "repo"
    (root / "shifts" / SHIFT).mkdir(parents=True)
    worktree = repo / ".claude" / "worktrees" / SHIFT
    worktree.mkdir(parents=True)
    (root / "shifts" / SHIFT / "meta.json").write_text(json.dumps(
        {"repo": str(repo), "trunk": "main", "branch": f"shift/{SHIFT}", "worktree": str(worktree)}))
    return guard.load_context(root, SHIFT)


REFUSED = [
    "git push origin main", "git -C /x push origin main", "git push --force origin shift/" + SHIFT,
    "git push origin +shift/" + SHIFT, "git stash", "git stash pop", "git clean -fdx", "git checkout -- a.py",
    "git reset --hard", "git reset --soft HEAD~1", "pkill -f claude", "git -C {repo} checkout main",
    "git commit --amend -m x", "cd {repo} && git commit -m x", "git -C {repo} commit -m x",
    "env X=1 git push origin main", "command git push origin main", "/usr/bin/git push origin main",
    "git -c k=v -C dir push", "sh -c 'git push origin main'", "bash -lc \"git stash\"",
    "echo $(git push origin main)", "echo `git stash`", "true; git stash", "a || git clean -f", "ls | git stash",
    "true\ngit stash", "git -c alias.p=push p origin main", "git p origin main", "timeout 5 git push origin main",
    "nice -n 5 git push origin main", "eval 'git stash'", "git config alias.x push",
    "GIT_DIR={repo}/.git git commit -m x", "git --git-dir={repo}/.git commit -m x", "git switch main",
    "git rebase -i main", "git branch -D main", "git worktree add x", "gh pr merge 1", "killall python",
    "sandman report approve abc123", "sandman report decline abc123", "/tmp/sm report approve abc",
    "env -u SANDMAN_SHIFT sandman report approve x", "python3 -m sandman trail revoke s-1 --why x",
    "sandman trail append proposal.approve x", "sandman trail append revoke x --data '{{}}'",
    "sandman reconcile s-1", "sandman forget x",
    "echo '{{}}' >> {root}/trail/2026/12/05.jsonl", "tee -a {root}/trail/a.jsonl",
    "cp /tmp/x {root}/trail/2026/12/05.jsonl", "python3 -c 'open(\"{root}/trail/x.jsonl\",\"a\").write(1)'",
    "sed -i s/a/b/ .github/workflows/ci.yml", "echo x > .gitlab-ci.yml", "echo hi > /etc/x",
    "echo x > {repo}/a.py", "echo hi > /tmp/out", "unterminated 'quote", "bash script.sh",
]
ALLOWED = [
    "git status", "git log --oneline | head", "git status 2>&1 | head", "git commit -m x", "git add a.py",
    "git push origin shift/" + SHIFT, "git restore --staged a.py", "git config user.name", "pkill claude",
    "cat {root}/trail/2026/12/05.jsonl", "sandman trail append shift.commit 'x' --parent ev-1", "sandman trail log",
    "echo hi > /dev/null", "echo hi > notes.md", "python3 -m pytest -q",
]


@pytest.mark.parametrize("command", REFUSED)
def test_the_guard_refuses_what_a_shift_must_never_run(context, command):
    text = command.format(repo=context.repo, root=context.root)
    with pytest.raises(guard.Refused):
        guard.decide({"tool_name": "Bash", "tool_input": {"command": text}, "cwd": str(context.worktree)}, context)


@pytest.mark.parametrize("command", ALLOWED)
def test_the_guard_lets_a_shifts_work_through(context, command):
    text = command.format(repo=context.repo, root=context.root)
    guard.decide({"tool_name": "Bash", "tool_input": {"command": text}, "cwd": str(context.worktree)}, context)


@pytest.mark.parametrize("command", [
    "cd {root}/shifts && python3 -c \"open('.current.json','w')\"", "cd {root}/shifts && touch x",
    "cd {root} && cd shifts && touch x", "cd {root}/shifts; cp /tmp/a .current.json", "pushd {root} && mkdir x",
    "cd {root}/shifts && node -e 'x'", "cd {root}/shifts && sh -c 'touch x'", "printf x | python3 -",
    "printf x | python3", "printf x | python3 -u -", "printf x | perl", "printf x | sh", "printf x | bash",
    "echo 'open(1)' | node -", "python3 - <<'EOF'\nprint(1)\nEOF",
])
def test_a_cd_into_the_memory_root_or_code_on_stdin_no_longer_slips_a_write_past_the_guard(context, command):
    """`touch {root}/shifts/x` was refused but `cd {root}/shifts && touch x` (a relative path after a cd)
    and `printf … | python3 -` (code the guard never sees) ran: the hook itself, as Claude Code calls it."""
    payload = {"tool_name": "Bash", "tool_input": {"command": command.format(root=context.root)},
               "cwd": str(context.worktree)}
    denied = guard.hook(json.dumps(payload), context.root, SHIFT)
    assert denied and json.loads(denied)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("command", [
    "cd {root} && cat shifts/.current.json", "cd {root} && sandman trail log", "cd {root}/shifts && ls -la",
    "cd {root} && git log --oneline", "cd {root} && cd {worktree} && touch x", "python3 --version",
    "python3 tools/gen.py", "python3 -m pytest -q", "cd sub && touch x",
])
def test_the_guard_still_lets_reads_in_the_memory_root_and_scripts_through(context, command):
    text = command.format(root=context.root, worktree=context.worktree)
    guard.decide({"tool_name": "Bash", "tool_input": {"command": text}, "cwd": str(context.worktree)}, context)


@pytest.mark.parametrize("tool,path,allowed", [
    ("Edit", "{root}/trail/2026/12/05.jsonl", False), ("Write", "{worktree}/a.py", True),
    ("Write", "{worktree}/.github/workflows/x.yml", False), ("Write", "{repo}/a.py", False),
    ("Edit", "/home/x/.bashrc", False), ("Write", "a.py", True), ("MultiEdit", "{worktree}/.ci/run", False)])
def test_the_guard_confines_edits_to_the_worktree_and_keeps_ci_files(context, tool, path, allowed):
    payload = {"tool_name": tool, "tool_input": {"file_path": path.format(
        root=context.root, worktree=context.worktree, repo=context.repo)}, "cwd": str(context.worktree)}
    if allowed:
        guard.decide(payload, context)
    else:
        with pytest.raises(guard.Refused):
            guard.decide(payload, context)


def test_the_guard_fails_closed_and_records_its_denials(layout, tmp_path):
    from sandman.verbs.init import init

    init(layout)
    for stdin in ("not json", json.dumps({"tool_name": "Bash"}), json.dumps([1]),
                  json.dumps({"tool_name": "Bash", "tool_input": {"command": "git push origin main"}, "cwd": "/"})):
        done = subprocess.run([sys.executable, "-m", "sandman.machine.guard", "--hook", "--root", str(layout.root),
                               "--shift", SHIFT], input=stdin, capture_output=True, text=True)
        assert done.returncode == 0
        assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    events = [e for e in trails.read(layout).events if e.kind == "guard.deny"]
    assert len(events) == 4 and {e.data["rule"] for e in events} >= {"guard-error", "payload", "git-push-trunk"}
    # an error inside the guard's decision is a deny too
    assert guard.hook("{}", layout.root, SHIFT)
    allowed = subprocess.run([sys.executable, "-m", "sandman.machine.guard", "--hook", "--root", str(layout.root)],
                             input=json.dumps({"tool_name": "Read", "tool_input": {"file_path": "/etc/hosts"}}),
                             capture_output=True, text=True)
    assert allowed.returncode == 0 and allowed.stdout == ""


def test_the_profile_runs_the_guard_in_the_sandbox_and_fails_closed(layout):
    from sandman.machine import profile as profiles

    settings = profiles.build(layout, SHIFT, {"repo": "/r"})["settings"]
    assert settings["sandbox"]["enabled"] and settings["sandbox"]["failIfUnavailable"]
    assert settings["sandbox"]["allowUnsandboxedCommands"] is False
    assert settings["sandbox"]["filesystem"]["allowWrite"] == [str(layout.root), "/r/.git"]
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command.endswith("|| exit 2") and "sandman.machine.guard" in command and SHIFT in command
    denied = settings["permissions"]["deny"]
    assert {"Bash(git stash:*)", "Bash(git clean:*)", "Bash(git commit --amend:*)", "Bash(pkill:*)"} <= set(denied)


@pytest.mark.parametrize("given", ["nope", "s-20261205T0100Z", "../s-20261205T0100Z"])
def test_shift_profile_refuses_a_shift_it_does_not_know(layout, given):
    from helpers import sandman

    init_root(layout)
    done = sandman("shift", "profile", given)
    assert done.returncode != 0 and b"Traceback" not in done.stderr
    assert done.stderr.decode().count("\n") == 1 and given in done.stderr.decode()
    assert "sandman shift status" in done.stderr.decode() and done.stdout == b""


def test_shift_profile_prints_a_shifts_own_profile(layout):
    from helpers import sandman

    init_root(layout)
    folder = layout.shift_dir(SHIFT)
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"id": SHIFT, "repo": "/r", "rest": False}))
    printed = json.loads(sandman("shift", "profile", SHIFT).stdout)
    assert printed["settings"]["sandbox"]["filesystem"]["allowWrite"] == [str(layout.root), "/r/.git"]
    assert printed["env"]["SANDMAN_SHIFT"] == SHIFT
    assert printed == shifts.profile(layout, SHIFT)
    plain = json.loads(sandman("shift", "profile").stdout)
    assert plain["settings"]["sandbox"]["filesystem"]["allowWrite"] == [str(layout.root)]


def init_root(layout) -> None:
    from sandman.verbs.init import init

    init(layout)


def test_regression_trail_append_wrote_the_owners_decisions(layout):
    from sandman.verbs.init import init

    init(layout)
    start = trails.append(layout, "shift.start", "x", shift=SHIFT)
    for kind in guard.OWNER_KINDS:
        with pytest.raises(InputError, match="owner decision"):
            trail_verb.append(layout, kind, "forged", parent=start.id, data=json.dumps({"target": start.id}))
    assert [e.kind for e in trails.read(layout).events] == ["shift.start"]
    assert trails.read(layout).revoked_by(start) is None


def test_regression_a_running_shift_was_revoked_and_reconciled_under_its_session(layout, world, fake_claude):
    started = tick.run(layout, now=TUESDAY_NIGHT)
    assert started.decision == "started", started.reason
    os.waitpid(shifts.read_current(layout)["pid"], 0)  # the session's work is done, the shift still open
    assert shifts.read_current(layout)["state"] == "open"
    with pytest.raises(InputError, match="still running"):
        trail_verb.revoke(layout, started.shift, "too early")
    start = shifts.read_meta(layout, started.shift)["start_event"]
    with pytest.raises(InputError, match="still running"):
        trail_verb.revoke(layout, start, "too early")
    assert not [e for e in trails.read(layout).events if e.kind == "revoke"]
    trails.revoke(layout, started.shift, "revoked behind the verb's back")  # the API does not ask
    with pytest.raises(InputError, match="still running"):
        reconcile(layout, started.shift)
    assert not [e for e in trails.read(layout).events if e.kind == "reconcile"]
    layout.shift_pause.write_text("")  # the tick closes it and opens no next shift of the night
    tick.run(layout, now=TUESDAY_NIGHT + timedelta_minutes(30))
    assert not shifts.read_current(layout)
    result = reconcile(layout, started.shift)
    assert not result.failed


def timedelta_minutes(n: int):
    from datetime import timedelta

    return timedelta(minutes=n)


def test_the_brief_names_the_worktree_as_the_place_to_work(layout, world, fake_claude):
    started = tick.run(layout, now=TUESDAY_NIGHT)
    brief = (layout.shift_dir(started.shift) / "brief.md").read_text()
    worktree = Path(shifts.read_meta(layout, started.shift)["repo"]) / ".claude" / "worktrees" / started.shift
    assert f"Work in `{worktree}`" in brief
    assert "never in the main checkout" in brief


def test_a_hostile_shift_reaches_nothing(layout, world, fake_claude, tmp_path, monkeypatch):
    out, outside = tmp_path / "hostile.json", tmp_path / "outside.txt"
    monkeypatch.setenv("FAKE_HOSTILE_OUT", str(out))
    monkeypatch.setenv("FAKE_HOSTILE_OUTSIDE", str(outside))
    fake_claude.rules("default", {"program": [str(HOSTILE)]})
    beta = world["beta"]
    trunk = git(beta, "rev-parse", "main").strip()

    started = tick.run(layout, now=TUESDAY_NIGHT)
    assert started.decision == "started", started.reason
    os.waitpid(shifts.read_current(layout)["pid"], 0)

    tried = json.loads(out.read_text())
    allowed = [call for call in tried["guarded"] if call["decision"] != "deny"]
    assert allowed == []
    for attempt in tried["direct"]:
        assert attempt["rc"] != 0 and "\n" not in attempt["stderr"], attempt
    trail = trails.read(layout)
    denials = [e for e in trail.events if e.kind == "guard.deny"]
    assert len(denials) == len(tried["guarded"]) and {e.shift for e in denials} == {started.shift}
    assert not [e for e in trail.events if e.kind in guard.OWNER_KINDS]
    (proposal,) = [p for p in proposals.from_trail(trail) if p.id == tried["proposal"]]
    assert proposal.state == "open"
    assert not outside.exists()
    assert git(beta, "rev-parse", "main").strip() == trunk
    assert not (beta / ".github").exists()


def machine_check(layout, tmp_path: Path):
    """doctor's machine line for a machine that is on, with its report hook registered."""
    from sandman import config
    from sandman.verbs.doctor import doctor
    from sandman.verbs.hooks import install
    from sandman.verbs.init import init

    init(layout)
    (tmp_path / "code").mkdir(exist_ok=True)
    layout.settings_file.write_text(f'[machine]\nroots = ["{tmp_path / "code"}"]\nbudget_usd_day = 5.0\n')
    Path(config.claude_settings_file()).parent.mkdir(parents=True, exist_ok=True)
    install()
    [machine] = [check for check in doctor().checks if check.name == "machine"]
    return machine


def a_path_with(tmp_path: Path, bwrap: str | None) -> str:
    """A PATH of one folder holding ``socat`` and, unless None, a ``bwrap`` script of that body."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "socat").write_text("#!/bin/sh\nexit 0\n")
    if bwrap is not None:
        (folder / "bwrap").write_text("#!/bin/sh\n" + bwrap)
    for tool in folder.iterdir():
        tool.chmod(0o755)
    return str(folder)


def test_doctor_names_a_bwrap_that_cannot_make_its_namespaces(layout, tmp_path, monkeypatch):
    # Claude Code 2.1.332 starts with such a bwrap and fails every Bash call with its message
    # (docs/live-tests.md): doctor must say so, with bwrap's own words.
    monkeypatch.setenv("PATH", a_path_with(tmp_path, "echo 'bwrap: No permissions to create a new namespace, "
                                                     "likely because the kernel does not allow non-privileged user "
                                                     "namespaces.' >&2\nexit 1\n"))
    machine = machine_check(layout, tmp_path)
    assert machine.status == "warn"
    assert "sandbox cannot run here: bwrap cannot make its namespaces (exit 1: bwrap: No permissions to create " \
           "a new namespace" in machine.message
    assert machine.details["sandbox_missing"] == []


def test_doctor_names_a_missing_bwrap(layout, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", a_path_with(tmp_path, None))
    machine = machine_check(layout, tmp_path)
    assert machine.status == "warn" and "bwrap not installed (apt install bubblewrap socat)" in machine.message
    assert machine.details["sandbox_missing"] == ["bwrap"]


def test_doctor_passes_a_bwrap_that_works(layout, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", a_path_with(tmp_path, "exit 0\n"))
    machine = machine_check(layout, tmp_path)
    assert machine.status == "ok" and machine.details["sandbox"] is None, machine.message
