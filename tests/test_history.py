"""store.history: which commits touched which file, with the diffs (the site's history pages)."""

from __future__ import annotations

import json

import pygit2
import pytest

from helpers import git
from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.memory import Memory
from sandman.errors import RepositoryError
from sandman.layout import Layout
from sandman.store.history import DiffReader, PathHistory, file_history
from sandman.store.repo import ensure_root, open_repo

PROJECT = "/home/user/proj"
FILE = "memories/-home-user-proj/project_build_with_make.md"


def memory(body: str, name: str = "Build with make") -> Memory:
    return Memory(name=name, description=f"{name}.", type="project", body=body + "\n")


def test_file_history_is_newest_first_with_each_commits_diff(layout: Layout) -> None:
    first = commit_memory(layout, memory("Run make."), directory=PROJECT, verb="remember", session="s-1")
    commit_memory(layout, memory("Other.", "Other"), directory=PROJECT, verb="remember")
    commit_memory(layout, memory("Run make -j4."), directory=PROJECT, verb="reflect", replaces=first.path.name)
    changes = file_history(open_repo(layout), FILE)
    assert [c.commit.subject for c in changes] == ["reflect: Build with make", "remember: Build with make"]
    assert changes[0].diff.count("\n-Run make.\n") == 1 and "+Run make -j4.\n" in changes[0].diff
    assert "new file mode" in changes[1].diff and "+Run make.\n" in changes[1].diff
    assert ("Session", "s-1") in changes[1].commit.trailers and ("Verb", "remember") in changes[1].commit.trailers
    assert changes[1].commit.author == "Sandman Test"
    assert changes[1].commit.id == git(layout.root, "rev-list", "--max-count=1", "HEAD~2").strip()


def test_update_walks_only_new_commits_and_matches_a_fresh_walk(layout: Layout) -> None:
    commit_memory(layout, memory("Run make."), directory=PROJECT, verb="remember")
    repo = open_repo(layout)
    history = PathHistory()
    assert history.update(repo) == 2  # init and the memory
    assert history.update(repo) == 0
    commit_memory(layout, memory("Other.", "Other"), directory=PROJECT, verb="remember")
    restored = PathHistory.from_json(json.loads(json.dumps(history.to_json())))
    assert restored.update(repo) == 1
    fresh = PathHistory()
    fresh.update(repo)
    assert restored.to_json() == fresh.to_json()
    assert len(restored.paths["memories/-home-user-proj/MEMORY.md"]) == 2


def test_a_rewritten_history_is_walked_again_from_scratch(layout: Layout) -> None:
    commit_memory(layout, memory("Run make."), directory=PROJECT, verb="remember")
    commit_memory(layout, memory("Gone soon.", "Gone"), directory=PROJECT, verb="remember")
    repo = open_repo(layout)
    history = PathHistory()
    history.update(repo)
    git(layout.root, "reset", "--hard", "-q", "HEAD~1")
    commit_memory(layout, memory("Instead.", "Instead"), directory=PROJECT, verb="remember")
    assert history.update(repo) == 3
    assert "memories/-home-user-proj/project_gone.md" not in history.paths
    assert len(history.commits) == 3


def test_an_unborn_head_has_no_history(layout: Layout) -> None:
    layout.root.mkdir(parents=True)
    pygit2.init_repository(str(layout.root), initial_head="main")
    history = PathHistory("0" * 40)
    assert history.update(open_repo(layout)) == 0
    assert (history.head, history.paths) == (None, {})


@pytest.mark.parametrize("data", [None, [], {"format": 99}, {"format": 1, "head": 5, "commits": {}, "paths": {}},
                                  {"format": 1, "head": None, "commits": {"x": [1]}, "paths": {}}])
def test_an_unreadable_cache_gives_an_empty_history(data: object) -> None:
    history = PathHistory.from_json(data)
    assert (history.head, history.commits, history.paths) == (None, {}, {})


def test_a_non_utf8_file_diffs_with_replacement_characters(layout: Layout) -> None:
    ensure_root(layout)
    with bank_transaction(layout, verb="test", subject="odd bytes") as tx:
        tx.write_file(layout.root / "log" / "odd.md", b"caf\xe9\n")
    repo = open_repo(layout)
    diff = DiffReader(repo).diff(str(repo.head.target), "log/odd.md")
    assert "+caf\ufffd" in diff


def test_an_unknown_commit_is_a_repository_error(layout: Layout) -> None:
    ensure_root(layout)
    with pytest.raises(RepositoryError, match="cannot read commit"):
        DiffReader(open_repo(layout)).diff("1" * 40, FILE)


def test_a_path_the_commit_did_not_touch_has_an_empty_diff(layout: Layout) -> None:
    commit_memory(layout, memory("Run make."), directory=PROJECT, verb="remember")
    repo = open_repo(layout)
    reader = DiffReader(repo)
    head = str(repo.head.target)
    assert reader.diff(head, ".gitignore") == ""
    assert reader.diff(head, FILE).startswith(f"diff --git a/{FILE} b/{FILE}\nnew file mode")
