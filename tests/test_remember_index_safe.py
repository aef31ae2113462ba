"""The git index is never left behind HEAD where a person's git would act on it, and git's lock
files are sandman's to remove only when a killed sandman left them.

A remember commits without the index (store.repo.commit_flat). In a root whose index is over
config.INDEX_CATCH_UP_MAX_BYTES, the ``sandman remember`` process hands the catch-up to a forked
child that keeps the commit lock; ``remember()`` in process catches up before it returns
(docs/BANK-FORMAT.md, "The index behind HEAD"). A lock file is removed only when
``.git/sandman-writing`` names a process that is gone (docs/BANK-FORMAT.md, "Git's lock files").
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git
from sandman import config, procs
from sandman.errors import GitBusy
from sandman.layout import GIT_WRITER, INDEX_BEHIND, Layout
from sandman.store import repo as store
from sandman.verbs.remember import remember


@pytest.fixture
def large(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """A root with history whose index counts as large (over INDEX_CATCH_UP_MAX_BYTES); a git lock
    file no sandman left is waited for a tenth of a second."""
    monkeypatch.setattr(config, "INDEX_CATCH_UP_MAX_BYTES", -1)
    monkeypatch.setattr(config, "GIT_LOCK_WAIT_S", 0.1)
    remember(layout, "The first memory makes the root.", cwd="/srv/project")
    return layout


PERSON = ("-c", "user.name=A Person", "-c", "user.email=person@example.invalid")


def _behind(layout: Layout) -> list[str]:
    path = layout.root / ".git" / INDEX_BEHIND
    return sorted({p for p in path.read_bytes().decode().split("\0") if p}) if path.exists() else []


def _status(layout: Layout) -> str:
    return git(layout.root, "status", "--porcelain", "--untracked-files=all")


def _subjects(layout: Layout) -> list[str]:
    return git(layout.root, "log", "--format=%s").splitlines()


# --- issue: git clean and a person's commit while the index was behind -------------------------------

def test_regression_git_clean_after_a_remember_in_a_large_root_deletes_nothing(large: Layout) -> None:
    # The memory showed as untracked (??) while the index was behind; git clean -fd deleted it and the
    # next sandman write committed the deletion as `recover`.
    committed = remember(large, "Clean test fact: the queue is kafka.", cwd="/srv/project")
    assert _status(large) == ""
    git(large.root, "clean", "-fd")
    assert committed.path.is_file()
    remember(large, "Another fact after the clean.", cwd="/srv/project")
    assert not any(subject.startswith("recover") for subject in _subjects(large))


def test_regression_a_persons_commit_after_a_remember_in_a_large_root_keeps_the_memory(large: Layout) -> None:
    # A person's `git commit` of an unrelated staged file reverted the last remember under its message.
    committed = remember(large, "Commit test fact: the cache is redis.", cwd="/srv/project")
    relative = committed.path.relative_to(large.root).as_posix()
    (large.root / "notes.txt").write_text("mine\n")
    git(large.root, "add", "notes.txt")
    git(large.root, *PERSON, "commit", "-q", "-m", "a note of mine")
    assert git(large.root, "show", "--name-only", "--format=", "HEAD").split() == ["notes.txt"]
    assert git(large.root, "show", f"HEAD:{relative}") == committed.path.read_text()
    assert "Commit test fact" in git(large.root, "show", "HEAD:memories/-srv-project/MEMORY.md")


def test_regression_git_clean_while_the_index_is_behind_is_restored_never_committed_as_a_deletion(
        large: Layout) -> None:
    # What the `sandman remember` process leaves when its child could not catch up: the index behind.
    committed = remember(large, "Clean test fact: the queue is kafka.", cwd="/srv/project", keep_lock=True)
    committed.lock.release()
    relative = committed.path.relative_to(large.root).as_posix()
    assert f"?? {relative}" in _status(large)
    git(large.root, "clean", "-fd")
    assert not committed.path.exists()
    remember(large, "Another fact after the clean.", cwd="/srv/other")
    assert committed.path.is_file()
    assert git(large.root, "show", f"HEAD:{relative}") == committed.path.read_text()
    assert not any(subject.startswith("recover") for subject in _subjects(large))
    assert _status(large) == ""


# --- the sandman remember process: the catch-up in a child -----------------------------------------

# `sandman remember` as the console script runs it, with the index counted large and the child's
# catch-up held until the test lets go of ``gate`` (argv[1]); argv[2:] are remember's arguments.
HELD_CHILD = """
import fcntl, sys
from sandman import config
from sandman.store import repo
config.INDEX_CATCH_UP_MAX_BYTES = -1
catch_up = repo.catch_up_index
def held(*args):
    with open(sys.argv[1]) as gate:
        fcntl.flock(gate, fcntl.LOCK_EX)
    return catch_up(*args)
