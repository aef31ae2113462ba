"""Which existing folders and repositories sandman adopts as its memory root (breaker3 problem 6).

docs/BANK-FORMAT.md, "The data root": a folder that is not a repository, a
repository with no commit yet, and a memory root (its committed .gitignore
carries sandman's rules, as a clone of one does) are adopted; any other
repository is refused before anything is written in it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import git, sandman
from syncworld import bare_remote

from sandman.errors import ForeignRepository, LeftoverSecret
from sandman.layout import Layout
from sandman.store.repo import ensure_root
from sandman.verbs.sync import setup

HAND = ("-c", "user.name=Hand", "-c", "user.email=hand@example.org")
GITHUB_TOKEN = "ghp_" + "k3Xq9ZrT2vLm8NpB4wYc7HdF1sGj6aEu0oQi"  # random, not a typed abcdef… example


def files_and_status(root: Path) -> tuple[list[str], str, str]:
    """What a refusal must leave alone: every path under the root, git status and the log."""
    paths = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".git" not in p.parts)
    return paths, git(root, "status", "--porcelain", "--untracked-files=all"), git(root, "log", "--format=%H %s")


@pytest.fixture
def project(layout: Layout) -> Path:
    """The root is someone's project: a repository with a commit, a change and an untracked file."""
    root = layout.root
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "main.py").write_text("code\n")
    git(root, "add", ".")
    git(root, *HAND, "commit", "-qm", "user commit")
    (root / "wip.txt").write_text("wip\n")
    (root / "main.py").write_text("code\nchanged\n")
    return root


@pytest.mark.parametrize("args", [["init"], ["remember", "--cwd", "/tmp", "a fact"]])
def test_a_repository_sandman_did_not_create_is_refused(project: Path, args: list[str]) -> None:
    before = files_and_status(project)
    done = sandman(*args)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"sandman: {project} is a git repository sandman did not create (its committed .gitignore lacks "
        "sandman's rules), and sandman will not commit into it; point SANDMAN_ROOT at a new folder\n")
    assert files_and_status(project) == before


def test_a_take_never_files_a_transcript_into_a_repository_sandman_did_not_create(
        project: Path, isolated: Path) -> None:
    import json

    from hardening import transcript

    sid = "6f1c2d3e-0000-4000-8000-000000000009"
    live = isolated / ".claude" / "projects" / "-tmp-p" / f"{sid}.jsonl"
    live.parent.mkdir(parents=True)
    live.write_bytes(transcript(sid, "/tmp/p", "2026-11-30T10:00:00Z", "hi"))
    before = live.read_bytes()
    payload = {"session_id": sid, "transcript_path": str(live), "cwd": "/tmp/p", "reason": "clear"}
    assert sandman("take", "--hook", stdin=json.dumps(payload).encode()).returncode == 0
    by_hand = sandman("take", "--force", sid)
    assert by_hand.returncode == 2 and b"sandman did not create" in by_hand.stderr
    assert live.read_bytes() == before  # still live, for a take into a proper root
    assert not (project / ".archive").exists() and not (project / "memories").exists()
    assert any("take failed" in log.read_text() for log in (project / ".trace").iterdir())


def test_the_refusal_is_a_foreign_repository_for_library_callers(project: Path, layout: Layout) -> None:
    with pytest.raises(ForeignRepository):
        ensure_root(layout)
    assert not (project / ".gitignore").exists() and not layout.commit_lock.exists()


def test_a_repository_whose_gitignore_merely_ignores_dotfiles_is_still_foreign(project: Path) -> None:
    (project / ".gitignore").write_text(".*\n")
    git(project, "add", "-f", ".gitignore")
    git(project, *HAND, "commit", "-qm", "ignore dotfiles")
    assert sandman("init").returncode == 2


def test_an_empty_git_init_repository_is_adopted(layout: Layout) -> None:
    layout.root.mkdir(parents=True)
    git(layout.root, "init", "-q", "-b", "main")
    (layout.root / "notes.md").write_text("mine\n")
    done = sandman("init")
    assert done.returncode == 0, done.stderr
    assert git(layout.root, "log", "--format=%s").splitlines() == ["init: memory root"]
    assert sorted(git(layout.root, "ls-files").split()) == [".gitignore", "notes.md"]
    assert git(layout.root, "status", "--porcelain") == ""


