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


# --- the writer without yaml (issue 29) -----------------------------------------------------------

def _yaml_flow(value: object) -> str:
    """What the frontmatter wrote for ``value`` through yaml alone, before ``_known_flow``."""
    text = frontmatter._dump(value, None)
    return frontmatter._dump(value, '"') if "\n" in text else text


# Text as names and descriptions are: mostly letters, spaces and the punctuation that decides a style.
_name_like = st.one_of(
    st.text(st.sampled_from(list("abcXYZ019 _-.,:;#'\"!?&*@%`|>[]{}()/+=~<\\") +
                            ["é", "ü", "中", "\u00a0", "\u2028", "\ufeff", "😀", "\t"]), max_size=30),
    st.sampled_from(["yes", "No", "NULL", "off", "On", "y", "~"]),
)


@given(st.one_of(_name_like, st.text(max_size=30)))
def test_the_writer_without_yaml_writes_yamls_bytes_for_a_string(value: str) -> None:
    known = frontmatter._known_flow(value)
    if known is not None:
        assert known == _yaml_flow(value)


@given(st.lists(st.one_of(_name_like, st.sampled_from(["remember", "bench", "s-1"])), max_size=4))
def test_the_writer_without_yaml_writes_yamls_bytes_for_a_list(value: list) -> None:
    known = frontmatter._known_flow(value)
    if known is not None:
        assert known == _yaml_flow(value)


@pytest.mark.parametrize("value", [
    "Run 4 of the bench: the release script reads its version from", "Deploys go through make release",
    "it's the team's rule", "2026-12-05T13:15:44Z", "yes", "café ü", ["remember"], [], "a #b",
])
def test_the_values_of_a_plain_remember_are_written_without_yaml(value: object) -> None:
    assert frontmatter._known_flow(value) == _yaml_flow(value)


def test_writing_a_plain_memory_does_not_import_yaml() -> None:
    import subprocess
    import sys

    code = ("import sys; from sandman.banks.memory import Memory; "
            "m = Memory(name='Deploys: by make', description='Tags are never pushed by hand.', type='project', "
            "body='x\\n', created='2026-12-05T13:15:44Z', updated='2026-12-05T13:15:44Z', source=['remember']); "
            "m.text(); print('yaml' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
