"""sandman/banks/query.py: a word's other forms, misspellings corrected against the index, the relevance floor."""

from __future__ import annotations

import sqlite3

import pytest

from sandman.banks import query


@pytest.fixture
def memories() -> sqlite3.Connection:
    """An FTS5 table shaped as the search index's (porter over unicode61), four memories in it."""
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE VIRTUAL TABLE memories USING fts5(name, description, body,"
                       " tokenize = 'porter unicode61 remove_diacritics 2')")
    connection.execute("CREATE TABLE words (word TEXT PRIMARY KEY, memories INTEGER NOT NULL) WITHOUT ROWID")
    for body in ("Deploys go through make release.", "Transcript components are shared by both live views.",
                 "Credo limits nesting depth to two.", "The guard clause cannot call Access.get."):
        connection.execute("INSERT INTO memories VALUES ('', '', ?)", (body,))
        connection.executemany("INSERT INTO words VALUES (?, 1)"
                               " ON CONFLICT (word) DO UPDATE SET memories = memories + 1",
                               [(word,) for word in query.vocabulary(body)])
    return connection


def matched(connection: sqlite3.Connection, text: str) -> list[int]:
    found = query.terms(text)
    expression = query.fts_query(text, corrected=query.corrections(connection, found))
    return [row for (row,) in connection.execute("SELECT rowid FROM memories WHERE memories MATCH ?", [expression])]


@pytest.mark.parametrize(("a", "b", "distance"), [
    ("gaurd", "guard", 1), ("transcipt", "transcript", 1), ("nesting", "nesting", 0), ("abc", "xyz", 3),
    ("credo", "credoxyz", 3), ("", "ab", 2), ("relas", "releas", 1)])
def test_edit_distance_counts_a_swap_as_one_edit_and_stops_past_its_bound(a: str, b: str, distance: int) -> None:
    assert query.edit_distance(a, b, 2) == distance  # 3: over the bound of 2
    assert query.edit_distance(a, b, 0) == (0 if distance == 0 else 1)


def test_a_word_of_ment_and_its_base_seek_each_other() -> None:
    assert query.forms("deployment") == ("deploy",)
    assert query.forms("deployments") == ("deploy",)
    assert query.forms("deploy") == ("deployment",)
    assert query.forms("comment") == () and query.forms("payments") == ("pay",)  # porter: "comment", "com"
    assert query.forms("release") == () and query.forms("mix audit") == ()
    assert query.fts_query("deployment", related=False) == '"deployment" OR "deploy"'


def test_regression_deployment_finds_a_memory_that_says_deploys(memories: sqlite3.Connection) -> None:
    # Porter files "deploys" under "deploi" and "deployment" under "deploy": neither found the other.
    assert matched(memories, "deployment") == [1]
    assert matched(memories, "deploy") == [1]


def test_regression_a_misspelled_word_is_corrected_to_the_nearest_the_index_holds(
        memories: sqlite3.Connection) -> None:
    # Issue 27 item 2: "misspellings only 0.58" -- a word no memory holds found nothing.
    assert query.corrections(memories, ["transcipt", "componets", "gaurd", "credo", "nestign"]) == {
        "transcipt": "transcript", "componets": "components", "gaurd": "guard", "nestign": "nesting"}
    assert matched(memories, "transcipt componets") == [2]
    assert matched(memories, "the gaurd clause") == [4]


def test_a_word_the_index_holds_or_a_short_one_or_a_far_one_is_left_alone(memories: sqlite3.Connection) -> None:
    assert query.corrections(memories, ["release", "credo"]) == {}  # held: nothing to correct
    assert query.corrections(memories, ["gard"]) == {}  # under CORRECT_MIN_CHARS letters
    assert query.corrections(memories, ["harbour", "weather", "mountains"]) == {}  # nothing within reach
    assert query.corrections(memories, ["mix audit", "v2beta"]) == {}  # a phrase, digits
    assert query.corrections(memories, []) == {}
    assert query.allowed_edits("tags") == 0 and query.allowed_edits("relase") == 1
    assert query.allowed_edits("vulnerabilty") == 2


def test_an_index_without_a_words_table_corrects_nothing(memories: sqlite3.Connection) -> None:
    memories.execute("DROP TABLE words")  # an index of schema 4, until a search rebuilds it
    assert query.corrections(memories, ["gaurd"]) == {}


def test_the_vocabulary_is_a_memory_s_words_of_letters_as_typed() -> None:
    assert query.vocabulary("Deploys go through make_release v2, café ÜBER x" + "y" * 41) == {
        "deploys", "through", "make", "release", "café", "über"}


def test_corrections_looks_at_a_bounded_number_of_words(memories: sqlite3.Connection) -> None:
    words = [f"zzzzz{letter}" for letter in "abcdefghij"] + ["gaurd"]
    assert query.corrections(memories, words) == {}  # "gaurd" lies past the first CORRECT_MAX_WORDS unknown words
    assert query.corrections(memories, ["gaurd", *words]) == {"gaurd": "guard"}


def test_a_rarer_word_weighs_more_and_an_unknown_word_most() -> None:
    assert query.weight(0, 100) > query.weight(1, 100) > query.weight(50, 100) > query.weight(100, 100)


def test_the_floor_wants_a_share_of_the_prompt_s_weight_and_a_rare_lone_word() -> None:
    floor = (1, 0.3, 0.7)
    assert query.enough(1, 3.0, 3, 9.0, 100, floor)  # a third of the weight
    assert not query.enough(1, 2.0, 3, 9.0, 100, floor)
    assert not query.enough(1, 3.0, 3, 9.0, 100, (2, 0.3, 0.7))  # two shared terms wanted
    assert query.enough(1, query.weight(1, 100), 1, query.weight(1, 100), 100, floor)  # one memory holds it
    assert not query.enough(1, query.weight(40, 100), 1, query.weight(40, 100), 100, floor)  # most do


@pytest.mark.parametrize(("text", "expected"), [
    ("test_search_refuses_query_without_meaningful_word",
     ["test", "search", "refuses", "query", "meaningful", "word"]),
    ("zebras-tox-widgets-cafeteria-nine-opens-about", ["zebras", "tox", "widgets", "cafeteria", "nine", "opens"]),
    ("mix_audit " + "a" * 41 + "_report", ["mix_audit", "mix", "audit", "report"]),
])
def test_regression_a_compound_over_40_characters_lost_every_word_in_it(text: str, expected: list[str]) -> None:
    assert len(text.split()[0]) > query.MAX_WORD_CHARS or len(text.split()[-1]) > query.MAX_WORD_CHARS
    assert query.terms(text) == expected
