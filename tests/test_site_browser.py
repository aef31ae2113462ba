"""The site in a real browser: playwright driving Debian's chromium (/usr/bin/chromium).

Skipped, with the reason printed by ``pytest -rs``, when chromium or playwright
is missing (``.ci/run`` installs both). Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO
from sandman.layout import Layout
from sandman.site.serve import url
from sandman.verbs.report import open_server
from site_fixture import build

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = REPO / "test-artifacts"
HOSTILE_PAGE = "banks/-home-user-proj/project_hostile_b_name_b_co.html"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); the browser test needs it")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed; pip install -e '.[test]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def served(layout: Layout) -> Iterator[str]:
    build(layout)
    server, _ = open_server(layout, host="127.0.0.1", port=0, public=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url(server)
    server.shutdown()
    server.server_close()
    thread.join()


class Watched:
    """A page whose dialogs, uncaught errors and console errors are recorded."""

    def __init__(self, browser) -> None:
        self.page = browser.new_page(viewport={"width": 1100, "height": 900})
        self.page.set_default_timeout(15_000)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))

    def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_home_bank_memory_history_and_search(browser, served: str) -> None:
    from playwright.sync_api import expect

    watched = Watched(browser)
    page = watched.page
    page.goto(served)
    expect(page.locator("h1")).to_have_text("The memory root")
    expect(page.locator("#queue")).to_contain_text("Fix the <flaky> upload test")
    watched.screenshot("site-home.png")

    page.get_by_role("link", name="/home/user/proj").click()
    expect(page).to_have_url(re.compile(r"/banks/-home-user-proj/index\.html$"))
    page.locator("#memories").get_by_role("link", name="Build with make").click()
    expect(page).to_have_url(re.compile(r"/banks/-home-user-proj/project_build_with_make\.html$"))
    expect(page.locator("h1")).to_have_text("Build with make")
    expect(page.locator("#lineage")).to_contain_text("replaces Build with make")

    page.get_by_role("link", name="History (2 commits)").click()
    expect(page).to_have_url(re.compile(r"#history$"))
    history = page.locator("#history")
    expect(history.locator("h3")).to_have_text(["reflect: Build with make", "remember: Build with make"])
    expect(history.locator("pre.diff").first).to_contain_text("+Run `make -j8`; the build is parallel-safe.")
    expect(history.locator(".diff .add").first).to_be_visible()
    watched.screenshot("site-memory-history.png")

    page.locator("header input[name=q]").fill("parallel-safe")
    page.locator("header input[name=q]").press("Enter")
    expect(page).to_have_url(re.compile(r"/search\.html\?q=parallel-safe$"))
    results = page.locator("#search-results li")
    expect(results).to_have_count(1)
    expect(results.first.get_by_role("link")).to_have_text("Build with make")
    page.locator("#search-input").fill("sentences")  # the search page searches as you type
    expect(results.first.get_by_role("link")).to_have_text("Prefers short answers")
    page.locator("#search-input").fill("parallel-safe")
    watched.screenshot("site-search.png")
    results.first.get_by_role("link").click()
    expect(page.locator("h1")).to_have_text("Build with make")
    assert watched.dialogs == [] and watched.errors == []


def test_a_script_in_a_memory_body_does_not_run(browser, served: str) -> None:
    from playwright.sync_api import expect

    watched = Watched(browser)
    page = watched.page
    page.goto(served + HOSTILE_PAGE)
    body = page.locator("section.body")
    expect(body).to_contain_text("Hostile text <script>window.__pwned = 1</script> stays text.")
    expect(body).to_contain_text("[click me](javascript:window.__pwned=3)")
    expect(body.get_by_role("link")).to_have_count(0)
    expect(body.locator("img")).to_have_count(0)
    expect(page.locator("h1")).to_have_text("Hostile <b>name</b> & co")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    watched.screenshot("site-hostile.png")

    page.goto(served + "search.html?q=hostile")
    expect(page.locator("#search-results li")).to_have_count(1)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert watched.dialogs == [] and watched.errors == []


def test_the_folder_works_opened_from_disk(browser, layout: Layout) -> None:
    from playwright.sync_api import expect

    from sandman.site.render import render_site

    build(layout)
    render_site(layout)
    watched = Watched(browser)
    page = watched.page
    page.goto((layout.site / "index.html").as_uri())
    page.get_by_role("link", name="user-wide memories").click()
    page.get_by_role("link", name="Prefers short answers").first.click()
    expect(page.locator("h1")).to_have_text("Prefers short answers")
    page.goto((layout.site / "search.html").as_uri() + "?q=sentences")
    expect(page.locator("#search-results li")).to_have_count(1)
    assert page.evaluate("getComputedStyle(document.body).margin") == "0px"  # the stylesheet applied
    assert watched.dialogs == [] and watched.errors == []


def test_an_entry_reflect_wrote_renders_and_links_its_sources(browser, layout: Layout, fake_claude, monkeypatch) -> None:
    from playwright.sync_api import expect

    from reflect_helpers import DAY, LOG_MODEL, NOW, entry_reply, remember_on
    from sandman.verbs.reflect import reflect

    monkeypatch.setenv("SANDMAN_MIND_LOG", LOG_MODEL)
    remember_on(layout, f"{DAY}T09:00", "Build with make", "Run `make -j8`.\n")
    fake_claude.answer(LOG_MODEL, entry_reply(
        kind="landfall", title="First sight of the proj bank",
        body="I learned to **build with make**.\n\n<script>window.__pwned = 1</script>\n"))
    assert reflect(layout, now=NOW).entry.decision == "written"
    server, _ = open_server(layout, host="127.0.0.1", port=0, public=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        watched = Watched(browser)
        page = watched.page
        page.goto(url(server))
        voyage = page.locator("#voyage")
        expect(voyage).to_contain_text("landfall — First sight of the proj bank")
        voyage.get_by_role("link", name=DAY).click()
        expect(page.locator("h1")).to_have_text("First sight of the proj bank")
        expect(page.locator(".lede")).to_have_text(f"{DAY} · day 1 · landfall")
        expect(page.locator("section.body strong")).to_have_text("build with make")
        expect(page.locator("section.body")).to_contain_text("<script>window.__pwned = 1</script>")
        expect(page.locator("p.next")).to_contain_text("Watch the build.")
        watched.screenshot("site-voyage-entry.png")
        page.get_by_role("link", name="-home-user-proj/project_build_with_make.md").click()
        expect(page.locator("h1")).to_have_text("Build with make")
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert watched.dialogs == [] and watched.errors == []
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def machine_served(layout: Layout, isolated, tmp_path, fake_claude, monkeypatch) -> Iterator[tuple[str, object]]:
    from machine_root import build_machine_root

    built = build_machine_root(layout, isolated, tmp_path, fake_claude, monkeypatch)
    server, _ = open_server(layout, host="127.0.0.1", port=0, public=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url(server), built
    server.shutdown()
    server.server_close()
    thread.join()


LINKS_JS = """() => Array.from(document.querySelectorAll('a[href], link[href], script[src], img[src]'))
    .map(element => element.href || element.src)"""
IDS_JS = "() => Array.from(document.querySelectorAll('[id]')).map(element => element.id)"


def browser_crawl(watched: Watched, start: str) -> dict[str, set[str]]:
    """Visit every page of the site reachable from ``start`` in the browser; every link, script,
    stylesheet and image must load (HTTP 200) and every fragment must name an id on its page.
    Returns each page visited with its ids."""
    page = watched.page
    origin = start.split("/", 3)[:3]
    pages: dict[str, set[str]] = {}
    todo, fragments, missing, fetched = [start], [], [], set()
    while todo:
        address = todo.pop()
        if address in pages:
            continue
        response = page.goto(address)
        if response is None or response.status != 200:
            missing.append(f"{address}: {response.status if response else 'no response'}")
            pages[address] = set()
            continue
        pages[address] = set(page.evaluate(IDS_JS))
        for link in page.evaluate(LINKS_JS):
            if link.split("/", 3)[:3] != origin:
                continue  # leaves the site (an https breath address)
            target, _, fragment = link.partition("#")
            if fragment:
                fragments.append((address, target, fragment))
            if target.endswith(".html") or target.endswith("/"):
                todo.append(target)
            elif target not in fetched:
                fetched.add(target)
                if page.request.get(target).status != 200:
                    missing.append(f"{address} -> {target}")
    for address, target, fragment in fragments:
        if target in pages and fragment not in pages[target]:
            missing.append(f"{address} -> {target}#{fragment} (no such id)")
    assert not missing, "\n".join(missing)
    return pages


def test_the_machine_pages_show_the_trail_reports_and_score_and_every_link_resolves(browser, machine_served) -> None:
    from playwright.sync_api import expect

    served, built = machine_served
    watched = Watched(browser)
    page = watched.page
    page.goto(served)
    unread = page.locator("#unread")
    for shift in built.shifts:
        expect(unread).to_contain_text(shift)
    expect(page.locator("#worst li")).to_have_count(3)
    expect(page.locator("#worst")).to_contain_text("The trims <number>")
    watched.screenshot("site-machine-home.png")

    unread.get_by_role("link", name=built.shifts[0]).click()
    expect(page.locator("main > h1")).to_have_text(f"Shift {built.shifts[0]}")
    report = page.locator("#report")
    expect(report).to_contain_text("Hostile <script>window.__pwned = 1</script> text.")
    expect(report).to_contain_text("[click me](javascript:window.__pwned=3)")
    expect(report.locator("img")).to_have_count(0)
    expect(page.locator("#events article.event")).to_have_count(4)  # start, commit, proposal, handoff together
    watched.screenshot("site-machine-shift.png")

    page.locator("header nav").get_by_role("link", name="Trail").click()
    expect(page.locator("main > h1")).to_have_text("Trail")
    page.get_by_role("link", name=built.revoked.day).click()
    revoked = page.locator(f"article.event.revoked#{built.revoked.id}")
    expect(revoked).to_contain_text("Revoked by")
    expect(revoked).to_contain_text("the curation was <wrong>")
    assert "line-through" in revoked.locator(".event-head").evaluate("e => getComputedStyle(e).textDecorationLine")
    watched.screenshot("site-machine-trail.png")
    page.locator("a[rel=next]").click()  # its child, the next day: revoked through its parent
    expect(page.locator("article.event.revoked")).to_have_count(1)
    expect(page.locator("article.event.revoked")).to_contain_text(built.revoke.id)

    page.locator("header nav").get_by_role("link", name="Score").click()
    page.get_by_role("link", name="2026-W49").click()
    charts = page.locator("svg.chart")
    expect(charts).to_have_count(4)
    box = charts.first.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 30
    expect(page.locator("#quorum polyline")).to_have_count(2)  # a gap for the week not measured
    watched.screenshot("site-machine-score.png")

    page.locator("header nav").get_by_role("link", name="Breaths").click()
    expect(page.locator("a[href^='javascript' i]")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("javascript:window.__pwned=5")
    expect(page.get_by_role("link", name="https://example.org/changelog#2.1")).to_have_count(1)
    watched.screenshot("site-machine-breaths.png")
    page.locator("header nav").get_by_role("link", name="Shifts").click()
    expect(page.locator("main tbody tr")).to_have_count(3)
    watched.screenshot("site-machine-shifts.png")
    page.locator("header nav").get_by_role("link", name="Proposals").click()
    proposal = page.locator("article.proposal")
    expect(proposal).to_have_count(1)
    expect(proposal).to_contain_text("Split <script>window.__pwned = 8</script> the parser")
    expect(proposal.locator(".state")).to_have_text("taken")
    expect(page.locator("a[href^='javascript' i]")).to_have_count(0)
    watched.screenshot("site-machine-proposals.png")

    visited = browser_crawl(watched, served)
    assert len(visited) > 20
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert watched.dialogs == [] and watched.errors == []
