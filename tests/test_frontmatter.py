"""The one frontmatter reader/writer (docs/BANK-FORMAT.md, "Memory files")."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from sandman.banks import frontmatter
from sandman.banks.frontmatter import Frontmatter
from sandman.banks.memory import parse_memory
from sandman.errors import FormatError

_keys = st.text(st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=10)
_scalars = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
    st.integers(), st.booleans(), st.none(),
)
_values = st.one_of(_scalars, st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12), max_size=4))


@given(st.dictionaries(_keys, _values, max_size=8), st.text(max_size=200))
def test_parse_of_dump_is_identity(mapping: dict, body: str) -> None:
    front = Frontmatter.from_mapping(mapping)
    text = frontmatter.dump(front, body)
    parsed, parsed_body = frontmatter.parse(text)
    assert parsed.to_dict() == mapping
    assert parsed_body == body
    assert all(raw.count("\n") == 1 for _, raw in parsed.entries)  # one line per value


def test_unknown_keys_survive_a_rewrite_byte_for_byte_in_order() -> None:
    text = (
        "\ufeff---\nname: Old\nx-custom:   spaced   out\ndescription: d\n"
        "nested:\n  a: 1\n  b: [2, 3]\ntype: project\ncreated: 2026-11-30T16:01:12Z\n---\n\nbody\n"
    )
    memory = parse_memory(text)
    assert memory.created == "2026-11-30T16:01:12Z"  # dates stay strings
    memory.name = "New"
    rewritten = memory.text()
    assert "x-custom:   spaced   out\n" in rewritten
    assert "nested:\n  a: 1\n  b: [2, 3]\n" in rewritten
    keys = frontmatter.parse(rewritten)[0].keys()
    assert keys[:4] == ["name", "x-custom", "description", "nested"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no fence\n", "does not start"),
        ("---\nname: x\n", "not closed"),
        ("---\nname: [unclosed\n---\n\n", "not valid YAML"),
        ("---\n- a list\n---\n\n", "not one key"),
        ("---\nname: a\nname: b\n---\n\n", "appears twice"),
    ],
)
def test_bad_frontmatter_is_a_format_error(text: str, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        frontmatter.parse(text)


def test_memory_without_required_field_is_refused() -> None:
    with pytest.raises(FormatError, match="description"):
        parse_memory("---\nname: x\ntype: project\n---\n\nbody\n")


def test_one_blank_line_separates_fence_and_body() -> None:
    text = frontmatter.dump(Frontmatter.from_mapping({"a": 1}), "\nstarts blank\n")
    assert text == "---\na: 1\n---\n\n\nstarts blank\n"
    assert frontmatter.parse(text)[1] == "\nstarts blank\n"
