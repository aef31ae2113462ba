"""``sandman recall``: which banks, pointers and log entries it reads, and how it trims."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sandman import config
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.pointers import write_pointer
from sandman.verbs.recall import TOOL_INDEX, recall, resumed
from sandman.verbs.remember import remember

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def at(hours_ago: float) -> str:
    return (NOW - timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("### ")]


def pointer(layout: Layout, session: str, hours_ago: float | None, title: str, **extra) -> None:
    data = {"host": "claude", "cwd": "/somewhere", "title": title, "highlights": [], **extra}
    if hours_ago is not None:
        data["ended"] = at(hours_ago)
    write_pointer(layout, session, data)


def log_entry(layout: Layout, day: str, title: str, body: str) -> None:
    layout.log.mkdir(parents=True, exist_ok=True)
    layout.log_entry(day).write_text(f"---\nday: {day}\ntitle: {title}\nkind: voyage\n---\n\n{body}\n")


@pytest.fixture
def tree(layout: Layout, isolated: Path) -> dict[str, Path]:
    """Banks at home, home/work, home/work/app, a sibling, and the user-wide bank."""
    dirs = {"home": isolated, "work": isolated / "work", "app": isolated / "work" / "app",
            "sibling": isolated / "other"}
    remember(layout, "Dotfiles live in a bare repo.", cwd=str(dirs["home"]))
    remember(layout, "Every repo under work uses make.", cwd=str(dirs["work"]))
    remember(layout, "The app deploys with make release.\nNever push tags by hand.", cwd=str(dirs["app"]))
    remember(layout, "The sibling project is unrelated.", cwd=str(dirs["sibling"]))
    remember(layout, "Prefers British spelling.", memory_type="user", cwd=str(dirs["app"]))
    return dirs


# --- what recall reads -------------------------------------------------------


def test_ancestor_order_ends_at_the_cwd_and_starts_with_the_user_wide_bank(layout, tree) -> None:
    text = recall(layout, tree["app"], now=NOW).text
    assert [h.split(" · ")[0] for h in headings(text)] == [
        "### user-wide", f"### {tree['home']}", f"### {tree['work']}", f"### {tree['app']} (this directory)",
    ]
    assert "Prefers British spelling." in text and "Never push tags by hand." in text
    assert "sibling" not in text
    assert f"{layout.bank('_user')}/" in headings(text)[0]


def test_a_subdirectory_without_a_bank_still_reads_its_ancestors(layout, tree) -> None:
    text = recall(layout, tree["app"] / "src" / "deep", now=NOW).text
    assert [h.split(" · ")[0] for h in headings(text)][-1] == f"### {tree['app']}"


def test_a_cwd_outside_home_walks_to_the_filesystem_root(layout, tree, tmp_path: Path) -> None:
    outside = tmp_path / "srv" / "proj"
    remember(layout, "The srv tree is shared.", cwd=str(tmp_path / "srv"))
    text = recall(layout, outside, now=NOW).text
    names = [h.split(" · ")[0] for h in headings(text)]
    assert names == ["### user-wide", f"### {tmp_path / 'srv'}"]
    assert str(tree["home"]) + " ·" not in text


def test_recall_never_reads_the_archive(layout, tree) -> None:
    (layout.archive / "claude" / "2026" / "11" / "30").mkdir(parents=True)
    (layout.archive / "claude" / "2026" / "11" / "30" / "120000-x.jsonl").write_text("ARCHIVED-BYTES\n")
    assert "ARCHIVED" not in recall(layout, tree["app"], now=NOW).text


@pytest.mark.calendar
def test_pointers_older_than_72_hours_are_left_out_and_at_most_12_shown(layout, tree) -> None:
    for i in range(15):
        pointer(layout, f"young-{i:02d}", hours_ago=1 + i, title=f"Young session {i:02d}")
    pointer(layout, "old", hours_ago=72.01, title="Old session")
    pointer(layout, "no-end", hours_ago=None, title="Session without an end")
    pointer(layout, "kept", hours_ago=0.5, title="With highlights", highlights=["Keep the flag.\nSecond line."])
    text = recall(layout, tree["app"], now=NOW).text
    shown = [line for line in text.splitlines() if line.startswith("- 2026-")]
    assert len(shown) == config.RECALL_MAX_POINTERS
    assert "With highlights" in shown[0] and "Young session 00" in shown[1]
    assert "Young session 10" in shown[-1] and "Young session 11" not in text
    assert "Old session" not in text and "Session without an end" not in text
    assert "  - kept: Keep the flag. Second line." in text.splitlines()


def test_the_log_tail_is_the_newest_entries_newest_first(layout, tree) -> None:
    for day in range(1, 6):
        log_entry(layout, f"2026-11-0{day}", f"Day {day}", f"What happened on day {day}.")
    (layout.log / "INDEX.md").write_text("# index\n")
    (layout.log / "2026-11-06.md").write_text("A hand-written entry without frontmatter.\n")
    text = recall(layout, tree["app"], now=NOW).text
    days = [h for h in headings(text) if h.startswith("### 2026-")]
    assert days == ["### 2026-11-06", "### 2026-11-05 · Day 5", "### 2026-11-04 · Day 4"]
    assert "A hand-written entry without frontmatter." in text and "index" not in text.lower().split("## ")[-1]


def test_the_tool_index_puts_remember_first_within_1200_characters() -> None:
    assert sum(len(line) + 1 for line in TOOL_INDEX) <= config.TOOL_INDEX_MAX_CHARS
    assert TOOL_INDEX[1].startswith('- `sandman remember "<body>"`: when you learn something worth keeping')


def test_recall_of_an_empty_root_reports_the_empty_log_without_calling_it_a_trim(layout, tmp_path: Path) -> None:
    """Issue 20, fault 6: 'trimmed: the voyage log (it is empty)' read as a cut when nothing was cut."""
    result = recall(layout, tmp_path)
    assert result.text.splitlines()[-1] == "[sandman recall: the voyage log has no entries yet; nothing was cut]"
    assert "trimmed" not in result.text
    assert result.trims == ["log-empty"]


@pytest.mark.parametrize("bad", [0, -5, True, "9000"])
def test_a_budget_that_is_not_a_positive_count_is_refused(layout, tmp_path: Path, bad) -> None:
    with pytest.raises(InputError, match="is not a positive number of UTF-16 code units"):
        recall(layout, tmp_path, bad)


def test_a_relative_cwd_is_refused(layout) -> None:
    with pytest.raises(InputError, match="is relative; give an absolute path"):
        recall(layout, "work/app")


def test_a_cwd_holding_a_newline_cannot_forge_a_line_of_the_payload(layout, tmp_path: Path) -> None:
    cwd = tmp_path / "app\n# forged heading"
    remember(layout, "The app deploys with make.", cwd=str(cwd))
    lines = recall(layout, cwd).text.splitlines()
    assert lines[0] == f"# sandman recall: {tmp_path}/app‹U+000A›# forged heading"
    assert not any(line.startswith("# forged") for line in lines)
    assert any(line.startswith("### ") and "app‹U+000A›# forged heading (this directory)" in line for line in lines)
    assert not any(line.startswith("# forged") for line in resumed(layout, str(cwd)).splitlines())


def test_the_resume_note_names_the_banks_and_their_sizes_without_bodies(layout, tree) -> None:
    remember(layout, "A second app fact.", cwd=str(tree["app"]))
    text = resumed(layout, tree["app"])
    assert text.startswith("sandman: this session continues; its memory surface is already in its context")
    assert f"- {tree['app']}: 2 memories, {layout.bank(_bank(tree['app']))}/" in text
    assert "- user-wide: 1 memory," in text
    assert "Never push tags by hand." not in text and "sibling" not in text


def _bank(directory: Path) -> str:
    from sandman.banks.names import bank_name

    return bank_name(directory)


# --- trimming ----------------------------------------------------------------


@pytest.fixture
def crowded(layout: Layout, tree) -> Path:
    """The tree plus pointers, a log, and banks with several memories each."""
    for i in range(3):
        remember(layout, f"User fact {i}: likes the colour number {i} and says so at length.", memory_type="user")
        remember(layout, f"Home fact {i}: the shell is configured with care, item {i}.", cwd=str(tree["home"]))
        remember(layout, f"App fact {i}: the module number {i} owns the parser.\nIts tests live beside it.",
                 cwd=str(tree["app"]))
    for i in range(4):
        pointer(layout, f"s-{i}", hours_ago=1 + i, title=f"Session {i}", highlights=[f"Highlight {i}"])
    log_entry(layout, "2026-11-28", "Quiet day", "The banks grew by two.")
    log_entry(layout, "2026-11-29", "Busy day", "Five memories landed.\nOne was merged.")
    return tree["app"]


def full_lines(layout: Layout, cwd: Path) -> set[str]:
    """Every line any trimmed payload may show: the untrimmed payload's lines."""
    return set(recall(layout, cwd, 10**6, now=NOW).text.splitlines())


