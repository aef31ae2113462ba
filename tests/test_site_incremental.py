"""Incremental rendering: a page whose sources did not change is not rewritten (docs/site.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sandman.banks.commit import bank_transaction
from sandman.layout import Layout, resource
from sandman.site import gather
from sandman.site.gather import dump_source_part
from sandman.site.render import render_site, renderer_fingerprint
from site_fixture import build, site_files

MEMORY_PAGE = "banks/-home-user-proj/feedback_tests_run_with_pytest_rs.html"


def files(site: Path) -> dict[str, tuple[int, int]]:
    """Each page's inode and modification time: write_atomic gives a rewritten page a new inode."""
    return {
        path.relative_to(site).as_posix(): (path.stat().st_ino, path.stat().st_mtime_ns)
        for path in site.rglob("*") if path.is_file() and ".state" not in path.relative_to(site).parts
    }


def rewritten(before: dict, after: dict) -> set[str]:
    return {path for path in after if before.get(path) != after[path]} | (before.keys() - after.keys())


@pytest.fixture
def rendered(layout: Layout) -> Layout:
    build(layout)
    render_site(layout)
    return layout


def test_a_second_render_writes_nothing(rendered: Layout) -> None:
    state = (rendered.site_manifest, *sorted(rendered.site_sources_cache.iterdir()), rendered.site_history_cache)
    assert len(state) > 3  # a part of the parse cache per bank and one for the log
    before = files(rendered.site)
    before_state = [path.stat().st_ino for path in state]
    stats = render_site(rendered)
    assert (stats.written, stats.removed, stats.commits_walked) == (0, 0, 0)
    assert files(rendered.site) == before
    assert [path.stat().st_ino for path in state] == before_state


def test_a_second_render_parses_nothing(rendered: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args):
        raise AssertionError("a file whose bytes did not change was parsed again")

    for name in ("parse_memory", "parse_entry"):
        monkeypatch.setattr(gather, name, refuse)
    assert render_site(rendered).written == 0


def test_one_edited_memory_rewrites_its_page_and_the_search_index_only(rendered: Layout) -> None:
    before = files(rendered.site)
    _edit_one_memory(rendered)
    stats = render_site(rendered)
    assert stats.commits_walked == 1
    assert rewritten(before, files(rendered.site)) == {MEMORY_PAGE, "search-index.js"}
    assert "One more line." in (rendered.site / MEMORY_PAGE).read_text()
    assert "+One more line." in (rendered.site / MEMORY_PAGE).read_text()  # its history shows the new diff


def test_a_commit_touching_no_memory_rewrites_no_memory_page(rendered: Layout) -> None:
    before = files(rendered.site)
    with bank_transaction(rendered, verb="reflect", subject="a voyage entry") as tx:
        tx.write_file(rendered.log_entry("2026-11-30"), "---\nday: 2026-11-30\nkind: passage\ntitle: A third day\n---\n\nProse.\n")
    render_site(rendered)
    changed = rewritten(before, files(rendered.site))
    assert changed == {"index.html", "log/index.html", "log/2026-11-29.html", "log/2026-11-30.html"}


def test_a_page_deleted_by_hand_is_written_again(rendered: Layout) -> None:
    (rendered.site / MEMORY_PAGE).unlink()
    before = files(rendered.site)
    assert render_site(rendered).written == 1
    assert rewritten(before, files(rendered.site)) == {MEMORY_PAGE}


def test_deleting_the_state_forces_a_full_render(rendered: Layout) -> None:
    shutil.rmtree(rendered.site_state)
    stats = render_site(rendered)
    assert stats.written == stats.pages


def test_a_damaged_state_is_rebuilt_not_fatal(rendered: Layout) -> None:
    damaged = [rendered.site_manifest, *rendered.site_sources_cache.iterdir(), rendered.site_history_cache,
               *rendered.site_search_cache.iterdir(), *rendered.site_templates_cache.iterdir()]
    assert len(damaged) > 6  # the parts of the caches and the compiled templates are there too
    for path in damaged:
        path.write_text("{not json")
    stats = render_site(rendered)
    assert stats.written == stats.pages and stats.commits_walked > 0
    assert render_site(rendered).written == 0


def test_a_template_change_changes_the_renderer_fingerprint(tmp_path: Path) -> None:
    templates = shutil.copytree(resource("templates"), tmp_path / "templates")
    before = renderer_fingerprint(templates, resource("site"))
    (templates / "base.html").write_text((templates / "base.html").read_text() + "<!-- changed -->\n")
    assert renderer_fingerprint(templates, resource("site")) != before


