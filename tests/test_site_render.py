"""Rendering the site: the golden tree, the two phases, containment, removals (docs/site.md)."""

from __future__ import annotations

import difflib
import html
import json
import re
import shutil
import tomllib
from urllib.parse import unquote, urlsplit

import pytest
from typer.testing import CliRunner

from conftest import REPO
from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.index import render_index
from sandman.banks.memory import Memory
from sandman.cli import app
from sandman.errors import InputError, SiteError
from sandman.journal import parse_line
from sandman.layout import Layout, resource
from sandman.site.pages import Page
from sandman.site.render import plan, render_site
from site_fixture import GOLDEN, PROJECT, build, site_files


def golden_diff(actual: dict[str, bytes], expected: dict[str, bytes]) -> str:
    """A readable account of how two trees differ: files missing, extra, and the first diffs."""
    lines = [f"missing: {path}" for path in sorted(expected.keys() - actual.keys())]
    lines += [f"unexpected: {path}" for path in sorted(actual.keys() - expected.keys())]
    changed = [path for path in sorted(expected.keys() & actual.keys()) if expected[path] != actual[path]]
    for path in changed[:3]:
        diff = difflib.unified_diff(
            expected[path].decode("utf-8", "replace").splitlines(), actual[path].decode("utf-8", "replace").splitlines(),
            f"golden/{path}", f"rendered/{path}", lineterm="", n=2,
        )
        lines += list(diff)[:60]
    if len(changed) > 3:
        lines.append(f"... and {len(changed) - 3} more changed files: {', '.join(changed[3:])}")
    return "\n".join(lines)


def test_render_matches_the_golden_tree(layout: Layout) -> None:
    build(layout)
    stats = render_site(layout)
    actual, expected = site_files(layout.site), site_files(GOLDEN)
    if actual != expected:
        pytest.fail(
            "the rendered site differs from tests/golden/site; if the change is deliberate, run "
            "`python -m tests.regen_golden` and review `git diff tests/golden`\n" + golden_diff(actual, expected),
            pytrace=False,
        )
    assert (stats.pages, stats.written, stats.removed, stats.unreadable) == (len(expected), len(expected), 0, 1)


def memory(name: str, body: str = "A body.\n") -> Memory:
    return Memory(name=name, description=f"{name}.", type="project", body=body)


def test_two_pages_for_one_path_are_refused_before_anything_is_written(layout: Layout) -> None:
    pages = [Page("index.html", "html", "home.html", {}, "the home page"),
             Page("index.html", "text", "", {"text": ""}, "a memory named index")]
    with pytest.raises(SiteError, match="the home page and a memory named index both render to .site/index.html"):
        plan(layout, pages)


@pytest.mark.parametrize("path", ["../escape.html", "banks/../../escape.html", ".state/manifest.json"])
def test_a_page_outside_the_site_is_refused(layout: Layout, path: str) -> None:
    with pytest.raises(SiteError, match="outside"):
        plan(layout, [Page(path, "text", "", {"text": "x"}, "a hostile page")])


def test_a_symlink_leading_out_of_the_site_stops_the_render_before_any_write(layout: Layout, tmp_path) -> None:
    commit_memory(layout, memory("Build with make"), directory=PROJECT, verb="remember")
    outside = tmp_path / "outside"
    outside.mkdir()
    layout.site.mkdir()
    (layout.site / "banks").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SiteError, match="outside"):
        render_site(layout)
    assert list(outside.iterdir()) == []
    assert not (layout.site / "index.html").exists()


def test_pages_of_a_deleted_memory_are_removed(layout: Layout) -> None:
    commit_memory(layout, memory("Keep me"), directory=PROJECT, verb="remember")
    gone = commit_memory(layout, memory("Forget me"), directory=PROJECT, verb="remember").path
    render_site(layout)
    page = layout.site / "banks" / "-home-user-proj" / "project_forget_me.html"
    assert page.is_file()
    with bank_transaction(layout, verb="forget", subject="one memory") as tx:
        tx.delete("-home-user-proj", gone.name)
    stats = render_site(layout)
    assert stats.removed == 1
    assert not page.exists()
    assert (page.parent / "project_keep_me.html").is_file()


def test_a_removed_bank_leaves_no_empty_folders(layout: Layout) -> None:
    commit_memory(layout, memory("Only one"), directory="/home/user/other", verb="remember")
    render_site(layout)
    shutil.rmtree(layout.bank("-home-user-other"))
    render_site(layout)
    assert not (layout.site / "banks" / "-home-user-other").exists()


def test_a_missing_root_is_an_input_error(layout: Layout) -> None:
    with pytest.raises(InputError, match="there is no memory root at .*; run `sandman init` first"):
        render_site(layout)


def test_a_root_that_is_not_a_repository_renders_without_history(layout: Layout) -> None:
    bank = layout.bank("_user")
    bank.mkdir(parents=True)
    (bank / "user_short.md").write_text(memory("Short").text(), encoding="utf-8")
    render_site(layout)
    page = (layout.site / "banks" / "_user" / "user_short.html").read_text()
    assert "not a git repository" in page and "<h1>Short</h1>" in page


