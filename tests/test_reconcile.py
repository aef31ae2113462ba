"""sandman reconcile on real git repositories (sandman/machine/reconcile.py, store/repos.py)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from helpers import git, sandman
from sandman.banks.commit import bank_transaction
from sandman.banks.memory import Memory
from sandman.errors import InputError
from sandman.machine import trail
from sandman.machine.reconcile import reconcile


def make_repo(path: Path, branch: str = "main") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", branch)
    git(path, "config", "user.name", "A Person")
    git(path, "config", "user.email", "person@example.invalid")
    (path / "README.md").write_text("app\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "base")
    return path


def machine_commit(repo: Path, name: str, text: str, event: trail.Event) -> str:
    (repo / name).write_text(text)
    git(repo, "add", "-A")
    args = [f"--trailer=Event: {event.id}"] + ([f"--trailer=Shift: {event.shift}"] if event.shift else [])
    git(repo, "commit", "-qm", f"add {name}", *args)
    return git(repo, "rev-parse", "HEAD").strip()


def memory_under(layout, event: trail.Event, cwd: Path, name: str) -> Path:
    """Commit a memory in the memory root carrying ``event``, its trail line in the same commit."""
    from sandman.banks.names import bank_name

    with bank_transaction(layout, verb="shift", subject=name, trailers=trail.trailers(event)) as tx:
        path = tx.write_memory(bank_name(cwd), Memory(name=name, description=f"{name} described", type="project",
                                                      body=f"{name} body\n"), directory=str(cwd))
        trail.write(tx, event)
    return path


def set_roots(layout, folder: Path) -> None:
    layout.root.mkdir(parents=True, exist_ok=True)
    layout.settings_file.write_text(f'[machine]\nroots = ["{folder}"]\n')


@pytest.fixture
def app(isolated) -> Path:
    return make_repo(isolated / "code" / "app")


def test_phase_one_acceptance_two_events_child_revoked_with_parent_reverted_on_a_branch(layout, app, isolated):
    keep = memory_under(layout, trail.new_event("dream.commit", "unrelated"), isolated, "Unrelated fact")
    base_tree = git(app, "rev-parse", "HEAD^{tree}").strip()
    first = trail.append(layout, "shift.commit", "add parser", repo=str(app))
    a = machine_commit(app, "parser.py", "parse\n", first)
    second = trail.new_event("shift.commit", "add lexer and learn about it", parent=first.id, repo=str(app))
    memory = memory_under(layout, second, isolated, "Lexer lives in lexer.py")
    b = machine_commit(app, "lexer.py", "lex\n", second)
    trunk_before = git(app, "rev-parse", "main").strip()
    keep_bytes = keep.read_bytes()

    shown = sandman("trail", "show", first.id).stdout.decode()
    assert f"commit: {app} {a[:12]} add parser.py" in shown and f"commit: {app} {b[:12]} add lexer.py" in shown
    assert f"descendant: {second.id}" in shown and "revoked: no" in shown
    revoked = sandman("trail", "revoke", first.id, "--why", "the parser split was wrong")
    assert revoked.returncode == 0, revoked.stderr
    result = sandman("reconcile", first.id)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()

    # Both commits reverted, newest first, on reconcile/<id> cut from the trunk; the trunk not moved.
    assert git(app, "rev-parse", "main").strip() == trunk_before
    branch = f"reconcile/{first.id}"
    log = git(app, "log", "--format=%H%x00%B%x01", f"main..{branch}").strip("\x01\n").split("\x01")
    reverts = [entry.strip().split("\x00") for entry in log]
    assert len(reverts) == 2
    (newest_id, newest), (oldest_id, oldest) = reverts
    assert f"Reverts: {a}" in newest and f"Reverts: {b}" in oldest  # b reverted first
    assert f"Reconciles: {first.id}" in newest and f"This reverts commit {b}." in oldest
    assert git(app, "rev-parse", f"{branch}^{{tree}}").strip() == base_tree
    # The trail shows the reconcile event, and the reverts carry it.
    (event,) = trail.log(layout, kind="reconcile").events
    assert f"Event: {event.id}" in newest and event.data["target"] == first.id
    assert f"event: {event.id}" in out
    # The memory the second event committed is retired, in the memory root's trunk.
    relpath = memory.relative_to(layout.root).as_posix()
    assert f"retired: {relpath}" in out
    assert not memory.exists() and "Lexer lives" not in (memory.parent / "MEMORY.md").read_text()
    assert keep.read_bytes() == keep_bytes
    reverted_here = git(layout.root, "log", "--format=%s", f"--grep=Reconciles: {first.id}").splitlines()
    assert reverted_here == ['reconcile: revert "shift: Lexer lives in lexer.py"']
    assert git(layout.root, "status", "--porcelain") == ""
    # The trail lines of the reverted events stay: the trail is append-only.
    assert trail.find(layout, second.id) == second

    again = sandman("reconcile", first.id)
    assert again.returncode == 0 and "already reconciled" in again.stdout.decode()
    assert len(trail.log(layout, kind="reconcile").events) == 1
    assert git(app, "rev-parse", branch).strip() == newest_id


def test_dry_run_lists_and_changes_nothing(layout, app):
    first = trail.append(layout, "shift.commit", "add parser", repo=str(app))
    a = machine_commit(app, "parser.py", "parse\n", first)
    trail.revoke(layout, first.id, "wrong")
    head = git(layout.root, "rev-parse", "HEAD")
    result = sandman("reconcile", first.id, "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (repo,) = [r for r in data["repos"] if not r["memory_root"]]
    assert repo["status"] == "would-revert" and repo["commits"][0]["commit"] == a and data["event"] is None
    assert git(app, "branch", "--list", "reconcile/*") == "" and git(layout.root, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("target, message", [
    ("ev-20261201T000000Z-abcdef", "event ev-20261201T000000Z-abcdef is not on the trail"),
    ("ev-1", "'ev-1' is neither an event id"),
    ("s-20261201T0210Z", "shift s-20261201T0210Z has no events on the trail; nothing to reconcile"),
])
def test_unknown_malformed_and_empty_shift_targets_are_one_line_errors(layout, target, message):
    trail.append(layout, "shift.commit", "x")
    result = sandman("reconcile", target)
    assert result.returncode == 2 and result.stderr.decode().startswith(f"sandman: {message}")
    assert result.stderr.decode().count("\n") == 1


def test_an_event_not_revoked_is_refused(layout, app):
    event = trail.append(layout, "shift.commit", "x", repo=str(app))
    machine_commit(app, "x.py", "x\n", event)
    with pytest.raises(InputError, match=f"event {event.id} is not revoked; revoke it first"):
        reconcile(layout, event.id)
    assert git(app, "branch", "--list", "reconcile/*") == ""


def test_a_trunk_that_does_not_resolve_fails_its_repo_while_the_others_proceed(layout, app, isolated):
    other = make_repo(isolated / "code" / "other")
    git(other, "config", "sandman.trunk", "trunk")  # named, but no such branch: no fallback to main
    set_roots(layout, isolated / "code")
    event = trail.append(layout, "shift.commit", "x", repo=str(app))
    machine_commit(app, "x.py", "x\n", event)
    machine_commit(other, "y.py", "y\n", event)
    trail.revoke(layout, event.id, "wrong")
    result = sandman("reconcile", event.id)
    assert result.returncode == 1
    out = result.stdout.decode()
    assert f"FAILED {other}: {other}: its trunk 'trunk' (from sandman.trunk in its git config) does not resolve" in out
    assert git(app, "branch", "--list", "reconcile/*").strip() == f"reconcile/{event.id}"
    assert git(other, "branch", "--list", "reconcile/*") == ""


def test_a_repository_without_a_trunk_to_name_fails(layout, isolated):
    odd = make_repo(isolated / "code" / "odd", branch="develop")
    event = trail.append(layout, "shift.commit", "x", repo=str(odd))
    machine_commit(odd, "x.py", "x\n", event)
    trail.revoke(layout, event.id, "wrong")
    result = reconcile(layout, event.id)
    (failed,) = [r for r in result.repos if r.status == "failed"]
    assert "no trunk to name" in failed.error and result.failed


def test_regression_an_unrelated_repository_without_a_trunk_made_reconcile_exit_1(layout, app, isolated):
    """Issue 31, case 11: a repository under the roots with no nameable trunk and no target commit
    is skipped and said so; the run, and its clean re-run, exit 0."""
    unrelated = make_repo(isolated / "code" / "unrelated", branch="develop")
    set_roots(layout, isolated / "code")
    event = trail.append(layout, "shift.commit", "x", repo=str(app))
    machine_commit(app, "x.py", "x\n", event)
    trail.revoke(layout, event.id, "wrong")

    first = sandman("reconcile", event.id)
    again = sandman("reconcile", event.id)

    assert first.returncode == 0, first.stdout.decode() + first.stderr.decode()
    assert f"skipped {unrelated}: {unrelated}: no trunk to name" in first.stdout.decode()
    assert again.returncode == 0 and "nothing to revert" in again.stdout.decode()
    assert git(unrelated, "branch", "--list", "reconcile/*") == ""


def test_repositories_under_machine_roots_are_scanned_and_off_trunk_commits_reported(layout, isolated):
    repo = make_repo(isolated / "code" / "deep" / "svc")
    set_roots(layout, isolated / "code")
    event = trail.append(layout, "shift.commit", "no repo named")
    machine_commit(repo, "on_trunk.py", "x\n", event)
    git(repo, "switch", "-qc", "shift/s1")
    off = machine_commit(repo, "off.py", "y\n", event)
    git(repo, "switch", "-q", "main")
    trail.revoke(layout, event.id, "wrong")
    result = sandman("reconcile", event.id)
    assert result.returncode == 0, result.stdout
    out = result.stdout.decode()
    assert f"off trunk {repo}: {off[:12]}" in out and f"reverted {repo} on reconcile/{event.id}" in out


def test_a_target_merge_commit_refuses_its_repository(layout, app):
    event = trail.append(layout, "shift.commit", "x", repo=str(app))
    git(app, "switch", "-qc", "side")
    (app / "side.py").write_text("s\n")
    git(app, "add", "-A")
    git(app, "commit", "-qm", "side")
    git(app, "switch", "-q", "main")
    machine_commit(app, "main.py", "m\n", trail.new_event("shift.commit", "other"))
    git(app, "merge", "-q", "--no-ff", "side", "-m", "merge side", "-m", f"Event: {event.id}")
    trail.revoke(layout, event.id, "wrong")
    result = reconcile(layout, event.id)
    (failed,) = [r for r in result.repos if r.status == "failed"]
    assert "is a merge commit carrying a target; sandman never reverts a merge" in failed.error
    assert git(app, "branch", "--list", "reconcile/*") == ""


def test_a_conflict_is_reported_and_leaves_that_repository_untouched(layout, app, isolated):
    other = make_repo(isolated / "code" / "other")
    set_roots(layout, isolated / "code")
    event = trail.append(layout, "shift.commit", "x", repo=str(app))
    machine_commit(app, "README.md", "app changed by the machine\n", event)
    (app / "README.md").write_text("then changed by a person\n")
    git(app, "commit", "-qam", "person edits")
    machine_commit(other, "y.py", "y\n", event)
    trail.revoke(layout, event.id, "wrong")
    result = reconcile(layout, event.id)
    by_path = {r.path: r for r in result.repos}
    assert by_path[str(app)].status == "failed" and "conflicts in README.md" in by_path[str(app)].error
    assert by_path[str(other)].status == "reverted" and result.failed
    assert git(app, "branch", "--list", "reconcile/*") == ""


def test_a_dirty_memory_root_is_refused_with_nothing_reverted_there(layout, isolated):
    event = trail.new_event("dream.commit", "learned")
    memory = memory_under(layout, event, isolated, "A fact")
    trail.revoke(layout, event.id, "wrong")
    (layout.root / "memories" / "stray.md").write_text("a hand edit\n")
    result = reconcile(layout, event.id)
    (root,) = [r for r in result.repos if r.memory_root]
    assert root.status == "failed" and "has changes not committed (memories/stray.md)" in root.error
    assert memory.exists() and result.event is None


def test_commit_hooks_of_the_repository_never_run(layout, app, isolated):
    marker = isolated / "hook-ran"
    for name in ("pre-commit", "commit-msg", "post-commit", "prepare-commit-msg"):
        hook = app / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
        hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    event = trail.append(layout, "shift.commit", "x", repo=str(app))
    (app / "x.py").write_text("x\n")
    git(app, "add", "-A")
    git(app, "-c", "core.hooksPath=/nonexistent", "commit", "-qm", "x", f"--trailer=Event: {event.id}")
    trail.revoke(layout, event.id, "wrong")
    assert not reconcile(layout, event.id).failed
    assert not marker.exists()


def test_a_revoked_shift_reverts_every_commit_its_events_or_shift_trailer_carry(layout, app):
    start = trail.append(layout, "shift.start", "start", shift="s-20261201T0210Z", repo=str(app))
    work = trail.append(layout, "shift.commit", "work", parent=start.id, repo=str(app))
    machine_commit(app, "a.py", "a\n", work)
    (app / "b.py").write_text("b\n")
    git(app, "add", "-A")
    git(app, "commit", "-qm", "shift only", "--trailer=Shift: s-20261201T0210Z")
    trail.revoke(layout, "s-20261201T0210Z", "bad night")
    result = reconcile(layout, "s-20261201T0210Z")
    (repo,) = [r for r in result.repos if not r.memory_root]
    assert repo.status == "reverted" and len(repo.commits) == 2 and repo.branch == "reconcile/s-20261201T0210Z"


def test_old_category_words_in_event_trailers_are_not_events(layout, isolated):
    from sandman.banks.commit import commit_memory

    commit_memory(layout, Memory(name="Old", description="d", type="project", body="b\n"), directory=str(isolated),
                  verb="reflect", trailers={"Event": "voyage"})
    event = trail.append(layout, "shift.commit", "x")
    trail.revoke(layout, event.id, "wrong")
    result = reconcile(layout, event.id)
    assert not result.failed and all(not r.commits for r in result.repos)


def test_undo_what_one_dream_learned_from_one_session(layout, fake_claude, isolated):
    """A dream commits memories under a dream.commit event; revoke + reconcile removes exactly those."""
    from dream_helpers import archive_session, bank_memories, model, proposal
    from sandman.banks.commit import commit_memory
    from sandman.verbs.dream import dream
    from sandman.verbs.recall import recall

    cwd = isolated / "proj"
    cwd.mkdir()
    good, bad = "1b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6e", "2b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6e"
    mine = commit_memory(layout, Memory(name="Typed by hand", description="a person remembered this",
                                        type="project", body="By hand.\n"), directory=str(cwd), verb="remember")
    archive_session(layout, good, cwd, ended="2026-11-29T10:00:00Z")
    archive_session(layout, bad, cwd, ended="2026-11-30T10:00:00Z")
    replies = {
        good: [("Build with make", "Run make build to build the project")],
        bad: [("Deploys go through ftp", "Production deploys upload by ftp by hand"),
              ("Passwords live in notes", "The team keeps shared notes of the staging setup")],
    }
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.rules(model(mind), [
            {"match": sid, "result": {"memories": [proposal(cwd, *p) for p in wanted]}}
            for sid, wanted in replies.items()])
    dream(layout, now=True)
    names = {m.name: m.file for m in bank_memories(layout, cwd)}
    assert set(names) == {"Typed by hand", "Build with make", "Deploys go through ftp", "Passwords live in notes"}
    bank = mine.path.parent
    kept = {name: (bank / names[name]).read_bytes() for name in ("Typed by hand", "Build with make")}
    history = git(layout.root, "rev-list", "HEAD").split()

    listed = sandman("trail", "log", "--kind", "dream.commit").stdout.decode().splitlines()
    (line,) = [text for text in listed if f"session={bad}" in text]
    event_id = line.split()[1]
    event = trail.find(layout, event_id)
    assert event.data["session"] == bad and event.cost_usd is not None and event.model
    assert sandman("trail", "revoke", event_id, "--why", "that session was a test").returncode == 0
    result = sandman("reconcile", event_id)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()

    live = {m.name for m in bank_memories(layout, cwd)}
    assert live == {"Typed by hand", "Build with make"}
    for path in ("Deploys go through ftp", "Passwords live in notes"):
        relpath = (bank / names[path]).relative_to(layout.root).as_posix()
        assert f"retired: {relpath}" in out
    index = (bank / "MEMORY.md").read_text()
    assert "ftp" not in index and "Build with make" in index and "Typed by hand" in index
    surface = recall(layout, str(cwd)).text
    assert "ftp" not in surface and "Build with make" in surface
    assert {name: (bank / names[name]).read_bytes() for name in kept} == kept
    # Reverts on top of the history, never a rewrite: every old commit is still an ancestor.
    after = git(layout.root, "rev-list", "HEAD").split()
    assert after[-len(history):] == history
    subjects = git(layout.root, "log", "--format=%s", f"{history[0]}..HEAD").splitlines()
    assert f"reconcile: revert 2 commits of {event_id}" in subjects  # the memory root in one commit
    assert git(layout.root, "status", "--porcelain") == ""


def test_a_worktree_counts_as_its_repository(layout, app, isolated):
    from sandman.machine.repositories import places

    worktree = isolated / "wt" / "app-feature"
    git(app, "worktree", "add", "-q", "-b", "feature", str(worktree))
    set_roots(layout, isolated / "code")
    trail.append(layout, "shift.commit", "in the worktree", repo=str(worktree))
    found = places(layout, trail.read(layout))
    assert [str(place.path) for place in found] == [str(layout.root), str(worktree)]


SIX = [(f"Fact number {n} of the bank", f"The project keeps fact number {n}") for n in range(1, 7)]


def dream_six(layout, fake_claude, cwd: Path) -> str:
    """A dream commits six memories of one session under one dream.commit event; return its id."""
    from dream_helpers import archive_session, model, proposal
    from sandman.verbs.dream import dream

    sid = "3b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6e"
    archive_session(layout, sid, cwd, ended="2026-11-30T10:00:00Z")
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.rules(model(mind), [{"match": sid, "result": {"memories": [proposal(cwd, *p) for p in SIX]}}])
    dream(layout, now=True)
    (event,) = trail.log(layout, kind="dream.commit").events
    return event.id


def six_then_remembered(layout, fake_claude, isolated) -> tuple[str, Path]:
    from dream_helpers import bank_memories

    cwd = isolated / "proj"
    cwd.mkdir()
    event_id = dream_six(layout, fake_claude, cwd)
    assert {m.name for m in bank_memories(layout, cwd)} == {name for name, _ in SIX}
    remembered = sandman("remember", "Spotter uses mix format before commit", "--cwd", str(cwd))
    assert remembered.returncode == 0, remembered.stderr
    assert sandman("trail", "revoke", event_id, "--why", "t").returncode == 0
    return event_id, cwd


def test_reconcile_after_a_later_memory_in_the_same_bank_reverts_all_six_not_a_memory_md_conflict(
        layout, fake_claude, isolated):
    from dream_helpers import bank_memories
    from sandman.banks.names import bank_name

    event_id, cwd = six_then_remembered(layout, fake_claude, isolated)
    result = sandman("reconcile", event_id)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout.decode()
    assert "FAILED" not in out and out.count("retired: memories/") == 6
    assert [m.name for m in bank_memories(layout, cwd)] == ["Spotter uses mix format before commit"]
    index = (layout.bank(bank_name(cwd)) / "MEMORY.md").read_text()
    assert "Spotter uses mix format" in index and "Fact number" not in index
    assert git(layout.root, "status", "--porcelain") == "" and not layout.commit_undo.exists()
    # The whole memory root in one commit naming every reverted commit.
    message = git(layout.root, "log", "-1", "--format=%B", f"--grep=Reconciles: {event_id}")
    assert message.count("Reverts: ") == 6 and message.startswith(f"reconcile: revert 6 commits of {event_id}")
    again = sandman("reconcile", event_id)
    assert again.returncode == 0 and "already reconciled" in again.stdout.decode()


def test_reconcile_dry_run_predicts_what_the_real_run_does_not_a_memory_md_conflict(layout, fake_claude, isolated):
    event_id, _ = six_then_remembered(layout, fake_claude, isolated)
    head = git(layout.root, "rev-parse", "HEAD")
    dry = sandman("reconcile", event_id, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    (root,) = [r for r in json.loads(dry.stdout)["repos"] if r["memory_root"]]
    assert root["status"] == "would-revert" and len(root["commits"]) == 6 and root["error"] is None
    assert git(layout.root, "rev-parse", "HEAD") == head
    real = reconcile(layout, event_id)
    (done,) = [r for r in real.repos if r.memory_root]
    assert done.status == "reverted" and sorted(done.retired) == sorted(root["retired"])


def test_a_conflict_in_a_memory_file_leaves_the_memory_root_exactly_as_it_was(layout, isolated):
    """Two target commits: the newer reverts cleanly, the older conflicts; neither is reverted."""
    from sandman.banks.commit import commit_memory
    from sandman.banks.names import bank_name

    event = trail.new_event("dream.commit", "learned")
    first = memory_under(layout, event, isolated, "First fact")
    memory_under(layout, trail.new_event("dream.commit", "more", parent=event.id), isolated, "Second fact")
    # A person replaces the first memory (same name, so the same file, new words).
    commit_memory(layout, Memory(name="First fact", description="corrected by a person", type="project",
                                 body="Corrected.\n"), directory=str(isolated), verb="remember",
                  replaces=first.name)
    assert first.exists() and "Corrected." in first.read_text()
    trail.revoke(layout, event.id, "wrong")
    head = git(layout.root, "rev-parse", "HEAD")
    tree = git(layout.root, "ls-files", "-s")
    result = sandman("reconcile", event.id)
    assert result.returncode == 1
    out = result.stdout.decode().splitlines()
    failed = [line for line in out if line.startswith("FAILED")]
    person = git(layout.root, "rev-parse", "--short=12", "HEAD~1").strip()  # the remember, before the revoke
    assert failed == [f"FAILED memory root {layout.root}: reverting "
                      f"{failed[0].split('reverting ')[1][:12]} conflicts in "
                      f"memories/{bank_name(isolated)}/{first.name}: commit {person} (remember: First fact) "
                      "changed it later: revert by hand; nothing was reverted here"]
    assert git(layout.root, "rev-parse", "HEAD") == head and git(layout.root, "ls-files", "-s") == tree
    assert git(layout.root, "status", "--porcelain") == "" and not layout.commit_undo.exists()
    # The failure is also the error, on stderr (issue 34: it was on stdout only).
    reason = failed[0].split(": ", 1)[1]
    assert result.stderr.decode() == f"sandman: reconcile {event.id} failed in {layout.root}: {reason}\n"


KILLED_RECONCILE = """
import os, signal, sys
from unittest import mock
mock.patch("sandman.store.repo.signature", lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)).start()
from sandman.__main__ import main
main(["reconcile", sys.argv[1]])
"""


def test_reconcile_killed_mid_run_is_rolled_back_by_the_next_reconcile_not_refused_as_dirty(
        layout, fake_claude, isolated):
    import signal
    import subprocess
    import sys

    from dream_helpers import bank_memories

    event_id, cwd = six_then_remembered(layout, fake_claude, isolated)
    head = git(layout.root, "rev-parse", "HEAD")
    killed = subprocess.run([sys.executable, "-c", KILLED_RECONCILE, event_id], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert layout.commit_undo.exists() and git(layout.root, "status", "--porcelain") != ""
    assert git(layout.root, "rev-parse", "HEAD") == head

    result = sandman("reconcile", event_id)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [m.name for m in bank_memories(layout, cwd)] == ["Spotter uses mix format before commit"]
    assert git(layout.root, "status", "--porcelain") == "" and not layout.commit_undo.exists()
    subjects = git(layout.root, "log", "--format=%s", f"{head.strip()}..HEAD").splitlines()
    assert subjects[-1] == f"reconcile: revert 6 commits of {event_id}"  # no `recover` commit of the half


def test_reconcile_keeps_derived_snapshots_a_later_commit_rewrote_not_a_conflict(layout, isolated):
    """breath/problems.md and a week's score page are rewritten whole by their writers; reverting an
    older commit that wrote them conflicted with the newer version. They are kept; the memory goes."""
    from sandman.banks.names import bank_name

    def snapshots(event: trail.Event, text: str, memory: str | None = None) -> None:
        with bank_transaction(layout, verb="shift", subject=text, trailers=trail.trailers(event)) as tx:
            for path in (layout.breath_problems, layout.week_score("2026-W49"), layout.week_score_json("2026-W49")):
                tx.write_file(path, f"{text}\n")
            if memory:
                tx.write_memory(bank_name(isolated), Memory(name=memory, description="d", type="project",
                                                            body="b\n"), directory=str(isolated))
            trail.write(tx, event)

    event = trail.new_event("shift.start", "first", shift="s-20261201T0210Z")
    snapshots(event, "first brief", memory="Night fact")
    snapshots(trail.new_event("shift.start", "second", shift="s-20261202T0210Z"), "second brief")
    trail.revoke(layout, "s-20261201T0210Z", "bad night")

    result = sandman("reconcile", "s-20261201T0210Z")

    assert result.returncode == 0, result.stdout
    assert layout.breath_problems.read_text() == "second brief\n"
    assert layout.week_score("2026-W49").read_text() == layout.week_score_json("2026-W49").read_text() == "second brief\n"
    assert b"retired: memories/" in result.stdout and not list(layout.bank(bank_name(isolated)).glob("project_*.md"))
    assert git(layout.root, "status", "--porcelain") == ""


def test_reconcile_a_branch_lock_left_by_a_killed_run_is_named_with_its_fix_on_stderr(layout, app):
    first = trail.append(layout, "shift.commit", "add parser", repo=str(app))
    machine_commit(app, "parser.py", "parse\n", first)
    trail.revoke(layout, first.id, "wrong")
    # What a reconcile killed inside references.create leaves: the branch's lock, no branch.
    lock = app / ".git" / "refs" / "heads" / "reconcile" / f"{first.id}.lock"
    lock.parent.mkdir(parents=True)
    lock.write_bytes(b"")
    for args in ((), ("--dry-run",)):
        result = sandman("reconcile", first.id, *args)
        assert result.returncode == 1
        assert result.stderr.decode() == (
            f"sandman: reconcile {first.id} failed in {app}: {lock} exists (a reconcile or git command killed "
            f"while writing reconcile/{first.id} leaves it); if no git command is running in {app}, "
            f"remove it (rm '{lock}') and run again\n")
    lock.unlink()
    assert sandman("reconcile", first.id).returncode == 0
    assert git(app, "branch", "--list", "reconcile/*").strip() == f"reconcile/{first.id}"


def test_reconcile_dry_run_predicts_a_conflict_the_real_run_would_meet(layout, app):
    first = trail.append(layout, "shift.commit", "add parser", repo=str(app))
    machine_commit(app, "parser.py", "parse\n", first)
    (app / "parser.py").write_text("parse, edited by a person\n")  # a later commit on the same lines
    git(app, "commit", "-qam", "edit parser")
    trail.revoke(layout, first.id, "wrong")
    dry = sandman("reconcile", first.id, "--dry-run")
    real = sandman("reconcile", first.id)
    assert dry.returncode == 1 == real.returncode
    assert "would revert" not in dry.stdout.decode()
    assert dry.stderr == real.stderr and b"conflicts in parser.py" in real.stderr
    assert git(app, "branch", "--list", "reconcile/*") == ""
