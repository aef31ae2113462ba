"""Bank names and memory file names (docs/BANK-FORMAT.md, "Bank names", "Memory files")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from sandman.banks.names import (
    ROOT_BANK, USER_BANK, ancestors, bank_directory, bank_name, memory_filename, slug,
)
from sandman.errors import InputError


@pytest.mark.parametrize(
    ("directory", "name"),
    [
        ("/home/user/proj", "-home-user-proj"),
        ("/home/user/my-app", "-home-user-my_-app"),
        ("/home/user/my_app", "-home-user-my__app"),
        ("/Users/me/Side Project", "-Users-me-Side_20Project"),
        ("/srv/café", "-srv-caf_c3_a9"),
        ("/", ROOT_BANK),
        ("/home/user/proj/../other", "-home-user-other"),
    ],
)
def test_bank_name_examples_from_the_format(directory: str, name: str) -> None:
    assert bank_name(directory) == name


@pytest.mark.parametrize("spelling", ["//tmp//b3", "///tmp/b3/", "/tmp/./b3"])
def test_every_spelling_of_a_directory_names_one_bank(spelling: str) -> None:
    # POSIX keeps a leading "//" through normpath; on Linux it is the same directory.
    assert bank_name(spelling) == bank_name("/tmp/b3") == "-tmp-b3"


def test_claude_code_slug_collisions_get_distinct_banks() -> None:
    assert bank_name("/a/my_app") != bank_name("/a/my-app") != bank_name("/a/my/app")


def test_user_wide_bank_has_its_own_name() -> None:
    assert bank_name(None) == USER_BANK
    assert bank_directory(USER_BANK) is None


@pytest.mark.parametrize("bad", ["relative/path", "", "/a/\0b"])
def test_bank_name_refuses_relative_and_nul(bad: str) -> None:
    with pytest.raises(InputError):
        bank_name(bad)


_path_chars = st.characters(codec="utf-8", exclude_characters="/\0")
_segments = st.lists(st.text(_path_chars, min_size=1, max_size=12).filter(lambda s: s not in (".", "..")), min_size=1, max_size=6)


@given(_segments)
def test_bank_name_is_reversible_hence_collision_free(segments: list[str]) -> None:
    directory = "/" + "/".join(segments)
    name = bank_name(directory)
    if "~" not in name:  # names cut to length are hashed, not reversible
        assert bank_directory(name) == Path(directory)
    assert name.startswith("-") and not name.startswith(".")


def test_long_paths_are_cut_and_hashed() -> None:
    one = bank_name("/" + "a" * 300)
    two = bank_name("/" + "a" * 299 + "b")
    assert len(one) <= 200 and one != two and "~" in one


def test_ancestors_stop_at_home_inclusive() -> None:
    chain = ancestors("/home/user/code/proj", Path("/home/user"))
    assert chain == [Path("/home/user/code/proj"), Path("/home/user/code"), Path("/home/user")]


def test_ancestors_outside_home_walk_to_root() -> None:
    assert ancestors("/srv/x", Path("/home/user")) == [Path("/srv/x"), Path("/srv"), Path("/")]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Tests run with pytest -rs", "tests_run_with_pytest_rs"),
        ("  --Weird__name!!  ", "weird_name"),
        ("Ünïcode naïve café", "ünïcode_naïve_café"),
        ("!!!", "memory"),
        ("é" * 70, "é" * 60),
    ],
)
def test_slug(name: str, expected: str) -> None:
    assert slug(name) == expected


def test_slug_cuts_characters_not_bytes_and_trims_again() -> None:
    assert len(slug("日本語" * 30)) == 60
    assert not slug("a" * 59 + " b").endswith("_")


def test_memory_filename_collision_suffixes() -> None:
    assert memory_filename("project", "Build it") == "project_build_it.md"
    assert memory_filename("project", "Build it", 2) == "project_build_it_2.md"
