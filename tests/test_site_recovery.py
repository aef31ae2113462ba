"""A render recovers from what a killed render, a hand edit or a broken disk left in ``.site/``
(docs/site.md, docs/BANK-FORMAT.md § .site/): regression tests for three defects."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandman.cli import app
from sandman.errors import RepositoryError
from sandman.layout import Layout
from sandman.site.render import render_site
from sandman.store.atomic import TEMP_NAME
from site_fixture import build, site_files
from test_site_incremental import MEMORY_PAGE, full_render_of

HEX = "0123456789abcdef" * 2


@pytest.fixture
def rendered(layout: Layout) -> Layout:
    build(layout)
    render_site(layout)
    return layout


def test_temp_files_of_a_killed_render_are_removed_by_the_next(rendered: Layout, tmp_path: Path) -> None:
    page = rendered.site / MEMORY_PAGE
    part = next(rendered.site_sources_cache.iterdir())
    planted = [
        page.with_name(f".{page.name}.{HEX}.tmp"),  # a page being written
        rendered.site / f".index.html.{HEX}.tmp",
        part.with_name(f".{part.name}.{HEX}.tmp"),  # a part of the parse cache
        rendered.site_state / f".manifest.json.{HEX}.tmp",
        next(rendered.site_search_cache.iterdir()).with_name(f".x.marshal.{HEX}.tmp"),
    ]
    for path in planted:
        assert TEMP_NAME.fullmatch(path.name)
        path.write_bytes(b"half a page")
    # Look-alikes that are not write_atomic's temp files stay, and so does a temp file outside .site/.
    kept = [page.with_name(f".{page.name}.{HEX[:31]}.tmp"), page.with_name(f"{page.name}.{HEX}.tmp")]
    outside = rendered.root / f".outside.md.{HEX}.tmp"
    for path in (*kept, outside):
        path.write_bytes(b"not ours")
    render_site(rendered)
    assert [path for path in planted if path.exists()] == []
    assert all(path.read_bytes() == b"not ours" for path in (*kept, outside))
    for path in kept:
        path.unlink()
    outside.unlink()
    assert site_files(rendered.site) == full_render_of(rendered, tmp_path)
    assert render_site(rendered).written == 0


def test_temp_files_survive_no_full_render_after_the_state_is_deleted(rendered: Layout) -> None:
    temp = (rendered.site / MEMORY_PAGE).with_name(f".x.html.{HEX}.tmp")
    temp.write_bytes(b"half a page")
    shutil.rmtree(rendered.site_state)
    render_site(rendered)
    assert not temp.exists()


def _file(path: Path) -> None:
    path.write_text("x\n")


def _folder(path: Path) -> None:
    path.mkdir()
    (path / "inside").write_text("x\n")


WRONG_KINDS = [
    ("search", _file), ("sources", _file), ("manifest.json", _folder), ("history.marshal", _folder),
]


@pytest.mark.parametrize(("name", "make"), WRONG_KINDS, ids=[name for name, _ in WRONG_KINDS])
def test_a_state_entry_of_the_wrong_kind_is_rebuilt_not_fatal(rendered: Layout, tmp_path: Path, name: str,
                                                              make) -> None:
    entry = rendered.site_state / name
    shutil.rmtree(entry) if entry.is_dir() else entry.unlink(missing_ok=True)
    make(entry)
    render_site(rendered)
    assert site_files(rendered.site) == full_render_of(rendered, tmp_path)
    assert render_site(rendered).written == 0


def test_a_state_that_is_a_file_is_rebuilt_not_fatal(rendered: Layout, tmp_path: Path) -> None:
    shutil.rmtree(rendered.site_state)
    rendered.site_state.write_text("x\n")
    stats = render_site(rendered)
    assert stats.written == stats.pages
    assert rendered.site_state.is_dir()
    assert site_files(rendered.site) == full_render_of(rendered, tmp_path)


def test_a_cache_part_of_the_wrong_kind_is_rebuilt_not_fatal(rendered: Layout, tmp_path: Path) -> None:
    for folder in (rendered.site_sources_cache, rendered.site_search_cache):
        for part in list(folder.iterdir()):
            part.unlink()
            part.mkdir()
            (part / "inside").write_text("x\n")
    render_site(rendered)
    parts = [*rendered.site_sources_cache.iterdir(), *rendered.site_search_cache.iterdir()]
    assert len(parts) > 2 and all(part.is_file() for part in parts)
    assert site_files(rendered.site) == full_render_of(rendered, tmp_path)
    assert render_site(rendered).written == 0


@pytest.mark.parametrize("name", ["", "search"])
def test_a_state_entry_linked_out_of_the_site_is_not_followed(rendered: Layout, tmp_path: Path, name: str) -> None:
    # A symbolic link where the state keeps a cache: the link goes, what it points at stays untouched.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine\n")
    target = outside / "keep" if name.endswith((".json", ".marshal")) else outside
    entry = rendered.site_state / name if name else rendered.site_state
    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    entry.symlink_to(target)
    render_site(rendered)
    assert sorted(p.name for p in outside.iterdir()) == ["keep"]
    assert (outside / "keep").read_text() == "mine\n"
    assert not entry.is_symlink()
    assert render_site(rendered).written == 0


def _break_repository(layout: Layout) -> None:
    objects = layout.root / ".git" / "objects"
    shutil.rmtree(objects / "pack", ignore_errors=True)
    for folder in objects.iterdir():
        if len(folder.name) == 2:
            shutil.rmtree(folder)


def test_an_incremental_render_of_an_unreadable_repository_fails(rendered: Layout) -> None:
    _break_repository(rendered)
    with pytest.raises(RepositoryError, match="object not found"):
        render_site(rendered)
    shutil.rmtree(rendered.site_state)
    with pytest.raises(RepositoryError, match="object not found"):
        render_site(rendered)


def test_an_incremental_render_of_an_unreadable_repository_exits_1(rendered: Layout) -> None:
    _break_repository(rendered)
    result = CliRunner().invoke(app, ["site"])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sandman: cannot ") and "object not found" in lines[0], lines
