"""Hostile memory text cannot script, restyle or disguise the site (docs/site.md, "Safety")."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.memory import Memory
from sandman.layout import Layout
from sandman.site.markup import markdown_parser, safe_link, visible
from sandman.site.render import render_site

PROJECT = "/home/user/proj"
PAYLOADS = [
    "<script>window.__pwned = 1</script>",
    "<img src=x onerror=\"window.__pwned = 2\">",
    "<iframe src=\"https://evil.example/\"></iframe>",
    "<style>body { display: none }</style>",
    "<a href=\"javascript:window.__pwned = 3\">raw link</a>",
    "[md link](javascript:window.__pwned=4)",
    "[upper](JAVASCRIPT:alert(1))",
    "[entity](&#106;avascript:alert(1))",
    "[angle](<java\tscript:alert(1)>)",
    "[vb](vbscript:msgbox(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![image](javascript:alert(1))",
    "<javascript:alert(1)>",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "{{ 7 * 7 }} {% raw %} ${7*7}",
    "\"><script>alert(1)</script>",
]


class Tags(HTMLParser):
    """Collects every start tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data) -> None:
        self.text.append(data)


def parse(page: Path) -> Tags:
    parser = Tags()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def assert_inert(page: Path) -> None:
    """No script but ours, no event handlers, no embedded frames or styles, no dangerous links."""
    for tag, attrs in parse(page).tags:
        assert tag not in ("iframe", "style", "object", "embed", "base", "form") or (
            tag == "form" and attrs.get("action", "").endswith("search.html")), (page, tag)
        assert not any(name.startswith("on") for name in attrs), (page, tag, attrs)
        if tag == "script":
            assert attrs.get("src", "").endswith(("search-index.js", "static/search.js")), (page, attrs)
        for name in ("href", "src", "action"):
            if attrs.get(name) is not None:
                assert safe_link(attrs[name]), (page, tag, attrs)


def test_hostile_bodies_render_as_text(layout: Layout) -> None:
    body = "\n\n".join(PAYLOADS) + "\n"
    commit_memory(layout, Memory(name="Hostile", description="Every trick.", type="project", body=body),
                  directory=PROJECT, verb="remember")
    render_site(layout)
    for page in layout.site.rglob("*.html"):
        assert_inert(page)
    page = layout.site / "banks" / "-home-user-proj" / "project_hostile.html"
    html = page.read_text()
    text = "".join(parse(page).text)
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "<script>window" not in html
    assert "[md link](javascript:window.__pwned=4)" in text  # shown, not a link
    body = html.split('<section class="prose body">', 1)[1].split("</section>", 1)[0]
    assert "{{ 7 * 7 }} {% raw %} ${7*7}" in text and "49" not in body  # the body only: blob ids in the history may hold "49"
    assert 'href="javascript' not in html.lower()


def test_hostile_names_and_fields_are_escaped_everywhere(layout: Layout) -> None:
    name = '"><script>alert(1)</script>'
    commit_memory(layout, Memory(name=name, description="<b>bold</b> & <i>co</i>", type="project",
                                 body="Body.\n"), directory=PROJECT, verb="remember")
    render_site(layout)
    for page in layout.site.rglob("*.html"):
        assert_inert(page)
        assert "<b>bold</b>" not in page.read_text()
    index = (layout.site / "search-index.js").read_text()
    prefix, suffix = "window.sandmanSearchIndex = ", ";\n"
    assert index.startswith(prefix) and index.endswith(suffix)
    items = json.loads(index[len(prefix):-len(suffix)])
    assert items[0]["n"] == name  # data for search.js, which sets it as text


def test_control_and_bidi_characters_are_shown_as_marks(layout: Layout) -> None:
    bank = layout.bank("-home-user-proj")
    text = ('---\nname: "abc\\u202edef\\x07"\ndescription: "first\\u2066second\\u200f"\ntype: project\n---\n\n'
            "Body with \u202e reversed, \u2028 a separator and a bell \x07 and an escape \x1b[31m.\n")
    with bank_transaction(layout, verb="remember", subject="hand-made") as tx:
        tx.write_file(bank / "project_controls.md", text)
    render_site(layout)
    page = (bank.parent.parent / ".site" / "banks" / "-home-user-proj" / "project_controls.html").read_text()
    for char in ("\u202e", "\u2066", "\u200f", "\u2028", "\x07", "\x1b"):
        assert char not in page, repr(char)
    for mark in ("‹U+202E›", "‹U+2066›", "‹U+200F›", "‹U+2028›", "‹U+0007›", "‹U+001B›"):
        assert mark in page, mark
    assert "<h1>abc‹U+202E›def‹U+0007›</h1>" in page


def test_a_very_long_body_renders(layout: Layout) -> None:
    word = "x" * 30_000
    brackets = "[" * 30_000
    commit_memory(layout, Memory(name="Long", description="Long.", type="project", body=f"{word}\n\n{brackets}\n"),
                  directory=PROJECT, verb="remember")
    render_site(layout)
    page = (layout.site / "banks" / "-home-user-proj" / "project_long.html").read_text()
    assert word in page and brackets in page


def test_a_hand_edited_file_over_the_size_limit_still_renders(layout: Layout) -> None:
    bank = layout.bank("-home-user-proj")
    body = "A line of text that repeats. " * 20_000  # 580,000 characters, past the 64 KiB write limit
    with bank_transaction(layout, verb="remember", subject="hand-made") as tx:
        tx.write_file(bank / "project_huge.md", f"---\nname: Huge\ndescription: Huge.\ntype: project\n---\n\n{body}\n")
    render_site(layout)
    assert body.strip() in (layout.site / "banks" / "-home-user-proj" / "project_huge.html").read_text()


