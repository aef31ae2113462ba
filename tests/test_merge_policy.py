"""banks.merge on flat trees, without git: the per-path rules of docs/BANK-FORMAT.md
("Merging two machines") that the two-root tests do not reach easily."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sandman.banks import frontmatter
from sandman.banks.merge import _check_nothing_lost, _Paths, merge_trees
from sandman.errors import SyncError
from sandman.layout import Layout

MODE = 0o100644
BANK = "memories/-work-proj"


class Blobs:
    """An object database in a dict."""

    def __init__(self):
        self.data: dict[str, bytes] = {}

    def write(self, data: bytes) -> str:
        key = hashlib.sha1(data).hexdigest()
        self.data[key] = data
        return key

    def read(self, blob: str) -> bytes:
        return self.data[blob]

    def tree(self, files: dict[str, str | bytes]):
        return {path: (self.write(text.encode() if isinstance(text, str) else text), MODE)
                for path, text in files.items()}


def memory(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {name}\ntype: project\n---\n\n{body}\n"


@pytest.fixture
def layout(tmp_path) -> Layout:
    return Layout(tmp_path / "root")


def text(blobs: Blobs, merged, path: str) -> str:
    return blobs.read(merged.tree[path][0]).decode()


def test_archive_files_added_on_both_sides_keep_both(layout):
    blobs = Blobs()
    path = f"{BANK}/_archive/20261130T101010_project_x.md"
    ours = blobs.tree({path: memory("X", "ours")})
    theirs = blobs.tree({path: memory("X", "theirs")})
    merged = merge_trees(layout, {}, ours, theirs, blobs)
    copy = f"{BANK}/_archive/20261130T101010-2_project_x.md"
    assert text(blobs, merged, path) == memory("X", "ours")
    assert text(blobs, merged, copy) == memory("X", "theirs")  # byte for byte: no lineage key
    assert [(k.kind, k.copy) for k in merged.kept] == [("both-added", copy)]


def test_collision_suffix_skips_names_taken_on_either_side(layout):
    blobs = Blobs()
    path = f"{BANK}/project_x.md"
    base = blobs.tree({path: memory("X", "base")})
    ours = blobs.tree({path: memory("X", "ours"), f"{BANK}/project_x_2.md": memory("X", "ours 2")})
    theirs = blobs.tree({path: memory("X", "theirs")})
    merged = merge_trees(layout, base, ours, theirs, blobs)
    assert merged.kept[0].copy == f"{BANK}/project_x_3.md"
    front, body = frontmatter.parse(text(blobs, merged, f"{BANK}/project_x_3.md"))
    assert (front.get("conflict_of"), body) == ("project_x.md", "theirs\n")


def test_an_unreadable_memory_is_kept_byte_for_byte(layout):
    blobs = Blobs()
    path = f"{BANK}/project_x.md"
    base = blobs.tree({path: memory("X", "base")})
    ours = blobs.tree({path: memory("X", "ours")})
    theirs = blobs.tree({path: b"\xff\xfe not utf-8"})
    merged = merge_trees(layout, base, ours, theirs, blobs)
    assert blobs.read(merged.tree[f"{BANK}/project_x_2.md"][0]) == b"\xff\xfe not utf-8"
    index = text(blobs, merged, f"{BANK}/MEMORY.md")
    assert "project_x_2.md" in index and "unreadable" in index


def test_a_deletion_of_an_untouched_file_is_merged(layout):
    blobs = Blobs()
    base = blobs.tree({f"{BANK}/project_x.md": memory("X", "base"), f"{BANK}/project_y.md": memory("Y", "y")})
    ours = dict(base)
    theirs = {f"{BANK}/project_y.md": base[f"{BANK}/project_y.md"]}
    merged = merge_trees(layout, base, ours, theirs, blobs)
    assert f"{BANK}/project_x.md" not in merged.tree
    assert merged.kept == []


def test_log_index_is_rendered_by_the_given_renderer(layout):
    blobs = Blobs()
    base = blobs.tree({"log/INDEX.md": "index 0\n"})
    ours = blobs.tree({"log/2026-11-29.md": "ours day\n", "log/INDEX.md": "index a\n"})
    theirs = blobs.tree({"log/2026-11-30.md": "theirs day\n", "log/INDEX.md": "index b\n"})
    seen = []

    def render(folder: Path) -> str:
        seen.append(sorted(p.name for p in folder.iterdir()))
        return "rendered\n"

    merged = merge_trees(layout, base, ours, theirs, blobs, log_index=render)
    # The renderer sees both sides' entries and the index whose voyage began first (to keep began).
    assert seen == [["2026-11-29.md", "2026-11-30.md", "INDEX.md"]]
    assert text(blobs, merged, "log/INDEX.md") == "rendered\n"
    without = merge_trees(layout, base, ours, theirs, blobs)
    assert text(blobs, without, "log/INDEX.md") == "index a\n"
    assert [k.kind for k in without.kept] == ["index-kept"]


def test_a_path_that_is_a_file_here_and_a_folder_there_is_refused(tmp_path, layout):
    import pygit2

    from sandman.store.sync import write_flat_tree

    repo = pygit2.init_repository(str(tmp_path / "repo"))
    blob = str(repo.create_blob(b"x"))
    with pytest.raises(SyncError) as caught:
        write_flat_tree(repo, {"log": (blob, MODE), "log/a.md": (blob, MODE)})
    assert caught.value.reason == "conflict"


def test_the_guard_refuses_a_result_that_lost_a_version(layout):
    blobs = Blobs()
    ours = blobs.tree({f"{BANK}/project_x.md": memory("X", "made here")})
    with pytest.raises(SyncError) as caught:
        _check_nothing_lost(_Paths.of(layout), {}, ours, {}, {}, set())
    assert str(caught.value) == f"refusing to merge: {BANK}/project_x.md would be lost; nothing was changed"
