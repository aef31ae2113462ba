"""A symbolic link in the memory root is never followed (docs/BANK-FORMAT.md, "Symbolic links").

The tester's attack: ``ln -s ~/.ssh/id_ed25519 memories/<bank>/reference_x.md``
put the key in the rendered site and its search index, past the secrets ban.
"""

from __future__ import annotations

import errno
import os

import pytest

from sandman.banks.commit import commit_memory
from sandman.banks.index import memory_files
from sandman.banks.listing import list_banks, memory_body
from sandman.banks.memory import Memory, read_memory
from sandman.banks.names import bank_name
from sandman.layout import Layout
from sandman.site.render import render_site
from sandman.store.atomic import read_regular
from sandman.verbs.recall import recall
from sandman.voyage import entry_paths

PROJECT = "/home/user/proj"
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAkeytextkeytext\n-----END OPENSSH PRIVATE KEY-----\n"
MARK = "keytextkeytext"


def private_key(tmp_path):
    """A file outside the root that looks like a memory, holding a key."""
    path = tmp_path / "id_ed25519"
    path.write_text(f"---\nname: stolen\ndescription: stolen\ntype: reference\n---\n\n{KEY}")
    return path


def remembered(layout: Layout, name: str = "Use pnpm") -> Memory:
    memory = Memory(name=name, description="The package manager here", type="project", body="Use pnpm.\n")
    commit_memory(layout, memory, directory=PROJECT, verb="remember")
    return memory


def site_text(layout: Layout) -> str:
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in layout.site.rglob("*") if path.is_file() and ".state" not in path.parts
    )


def test_symlinked_memory_file_never_reaches_the_site_or_its_search_index(layout, tmp_path):
    remembered(layout)
    bank = layout.bank(bank_name(PROJECT))
    (bank / "reference_x.md").symlink_to(private_key(tmp_path))
    render_site(layout)
    assert MARK not in site_text(layout)
    assert not (layout.site / "banks" / bank.name / "reference_x.html").exists()
    assert "Use pnpm" in (layout.site / "search-index.js").read_text(encoding="utf-8")


def test_symlinked_memory_file_is_not_a_memory_of_the_bank(layout, tmp_path):
    remembered(layout)
    bank = layout.bank(bank_name(PROJECT))
    (bank / "reference_x.md").symlink_to(private_key(tmp_path))
    assert [path.name for path in memory_files(bank)] == ["project_use_pnpm.md"]
    remembered(layout, "Use ruff")  # regenerates MEMORY.md
    assert "reference_x.md" not in (bank / "MEMORY.md").read_text(encoding="utf-8")
    with pytest.raises(OSError) as caught:
        read_memory(bank / "reference_x.md")
    assert caught.value.errno == errno.ELOOP


def test_symlinked_memory_listed_by_hand_in_memory_md_is_not_recalled(layout, tmp_path):
    remembered(layout)
    bank = layout.bank(bank_name(PROJECT))
    (bank / "reference_x.md").symlink_to(private_key(tmp_path))
    index = bank / "MEMORY.md"
    index.write_text(index.read_text(encoding="utf-8") + "- [stolen](reference_x.md) — stolen\n", encoding="utf-8")
    assert memory_body(bank, "reference_x.md") == ""
    assert MARK not in recall(layout, PROJECT).text


def test_symlinked_memory_index_is_not_read(layout, tmp_path):
    remembered(layout)
    bank = layout.bank(bank_name(PROJECT))
    (bank / "MEMORY.md").unlink()
    (bank / "MEMORY.md").symlink_to(private_key(tmp_path))
    assert list_banks(layout)[0].entries == ()
    render_site(layout)
    assert MARK not in site_text(layout)


def test_symlinked_bank_folder_archive_and_log_entry_are_not_read(layout, tmp_path):
    remembered(layout)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "reference_stolen.md").write_text(private_key(tmp_path).read_text())
    (layout.memories / "-elsewhere").symlink_to(outside)
    bank = layout.bank(bank_name(PROJECT))
    (bank / "_archive").symlink_to(outside)
    layout.log.mkdir(exist_ok=True)
    (layout.log / "2026-01-02.md").symlink_to(private_key(tmp_path))
    assert [b.name for b in list_banks(layout)] == [bank.name]
    assert entry_paths(layout) == []
    render_site(layout)
    assert MARK not in site_text(layout)
    assert MARK not in recall(layout, PROJECT).text