def test_resources_are_found_and_packaged() -> None:
    assert (resource("templates") / "base.html").is_file()
    assert {"style.css", "search.js"} <= {path.name for path in resource("site").iterdir()}
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["force-include"]["templates"] == "sandman/_data/templates"
    assert wheel["force-include"]["site"] == "sandman/_data/site"


def test_site_command_renders_and_journals(layout: Layout) -> None:
    commit_memory(layout, memory("Build with make"), directory=PROJECT, verb="remember")
    result = CliRunner().invoke(app, ["site"])
    assert result.exit_code == 0, result.output
    assert f"rendered {layout.site}:" in result.output and "0 removed" in result.output
    assert f"open {layout.site / 'index.html'}" in result.output
    lines = [parse_line(line) for path in layout.trace.glob("site-*.log") for line in path.read_text().splitlines()]
    assert len(lines) == 1 and lines[0][1:3] == ("site", "rendered") and lines[0][3]["removed"] == "0"


def test_site_command_without_a_root_says_so(layout: Layout) -> None:
    result = CliRunner().invoke(app, ["site"])
    assert result.exit_code == 2
    assert result.output == f"sandman: there is no memory root at {layout.root}; run `sandman init` first\n"


def test_every_relative_link_leads_to_a_page_even_from_odd_names(layout: Layout) -> None:
    build(layout)
    odd = layout.bank("we?ird #bank %41 é")
    odd.mkdir(parents=True)
    text = memory("Odd file").text()
    (odd / "project_odd?name #1 é.md").write_text(text, encoding="utf-8")
    (odd / "MEMORY.md").write_text(render_index(odd, "/odd"), encoding="utf-8")
    render_site(layout)
    checked = 0
    for page in layout.site.rglob("*.html"):
        for link in re.findall(r'(?:href|src|action)="([^"]*)"', page.read_text()):
            target = urlsplit(html.unescape(link))
            if target.scheme or not target.path:
                continue
            assert (page.parent / unquote(target.path)).resolve().is_file(), (page, link)
            checked += 1
    assert checked > 100
    index = (layout.site / "search-index.js").read_text()
    for item in json.loads(index[index.index("["):index.rindex("]") + 1]):
        assert (layout.site / unquote(item["u"])).is_file(), item["u"]


def test_lineage_follows_a_name_replaced_again_and_again(layout: Layout) -> None:
    path = commit_memory(layout, memory("Build", "First.\n"), directory=PROJECT, verb="remember").path
    for body in ("Second.\n", "Third.\n"):
        commit_memory(layout, memory("Build", body), directory=PROJECT, verb="reflect", replaces=path.name)
    render_site(layout)
    bank = layout.site / "banks" / "-home-user-proj"
    live = (bank / "project_build.html").read_text()
    lineage = re.findall(r'replaces <a href="([^"]+)">', live)
    assert len(lineage) == 2
    newer, older = (bank / lineage[0].removeprefix("../../banks/-home-user-proj/")).read_text(), \
        (bank / lineage[1].removeprefix("../../banks/-home-user-proj/")).read_text()
    assert "<p>Second.</p>" in newer and "<p>First.</p>" in older
    assert 'Replaced by <a href="../../../banks/-home-user-proj/project_build.html">' in newer
    assert "Replaced by" in older and "_archive/" in older.split("Replaced by", 1)[1].split("</a>", 1)[0]


def test_lineage_of_hand_made_archives_that_replace_each_other_ends(layout: Layout) -> None:
    archive = layout.bank("-home-user-proj") / "_archive"
    archive.mkdir(parents=True)
    for stamp, name, replaces in (("20261128T090000", "a.md", "b.md"), ("20261128T090000-2", "b.md", "a.md")):
        (archive / f"{stamp}_project_{name}").write_text(
            f"---\nname: {name}\ndescription: d\ntype: project\nupdated: 2026-11-28T09:00:00Z\n"
            f"replaces: project_{replaces}\n---\n\nBody.\n", encoding="utf-8")
    render_site(layout)
    assert (layout.site / "banks" / "-home-user-proj" / "_archive" / "20261128T090000-2_project_b.html").is_file()


def test_a_memory_page_says_how_often_it_reached_a_session_and_follows_the_ledger(layout: Layout) -> None:
    from sandman.recall import ledger

    build(layout)
    render_site(layout)
    page = layout.site / "banks" / "_user" / "user_prefers_short_answers.html"
    assert "Never given to a session on this machine" in page.read_text()
    ledger.append(layout, "s1", "recall", ["_user/user_prefers_short_answers.md"])
    ledger.append(layout, "s2", "prompt", ["_user/user_prefers_short_answers.md"])
    stats = render_site(layout)  # incremental: the bank's pages are rebuilt, the ledger being one of their inputs
    last = ledger.usage(layout)["_user/user_prefers_short_answers.md"].last
    assert f"Reached 2 sessions, last {last}." in page.read_text()
    assert stats.written >= 1
