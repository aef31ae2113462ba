"""A change left in the versioned tier never carries a credential into a commit (breaker3 problem 2).

remember and dream scan what they write; recovery commits what someone else
left there (a hand edit, a stray file), so it scans that too, and sync scans
what each commit it pushes adds.
"""

from __future__ import annotations

import os
import random
import string
import subprocess
from pathlib import Path

import pytest
from helpers import git, sandman
from syncworld import make_world, remote_head, snapshot

from sandman.banks.commit import commit_memory
from sandman.banks.memory import Memory
from sandman.errors import LeftoverSecret, SyncError
from sandman.layout import Layout
from sandman.verbs.sync import sync

# Generated, not typed: a typed sequence (`ghp_abcdef…0123456789`) is an example, not a token (docs/secrets.md).
_RNG = random.Random(24)
GITHUB_TOKEN = "ghp_" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
AWS_PAIR = ("AWS_ACCESS_KEY_ID=AKIAUJZDE8GXD6NCF10E\n"
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")


def remember(cwd: Path, body: str) -> subprocess.CompletedProcess:
    return sandman("remember", "--cwd", str(cwd), body)


def every_committed_byte(root: Path) -> str:
    """The patches of every commit, so a secret anywhere in history shows up."""
    return git(root, "log", "-p", "--all", "--format=%H %s")


@pytest.fixture
def bank(layout: Layout, tmp_path: Path) -> Path:
    """A root with one memory remembered by hand for ``tmp_path/app``; return the bank folder."""
    assert remember(tmp_path / "app", "Use uv for envs.").returncode == 0
    (folder,) = [p for p in layout.memories.iterdir() if not p.name.startswith(".")]
    return folder


def test_a_hand_edit_with_a_github_token_is_never_committed(layout: Layout, bank: Path, tmp_path: Path) -> None:
    edited = bank / "project_use_uv_for_envs.md"
    original = edited.read_text()
    edited.write_text(original + f"Token for the registry: {GITHUB_TOKEN}\n")
    head = git(layout.root, "rev-parse", "HEAD")

    done = remember(tmp_path / "app", "Another harmless fact.")

    relative = edited.relative_to(layout.root).as_posix()
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"sandman: {relative} in {layout.root} contains a secret (github-pat), left there outside sandman; "
        "nothing was committed: remove the credential from that file (or delete it) and try again\n")
    assert git(layout.root, "rev-parse", "HEAD") == head
    assert GITHUB_TOKEN not in every_committed_byte(layout.root)
    assert GITHUB_TOKEN in edited.read_text()  # what the person wrote stays theirs to fix
    assert not (bank / "project_another_harmless_fact.md").exists()
    journal = "".join(p.read_text() for p in layout.trace.glob("*.log"))
    assert f"recover refused reason=secret file={relative} kinds=" in journal

    edited.write_text(original + "The registry token lives in the team vault.\n")
    again = remember(tmp_path / "app", "Another harmless fact.")
    assert again.returncode == 0, again.stderr
    assert git(layout.root, "log", "-2", "--format=%s").splitlines() == [
        "remember: Another harmless fact.", "recover: commit changes left in the working tree"]
    assert git(layout.root, "status", "--porcelain") == ""
    assert GITHUB_TOKEN not in every_committed_byte(layout.root)


def test_a_stray_file_with_an_aws_key_pair_is_never_committed(layout: Layout, bank: Path, tmp_path: Path) -> None:
    stray = bank / "notes.txt"
    stray.write_text("keys for the staging bucket\n" + AWS_PAIR)

    done = remember(tmp_path / "app", "Another harmless fact.")

    assert done.returncode == 2
    message = done.stderr.decode()
    assert message.count("\n") == 1
    assert f"{stray.relative_to(layout.root).as_posix()} in {layout.root} contains a secret (" in message
    assert "aws-access-key-id" in message and "AKIA" not in message
    assert "notes.txt" not in git(layout.root, "ls-files")
    assert "AKIAUJZDE8GXD6NCF10E" not in every_committed_byte(layout.root)
    assert stray.read_text().endswith(AWS_PAIR)

    stray.unlink()
    assert remember(tmp_path / "app", "Another harmless fact.").returncode == 0
    assert git(layout.root, "status", "--porcelain") == ""


