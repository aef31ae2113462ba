"""Hostile memory text through commit, recall and the site (issue 8, "Hardening": bad input).

Memory text comes from model output, hand edits and other machines. Each
hostile memory is committed, read back, recalled and rendered:

- what commit stores parses back exactly as the bank format promises (name and
  description one clean line, the body without NUL or bidi overrides), and
  nothing in it becomes a frontmatter key;
- what commit cannot store is refused before anything is written, with the
  message a person sees (a 1 MB body, a 10,000-character name, a lone
  surrogate);
- recall stays within its budget, one line per index entry, whatever the text;
- the site shows every character and runs none: no script but its own, no
  ``javascript:`` or ``data:`` link, control and bidi characters as marks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hardening import assert_consistent
from helpers import git, sandman
from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.frontmatter import parse
from sandman.banks.listing import index_entries
from sandman.banks.memory import Memory, clean_body, one_line, read_memory
from sandman.banks.names import bank_name
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.site.render import render_site
from sandman.verbs.recall import recall
from test_site_hostile import assert_inert

PROJECT = "/home/user/proj"
KEYS = ["name", "description", "type", "created", "updated", "source", "witnesses"]

# (label, name, description, body)
HOSTILE = [
    ("html", "<script>alert(1)</script>", '<img src=x onerror="alert(1)">',
     "<script>alert(2)</script>\n<iframe src=//evil.example></iframe>\n<a href=\"javascript:alert(3)\">a</a>\n"),
    ("links", "[click](javascript:alert(1))", "[data](data:text/html;base64,PHNjcmlwdD4=)",
     "[x](javascript:alert(1)) [y](data:text/html,<script>alert(1)</script>) <javascript:alert(1)>\n"
     "[z](JaVaScRiPt:alert(1)) [w](java\tscript:alert(1)) ![i](data:image/svg+xml,<svg onload=alert(1)>)\n"),
    ("controls", "bell\x07 and escape\x1b[31m red", "tab\there\x0bvertical\x0cfeed",
     "ansi \x1b[2J clear\x07\x08 back\r\nwindows\rold mac\x1cfile sep\x85next line\u2028line sep\n"),
    ("bidi", "invoice\u202egnp.exe", "\u2066isolated\u2069 and \u200fmarked",
     "text \u202ereversed\u202c and \u2067isolated\u2069 \u061calm\n"),
    ("nul", "nul\x00in the name", "nul\x00in the description", "body\x00with a nul\n"),
    ("punctuation", "!!!???...---", "***", "@@@\n"),
    ("yaml", "---", "key: value", "---\nkey: value\n---\n!!python/object:os.system ['echo pwned']\n"),
    ("yaml tags", "!!python/object/apply:os.system ['id']", "&anchor *alias {a: 1} [x, y]",
     "%YAML 1.1\n--- !!python/object\n...\n"),
    ("quotes", "'single' \"double\" \\back\\slash", "# a comment? | > folded",
     "name: injected\ntype: user\nreplaces: MEMORY.md\n"),
]


def _commit(layout: Layout, name: str, description: str, body: str, directory: str | None = PROJECT) -> Path:
    memory = Memory(name=name, description=description, type="project" if directory else "user", body=body)
    return commit_memory(layout, memory, directory=directory, verb="remember").path


def _hand_made(layout: Layout) -> None:
    """A memory edited by hand (or by another tool): YAML escapes put line breaks, controls and
    bidi overrides where commit would never write them."""
    text = ('---\nname: "hand\\nmade\\u202e name\\u0085x"\ndescription: "one\\u2028two\\rthree\\x07"\n'
            "type: project\n---\n\nHand made \u202e body\x00 with a bell \x07.\n")
    with bank_transaction(layout, verb="remember", subject="hand-made") as tx:
        folder = tx.bank(bank_name(PROJECT))  # touched: its MEMORY.md is regenerated
        tx.write_file(folder / "project_hand_made.md", text)


@pytest.mark.parametrize("case", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_a_hostile_memory_is_stored_as_the_format_says_and_parses_back_exactly(layout: Layout, case) -> None:
    _, name, description, body = case
    path = _commit(layout, name, description, body)
    data = path.read_bytes()
    memory = read_memory(path)
    assert (memory.name, memory.description, memory.body) == (one_line(name), one_line(description), clean_body(body))
    assert parse(data.decode())[0].keys() == KEYS  # nothing in the text became a key
    for char in ("\x00", "\u202e", "\u2066", "\u2069", "\u200f", "\u061c", "\r"):
        assert char.encode() not in data, repr(char)
    assert not re.search("[\x00-\x1f\x7f\x85\u2028]", memory.name + memory.description)
    assert git(layout.root, "show", f"HEAD:{path.relative_to(layout.root).as_posix()}").encode() == data
    assert_consistent(layout)


@pytest.mark.parametrize("field, value, message", [
    # The limit counts the body's text, not the newline sandman ends every file with.
    ("body", "x" * ((1 << 20) - 1) + "\n", "memory body is 1,048,575 bytes; the limit is 65,536 (64 KiB)"),
    ("body", "é" * 32_768 + "x\n", "memory body is 65,537 bytes; the limit is 65,536 (64 KiB)"),
    ("name", "n" * 10_000, "memory name is 10000 characters; the limit is 120"),
    ("description", "d" * 301, "memory description is 301 characters; the limit is 300"),
    ("name", "half an emoji \ud83d", "memory name is not UTF-8 text: a lone surrogate at character 14"),
    ("description", "\udc00", "memory description is not UTF-8 text: a lone surrogate at character 0"),
    ("body", "a body \ud800 cut\n", "memory body is not UTF-8 text: a lone surrogate at character 7"),
    ("name", "\x00\u202e\x07", "memory name is empty"),
    ("name", "\u200b\u200b\u200b", "memory name is empty"),
    ("description", "\ufeff\u2060 \u200c\u200d", "memory description is empty"),
])
def test_what_commit_cannot_store_is_refused_before_anything_is_written(layout: Layout, field, value,
                                                                        message) -> None:
    _commit(layout, "First", "The first.", "First.\n")
    before = git(layout.root, "rev-parse", "HEAD")
    fields = {"name": "Hostile", "description": "Hostile.", "body": "Hostile.\n", field: value}
    with pytest.raises(InputError) as refused:
        _commit(layout, **fields)
    assert str(refused.value) == message
    assert git(layout.root, "rev-parse", "HEAD") == before
    assert_consistent(layout)


@pytest.mark.parametrize("given, stored", [
    ("Deploy\u200b notes", "Deploy notes"),
    ("pass\u200bw\u2060or\ufeffd", "password"),
    ("dep\u200dloy\u200c", "deploy"),
    # Between two letters of a script that needs them, and inside an emoji, the joiners are text.
    ("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"),
    ("team \U0001f468\u200d\U0001f469\u200d\U0001f467", "team \U0001f468\u200d\U0001f469\u200d\U0001f467"),
])
def test_one_line_drops_zero_width_characters_from_names_and_descriptions(layout: Layout, given, stored) -> None:
    assert one_line(given) == stored
    memory = read_memory(_commit(layout, given, given, "Body.\n"))
    assert (memory.name, memory.description) == (stored, stored)


def test_a_body_of_exactly_64_kib_is_kept(layout: Layout) -> None:
    body = "é" * 32_768 + "\n"
    assert len(body.rstrip("\n").encode()) == 65_536
    assert read_memory(_commit(layout, "Sixty-four", "Exactly at the limit.", body)).body == body


def test_remember_refuses_a_megabyte_body_with_one_line_and_writes_nothing(layout: Layout, tmp_path: Path) -> None:
    sandman("init")
    before = git(layout.root, "rev-parse", "HEAD")
    done = sandman("remember", "-", "--cwd", str(tmp_path), stdin=b"x" * ((1 << 20) - 1) + b"\n")
    assert done.returncode == 2
    # Refused before stdin is all read (a megabyte must not take seconds and memory to refuse).
    assert done.stderr.decode() == "sandman: memory body on stdin is over 131,072 bytes; the limit is 65,536 (64 KiB)\n"
    assert done.stdout == b""
    assert git(layout.root, "rev-parse", "HEAD") == before


def test_remember_from_a_shell_keeps_hostile_text_inert(layout: Layout, tmp_path: Path) -> None:
    # No NUL: remember refuses one (issue 20, fault 7; tests/test_remember.py).
    body = "---\nname: injected\n---\n<script>alert(1)</script> \u202e\x1b[31m [x](javascript:alert(1))\n"
    done = sandman("remember", "-", "--cwd", str(tmp_path), "--name", "---", "--description", "key: value",
                   stdin=body.encode())
    assert done.returncode == 0, done.stderr
    memory = read_memory(Path(done.stdout.decode().strip()))
    assert (memory.name, memory.description, memory.body) == ("---", "key: value", clean_body(body.strip()))


def _recall_lines(layout: Layout, text: str) -> list[str]:
    """The lines of recall's payload that are MEMORY.md entries."""
    entries = {entry.line for entry in index_entries(layout.bank(bank_name(PROJECT)))}
    return [line for line in text.split("\n") if line in entries]