def test_read_regular_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "project_fifo.md"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as caught:
        read_regular(fifo)
    assert caught.value.errno == errno.EINVAL
    assert memory_files(tmp_path) == []


# --- a link is never committed, pushed, or taken from a remote -----------------


def tree_modes(layout: Layout) -> dict[str, str]:
    """Every path of HEAD's tree -> its git mode."""
    from helpers import git

    lines = git(layout.root, "ls-tree", "-r", "HEAD").splitlines()
    return {line.split("\t", 1)[1]: line.split(" ", 1)[0] for line in lines}


def test_symlinked_memory_file_is_never_committed_by_recovery(layout, tmp_path):
    remembered(layout)
    bank = layout.bank(bank_name(PROJECT))
    (bank / "reference_x.md").symlink_to(private_key(tmp_path))
    remembered(layout, "Use ruff")  # recovery runs first and commits what is left in the tree
    modes = tree_modes(layout)
    assert f"memories/{bank.name}/reference_x.md" not in modes
    assert "120000" not in modes.values()
    from sandman.verbs.doctor import doctor

    clean = next(check for check in doctor().checks if check.name == "clean")
    assert clean.status == "warn"
    assert clean.message == (f"memories/{bank.name}/reference_x.md is a symbolic link: sandman never reads or "
                             "commits a link in the root; delete it")


def test_symlinked_memory_committed_by_hand_is_never_pushed(tmp_path, isolated):
    from helpers import git
    from syncworld import make_world, remote_head, snapshot

    from sandman.errors import SyncError
    from sandman.verbs.sync import sync

    world = make_world(tmp_path)
    remembered(world.a)
    bank = world.a.bank(bank_name(PROJECT))
    (bank / "reference_x.md").symlink_to(private_key(tmp_path))
    git(world.a.root, "add", f"memories/{bank.name}/reference_x.md")
    git(world.a.root, "-c", "user.name=Hand", "-c", "user.email=hand@example.org", "commit", "-qm", "link")
    published = remote_head(world.remote)
    before = snapshot(world.a)
    with pytest.raises(SyncError) as caught:
        sync(world.a)
    assert caught.value.reason == "link"
    assert str(caught.value) == (
        f"sync: refusing to push: memories/{bank.name}/reference_x.md is a symbolic link, which would make "
        "every machine read whatever it points at there; delete it (git rm) and sync again; "
        "the local root is unchanged")
    assert remote_head(world.remote) == published
    assert snapshot(world.a) == before
    # Deleted, the next write commits the deletion and the push goes through.
    (bank / "reference_x.md").unlink()
    remembered(world.a, "Use ruff")
    assert sync(world.a).pushed


@pytest.mark.parametrize("diverged", [False, True], ids=["fast-forward", "merge"])
def test_symlinked_memory_from_a_remote_is_never_checked_out(tmp_path, isolated, diverged):
    from helpers import git
    from syncworld import make_world, snapshot

    from sandman.errors import SyncError
    from sandman.verbs.sync import sync

    world = make_world(tmp_path)
    remembered(world.a)
    sync(world.a)
    sync(world.b)
    bank = world.a.bank(bank_name(PROJECT))
    (bank / "reference_x.md").symlink_to(private_key(tmp_path))
    git(world.a.root, "add", f"memories/{bank.name}/reference_x.md")
    git(world.a.root, "-c", "user.name=Hand", "-c", "user.email=hand@example.org", "commit", "-qm", "link")
    git(world.a.root, "push", "-q", "origin", "main")  # by hand: sandman would refuse
    if diverged:
        remembered(world.b, "Only on B")
    before = snapshot(world.b)
    with pytest.raises(SyncError) as caught:
        sync(world.b)
    assert caught.value.reason == "link"
    assert str(caught.value) == (
        f"sync: refusing to take origin/main: memories/{bank.name}/reference_x.md is a symbolic link, which "
        "would make this machine read whatever it points at here; delete it on the machine that made it; "
        "the local root is unchanged")
    assert snapshot(world.b) == before
    assert not (world.b.bank(bank_name(PROJECT)) / "reference_x.md").is_symlink()