def test_the_refusal_from_a_library_caller_is_a_leftover_secret(layout: Layout, bank: Path) -> None:
    (bank / "notes.txt").write_text(f"token {GITHUB_TOKEN}\n")
    memory = Memory(name="Harmless", description="Harmless.", type="project", body="Fine.\n")
    with pytest.raises(LeftoverSecret) as caught:
        commit_memory(layout, memory, directory="/elsewhere", verb="remember")
    assert caught.value.path == f"memories/{bank.name}/notes.txt"
    assert caught.value.kinds == ["github-pat"]
    assert git(layout.root, "status", "--porcelain", "--untracked-files=all").splitlines() == [
        f"?? memories/{bank.name}/notes.txt"]


def test_a_clean_hand_edit_is_still_recovered(layout: Layout, bank: Path, tmp_path: Path) -> None:
    edited = bank / "project_use_uv_for_envs.md"
    edited.write_text(edited.read_text() + "The staging bucket is eu-west-1.\n")
    assert remember(tmp_path / "app", "Another harmless fact.").returncode == 0
    assert "eu-west-1" in git(layout.root, "show", f"HEAD~1:memories/{bank.name}/{edited.name}")
    assert git(layout.root, "status", "--porcelain") == ""


def test_sync_stops_at_a_leftover_credential_and_pushes_nothing(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    published = remote_head(world.remote)
    stray = world.a.memories / "notes.txt"
    stray.write_text(AWS_PAIR)
    with pytest.raises(LeftoverSecret):
        sync(world.a)
    assert remote_head(world.remote) == published
    assert stray.exists()


def test_sync_refuses_to_push_a_commit_that_adds_a_credential(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    (world.a.memories / "notes.md").write_text("harmless\n")
    git(world.a.root, "add", "memories/notes.md")
    git(world.a.root, "-c", "user.name=Hand", "-c", "user.email=hand@example.org", "commit", "-qm", "notes")
    (world.a.memories / "notes.md").write_text(f"harmless\nregistry token {GITHUB_TOKEN}\n")
    git(world.a.root, "-c", "user.name=Hand", "-c", "user.email=hand@example.org", "commit", "-qam", "oops")
    oops = git(world.a.root, "rev-parse", "HEAD").strip()
    published = remote_head(world.remote)
    before = snapshot(world.a)
    with pytest.raises(SyncError) as caught:
        sync(world.a)
    assert caught.value.reason == "secret"
    assert f"commit {oops[:12]} adds a secret (github-pat) to memories/notes.md" in str(caught.value)
    assert GITHUB_TOKEN not in str(caught.value)
    assert remote_head(world.remote) == published
    assert snapshot(world.a) == before


def test_sync_pushes_commits_whose_additions_are_clean(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    (world.a.memories / "notes.md").write_text("the token lives in the vault\n")
    git(world.a.root, "add", "memories/notes.md")
    git(world.a.root, "-c", "user.name=Hand", "-c", "user.email=hand@example.org", "commit", "-qm", "notes")
    assert sync(world.a).action == "pushed"
    assert remote_head(world.remote) == git(world.a.root, "rev-parse", "HEAD").strip()


def test_the_cli_prints_one_line_for_a_leftover_secret_in_sync(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    (world.a.memories / "notes.txt").write_text(AWS_PAIR)
    done = sandman("sync", env={**os.environ, "SANDMAN_ROOT": str(world.a.root)})
    assert done.returncode == 2
    assert done.stderr.decode().count("\n") == 1
    assert "memories/notes.txt" in done.stderr.decode()