def test_every_budget_is_kept_with_whole_lines_and_the_log_intact(layout, crowded) -> None:
    whole = recall(layout, crowded, 10**6, now=NOW).text
    allowed = set(whole.splitlines())
    log = whole[whole.index("## Voyage log") :].rstrip("\n")
    seen: list[str] = []
    for budget in range(len(whole) + 10, 150, -7):
        result = recall(layout, crowded, budget, now=NOW)
        assert len(result.text) <= budget
        lines = result.text.splitlines()
        trimmed = lines[-1].startswith("[sandman recall")
        assert trimmed == bool(result.trims), "every trim is reported on the last line, and only then"
        body = lines[:-1] if trimmed else lines
        assert set(body) <= allowed, set(body) - allowed
        if not {"log-wide", "everything"} & set(result.trims):
            end = log + ("\n\n" + lines[-1] if trimmed else "") + "\n"
            assert result.text.endswith(end), "the log is the payload's end, whole"
        for key in result.trims:
            if key not in seen:
                seen.append(key)
    assert [key for key in seen if key != "everything"] == ["tools", "pointers", "bodies", "index-lines", "log-wide"]


def stage(layout: Layout, cwd: Path, key: str) -> tuple[int, str, list[str]]:
    """The largest budget (above 300) whose payload trims ``key``: (budget, text, trims)."""
    whole = len(recall(layout, cwd, 10**6, now=NOW).text)
    for budget in range(whole, 300, -1):
        result = recall(layout, cwd, budget, now=NOW)
        if key in result.trims:
            return budget, result.text, result.trims
    raise AssertionError(f"no budget trims {key}")


