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
