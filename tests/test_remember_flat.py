"""A remember commits without the git index (issue 29: flat in the root's size).

store.repo.commit_flat builds HEAD's tree with the bank's paths applied and never reads or
writes ``.git/index``; the paths go into ``.git/sandman-index-behind`` before HEAD moves, and
the index catches up (HEAD's entries there, never the working tree's) at once while it is small
(config.INDEX_CATCH_UP_MAX_BYTES) or at the next writer that uses it
(docs/BANK-FORMAT.md, "The index behind HEAD").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers import git
from sandman import config
from sandman.banks.commit import commit_memory
from sandman.banks.memory import Memory
from sandman.errors import LockBusy
from sandman.layout import INDEX_BEHIND, Layout
from sandman.store import repo as store
from sandman.verbs.remember import remember


@pytest.fixture
def deferred(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """A root with history whose index a remember never catches up at once (as a large root's)."""
    monkeypatch.setattr(config, "INDEX_CATCH_UP_MAX_BYTES", -1)
    remember(layout, "The first memory makes the root.", cwd="/srv/project")
    git(layout.root, "status")  # the git CLI refreshes the index's stat data once, as a person's status does
    return layout


def _lagging(layout: Layout, body: str, cwd: str):
    """What ``sandman remember`` leaves in a large root before its child catches the index up (or
    when the child failed): the commit made, the index behind, the commit lock let go."""
    committed = remember(layout, body, cwd=cwd, keep_lock=True)
    committed.lock.release()
    return committed


def _behind(layout: Layout) -> list[str]:
    path = layout.root / ".git" / INDEX_BEHIND
    return sorted({p for p in path.read_bytes().decode().split("\0") if p}) if path.exists() else []


def _index_is_head(layout: Layout) -> bool:
    staged = git(layout.root, "ls-files", "--stage").split("\n")
    committed = git(layout.root, "ls-tree", "-r", "--full-tree", "HEAD").split("\n")
    as_index = sorted(f"{line.split()[0]} {line.split()[2]} 0\t{line.split(maxsplit=3)[3]}" for line in committed if line)
    return sorted(line for line in staged if line) == as_index


def test_regression_remember_reads_and_writes_no_index_in_a_large_root(deferred: Layout) -> None:
    # The index of a root of 50,000 memories is 6 MB: reading and writing it took 60 ms of every remember.
    index = deferred.root / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    committed = _lagging(deferred, "Deploys go through make release.", cwd="/srv/project")
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
    path = committed.path.relative_to(deferred.root).as_posix()
    assert path in _behind(deferred)
    assert git(deferred.root, "show", f"HEAD:{path}") == committed.path.read_text()
    assert "remember: Deploys go through make release." in git(deferred.root, "log", "-1", "--format=%B")


def test_a_small_root_is_caught_up_at_once_and_git_status_stays_clean(layout: Layout) -> None:
    remember(layout, "Deploys go through make release.", cwd="/srv/project")
    remember(layout, "Tags are never pushed by hand.", cwd="/srv/project")
    assert _behind(layout) == []
    assert _index_is_head(layout)
    assert git(layout.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_sandmans_status_does_not_count_what_the_index_has_not_caught_up(deferred: Layout) -> None:
    _lagging(deferred, "Deploys go through make release.", cwd="/srv/project")
    assert git(deferred.root, "status", "--porcelain") != ""  # the lag, as git shows it meanwhile
    assert store.dirty_paths(store.open_repo(deferred)) == {}  # doctor's "clean" and recovery see none


def test_after_a_remember_another_verbs_commit_brings_the_index_to_head(deferred: Layout) -> None:
    _lagging(deferred, "Deploys go through make release.", cwd="/srv/project")
    _lagging(deferred, "Tags are never pushed by hand.", cwd="/srv/other")
    assert [path.rsplit("/", 1)[0] for path in _behind(deferred)] == ["memories/-srv-other"] * 2 + ["memories/-srv-project"] * 2
    commit_memory(deferred, Memory(name="Dream fact", description="From a dream.", type="project", body="x\n"),
                  directory="/srv/third", verb="dream")
    assert _behind(deferred) == []
    assert _index_is_head(deferred)
    assert git(deferred.root, "status", "--porcelain", "--untracked-files=all") == ""
    changed = git(deferred.root, "show", "--name-only", "--format=", "HEAD").split()
    assert all("third" in path for path in changed)  # the dream's commit holds its own files alone


def test_a_hand_edit_of_a_remembered_file_is_never_staged_by_the_catch_up(deferred: Layout,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    first = _lagging(deferred, "Deploys go through make release.", cwd="/srv/project")
    remembered = first.path.read_text()
    first.path.write_text(remembered + "A hand edit.\n")
    monkeypatch.setattr(config, "INDEX_CATCH_UP_MAX_BYTES", 1 << 20)
    remember(deferred, "Tags are never pushed by hand.", cwd="/srv/other")  # catches the index up
    relative = first.path.relative_to(deferred.root).as_posix()
    assert _behind(deferred) == []
    assert git(deferred.root, "show", f"HEAD:{relative}") == remembered
    assert git(deferred.root, "diff", "--cached", "--name-only") == ""  # nothing staged
    assert git(deferred.root, "status", "--porcelain") == f" M {relative}\n"


def test_a_kill_between_the_record_and_the_head_move_is_harmless(deferred: Layout) -> None:
    head = git(deferred.root, "rev-parse", "HEAD")
    # A remember killed after it recorded its paths, before HEAD moved: create_commit never returns.
    code = (
        "import os, pygit2\n"
        "pygit2.Repository.create_commit = lambda *a, **k: os._exit(9)\n"
        "from sandman.layout import Layout\n"
        "from sandman.verbs.remember import remember\n"
        "from sandman import config\n"
        "config.INDEX_CATCH_UP_MAX_BYTES = -1\n"
        f"remember(Layout(config.root()), 'Killed before HEAD moved.', cwd='/srv/project')\n"
    )
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert killed.returncode == 9, killed.stderr
    assert git(deferred.root, "rev-parse", "HEAD") == head
    assert any("killed_before_head_moved" in path for path in _behind(deferred))
    remember(deferred, "Tags are never pushed by hand.", cwd="/srv/other")  # rolls the killed one back
    commit_memory(deferred, Memory(name="Dream fact", description="From a dream.", type="project", body="x\n"),
                  directory="/srv/third", verb="dream")
    assert _behind(deferred) == []
    assert _index_is_head(deferred)
    assert git(deferred.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert "Killed before HEAD moved" not in git(deferred.root, "log", "--format=%s")


def test_concurrent_remembers_lose_nothing(deferred: Layout) -> None:
    bodies = [f"Fact number {n} of the concurrent remembers." for n in range(8)]
    errors: list[BaseException] = []

    def one(body: str) -> None:
        try:
            remember(deferred, body, cwd="/srv/project")
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=one, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    log = git(deferred.root, "log", "--format=%s")
    assert all(f"remember: Fact number {n} of the concurrent remembers." in log for n in range(8))
    index = git(deferred.root, "show", "HEAD:memories/-srv-project/MEMORY.md")
    assert all(f"Fact number {n} of the" in index for n in range(8))
    store.reset_index(store.open_repo(deferred))  # what any writer using the index does first
    assert git(deferred.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_the_commit_lock_excludes_a_filelock_holder(layout: Layout) -> None:
    # An older sandman holds .commit.lock through filelock; the stdlib lock takes the same flock.
    from filelock import FileLock

    remember(layout, "The root exists.", cwd="/srv/project")
    with FileLock(str(layout.commit_lock)):
        with pytest.raises(LockBusy):
            store.locked(store.commit_lock(layout, timeout=0))
    with store.locked(store.commit_lock(layout, timeout=0)):
        pass


# --- the bank's stat record (docs/BANK-FORMAT.md, "The bank's stat record") ---------------------

def _edit_in_place_keeping_size_and_time(path: Path) -> None:
    st = path.stat()
    text = path.read_text()
    path.write_text(text.replace("Deploys", "Deplozs"))  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the modification time put back
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_a_hand_edit_that_keeps_size_and_time_is_still_committed_before_a_remember(layout: Layout) -> None:
    first = remember(layout, "Deploys go through make release.", cwd="/srv/project")
    remember(layout, "Tags are never pushed by hand.", cwd="/srv/project")  # the record is made by now
    assert (layout.root / ".git" / "sandman-bank-stat" / "-srv-project.json").is_file()
    _edit_in_place_keeping_size_and_time(first.path)
    remember(layout, "Releases are cut on Mondays.", cwd="/srv/project")
    subjects = git(layout.root, "log", "--format=%s", "-2").splitlines()
    assert subjects == ["remember: Releases are cut on Mondays.", "recover: commit changes left in the working tree"]
    relative = first.path.relative_to(layout.root).as_posix()
    assert "Deplozs" in git(layout.root, "show", f"HEAD:{relative}")


def test_the_stat_record_is_trusted_only_at_the_tree_it_was_made_at(layout: Layout) -> None:
    remember(layout, "Deploys go through make release.", cwd="/srv/project")
    repo = store.open_repo(layout)
    record = store.stat_record(repo, "-srv-project")
    assert store.is_clean(repo, "memories/-srv-project", record)
    data = json.loads(record.read_text())
    data["files"] = {name: [0, 0, 0, 0] for name in data["files"]}  # stat data that match nothing
    record.write_text(json.dumps(data))
    assert store.is_clean(repo, "memories/-srv-project", record)  # every file hashed: all as HEAD
    (layout.bank("-srv-project") / "project_new.md").write_text("---\nname: n\n---\n\nx\n")
    assert not store.is_clean(repo, "memories/-srv-project", record)
    data["tree"] = "0" * 40
    record.write_text(json.dumps(data))
    (layout.bank("-srv-project") / "project_new.md").unlink()
    assert store.is_clean(repo, "memories/-srv-project", record)  # another tree's record: hashed, rewritten
    assert json.loads(record.read_text())["tree"] == store.tree_at(repo, "memories/-srv-project")


def test_a_catch_up_that_fails_after_the_commit_leaves_the_commit_and_its_files(
        layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    remember(layout, "The root exists.", cwd="/srv/project")

    def broken(repo, behind) -> None:
        raise store.RepositoryError("index.lock is held")

    monkeypatch.setattr(store, "_catch_up", broken)
    committed = remember(layout, "Deploys go through make release.", cwd="/srv/project")
    relative = committed.path.relative_to(layout.root).as_posix()
    assert committed.commit is not None and committed.path.is_file()
    assert git(layout.root, "show", f"HEAD:{relative}") == committed.path.read_text()
    assert relative in _behind(layout)  # the next writer using the index catches up


def test_a_flat_commit_of_paths_holding_heads_bytes_makes_no_commit_and_records_nothing(deferred: Layout) -> None:
    # A flat transaction hands commit_flat what it wrote unchecked (no dirty_among, which read and hashed
    # each file once more): commit_flat itself finds that nothing differs from HEAD.
    repo = store.open_repo(deferred)
    head, behind = store.head_id(repo), _behind(deferred)
    index = next(path for path in deferred.bank("-srv-project").iterdir() if path.name == "MEMORY.md")
    unchanged = [index.relative_to(deferred.root).as_posix(), "memories/-srv-project/project_never_written.md"]
    assert store.commit_flat(repo, unchanged, "remember: nothing", {"Verb": "remember"}) is None
    assert store.head_id(repo) == head and _behind(deferred) == behind
    index.write_text(index.read_text() + "- [Added by hand](project_by_hand.md) — a line\n")
    assert store.commit_flat(repo, unchanged, "remember: one line", {"Verb": "remember"}) is not None
    assert store.head_id(repo) != head and unchanged[0] in _behind(deferred)