def assert_newest_pointers(text: str, of: int) -> None:
    """The pointers shown are the newest ones, and the trim line counts the rest."""
    shown = [line.split(" · ")[1] for line in text.splitlines() if line.startswith("- 2026-")]
    assert shown == [f"Session {i}" for i in range(len(shown))]
    note = "all" if not shown else f"the {of - len(shown)} oldest of"
    assert f"{note} {of} recent sessions (.recent/)" in text.splitlines()[-1]


def test_the_tool_index_goes_first(layout, crowded) -> None:
    budget, text, trims = stage(layout, crowded, "tools")
    assert trims == ["tools"]
    assert "## Tools" not in text and text.count("- 2026-") == 4 and "Its tests live beside it." in text
    assert "the tool index (sandman --help)" in text.splitlines()[-1]


def test_then_the_pointers_go_oldest_first(layout, crowded) -> None:
    budget, text, trims = stage(layout, crowded, "pointers")
    assert trims == ["tools", "pointers"]
    shown = [line for line in text.splitlines() if line.startswith("- 2026-")]
    assert shown and "Session 0" in shown[0] and "Session 3" not in text, "the oldest go, the newest stay"
    last = text.splitlines()[-1]
    assert f"the {4 - len(shown)} oldest of 4 recent sessions (.recent/)" in last
    assert f"read them whole in {layout.memories}/<folder>" in last


def test_then_banks_fall_back_to_index_lines_the_most_distant_first(layout, crowded, tree) -> None:
    budget, text, trims = stage(layout, crowded, "bodies")
    assert "; the bodies of _user/; " in text.splitlines()[-1]
    assert "  User fact 0: likes" not in text and "- [User fact 0" in text
    assert "  Its tests live beside it." in text, "the cwd's own bank keeps its bodies longest"
    assert trims[:2] == ["tools", "pointers"]
    assert_newest_pointers(text, of=4)


def test_at_the_floor_index_lines_go_from_the_most_distant_bank_first(layout, crowded, tree) -> None:
    budget, text, trims = stage(layout, crowded, "index-lines")
    assert "bodies" in trims and "Its tests live beside it." not in text
    assert_newest_pointers(text, of=4)
    last = text.splitlines()[-1]
    assert "; the bodies of every bank; 1 of 4 index lines of _user/; read them whole in" in last
    assert "- [App fact 2" in text, "the cwd's own bank loses its lines last"
    user_lines = [line for line in text.splitlines() if line.startswith("- [User fact")]
    if user_lines:  # cut from the tail: what is left is the head of the index
        assert user_lines[0].startswith("- [User fact 0")


def test_a_bank_that_falls_back_gives_back_what_it_saved(layout, tree) -> None:
    remember(layout, "Big user memory.\n" + "A long paragraph of the user's history. " * 120, memory_type="user")
    for i in range(3):
        pointer(layout, f"s-{i}", hours_ago=1 + i, title=f"Session {i}")
    log_entry(layout, "2026-11-29", "A day", "Something happened.")
    whole = recall(layout, tree["app"], 10**6, now=NOW).text
    result = recall(layout, tree["app"], len(whole) - 1000, now=NOW)
    assert result.trims == ["bodies"], "tools and pointers came back once the user-wide bank fell back"
    assert "## Tools" in result.text and result.text.count("- 2026-") == 3
    assert "A long paragraph" not in result.text and "  The app deploys with make release." in result.text


