"""Linked git worktrees share their main worktree's banks; banks merge folds the old ones (issue 17)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from dream_helpers import archive_session
from helpers import git, sandman
from sandman.banks.names import bank_name
from sandman.banks.worktrees import shared_directory
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.verbs.banks import merge, worktree_banks
from sandman.verbs.doctor import doctor
from sandman.verbs.recall import recall
from sandman.verbs.remember import remember


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(isolated: Path) -> tuple[Path, Path, Path]:
    """A repository (main worktree), two linked worktrees of it, each with a src/ folder."""
    main = isolated / "code" / "app"
    main.mkdir(parents=True)
    _run("git", "init", "-q", "-b", "main", cwd=main)
    (main / "src").mkdir()
    (main / "src" / "a.py").write_text("x = 1\n")
    _run("git", "add", ".", cwd=main)
    _run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", cwd=main)
    feature, fix = isolated / "code" / "app-feature", isolated / "elsewhere" / "fix"
    _run("git", "worktree", "add", "-q", str(feature), cwd=main)
    _run("git", "worktree", "add", "-q", "--relative-paths", str(fix), cwd=main) if _relative_ok(main) else \
        _run("git", "worktree", "add", "-q", str(fix), cwd=main)
    return main, feature, fix


def _relative_ok(main: Path) -> bool:
    done = subprocess.run(["git", "worktree", "add", "-h"], cwd=main, capture_output=True, text=True)
    return "--relative-paths" in done.stdout + done.stderr


def _settings(layout: Layout, text: str) -> None:
    layout.root.mkdir(parents=True, exist_ok=True)
    layout.settings_file.write_text(text)


def test_a_linked_worktree_maps_to_the_same_place_in_the_main_worktree_as_pygit2_sees_it(repo):
    main, feature, fix = repo
    assert shared_directory(feature / "src" / "deep") == main / "src" / "deep"
    assert shared_directory(fix) == main
    assert shared_directory(main / "src") == main / "src"
    repository = pygit2.Repository(str(main))
    for name in repository.list_worktrees():
        worktree = Path(repository.lookup_worktree(name).path)
        assert shared_directory(worktree) == Path(repository.workdir.rstrip("/"))


@pytest.mark.parametrize("kind", ["plain folder", "bare repository", "submodule-like gitdir", "garbage .git file"])
def test_anything_else_is_left_as_it_is(isolated, kind):
    folder = isolated / "x"
    folder.mkdir()
    if kind == "bare repository":
        bare = isolated / "bare.git"
        _run("git", "init", "-q", "--bare", str(bare), cwd=isolated)
        (folder / ".git").write_text(f"gitdir: {bare}/worktrees/x\n")
        (bare / "worktrees" / "x").mkdir(parents=True)
        (bare / "worktrees" / "x" / "commondir").write_text("../..\n")
    elif kind == "submodule-like gitdir":
        (isolated / "modules" / "x").mkdir(parents=True)
        (folder / ".git").write_text(f"gitdir: {isolated}/modules/x\n")
    elif kind == "garbage .git file":
        (folder / ".git").write_bytes(b"\xff\xfe not a gitdir")
    assert shared_directory(folder / "sub") == folder / "sub"


def test_two_worktrees_recall_the_same_memories(layout, repo):
    main, feature, _ = repo
    remember(layout, "The app builds with make.", cwd=str(main))
    committed = remember(layout, "Tests need the fixtures folder.", cwd=str(feature / "src"))
    assert committed.path.parent == layout.bank(bank_name(main / "src"))
    from_main = recall(layout, str(main / "src")).text
    from_feature = recall(layout, str(feature / "src")).text
    assert "The app builds with make." in from_feature and "Tests need the fixtures folder" in from_main
    assert from_main.replace(str(main), "") == from_feature.replace(str(main), "")


def test_the_hook_recalls_the_main_worktree_bank_for_a_worktree_cwd(layout, repo):
    import json

    main, feature, _ = repo
    remember(layout, "The app builds with make.", cwd=str(main))
    payload = json.dumps({"session_id": "s1", "cwd": str(feature), "source": "startup",
                          "hook_event_name": "SessionStart"}).encode()
    done = sandman("recall", "--hook", stdin=payload)
    assert "The app builds with make." in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_regression_a_linked_worktrees_start_kept_a_reply_checked_against_the_main_worktree(layout, repo):
    # The kept SessionStart reply (issue 29) looked for .git from the mapped directory, the main
    # worktree's, so a linked worktree's start kept a reply that no .git of its own validated.
    import json

    from sandman.recall import served

    main, feature, _ = repo
    remember(layout, "The app builds with make.", cwd=str(main))
    payload = json.dumps({"session_id": "s1", "cwd": str(feature), "source": "startup",
                          "hook_event_name": "SessionStart"}).encode()
    assert sandman("recall", "--hook", stdin=payload).returncode == 0
    assert not layout.start_reply(served.key(str(feature))).exists()
    assert sandman("recall", "--hook", stdin=payload.replace(str(feature).encode(), str(main).encode())).returncode == 0
    assert layout.start_reply(served.key(str(main))).exists()


def test_dream_files_a_worktree_session_under_the_main_worktree(layout, repo):
    from sandman.dream.run import _material

    main, feature, _ = repo
    remember(layout, "Anything.", cwd=str(main))
    pointer = read_pointer(archive_session(layout, "s-wt", feature / "src", ended="2026-11-30T10:00:00Z"))
    assert _material(layout, pointer).cwd == str(main / "src")


def test_the_setting_keeps_worktrees_apart(layout, repo):
    main, feature, _ = repo
    _settings(layout, "[banks]\nshare_worktrees = false\n")
    committed = remember(layout, "Only here.", cwd=str(feature))
    assert committed.path.parent == layout.bank(bank_name(feature))
    assert "Only here." not in recall(layout, str(main)).text


def test_a_bad_setting_is_refused_by_doctor_and_leaves_recall_sharing(layout, repo):
    main, feature, _ = repo
    remember(layout, "Shared.", cwd=str(main))
    _settings(layout, "[banks]\nshare_worktrees = 'no'\n")
    assert "Shared." in recall(layout, str(feature)).text
    assert next(c for c in doctor().checks if c.name == "worktrees").status == "fail"


def test_doctor_lists_an_old_worktree_bank_and_banks_merge_folds_it(layout, repo):
    main, feature, _ = repo
    remember(layout, "The app builds with make.", cwd=str(main))
    _settings(layout, "[banks]\nshare_worktrees = false\n")
    remember(layout, "The app builds with make.", cwd=str(main))  # already there: deduplicated
    remember(layout, "Feature flags live in flags.toml.", cwd=str(feature))
    remember(layout, "The app builds with make.", cwd=str(feature))
    layout.settings_file.unlink()
    found = next(c for c in doctor().checks if c.name == "worktrees")
    assert found.status == "warn"
    assert f"`sandman banks merge {feature} {main}`" in found.message
    assert [bank.name for bank, _ in worktree_banks(layout)] == [bank_name(feature)]
    assert "Feature flags" not in recall(layout, str(feature)).text  # not recalled until folded

    before = int(git(layout.root, "rev-list", "--count", "HEAD"))
    done = sandman("banks", "merge", str(feature), str(main))
    assert done.returncode == 0, done.stderr
    assert "banks merge: 1 moved, 1 already there, commit " in done.stdout.decode()
    assert int(git(layout.root, "rev-list", "--count", "HEAD")) == before + 1
    assert "Feature flags live in flags.toml." in recall(layout, str(feature)).text
    kept = layout.bank(bank_name(main))
    assert sorted(p.name for p in kept.glob("project_*.md")) == ["project_feature_flags_live_in_flags_toml.md",
                                                                  "project_the_app_builds_with_make.md"]
    old = layout.bank(bank_name(feature))
    assert len(list((old / "_archive").iterdir())) == 2 and not list(old.glob("project_*.md"))
    assert next(c for c in doctor().checks if c.name == "worktrees").status == "ok"
    again = sandman("banks", "merge", str(feature), str(main))
    assert again.returncode == 0 and "nothing to commit" in again.stdout.decode()


def test_merge_refuses_an_unknown_bank_and_a_bank_into_itself(layout, repo):
    main, _, _ = repo
    remember(layout, "x.", cwd=str(main))
    done = sandman("banks", "merge", "no-such-bank", str(main))
    assert done.returncode != 0
    assert done.stderr.decode() == ("sandman: FROM 'no-such-bank' is not a bank; `sandman doctor` lists the banks "
                                    "of worktrees\n")
    done = sandman("banks", "merge", str(main), str(main))
    assert done.stderr.decode() == f"sandman: FROM and INTO are the same bank, {bank_name(main)}\n"