@pytest.mark.parametrize("url, safe", [
    ("https://example.org/a", True), ("http://example.org", True), ("mailto:someone@example.org", True),
    ("docs/ci.md", True), ("#section", True), ("../x.html", True), ("?q=a", True),
    ("javascript:alert(1)", False), ("JavaScript:alert(1)", False), (" javascript:alert(1)", False),
    ("java\tscript:alert(1)", False), ("java\nscript:alert(1)", False), ("\x01javascript:x", False),
    ("vbscript:x", False), ("data:text/html,x", False), ("file:///etc/passwd", False),
    ("//evil.example/x", False), ("https:evil", False), ("a:b", False),
])
def test_safe_link(url: str, safe: bool) -> None:
    assert safe_link(url) is safe


def test_markdown_keeps_raw_html_as_text() -> None:
    html = markdown_parser().render("<div onclick=x>hi</div>\n\ntext <span>inline</span>\n")
    assert "<div" not in html and "<span>" not in html and "&lt;div onclick=x&gt;" in html


def test_visible_marks_only_the_invisible() -> None:
    assert visible("tab\tnewline\ncr\r é ü 中文 emoji 🙂") == "tab\tnewline\ncr‹U+000D› é ü 中文 emoji 🙂"
    assert visible("a\u202eb\x00c\x7f\x9b") == "a‹U+202E›b‹U+0000›c‹U+007F›‹U+009B›"


def test_diff_lines_split_at_newlines_only() -> None:
    from sandman.site.markup import diff_lines

    diff = "diff --git a/x b/x\n@@ -1 +1 @@\n-a\x0cb\n+a\u2028b\n c\x1cd\n"
    assert diff_lines(diff) == [("meta", "diff --git a/x b/x"), ("hunk", "@@ -1 +1 @@"), ("del", "-a\x0cb"),
                                ("add", "+a\u2028b"), ("ctx", " c\x1cd")]
    assert diff_lines("") == []


HOSTILE_TEXTS = ["", "plain", "<script>alert('x')</script> & \"q\"", "&amp; &lt; ‹U+202E›", "a\x00b\x07c\x0cd\re",
                 "bidi \u202e\u2066\u200f\u061c sep \u2028\u2029", "c1 \x85\x9b del \x7f tab\tend", "中文 🙂"]


def test_diff_html_prints_each_line_as_the_template_loop_did() -> None:
    # diff_html replaced `{% for class, line in diff | diff_lines %}<span class="{{ class }}">{{ line }}</span>…`;
    # it marks and escapes the lines joined, once, which must equal marking and escaping each line.
    from sandman.site.markup import diff_html, environment

    loop = environment().from_string('{% for class, line in diff | diff_lines %}<span class="{{ class }}">{{ line }}'
                                     '</span>{{ "\\n" if not loop.last else "" }}{% endfor %}')
    lines = ["diff --git a/x b/x", "--- a/x", "@@ -1 +1 @@"] + [prefix + text for text in HOSTILE_TEXTS
                                                                for prefix in ("+", "-", " ")]
    for diff in ("", "\n", "\n".join(lines), "\n".join(lines) + "\n", "\n".join(HOSTILE_TEXTS) + "\n\n"):
        assert str(diff_html(diff)) == loop.render(diff=diff), repr(diff)
    assert "<script>" not in diff_html("\n".join(lines)) and "‹U+0007›" in diff_html("\n".join(lines))


def test_definitions_print_each_value_as_the_template_loop_did() -> None:
    from markupsafe import Markup

    from sandman.site.markup import definitions, environment

    loop = environment().from_string("{% for key, value in pairs %}\n<dt>{{ key }}</dt><dd>{{ value }}</dd>\n"
                                     "{% endfor %}\n")
    pairs = [[text, text[::-1]] for text in HOSTILE_TEXTS] + [["n", 3], ["none", None], ["list", ["<a>", 1]],
                                                              ["markup", Markup("<b>kept</b>")]]
    assert str(definitions(pairs)) == loop.render(pairs=pairs)
    assert "<script>" not in definitions(pairs) and "<b>kept</b>" in definitions(pairs)


def test_links_print_as_escaped_text_would() -> None:
    # href and link return markup (not escaped again): it must be what `{{ root ~ quote(target) }}` printed.
    from urllib.parse import quote

    from sandman.site.markup import environment, shown

    env = environment()
    for root in ("", "../", "../../", "<\"&'\x07>/"):
        for target in HOSTILE_TEXTS + ["banks/a b/x.html", "a\"><script>.html", "%41&amp;"]:
            assert env.from_string("{{ t | href }}").render(root=root, t=target) == shown(root + quote(target))
            assert (env.from_string("{{ t | link }}").render(root=root, t=[target, "f <\"#>"])
                    == shown(root + quote(target) + "#" + quote("f <\"#>", safe="")))


def test_visible_str_is_visible() -> None:
    # The templates' finalize uses visible_str for a plain str; it must mark exactly what visible marks.
    from sandman.marks import visible_str

    for text in HOSTILE_TEXTS + ["".join(map(chr, range(0x00, 0xA0))) + "\u061c\u200e\u200f\u2028\u2029\u202a\u202e"
                                 "\u2066\u2069"]:
        assert visible_str(text) == visible(text)
