"""The machine's pages (docs/site.md, "The machine's pages"): the trail by day with its commits and
revocations, shifts, breaths by repository, reports unread first, proposals, the score with its
charts, on a root made through the real verbs; every link resolves; bad and hostile input."""

from __future__ import annotations

import html
import json
import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from machine_root import BROKEN_SHIFT, HOSTILE_BREATH_ADDRESS, WEEKS, build_machine_root, write_scores
from sandman.banks.commit import bank_transaction
from sandman.machine import trail as trails
from sandman.site.gather import dump_state, load_state
from sandman.site.machine import chart
from sandman.site.render import render_site
from sandman.verbs.init import init
from test_shift import world  # noqa: F401 (a fixture)
from test_site_hostile import assert_inert


class Links(HTMLParser):
    """Every href and src of a page, and every id it defines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs) -> None:
        for key, value in attrs:
            if key in ("href", "src") and value is not None and tag != "form":
                self.links.append(value)
            if key == "id" and value:
                self.ids.add(value)


def crawl(site: Path, start: str = "index.html") -> dict[str, Links]:
    """Follow every relative href/src from ``start``; fail on a missing file or fragment.

    Returns the pages visited (site-relative path -> its Links). Links with a
    scheme (http, https, mailto) leave the site and are not followed.
    """
    pages: dict[str, Links] = {}
    todo, missing, wanted = [start], [], []
    while todo:
        path = todo.pop()
        if path in pages:
            continue
        parser = Links()
        parser.feed((site / path).read_text(encoding="utf-8"))
        pages[path] = parser
        for link in parser.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            normal = posixpath.normpath(posixpath.join(posixpath.dirname(path), unquote(parts.path))) \
                if parts.path else path
            if not (site / normal).is_file():
                missing.append(f"{path} -> {link}")
                continue
            if parts.fragment:
                wanted.append((path, link, normal, unquote(parts.fragment)))
            if normal.endswith(".html"):
                todo.append(normal)
    for path, link, target, fragment in wanted:
        if fragment not in pages[target].ids:
            missing.append(f"{path} -> {link} (no id {fragment!r})")
    assert not missing, "links that do not resolve:\n" + "\n".join(missing)
    return pages


@pytest.fixture
def machine(layout, isolated, tmp_path, fake_claude, monkeypatch):
    return build_machine_root(layout, isolated, tmp_path, fake_claude, monkeypatch)


def text_of(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))


def test_the_site_shows_the_trail_shifts_reports_and_score_and_every_link_resolves(layout, machine):
    stats = render_site(layout)
    site = layout.site

    pages = crawl(site)

    for day in machine.days:
        assert f"trail/{day}.html" in pages
    for shift in machine.shifts + [BROKEN_SHIFT]:
        assert f"shifts/{shift}.html" in pages
    for week in WEEKS:
        assert f"score/{week}.html" in pages
    assert {"reports.html", "proposals.html", "breaths/index.html", "trail/index.html"} <= pages.keys()
    assert stats.written == stats.pages

    # The trail: newest day first, the revoked event marked with its revocation, events linked to commits.
    index = (site / "trail/index.html").read_text()
    assert index.index(machine.days[-1]) < index.index(machine.days[0])
    day = (site / f"trail/{machine.revoked.day}.html").read_text()
    article = day[day.index(f'id="{machine.revoked.id}"'):]
    article = article[:article.index("</article>")]
    assert 'class="event revoked"' in day[day.index(f'id="{machine.revoked.id}"') - 40:][:80]
    assert "Revoked" in article and machine.revoke.id in article and "the curation was &lt;wrong&gt;" in article
    assert "claude-opus-4" in article and "$0.30" in article and "curate.apply" in article
    assert "trail: curate.apply" in article  # its commit in the memory root: sha and subject
    first_day = text_of(site / f"trail/{machine.days[0]}.html")
    assert "could not be read" in first_day  # the line that is not an event

    # A shift: its events together, its report, brief and handoff rendered, its commits and findings.
    shift = site / f"shifts/{machine.shifts[1]}.html"
    text = text_of(shift)
    assert "shift.start" in text and "shift.commit" in text and "shift.handoff" in text
    assert "finished" in text and "Edited NOTES.md" in text and "Findings" in text
    meta = json.loads((layout.shift_dir(machine.shifts[1]) / "meta.json").read_text())
    assert meta["commits"][0]["commit"][:12] in text
    start_link = f'href="../trail/{meta["start_event"][3:7]}-{meta["start_event"][7:9]}-{meta["start_event"][9:11]}.html#{meta["start_event"]}"'
    assert start_link in shift.read_text()
    broken = text_of(site / f"shifts/{BROKEN_SHIFT}.html")
    assert "meta.json is not JSON" in broken and "A report whose meta is broken." in broken

    # Reports unread first (nothing is marked read yet): every shift with a report.
    reports = text_of(site / "reports.html")
    for shift_id in machine.shifts:
        assert shift_id in reports
    assert "unread" in reports

    # The proposal the first night filed, approved, then taken by the second night's shift.
    filed = (site / "proposals.html").read_text()
    assert "Split &lt;script&gt;window.__pwned = 8&lt;/script&gt; the parser" in filed
    assert "taken" in filed and "worth a night" in filed
    assert f'href="shifts/{machine.shifts[1]}.html"' in filed and 'href="javascript' not in filed.lower()

    # Breaths by repository; an address that is not http(s) is text, an https one a link.
    breaths = (site / "breaths/index.html").read_text()
    assert str(machine.repos["alpha"]) in breaths and str(machine.repos["beta"]) in breaths
    assert 'href="https://example.org/changelog#2.1"' in breaths
    assert f"<code>{html.escape(HOSTILE_BREATH_ADDRESS)}</code>" in breaths
    assert "adopted" in breaths and "bearing 0.9" in breaths

    # The score: a page per week, a chart per number with its target line and gaps for None.
    week = (site / f"score/{WEEKS[2]}.html").read_text()
    assert week.count('<svg class="chart"') == 4
    quorum = week[week.index('id="quorum"'):]
    quorum = quorum[:quorum.index("</svg>")]
    assert quorum.count("<polyline") == 2  # 0.5, gap, 0.7: two runs
    assert 'class="target"' in quorum and "1 week not measured" in quorum

    # The home page leads with the unread reports and the latest week's worst three.
    home = (site / "index.html").read_text()
    assert home.index('id="unread"') < home.index('id="worst"') < home.index('id="banks"')
    assert "Worst three of 2026-W49" in home and home.count("The trims &lt;number&gt;") == 1

    for path in pages:
        if path.endswith(".html"):
            assert_inert(site / path)


def test_hostile_report_and_breath_text_is_shown_as_text(layout, machine):
    render_site(layout)
    report = (layout.site / f"shifts/{machine.shifts[0]}.html").read_text()
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in report
    assert "javascript:window.__pwned=3" in report and 'href="javascript' not in report.lower()
    breaths = (layout.site / "breaths/index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in breaths and "&lt;script&gt;window.__pwned = 4" in breaths
    assert 'href="javascript' not in breaths.lower()
    for page in ("reports.html", "index.html", f"shifts/{machine.shifts[0]}.html", "breaths/index.html"):
        assert_inert(layout.site / page)


def test_a_second_render_writes_nothing_and_a_new_event_rewrites_its_pages(layout, machine):
    render_site(layout)
    again = render_site(layout)
    assert again.written == 0
    meta = json.loads((layout.shift_dir(machine.shifts[0]) / "meta.json").read_text())
    start = trails.find(layout, meta["start_event"])
    before = (layout.site / f"trail/{start.day}.html").read_text().count('class="event revoked"')

    trails.revoke(layout, machine.shifts[0], "the whole night was wrong")
    after = render_site(layout)

    written = after.written
    assert 0 < written < after.pages
    shift = (layout.site / f"shifts/{machine.shifts[0]}.html").read_text()
    assert "This shift is revoked" in shift and "the whole night was wrong" in shift
    day = (layout.site / f"trail/{start.day}.html").read_text()  # an old day, rewritten for the revocation
    assert day.count('class="event revoked"') == before + 2  # the shift's start and handoff
    assert "the whole night was wrong" in day


def test_a_root_without_a_machine_renders_empty_machine_pages(layout):
    init(layout)
    render_site(layout)
    crawl(layout.site)
    for page, words in (("trail/index.html", "No events yet"), ("shifts/index.html", "No shifts yet"),
                        ("reports.html", "None yet"), ("score.html", "None yet"), ("breaths/index.html", "No breaths"),
                        ("proposals.html", "None yet")):
        assert words in (layout.site / page).read_text(), page
    assert 'id="unread"' not in (layout.site / "index.html").read_text()


def test_bad_trail_lines_meta_breaths_and_scores_are_shown_not_raised(layout):
    init(layout)
    with bank_transaction(layout, verb="trail", subject="bad files") as tx:
        tx.write_file(layout.trail_day("2026-12-01"), '{"truncated": \n[1, 2]\n{"id": "ev-20261201T010000Z-abcdef"}\n')
        tx.write_file(layout.shift_dir("s-20261201T2300Z") / "meta.json", "[1, 2]")
        tx.write_file(layout.root / "breath" / "breaths" / "b-20261201-0123456789.json", "{\"title\": 1")
        tx.write_file(layout.score / "2026-W48.json", "not json")
        tx.write_file(layout.score / "2026-W49.json", json.dumps({"numbers": [{"key": "k", "value": "high",
                                                                              "target": None}]}))
    (layout.root / ".reports-read").write_text("{corrupt")

    render_site(layout)

    crawl(layout.site)
    assert "3 lines of the trail could not be read" in text_of(layout.site / "trail/index.html")
    assert "meta.json is not a JSON object" in text_of(layout.site / "shifts/s-20261201T2300Z.html")
    assert "is not a breath" in text_of(layout.site / "breaths/index.html")
    assert "2026-W48.json is not a readable score" in text_of(layout.site / "score/2026-W48.html")
    assert "not measured" in text_of(layout.site / "score/2026-W49.html")


def test_a_malformed_score_file_name_never_becomes_a_page(layout):
    init(layout)
    with bank_transaction(layout, verb="score", subject="odd names") as tx:
        tx.write_file(layout.score / "2026-W49-targets.json", "{}")
        tx.write_file(layout.score / "2026-W49.md", "# a page\n")
    (layout.score / "x%2F..%2Fescape.json").write_text("{}")
    (layout.score / "2026-W50.json.bak").write_text("{}")
    render_site(layout)
    assert not (layout.site / "score").exists()
    assert "None yet" in (layout.site / "score.html").read_text()


def test_the_chart_leaves_gaps_for_weeks_not_measured_and_draws_the_target():
    drawn = chart([("2026-W47", 1.0), ("2026-W48", None), ("2026-W49", 3.0), ("2026-W50", 2.0)], 2.0, "2026-W49")
    assert len(drawn["segments"]) == 2 and drawn["segments"][0].count(",") == 1
    assert drawn["target_y"] == round((drawn["top"] + drawn["bottom"]) / 2, 1)
    assert [point["current"] for point in drawn["points"]] == [False, True, False]
    flat = chart([("2026-W47", None)], None, "2026-W47")
    assert flat["segments"] == [] and flat["target_y"] is None and flat["gaps"] == 1


def test_scores_made_before_the_score_verb_are_read_per_the_contract(layout):
    init(layout)
    write_scores(layout)
    render_site(layout)
    index = text_of(layout.site / "score.html")
    assert index.index("2026-W49") < index.index("2026-W47")
    home = text_of(layout.site / "index.html")
    assert "Worst three of 2026-W49" in home


@pytest.mark.parametrize("reply, outcome", [
    ("claude-p-json.result.success.json", "finished"),
    ("claude-p-json.result.error-shape.json", "abandoned"),
])
def test_a_shift_closed_from_a_real_claude_reply_renders(layout, world, corpus, reply, outcome):
    import subprocess
    import sys
    from datetime import timedelta

    from sandman.machine import shift as shifts
    from test_shift import TUESDAY_NIGHT

    opened = shifts.open_shift(layout, now=TUESDAY_NIGHT)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    shifts.write_current(layout, {**shifts.read_current(layout), "pid": gone.pid})
    (opened.folder / ".session.log").write_bytes((corpus / "cli" / reply).read_bytes())
    shifts.recover(layout, now=TUESDAY_NIGHT + timedelta(minutes=20))

    render_site(layout)

    crawl(layout.site)
    page = (layout.site / f"shifts/{opened.id}.html").read_text()
    assert f"<strong>{outcome}</strong>" in page
    handoff = page[page.index('id="handoff"'):]
    if outcome == "finished":
        assert "<code>logRoot" in handoff  # the real reply's markdown, rendered
    assert_inert(layout.site / f"shifts/{opened.id}.html")
    assert opened.id in text_of(layout.site / "reports.html")


def _contract_modules(monkeypatch, reports=None, unread=None, proposals=None, fail=None) -> None:
    """Stand-ins for sandman.machine.report and .proposals with the shared contract's names, so the
    pages are tested against the contract whatever those modules do today."""
    import sys
    import types
    from collections import namedtuple

    import sandman.machine
    from sandman.machine import report as real

    def info(*row):
        return real.ReportInfo(*row, *(0, 0, 0, "", None)[len(row) - 7:])

    report = types.ModuleType("sandman.machine.report")
    # The ordering and wording of `sandman report` itself (one place: machine/report.py).
    for name in ("worst_first", "severity", "counts", "UNREADABLE"):
        setattr(report, name, getattr(real, name))

    def listing(layout):
        if fail:
            raise fail
        return [info(*row) for row in reports or []]

    report.reports = listing
    report.unread = lambda layout: list(unread or [])
    report.mark_read = lambda layout, ids: pytest.fail("the site must never mark a report read")
    filed = types.ModuleType("sandman.machine.proposals")
    filed.proposals = lambda layout: list(proposals or [])
    for name, module in (("report", report), ("proposals", filed)):
        monkeypatch.setitem(sys.modules, f"sandman.machine.{name}", module)
        monkeypatch.setattr(sandman.machine, name, module, raising=False)


def test_reports_come_unread_first_in_the_report_module_s_order_and_proposals_show_their_state(layout, monkeypatch):
    from types import SimpleNamespace

    init(layout)
    with bank_transaction(layout, verb="shift", subject="two shifts") as tx:
        for shift in ("s-20261129T2300Z", "s-20261130T2300Z", "s-20261201T2300Z"):
            tx.write_file(layout.shift_dir(shift) / "meta.json", json.dumps({"id": shift, "outcome": "finished"}))
            tx.write_file(layout.shift_dir(shift) / "report.md", f"# Shift {shift}\n")
    rows = [("s-20261129T2300Z", "/code/a", "finished", "", "", "", True),
            ("s-20261130T2300Z", "/code/b", "abandoned", "", "", "", False),
            ("s-20261201T2300Z", "/code/c", "finished", "", "", "", False)]
    hostile = SimpleNamespace(id="ev-20261201T010000Z-abcdef", shift="s-20261201T2300Z", repo="/code/c",
                              title="Split <script>alert(1)</script> the parser", state="open",
                              body="[go](javascript:alert(1)) <img src=x onerror=alert(2)>",
                              opened_at="2026-12-01T01:00:00Z", decided_at=None, why=None, taken_by=None)
    taken = SimpleNamespace(id="ev-20261130T010000Z-abcdef", shift="s-20261130T2300Z", repo="/code/b",
                            title="Rework the cache", state="taken", body="", opened_at="2026-11-30T01:00:00Z",
                            decided_at="2026-11-30T09:00:00Z", why="worth it", taken_by="s-20261201T2300Z")
    _contract_modules(monkeypatch, reports=rows, unread=["s-20261130T2300Z", "s-20261201T2300Z"],
                      proposals=[taken, hostile])

    render_site(layout)

    crawl(layout.site)
    page = (layout.site / "reports.html").read_text()
    assert page.index("s-20261130T2300Z") < page.index("s-20261201T2300Z") < page.index("s-20261129T2300Z")
    assert page.count('<tr class="unread">') == 2 and page.count('<tr class="read">') == 1
    home = (layout.site / "index.html").read_text()
    assert "2 unread" in home and 'href="shifts/s-20261130T2300Z.html#report"' in home
    proposals = (layout.site / "proposals.html").read_text()
    assert proposals.index("Split &lt;script&gt;") < proposals.index("Rework the cache")  # open first
    assert "worth it" in proposals and 'href="shifts/s-20261201T2300Z.html"' in proposals
    assert_inert(layout.site / "proposals.html")


def test_a_report_listing_that_fails_is_named_on_the_page(layout, monkeypatch):
    from sandman.errors import InputError

    init(layout)
    _contract_modules(monkeypatch, fail=InputError("shifts/ cannot be listed"))
    render_site(layout)
    assert "the reports could not be read: shifts/ cannot be listed" in text_of(layout.site / "reports.html")
    assert "the reports could not be read" in text_of(layout.site / "index.html")


def test_an_unchanged_trail_day_is_taken_from_the_cache_and_a_changed_or_corrupt_one_read_again(layout, monkeypatch):
    init(layout)
    first = trails.append(layout, "curate.apply", "first")
    render_site(layout)
    assert layout.site_trail_cache.is_file()
    import sandman.site.machine as machine_pages

    read = []  # the day files the site parsed (other readers of the trail, such as proposals, aside)
    real = machine_pages._parse_day
    monkeypatch.setattr(machine_pages, "_parse_day", lambda data, path: (read.append(path), real(data, path))[1])

    render_site(layout)
    assert read == []  # nothing changed: no day file read or parsed

    second = trails.append(layout, "curate.apply", "second")
    render_site(layout)
    assert len(read) == 1 and second.id in (layout.site / f"trail/{second.day}.html").read_text()

    layout.site_trail_cache.write_bytes(dump_state({"format": 1, "days": {first.day: {"identity": 3, "events": 7}}}))
    render_site(layout)
    assert len(read) == 2 and first.id in (layout.site / f"trail/{first.day}.html").read_text()
    layout.site_trail_cache.write_text("not marshal")
    render_site(layout)
    assert len(read) == 3
    assert load_state(layout.site_trail_cache)["format"] == 1  # rebuilt


@pytest.mark.parametrize("address, link", [
    ("https://example.org/changelog#2.1", True), ("http://example.org/", True), ("HTTPS://EXAMPLE.ORG/", True),
    ("javascript:alert(1)", False), ("JaVaScRiPt:alert(1)", False), ("java\tscript:alert(1)", False),
    ("data:text/html;base64,PHNjcmlwdD4=", False), ("mailto:someone@example.org", False),
    ("ftp://example.org/file", False), ("//example.org/x", False), ("/etc/passwd", False),
    ("feed:https://example.org/rss", False), ("https:example.org", False),
])
def test_a_breath_address_is_a_link_only_when_it_is_http_or_https(address, link):
    from sandman.site.machine import web_address

    assert web_address(address) is link


def test_the_score_verb_s_weeks_render_with_their_numbers_tables_and_charts(layout, machine):
    from sandman.machine import score

    for week in ("2026-W48", "2026-W49"):
        score.write(layout, week)
    render_site(layout)

    crawl(layout.site)
    data = json.loads(layout.week_score_json("2026-W49").read_text())
    page = (layout.site / "score/2026-W49.html").read_text()
    assert page.count('<svg class="chart"') == len(data["numbers"]) > 0
    text = text_of(layout.site / "score/2026-W49.html")
    for number in data["numbers"]:
        assert f'id="{number["key"]}"' in page and number["label"] in text
    for table in data["tables"]:
        assert table["title"] in text
    home = text_of(layout.site / "index.html")
    worst = [n["label"] for key in data["worst"] for n in data["numbers"] if n["key"] == key]
    assert worst and all(label in home[home.index("Worst three of 2026-W49"):] for label in worst)
    assert_inert(layout.site / "score/2026-W49.html")


def test_the_site_shows_sandman_report_s_read_marks_and_never_marks_one(layout, machine):
    from sandman.machine import report

    render_site(layout)
    assert not layout.reports_read.exists()  # rendering marked nothing read
    assert "3 unread" in text_of(layout.site / "index.html")

    report.mark_read(layout, [machine.shifts[0]])
    marks = layout.reports_read.read_bytes()
    render_site(layout)

    assert layout.reports_read.read_bytes() == marks
    page = (layout.site / "reports.html").read_text()
    read_row = page[page.index('<tr class="read">'):]
    assert machine.shifts[0] in read_row[:read_row.index("</tr>")]
    assert page.index(machine.shifts[1]) < page.index(machine.shifts[0])  # unread first
    home = text_of(layout.site / "index.html")
    assert "2 unread" in home and machine.shifts[0] not in home[:home.index("Worst three")]

    layout.reports_read.write_text("{corrupt")  # nothing read, never a traceback
    render_site(layout)
    assert "3 unread" in text_of(layout.site / "index.html")


def test_served_site_goes_stale_after_a_read_mark_is_fixed(machine, layout) -> None:
    """A served index follows the read marks: `report serve` re-renders before answering."""
    import http.client
    import threading

    from sandman.machine import report
    from sandman.verbs.report import open_server

    server, _ = open_server(layout, host="127.0.0.1", port=0, public=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def index() -> str:
        connection = http.client.HTTPConnection(*server.server_address[:2], timeout=30)
        try:
            connection.request("GET", "/index.html")
            response = connection.getresponse()
            assert response.status == 200
            return response.read().decode("utf-8")
        finally:
            connection.close()

    try:
        assert 'id="unread"' in index()
        report.mark_read(layout, report.unread(layout))
        assert 'id="unread"' not in index()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_failing_render_keeps_the_last_good_site_served_and_is_journaled(layout) -> None:
    from sandman.site.fresh import Refresher
    from sandman.verbs.init import init

    init(layout)
    calls = []

    def render(_layout):
        calls.append(1)
        raise OSError("disk full")

    refresher = Refresher(layout, render, every=3600.0)
    refresher.rendered()
    assert refresher.refresh() is False and calls == []  # nothing changed: no render
    (layout.root / ".reports-read").write_text("{}")
    assert refresher.refresh() is False and calls == [1]  # changed: tried, failed, did not raise
    assert "serve-render-failed" in "".join(path.read_text() for path in layout.trace.glob("report-*.log"))


def test_report_entries_show_only_id_outcome_and_repo_fixed_they_show_counts_revoked_and_worst_first(layout, monkeypatch):
    init(layout)
    shifts = ("s-20261128T2300Z", "s-20261129T2300Z", "s-20261130T2300Z", "s-20261201T2300Z")
    with bank_transaction(layout, verb="shift", subject="four shifts") as tx:
        for shift in shifts:
            tx.write_file(layout.shift_dir(shift) / "meta.json", json.dumps({"id": shift, "outcome": "finished"}))
            tx.write_file(layout.shift_dir(shift) / "report.md", f"# Shift {shift}\n")
    trails.append(layout, "shift.start", "a shift", shift=shifts[3], repo="/code/d")
    trails.revoke(layout, shifts[3], "it broke the build")
    # shift, repo, outcome, opened, closed, path, read, commits, unresolved, findings, handoff, problem
    rows = [(shifts[3], "/code/d", "handed-off", "", "", "", False, 3, 1, 0, "", None),  # newest, one not resolving
            (shifts[2], "/code/c", "finished", "", "", "", False, 1, 0, 0, "", None),    # good news
            (shifts[1], "/code/b", "finished", "", "", "", False, 0, 0, 2, "", None),    # findings
            (shifts[0], "/code/a", "abandoned", "", "", "", False, 0, 0, 0, "", None)]   # oldest, worst
    _contract_modules(monkeypatch, reports=rows, unread=list(reversed(shifts)))
    render_site(layout)
    crawl(layout.site)
    for page in ("reports.html", "index.html"):
        text = text_of(layout.site / page)
        order = [text.index(shift) for shift in (shifts[0], shifts[3], shifts[1], shifts[2])]
        assert order == sorted(order), page  # abandoned, then newest first among the troubled, then the rest
        assert "3 commits (1 not resolving) · 0 findings" in text and "0 commits · 2 findings" in text, page
        revoked_row = text[text.index(shifts[3]):text.index(shifts[1])]
        assert "revoked" in revoked_row, page
        assert "revoked" not in text[text.index(shifts[1]):text.index(shifts[1]) + 200], page


def test_home_worst_three_were_never_explained_fixed_they_say_what_they_are_with_direction_and_target(layout):
    init(layout)
    write_scores(layout)
    render_site(layout)
    home = text_of(layout.site / "index.html")
    assert "The three measured numbers furthest from their targets" in home
    assert "70%, target ≥ 80% (higher is better)" in home
    assert "4, target ≤ 0 (lower is better)" in home
    week = text_of(layout.site / f"score/{WEEKS[2]}.html")
    assert "70%, target ≥ 80%" in week


def test_chart_range_label_overlapped_the_last_dot_and_axis_used_fractions_fixed_unit_labels_and_week_ticks():
    drawn = chart([("2026-W47", 1.0), ("2026-W48", None), ("2026-W49", 0.9)], 0.8, "2026-W49", "share")
    assert (drawn["high_shown"], drawn["low_shown"]) == ("100%", "80%")
    assert [point["shown"] for point in drawn["points"]] == ["100%", "90%"]
    assert [(tick["week"], tick["anchor"]) for tick in drawn["ticks"]] == [("2026-W47", "start"), ("2026-W49", "end")]
    # Every dot is inside the plot, below the top margin, left of the right one and above the week ticks.
    for point in drawn["points"]:
        assert drawn["left"] <= point["x"] <= drawn["right"] and drawn["top"] <= point["y"] <= drawn["bottom"]
    assert drawn["bottom"] + 10 < drawn["height"]
    dollars = chart([("2026-W49", 2.0)], 2.0, "2026-W49", "USD")
    assert dollars["high_shown"] == "$3.00" and [tick["anchor"] for tick in dollars["ticks"]] == ["middle"]


def test_shift_with_unreadable_meta_said_open_in_its_header_fixed_it_says_unreadable(machine, layout):
    render_site(layout)
    page = (layout.site / f"shifts/{BROKEN_SHIFT}.html").read_text()
    lede = text_of_html(page[page.index('<p class="lede">'):page.index("</p>", page.index('<p class="lede">'))])
    assert "unreadable" in lede and "open" not in lede
    assert "meta.json is not JSON" in text_of_html(page)
    index = text_of(layout.site / "shifts/index.html")
    assert "open" not in index[index.index(BROKEN_SHIFT):index.index(BROKEN_SHIFT) + 120]


def text_of_html(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def test_shift_report_showed_a_stale_proposal_state_fixed_it_says_snapshot_and_links_the_live_state(machine, layout):
    from sandman.machine import proposals

    render_site(layout)
    crawl(layout.site)  # every proposals.html#<id> anchor exists
    (proposal,) = proposals.proposals(layout)
    assert proposal.state == "taken"
    anchor = f'href="../proposals.html#{proposal.id}"'
    carrier = (layout.site / f"shifts/{proposal.taken_by}.html").read_text()
    assert "as the shift wrote it at handoff" in text_of_html(carrier)
    assert "This shift's brief carried the approved proposal(s)" in text_of_html(carrier)
    assert anchor in carrier and "taken" in text_of_html(carrier[carrier.index(anchor):][:600])
    day = proposal.opened_at[:10]
    trail_day = (layout.site / f"trail/{day}.html").read_text()
    assert f'href="../proposals.html#{proposal.id}"' in trail_day


def test_trail_event_listed_only_memory_root_commits_fixed_it_lists_the_repository_commits_trail_show_finds(
        machine, layout):
    from sandman.verbs import trail as trail_verb

    render_site(layout)
    whole = trails.read(layout)
    checked = 0
    for event in whole.events:
        if whole.descendants(event.id):
            continue  # trail show also lists a descendant's commits; the site lists those on the descendant
        page = (layout.site / f"trail/{event.day}.html").read_text()
        start = page.index(f'id="{event.id}"')
        row = text_of_html(page[start:page.index("</article>", start)])
        for repo, commit, subject in trail_verb.show(layout, event.id).commits:
            if repo != str(layout.root):
                assert repo in row and commit[:12] in row and subject in row, event.id
                checked += 1
    assert checked, "the machine root's shifts commit in their repositories with an Event: trailer"