def test_recall_of_hostile_memories_stays_in_budget_one_line_per_index_entry(layout: Layout) -> None:
    for _, name, description, body in HOSTILE:
        _commit(layout, name, description, body)
    _commit(layout, "<script>user</script>\u202e", "[u](javascript:alert(1))", "User \x1b body\x00.\n", None)
    _hand_made(layout)
    entries = index_entries(layout.bank(bank_name(PROJECT)))
    assert len(entries) == len(HOSTILE) + 1  # the hand-made memory is one entry too
    for entry in entries:
        assert "\n" not in entry.line and not re.search("[\x00-\x1f\x7f\x85\u2028\u2029]", entry.line), entry.line
    for budget in (9_000, 3_000, 1_200, 400):
        text = recall(layout, PROJECT, budget).text
        assert len(text) <= budget, budget
        # Nothing that runs in a terminal or turns a line around: escapes and overrides are marks.
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", text), budget
        shown = _recall_lines(layout, text)
        assert len(shown) == len(set(shown)), budget  # each entry once, whole
        if budget == 9_000:
            assert len(shown) == len(entries)
            assert "  ansi ‹U+001B›[2J clear‹U+0007›‹U+0008› back" in text.split("\n")


def test_the_site_shows_hostile_memories_and_runs_nothing(layout: Layout) -> None:
    paths = [_commit(layout, name, description, body) for _, name, description, body in HOSTILE]
    _hand_made(layout)
    render_site(layout)
    for page in layout.site.rglob("*.html"):
        assert_inert(page)  # no script but the site's own, no handler, frame or unsafe link
        html = page.read_text(encoding="utf-8").lower()
        for raw in ("<script>", "<iframe", "<img src=x", 'href="javascript:', 'href="data:', 'src="data:'):
            assert raw not in html, (page, raw)
        assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x85\u2028\u202a-\u202e\u2066-\u2069]", html), page
    bank = layout.site / "banks" / bank_name(PROJECT)
    controls = (bank / f"{paths[2].stem}.html").read_text(encoding="utf-8")
    for mark in ("‹U+001B›", "‹U+0007›", "‹U+0008›", "‹U+001C›", "‹U+0085›", "‹U+2028›"):
        assert mark in controls, mark
    hand = (bank / "project_hand_made.html").read_text(encoding="utf-8")
    for mark in ("‹U+202E›", "‹U+0085›", "‹U+0000›", "‹U+0007›"):
        assert mark in hand, mark
    html = (bank / f"{paths[0].stem}.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html



# --- from the minds: a reply JSON allows but no UTF-8 file can store -----------------------------

HALF_EMOJI = '"cut inside an emoji \\ud83d"'  # a JSON string holding a lone surrogate escape


def test_a_dream_memory_holding_a_lone_surrogate_is_dropped_and_nothing_is_written(
        layout: Layout, fake_claude, monkeypatch) -> None:
    """One memory that no UTF-8 file can store is dropped alone (issue 20, fault 3): each mind has
    answered with nothing, so the session is routed and no memory is written."""
    from dream_helpers import archive_session, bank_memories, journal_lines
    from hardening import DREAM_MODELS, quick_minds
    from sandman.verbs.dream import dream

    quick_minds(monkeypatch)
    archive_session(layout, "s-half", Path(PROJECT), ended="2026-11-30T10:00:00Z")
    reply = ('{"memories": [{"bank": "%s", "type": "project", "name": "Half", "description": "Half an emoji.", '
             '"body": %s}]}' % (PROJECT, HALF_EMOJI))
    for model in DREAM_MODELS:
        fake_claude.answer(model, reply)
    summary = dream(layout, now=True)
    assert summary.count("routed") == 1 and summary.total("committed") == 0
    assert bank_memories(layout, Path(PROJECT)) == [] and journal_lines(layout, "abstained") == []
    reasons = {line["mind"]: line["reason"] for line in journal_lines(layout, "dropped-memory")}
    assert reasons == {"fable": "body holds a lone surrogate", "opus": "body holds a lone surrogate",
                       "sonnet": "body holds a lone surrogate"}


def test_a_log_mind_replying_a_lone_surrogate_abstains_and_reflect_goes_on(layout: Layout, fake_claude,
                                                                         monkeypatch) -> None:
    from datetime import timedelta

    from hardening import LOG_MODEL, journal_lines
    from sandman import journal
    from sandman.verbs.reflect import reflect

    monkeypatch.setenv("SANDMAN_MIND_LOG", LOG_MODEL)
    _commit(layout, "Today's fact", "A fact of today.", "A fact.\n")
    fake_claude.answer(LOG_MODEL, '{"kind": "passage", "title": %s, "body": "A day.", "next": ""}' % HALF_EMOJI)
    summary = reflect(layout, now=journal.now_utc() + timedelta(days=1))
    assert summary.errors == []
    assert (summary.entry.decision, summary.entry.reason) == ("abstained", "lone surrogate")
    assert ("abstained", "lone surrogate") in [(d, f.get("reason")) for d, f in journal_lines(layout, "reflect")]
    assert not layout.log.exists()