def test_a_second_render_reads_no_unchanged_source(rendered: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    opened = []
    real = gather._no_follow
    monkeypatch.setattr(gather, "_no_follow", lambda path, flags: opened.append(path) or real(path, flags))
    render_site(rendered)
    assert opened == []


def test_a_memory_edited_in_place_to_the_same_size_is_read_again(rendered: Layout) -> None:
    memory = next(rendered.memories.glob("-home-user-proj/feedback_tests_run_with_pytest_rs.md"))
    text = memory.read_text()
    assert "pytest" in text
    with memory.open("r+") as handle:  # the same inode and size: only the times change
        handle.write(text.replace("pytest", "PYTEST"))
    render_site(rendered)
    assert "PYTEST" in (rendered.site / MEMORY_PAGE).read_text()


def full_render_of(layout: Layout, tmp_path: Path) -> dict[str, bytes]:
    """Render a copy of ``layout``'s root from an empty ``.site/`` and return its files."""
    copy = Layout(tmp_path / "full-copy")
    shutil.copytree(layout.root, copy.root, symlinks=True)
    shutil.rmtree(copy.site)
    render_site(copy)
    return site_files(copy.site)


def test_incremental_renders_are_byte_identical_to_a_full_render(rendered: Layout, tmp_path: Path) -> None:
    # Edits of several kinds, each followed by an incremental render; after each, the site
    # must be byte for byte what a full render of the same root writes.
    bank = rendered.root / "memories" / "-home-user-proj"
    memory = bank / "feedback_tests_run_with_pytest_rs.md"
    steps = [
        lambda tx: tx.write_file(memory, memory.read_text() + "\nOne more line.\n"),
        lambda tx: tx.write_file(rendered.log_entry("2026-11-30"),
                                 "---\nday: 2026-11-30\nkind: passage\ntitle: A third day\n---\n\nProse.\n"),
        lambda tx: tx.write_file(bank / "project_added_later.md",
                                 "---\nname: Added later\ndescription: One more.\ntype: project\n---\n\nBody.\n"),
        lambda tx: tx.remove_file(bank / "project_added_later.md"),
        None,  # an edit by hand, not committed: the history does not change, the file does
    ]
    for n, step in enumerate(steps):
        if step is None:
            memory.write_text(memory.read_text().replace("pytest", "PYTEST"))
        else:
            with bank_transaction(rendered, verb="remember", subject=f"step {n}") as tx:
                step(tx)
        render_site(rendered)
        assert site_files(rendered.site) == full_render_of(rendered, tmp_path / f"step-{n}"), f"after step {n}"


def test_an_unchanged_bank_is_not_built_again(rendered: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    from sandman.site.pages import PageBuilder

    built = []
    real = PageBuilder._bank
    monkeypatch.setattr(PageBuilder, "_bank", lambda self, bank: built.append(bank.name) or real(self, bank))
    memory = rendered.root / "memories" / "-home-user-proj" / "feedback_tests_run_with_pytest_rs.md"
    with bank_transaction(rendered, verb="remember", subject="an edit by hand") as tx:
        tx.write_file(memory, memory.read_text() + "\nOne more line.\n")
    render_site(rendered)
    assert built == ["-home-user-proj"]  # the user-wide bank did not change
    built.clear()
    assert render_site(rendered).written == 0 and built == []


def test_a_bank_page_deleted_by_hand_rebuilds_its_family(rendered: Layout) -> None:
    page = rendered.site / "banks" / "-home-user-proj" / "index.html"
    expected = page.read_bytes()
    page.unlink()
    assert render_site(rendered).written == 1
    assert page.read_bytes() == expected


def _edit_one_memory(layout: Layout) -> None:
    """Append a line to one memory of the proj bank, committed as an edit by hand."""
    path = layout.root / "memories" / "-home-user-proj" / "feedback_tests_run_with_pytest_rs.md"
    with bank_transaction(layout, verb="remember", subject="an edit by hand") as tx:
        tx.write_file(path, path.read_text() + "\nOne more line.\n")


def test_one_edited_memory_rewrites_only_its_banks_part_of_the_parse_cache(rendered: Layout) -> None:
    parts = {path.name: path.stat().st_ino for path in rendered.site_sources_cache.iterdir()}
    edited = rendered.site_sources_part("memories/-home-user-proj").name
    assert edited in parts and rendered.site_sources_part("log").name in parts and len(parts) >= 3
    _edit_one_memory(rendered)
    render_site(rendered)
    after = {path.name: path.stat().st_ino for path in rendered.site_sources_cache.iterdir()}
    assert after.keys() == parts.keys()
    assert {name for name in parts if after[name] != parts[name]} == {edited}
    assert render_site(rendered).written == 0  # the rewritten part is read back: nothing is parsed or written


def test_the_one_file_caches_of_an_older_sandman_are_removed(rendered: Layout) -> None:
    rendered.site_sources_cache_v1.write_bytes(b"\xe3old")
    rendered.site_search_cache_v1.write_bytes(b"\xe3old")
    _edit_one_memory(rendered)
    render_site(rendered)
    assert not rendered.site_sources_cache_v1.exists() and not rendered.site_search_cache_v1.exists()


def test_one_edited_memory_rewrites_only_its_banks_part_of_the_search_cache(rendered: Layout) -> None:
    parts = {path.name: path.stat().st_ino for path in rendered.site_search_cache.iterdir()}
    edited = rendered.site_search_part("bank:-home-user-proj").name
    assert edited in parts and len(parts) >= 2
    _edit_one_memory(rendered)
    render_site(rendered)
    after = {path.name: path.stat().st_ino for path in rendered.site_search_cache.iterdir()}
    assert after.keys() == parts.keys()
    assert {name for name in parts if after[name] != parts[name]} == {edited}


def test_the_part_of_a_bank_that_is_gone_is_removed(rendered: Layout) -> None:
    stray = rendered.site_sources_part("memories/-gone")
    stray.write_bytes(dump_source_part("memories/-gone", {}, {"memories/-gone/project_x.md": [1, 2, 3, 4, "0" * 64]}))
    render_site(rendered)
    assert not stray.exists()
