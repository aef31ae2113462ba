"""What a remember no longer pays for, and that what it pays instead gives the same result (issue 29).

- the secrets vet takes the lines a change inserts without libgit2's diff (store.repo._inserted);
- the recall cache makes only its head's lines (banks.listing._index_head);
- MEMORY.md is logged in the undo log by HEAD's blob, and read back from it when undone;
- a transaction fsyncs each bank folder it wrote once;
- the printed path is marked only when it holds something to mark.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pygit2
from hypothesis import given, settings, strategies as st
from pygit2.enums import DiffOption

from helpers import git, sandman
from sandman.banks import listing
from sandman.banks.commit import bank_transaction
from sandman.banks.index import render_index
from sandman.banks.memory import Memory
from sandman.banks.names import bank_name
from sandman.layout import Layout
from sandman.store import atomic
from sandman.store.repo import _inserted
from sandman.verbs.remember import remember

def _diff_added(old: bytes, new: bytes) -> str:
    patch = pygit2.Patch.create_from(old, new, flag=DiffOption.FORCE_TEXT)
    return "".join(line.content for hunk in patch.hunks for line in hunk.lines if line.origin == "+")


LINES = st.lists(st.sampled_from(["a\n", "b\n", "- [x](project_x.md) — y\n", "\n", "tail", "é\n"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(LINES, LINES, st.integers(min_value=0), st.booleans())
def test_the_lines_a_change_inserts_are_the_diffs_added_lines(before, inserted, at, edit) -> None:
    at = at % (len(before) + 1)
    old = "".join(before).encode()
    new = "".join(before[:at] + inserted + before[at:]).encode()
    if edit:
        new = new.replace(b"b", b"B", 1)
    found = _inserted(old, new)
    if found is not None:
        # The same lines libgit2's diff calls added (it may place an insertion among equal lines elsewhere).
        assert sorted(found.splitlines(keepends=True)) == sorted(_diff_added(old, new).splitlines(keepends=True))
    if not edit and all(line.endswith("\n") for line in before + inserted):
        assert found is not None  # whole lines inserted at one place: never left to the diff


def test_bytes_that_are_not_utf8_go_to_the_diff() -> None:
    assert _inserted(b"a\n", b"a\n\xff\n") is None


def _index_lines(text: str) -> list[str]:
    """The definition: every ``- [`` line of the body, right-stripped, private spans hidden."""
    from sandman import private

    split = listing.split_frontmatter(text)
    lines = [line.rstrip() for line in split[1].splitlines() if line.startswith("- [")] if split else []
    return [private.redact(line) for line in lines]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["- [a](project_a.md) — x", "- [b <private>k</private>](project_b.md) — y ",
                                 "junk", "", "- [c](project_c.md)\u2028- [d](project_d.md)", "- [" + "z" * 40 + "]()"]),
                max_size=30),
       st.integers(min_value=0, max_value=300))
def test_the_recall_caches_head_and_count_are_those_of_every_line(body, cap) -> None:
    text = "---\nname: x\n---\n\n" + "\n".join(body) + "\n"
    lines = _index_lines(text)
    assert listing._index_head(text, cap) == (len(lines), listing.recall_head(lines, cap))


def _big_bank(layout: Layout, directory: str, count: int = 40) -> Path:
    """A bank whose MEMORY.md is over 4 KiB, made in one transaction."""
    with bank_transaction(layout, verb="remember", subject="many") as tx:
        for i in range(count):
            tx.write_memory(bank_name(directory), Memory(
                name=f"Fact number {i} of the service", description=f"What the service does at step {i}.",
                type="project", body=f"At step {i} the service writes its state."), directory=directory)
    folder = layout.bank(bank_name(directory))
    assert (folder / "MEMORY.md").stat().st_size > 4096
    return folder


KILLED_REMEMBER = textwrap.dedent(
    """
    import os, signal, sys
    from unittest import mock
    from sandman import config
    from sandman.layout import Layout
    from sandman.verbs.remember import remember

    # Dies with the memory and its MEMORY.md written, just before the commit (its author is asked first).
    mock.patch("sandman.store.repo.signature", lambda *a: os.kill(os.getpid(), signal.SIGKILL)).start()
    remember(Layout(config.root()), "The deploy runs after the smoke test.", cwd=sys.argv[1])
    """
)


def test_a_remember_killed_after_its_index_is_rolled_back_to_heads_index(layout: Layout, tmp_path: Path) -> None:
    directory = str(tmp_path / "proj")
    folder = _big_bank(layout, directory)
    index = (folder / "MEMORY.md").read_bytes()
    killed = subprocess.run([sys.executable, "-c", KILLED_REMEMBER, directory], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert (folder / "MEMORY.md").read_bytes() != index
    steps = [json.loads(line) for line in layout.commit_undo.read_text().splitlines()]
    # The index is logged by the blob HEAD holds it in, not by its 4 KiB and more.
    assert {"replaced": f"memories/{folder.name}/MEMORY.md",
            "blob": git(layout.root, "rev-parse", f"HEAD:memories/{folder.name}/MEMORY.md").strip()} in steps

    remember(layout, "The release tag is pushed by hand.", cwd=directory)
    assert not (folder / "project_the_deploy_runs_after_the_smoke_test.md").exists()
    assert (folder / "MEMORY.md").read_text() == render_index(folder)
    assert git(layout.root, "status", "--porcelain") == ""
    assert git(layout.root, "log", "-1", "--format=%s").strip() == "remember: The release tag is pushed by hand."


def test_a_remember_fsyncs_its_bank_folder_once(layout: Layout, tmp_path: Path, monkeypatch) -> None:
    directory = str(tmp_path / "proj")
    remember(layout, "The first memory makes the bank.", cwd=directory)
    synced: list[Path] = []
    real = atomic.fsync_dir
    monkeypatch.setattr(atomic, "fsync_dir", lambda path: (synced.append(Path(path)), real(path)))
    monkeypatch.setattr("sandman.banks.commit.fsync_dir", atomic.fsync_dir)
    remember(layout, "The second memory lands in the same bank.", cwd=directory)
    assert synced.count(layout.bank(bank_name(directory))) == 1


def test_a_memory_rewritten_with_its_index_unchanged_still_has_its_folder_fsynced(
        layout: Layout, tmp_path: Path, monkeypatch) -> None:
    directory = str(tmp_path / "proj")
    memory = Memory(name="One fact", description="The one fact.", type="project", body="The first wording.")
    first = remember(layout, memory.body, cwd=directory, name=memory.name, description=memory.description)
    index = (first.path.parent / "MEMORY.md").read_bytes()
    events: list[tuple[str, Path]] = []
    write, fsync = atomic.write_atomic, atomic.fsync_dir
    monkeypatch.setattr("sandman.banks.commit.write_atomic",
                        lambda path, *a, **k: (events.append(("write", Path(path))), write(path, *a, **k)))
    monkeypatch.setattr("sandman.banks.commit.fsync_dir", lambda path: (events.append(("fsync", Path(path))), fsync(path)))
    with bank_transaction(layout, verb="remember", subject="reworded") as tx:
        again = Memory(name=memory.name, description=memory.description, type="project", body="The second wording.")
        assert tx.write_memory(bank_name(directory), again, replaces=first.path.name) == first.path
    # Same name and description: MEMORY.md is not written; the folder is fsynced after the new file is.
    assert (first.path.parent / "MEMORY.md").read_bytes() == index
    assert ("fsync", first.path.parent) in events[events.index(("write", first.path)):]


def test_the_path_remember_prints_is_marked_only_when_it_holds_a_mark(tmp_path: Path) -> None:
    plain = sandman("remember", "A fact about the build.", "--cwd", str(tmp_path / "proj"),
                    env={"SANDMAN_ROOT": str(tmp_path / "root")})
    assert plain.returncode == 0 and plain.stdout.decode().startswith(str(tmp_path / "root")), plain.stderr
    odd = sandman("remember", "A fact about the build.", "--cwd", str(tmp_path / "proj"),
                  env={"SANDMAN_ROOT": str(tmp_path / "ro\u202eot")})
    assert odd.returncode == 0, odd.stderr
    assert "ro‹U+202E›ot" in odd.stdout.decode() and "\u202e" not in odd.stdout.decode()
