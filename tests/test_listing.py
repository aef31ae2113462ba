"""banks.listing: reading what commit_memory wrote without YAML, as recall and the MCP server do."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandman.banks.listing import (find_bank, index_entries, lines_by_file, list_banks, memory_body, scalar,
                                   split_frontmatter)
from sandman.banks.memory import read_memory
from sandman.banks.names import bank_name
from sandman.errors import InputError
from sandman.verbs.remember import remember


def test_index_lines_and_bodies_match_the_format_readers(layout, tmp_path: Path) -> None:
    for body in ("First fact.\n\nWith a paragraph.", "A [bracketed] name](x.md) — tricky.", "Ünïcode — fine."):
        remember(layout, body, cwd=str(tmp_path))
    folder = layout.bank(bank_name(tmp_path))
    entries = index_entries(folder)
    text = (folder / "MEMORY.md").read_text()
    assert [e.line for e in entries] == [line for line in text.splitlines() if line.startswith("- [")]
    for entry in entries:
        assert memory_body(folder, entry.file) == read_memory(folder / entry.file).body.rstrip()


def test_lines_by_file_is_index_entries_by_file_on_escaped_names_and_odd_lines(tmp_path: Path) -> None:
    """remember's index regeneration reads lines_by_file; recall reads index_entries: one reading."""
    lines = [
        r"- [Plain](project_a.md) — one",
        r"- [Escaped \] and \[ and \\](project_b.md) — two  ",
        r"- [Unescaped ] bracket](project_c.md) — not a link to c",
        r"- [Ends in a backslash \](project_d.md) — the escape takes the bracket",
        r"- [A path](sub/project_e.md) — not a bare name",
        r"- [No link] — none",
        r"* [Another list mark](project_f.md) — not an index line",
        r"- [Twice](project_a.md) — the later line wins",
        r"- [Long \\\] run \\ of \] escapes](project_g.md) — three",
    ]
    (tmp_path / "MEMORY.md").write_text("---\nname: x\n---\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    expected = {entry.file: entry.line for entry in index_entries(tmp_path) if entry.file}
    assert lines_by_file(tmp_path) == expected
    assert sorted(expected) == ["project_a.md", "project_b.md", "project_g.md"]
    assert expected["project_a.md"].endswith("the later line wins")
    assert lines_by_file(tmp_path / "absent") == {}


def test_split_frontmatter_needs_whole_fence_lines_and_drops_one_blank_line() -> None:
    assert split_frontmatter("\ufeff---\nname: a\n---\n\nbody\n\nmore\n") == (["name: a"], "body\n\nmore\n")
    assert split_frontmatter("---\r\nname: a\r\n---  \r\nbody") == (["name: a"], "body")
    assert split_frontmatter("no fence\n---\n") is None
    assert split_frontmatter("---\nname: a\n") is None


@pytest.mark.parametrize(("line", "value"), [
    ("title: Plain words", "Plain words"),
    ("title: 'It''s quoted'", "It's quoted"),
    ('title: "A \\"double\\" \\u00e9"', 'A "double" é'),
    ("title:", ""),
])
def test_scalar_unquotes_what_the_frontmatter_writer_writes(line: str, value: str) -> None:
    assert scalar(["day: 2026-11-30", line], "title") == value
    assert scalar(["day: 2026-11-30"], "title") is None


def test_a_bank_whose_name_was_cut_reads_its_directory_from_memory_md(layout, tmp_path: Path) -> None:
    deep = tmp_path / ("a-very-long-directory-name-" * 10) / "with: a colon"
    remember(layout, "Deep fact.", cwd=str(deep))
    (bank,) = list_banks(layout)
    assert "~" in bank.name and bank.directory == str(deep)
    assert find_bank(layout, str(deep)) == bank and find_bank(layout, bank.name) == bank


def test_find_bank_by_name_or_directory(layout, tmp_path: Path) -> None:
    remember(layout, "Likes tea.", memory_type="user")
    remember(layout, "Project fact.", cwd=str(tmp_path))
    assert find_bank(layout, "_user").label == "user-wide"
    assert find_bank(layout, str(tmp_path) + "/").directory == str(tmp_path)
    assert find_bank(layout, str(tmp_path / "nothing")) is None
    with pytest.raises(InputError):
        find_bank(layout, "/bad\0dir")


def test_listing_an_absent_root_is_empty(layout) -> None:
    assert list_banks(layout) == []