repo.catch_up_index = held
from sandman.__main__ import main
main(sys.argv[2:])
"""


def test_sandman_remember_answers_at_once_and_a_child_holding_the_commit_lock_catches_the_index_up(
        large: Layout, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.write_text("")
    with open(gate) as holding:
        fcntl.flock(holding, fcntl.LOCK_EX)  # the child's catch-up waits for this
        run = subprocess.Popen([sys.executable, "-c", HELD_CHILD, str(gate), "remember",
                                "Fork test fact: deploys are on Tuesdays.", "--cwd", "/srv/project"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            # Read to EOF while the child still runs: its standard streams are not the caller's pipe.
            out, err = run.communicate(timeout=120)
        finally:
            fcntl.flock(holding, fcntl.LOCK_UN)
        assert run.returncode == 0, err
        assert out.decode().strip().endswith(".md") and err == b""
    with store.locked(store.commit_lock(large)):  # waits for the child, which holds the lock
        assert _behind(large) == []
        assert _status(large) == ""
    assert _subjects(large)[0] == "remember: Fork test fact: deploys are on Tuesdays."


def test_a_persons_git_in_the_childs_window_loses_nothing(large: Layout, tmp_path: Path) -> None:
    # The window left: between the answer and the child's catch-up, git shows the memory untracked.
    gate = tmp_path / "gate"
    gate.write_text("")
    with open(gate) as holding:
        fcntl.flock(holding, fcntl.LOCK_EX)
        run = subprocess.run([sys.executable, "-c", HELD_CHILD, str(gate), "remember",
                              "Window fact: the queue is kafka.", "--cwd", "/srv/project"],
                             capture_output=True, timeout=120)
        assert run.returncode == 0, run.stderr
        path = next(large.bank("-srv-project").glob("project_window_fact*.md"))
        relative = path.relative_to(large.root).as_posix()
        assert f"?? {relative}" in _status(large)
        git(large.root, "clean", "-fd")  # deletes it: the child puts it back from HEAD
        assert not path.exists()
        fcntl.flock(holding, fcntl.LOCK_UN)
    with store.locked(store.commit_lock(large)):
        assert path.is_file()
        assert _status(large) == ""
        assert git(large.root, "show", f"HEAD:{relative}") == path.read_text()


# --- git's lock files ------------------------------------------------------------------------------------

def test_regression_a_lock_file_no_sandman_left_is_never_deleted(large: Layout) -> None:
    # _clear_stale_locks deleted .git/index.lock before every commit, under a person's running git.
    lock = large.root / ".git" / "index.lock"
    lock.write_text("")
    head = git(large.root, "rev-parse", "HEAD")
    with pytest.raises(GitBusy, match="git is busy in the memory root: .*index.lock is held by a running git"):
        remember(large, "Never written while git is busy.", cwd="/srv/project")
    assert lock.exists()
    assert git(large.root, "rev-parse", "HEAD") == head
    assert not list(large.bank("-srv-project").glob("project_never_written*"))


def test_regression_a_persons_git_commit_with_its_editor_open_survives_a_remember(large: Layout) -> None:
    (large.root / "notes.txt").write_text("mine\n")
    git(large.root, "add", "notes.txt")
    git(large.root, *PERSON, "commit", "-q", "-m", "a note of mine")
    (large.root / "notes.txt").write_text("mine, changed\n")
    # The editor says it is open, then waits for a line on stdin: git holds index.lock meanwhile.
    human = subprocess.Popen(["git", "-C", str(large.root), *PERSON, "commit", "-a", "-e", "-m", "my change"],
                             env={**os.environ, "GIT_EDITOR": "echo open; read line; true"},
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert human.stdout.readline() == "open\n"
        assert (large.root / ".git" / "index.lock").exists()
        with pytest.raises(GitBusy):
            remember(large, "Remembered while a commit is open.", cwd="/srv/project")
        assert (large.root / ".git" / "index.lock").exists()
    finally:
        out, err = human.communicate("\n", timeout=120)
    assert human.returncode == 0, err
    assert _subjects(large)[0] == "my change"
    remember(large, "Remembered after the commit.", cwd="/srv/project")
    assert _subjects(large)[:2] == ["remember: Remembered after the commit.", "my change"]


def test_a_lock_a_running_git_lets_go_of_within_the_wait_is_waited_for(large: Layout,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A `git status` (a shell prompt's) holds index.lock for milliseconds: no reason to fail a remember.
    monkeypatch.setattr(config, "GIT_LOCK_WAIT_S", 120.0)
    lock = large.root / ".git" / "index.lock"
    lock.write_text("")
    waited = []

    def a_git_status_ends(seconds: float) -> None:
        waited.append(seconds)
        lock.unlink(missing_ok=True)

    monkeypatch.setattr("time.sleep", a_git_status_ends)
    remember(large, "Written once git let go.", cwd="/srv/project")
    assert waited and _subjects(large)[0] == "remember: Written once git let go."


def test_an_index_a_running_git_locks_during_the_catch_up_is_written_once_it_lets_go(
        large: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by the repro: the child's catch-up failed at once on a `git status` run just after the remember.
    import pygit2

    monkeypatch.setattr(config, "GIT_LOCK_WAIT_S", 120.0)
    write = pygit2.Index.write
    busy = [True]

    def locked_once(index) -> None:
        if busy.pop() if busy else False:
            raise pygit2.GitError("the index is locked; this might be due to a concurrent or crashed process")
        write(index)

    monkeypatch.setattr(pygit2.Index, "write", locked_once)
    remember(large, "Caught up after the lock.", cwd="/srv/project")
    assert busy == []
    assert _behind(large) == []
    assert _status(large) == ""


def test_sandman_remember_by_hand_says_git_is_busy_in_one_line(large: Layout) -> None:
    (large.root / ".git" / "HEAD.lock").write_text("")
    run = subprocess.run([sys.executable, "-m", "sandman", "remember", "Busy fact.", "--cwd", "/srv/project"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.startswith("sandman: git is busy in the memory root: ")
    assert "HEAD.lock" in run.stderr and run.stderr.count("\n") == 1


def _writer(large: Layout, pid: int, start: str | None) -> None:
    (large.root / ".git" / GIT_WRITER).write_text(json.dumps({"pid": pid, "start": start}))


def test_a_lock_whose_writer_is_a_running_process_is_left(large: Layout) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        _writer(large, other.pid, procs.process_start(other.pid))
        (large.root / ".git" / "index.lock").write_text("")
        with pytest.raises(GitBusy):
            remember(large, "Never written.", cwd="/srv/project")
        # The same pid, started at another time: the system gave a dead sandman's pid again.
        _writer(large, other.pid, "1")
        remember(large, "Written once the writer is known gone.", cwd="/srv/project")
        assert not (large.root / ".git" / "index.lock").exists()
    finally:
        other.communicate(b"")


def test_a_lock_whose_writer_is_gone_is_cleared_and_the_writer_record_removed(large: Layout) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    _writer(large, int(gone.stdout), "1")
    (large.root / ".git" / "index.lock").write_text("")
    remember(large, "Written after a killed sandman.", cwd="/srv/project")
    assert not (large.root / ".git" / "index.lock").exists()
    assert not (large.root / ".git" / GIT_WRITER).exists()
    assert _status(large) == ""


def test_regression_git_clean_in_the_remembered_bank_is_restored_by_recovery(large: Layout) -> None:
    committed = remember(large, "Clean test fact: the queue is kafka.", cwd="/srv/project", keep_lock=True)
    committed.lock.release()
    git(large.root, "clean", "-fd")
    remember(large, "Another fact in the same bank.", cwd="/srv/project")  # its recovery finds the file gone
    assert committed.path.is_file()
    assert not any(subject.startswith("recover") for subject in _subjects(large))
    journal = "".join(path.read_text() for path in large.root.glob(".trace/recover-*.log"))
    assert "restored" in journal and committed.path.name in journal
    assert _status(large) == ""


def test_without_fork_the_remember_process_catches_up_before_it_exits(large: Layout,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    committed = remember(large, "No fork here.", cwd="/srv/project", keep_lock=True)
    assert _behind(large) != []

    def no_fork() -> int:
        raise OSError("fork is not available")

    monkeypatch.setattr(os, "fork", no_fork)
    store.catch_up_in_child(large, committed.lock)
    assert _behind(large) == []
    with store.locked(store.commit_lock(large, timeout=0)):  # let go
        assert _status(large) == ""


# The child's catch-up fails: the record stays for the next writer.
FAILING_CHILD = """
import sys
from sandman import config
from sandman.store import repo
config.INDEX_CATCH_UP_MAX_BYTES = -1
def failing(*args):
    raise repo.RepositoryError("the disk is full")
repo._catch_up = failing
from sandman.__main__ import main
main(sys.argv[1:])
"""


def test_a_child_that_fails_leaves_the_record_to_the_next_writer(large: Layout) -> None:
    run = subprocess.run([sys.executable, "-c", FAILING_CHILD, "remember", "Child fails.", "--cwd", "/srv/project"],
                         capture_output=True, timeout=120)
    assert run.returncode == 0 and run.stderr == b""
    with store.locked(store.commit_lock(large)):  # the child has ended
        assert any("child_fails" in path for path in _behind(large))
    remember(large, "The next writer.", cwd="/srv/other")
    assert _behind(large) == []
    assert _status(large) == ""