def test_a_log_wider_than_the_budget_leaves_and_is_reported(layout, crowded) -> None:
    log_entry(layout, "2026-11-30", "Long day", "\n".join(f"Line {i} of a very long entry." for i in range(80)))
    result = recall(layout, crowded, 2000, now=NOW)
    assert "## Voyage log" not in result.text and "log-wide" in result.trims
    assert f"wider than the budget; {layout.log}/)" in result.text.splitlines()[-1]
    assert len(result.text) <= 2000


def test_a_tiny_budget_gets_a_compact_report_or_nothing_over_budget(layout, crowded) -> None:
    for budget in (1, 40, 120, 200, 260):
        text = recall(layout, crowded, budget, now=NOW).text
        assert len(text) <= budget
        assert text == "" or text.rstrip("\n").splitlines()[-1].startswith("[sandman recall")


def test_the_default_budget_holds_a_large_root(layout, tree) -> None:
    bank = layout.bank(_bank(tree["app"]))
    for i in range(60):
        remember(layout, f"Fact {i:02d} about the app, told at some length so the bank grows large.",
                 cwd=str(tree["app"]))
    result = recall(layout, tree["app"], now=NOW)
    assert len(result.text) <= config.RECALL_BUDGET_UTF16
    assert "bodies" in result.trims and f" of {bank.name}/" in result.text.splitlines()[-1]


# --- the recall cache (.recall/): flat in bank size, the same text ---------------


def big_banks(layout: Layout, isolated: Path) -> Path:
    """Two banks of the chain with more index lines than any budget shows."""
    from sandman.banks.commit import bank_transaction
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name

    app = isolated / "work" / "app"
    with bank_transaction(layout, verb="test", subject="many") as tx:
        for i in range(260):
            directory = app if i % 2 else isolated / "work"
            tx.write_memory(bank_name(directory), Memory(
                name=f"Fact {i} about the build", description=f"The module {i} keeps its conventions. " * 2,
                type="project", body=f"Body {i}.\n", source=["test"]), directory=str(directory))
    return app


@pytest.mark.parametrize("budget", [300, 2_000, 5_000, 9_000, 20_000])
def test_recall_through_the_cache_is_byte_identical_to_reading_the_banks(layout, isolated, budget) -> None:
    app = big_banks(layout, isolated)
    pointer(layout, "s1", 2, "A session")
    log_entry(layout, "2026-11-29", "Day", "The banks grew.")
    uncached = recall(layout, app, budget, now=NOW, cache=False)
    assert recall(layout, app, budget, now=NOW) == uncached
    assert recall(layout, app, budget, now=NOW) == uncached  # the second read is the cache's
    assert "index lines" in uncached.text or budget in (300, 20_000)


def test_commit_memory_writes_the_recall_head_and_a_stale_one_is_rebuilt(layout, isolated) -> None:
    import json

    app = big_banks(layout, isolated)
    from sandman.banks.names import bank_name

    cache = layout.recall_cache(bank_name(app))
    record = json.loads(cache.read_text())
    assert record["count"] == 130 and 0 < len(record["head"]) < 130
    assert sum(len(line) + 1 for line in record["head"]) <= config.RECALL_BUDGET_UTF16
    before = recall(layout, app, now=NOW).text
    # A hand edit of MEMORY.md (a new file: new identity) makes the cache stale: never trusted.
    index = layout.bank(bank_name(app)) / "MEMORY.md"
    edited = index.read_text().replace("Fact 1 about the build", "Fact one, edited by hand")
    index.unlink()
    index.write_text(edited)
    after = recall(layout, app, now=NOW).text
    assert "Fact one, edited by hand" in after and after != before
    assert after == recall(layout, app, now=NOW, cache=False).text
    assert "Fact one, edited by hand" in cache.read_text()


@pytest.mark.parametrize("garbage", [b"", b"{", b'{"version": 1}', b"[1, 2]", b'\xff\xfe'])
def test_a_broken_recall_cache_is_rebuilt_not_trusted(layout, isolated, garbage: bytes) -> None:
    app = big_banks(layout, isolated)
    from sandman.banks.names import bank_name

    expected = recall(layout, app, now=NOW, cache=False).text
    layout.recall_cache(bank_name(app)).write_bytes(garbage)
    assert recall(layout, app, now=NOW).text == expected