def test_a_folder_that_is_not_a_repository_is_adopted(layout: Layout) -> None:
    layout.root.mkdir(parents=True)
    (layout.root / "notes.md").write_text("mine\n")
    done = sandman("remember", "--cwd", "/tmp", "a fact")
    assert done.returncode == 0, done.stderr
    assert "notes.md" in git(layout.root, "ls-files").split()
    assert (layout.root / "notes.md").read_text() == "mine\n"


def test_a_root_whose_git_folder_was_deleted_is_initialised_again_around_its_memories(layout: Layout) -> None:
    assert sandman("remember", "--cwd", "/tmp/app", "Use uv for envs.").returncode == 0
    memories = sorted(git(layout.root, "ls-files", "memories").split())
    subprocess.run(["rm", "-rf", str(layout.root / ".git")], check=True)
    done = sandman("remember", "--cwd", "/tmp/app", "Another fact.")
    assert done.returncode == 0, done.stderr
    assert set(memories) <= set(git(layout.root, "ls-files", "memories").split())
    assert git(layout.root, "status", "--porcelain") == ""


def test_a_clone_of_a_memory_root_is_adopted_and_its_history_continues(tmp_path: Path, layout: Layout) -> None:
    """A second machine may `git clone` its memory instead of `sandman sync --setup`."""
    remote, url = bare_remote(tmp_path)
    first = Layout(tmp_path / "first")
    setup(first, url)
    assert sandman("remember", "--cwd", "/tmp/app", "A fact from the first machine.",
                   env={"SANDMAN_ROOT": str(first.root)}).returncode == 0
    assert sandman("sync", env={"SANDMAN_ROOT": str(first.root)}).returncode == 0
    subprocess.run(["git", "clone", "-q", str(remote), str(layout.root)], check=True)
    published = git(layout.root, "rev-parse", "HEAD").strip()

    done = sandman("remember", "--cwd", "/tmp/app", "A fact from the second machine.")

    assert done.returncode == 0, done.stderr
    assert git(layout.root, "rev-parse", "HEAD~1").strip() == published
    assert git(layout.root, "status", "--porcelain") == ""


def test_a_clone_whose_gitignore_lacks_a_newer_line_is_adopted_and_completed(layout: Layout) -> None:
    """A root made by an older sandman: its .gitignore had the dotted-tier rules, not /pending-takes/."""
    layout.root.mkdir(parents=True)
    git(layout.root, "init", "-q", "-b", "main")
    (layout.root / ".gitignore").write_text(".*\n!/.gitignore\n")
    git(layout.root, "add", ".gitignore")
    git(layout.root, *HAND, "commit", "-qm", "init: memory root")
    done = sandman("init")
    assert done.returncode == 0, done.stderr
    assert "/pending-takes/" in (layout.root / ".gitignore").read_text().splitlines()
    assert git(layout.root, "status", "--porcelain") == ""


def test_setup_on_a_fresh_second_root_still_adopts_the_remote(tmp_path: Path) -> None:
    remote, url = bare_remote(tmp_path)
    setup(Layout(tmp_path / "a"), url)
    result = setup(Layout(tmp_path / "b"), url)
    assert result.action in ("adopted", "up-to-date")


def test_adopting_a_folder_that_holds_a_credential_commits_nothing(layout: Layout) -> None:
    layout.root.mkdir(parents=True)
    (layout.root / "notes.md").write_text(f"token {GITHUB_TOKEN}\n")
    with pytest.raises(LeftoverSecret):
        ensure_root(layout)
    assert (layout.root / "notes.md").read_text() == f"token {GITHUB_TOKEN}\n"
    done = sandman("init")  # refused again, by recovery, until it is removed
    assert done.returncode == 2 and "notes.md" in done.stderr.decode()
    (layout.root / "notes.md").write_text("token in the vault\n")
    done = sandman("init")
    assert done.returncode == 0, done.stderr
    # adopted by recovery now, which commits only sandman's formats: the stranger is set aside (§ Strays)
    assert "notes.md" not in git(layout.root, "ls-files").split()
    assert [p.name for p in layout.strays.rglob("notes.md")] == ["notes.md"]
    assert GITHUB_TOKEN not in git(layout.root, "log", "-p", "--all")
    assert git(layout.root, "status", "--porcelain") == ""
