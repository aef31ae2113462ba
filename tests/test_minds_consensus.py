"""Consensus (sandman/minds/consensus.py): claims, witnesses, wording, dedupe."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sandman.minds.consensus import claims, depluralise, held_by, same, tokens
from sandman.minds.reply import Proposal

BANK = "/home/user/proj"


def p(mind, name, description, *, bank=BANK, type_="project", body="body"):
    return Proposal(mind=mind, bank=bank, type=type_, name=name, description=description, body=body)


def test_depluralise():
    assert [depluralise(w) for w in ("tests", "queries", "class", "bus", "is", "uses", "ies")] == [
        "test", "query", "class", "bus", "is", "use", "ies"
    ]


def test_tokens_come_from_slugs_depluralised():
    assert tokens("Run tests with pytest -rs", "Tests: pytest!") == {"run", "test", "with", "pytest", "rs"}


def test_same_is_integer_jaccard_at_least_half():
    a, b = frozenset("abcd"), frozenset("abef")
    assert not same(a, b)  # 2*2 = 4 < 6
    assert same(frozenset("abc"), frozenset("abd"))  # 2*2 = 4 >= 4
    assert same(frozenset(), frozenset())


def test_two_of_three_agree_and_wording_comes_from_the_strongest_tier():
    proposals = [
        p("sonnet", "Tests run with pytest", "Run the suite with pytest -rs"),
        p("opus", "Tests run with pytest -rs", "Run the suite with pytest -rs always"),
        p("fable", "Deploys go through make release", "Use make release to deploy"),
    ]
    found = claims(proposals)
    assert len(found) == 2
    agreed = [c for c in found if c.agreed()]
    assert len(agreed) == 1
    assert agreed[0].witnesses == ["opus", "sonnet"]
    assert agreed[0].wording.mind == "opus"
    forgotten = [c for c in found if not c.agreed()]
    assert forgotten[0].witnesses == ["fable"]


def test_one_mind_alone_is_never_agreed_even_with_two_proposals():
    found = claims([p("fable", "Use uv", "Install with uv sync"), p("fable", "Use uv", "Install with uv sync now")])
    assert len(found) == 1 and found[0].witnesses == ["fable"] and not found[0].agreed()


def test_chain_is_one_claim():
    a = p("fable", "alpha beta gamma", "x")
    b = p("opus", "beta gamma delta", "x")
    c = p("sonnet", "gamma delta epsilon", "x")
    ta, tb, tc = (tokens(q.name, q.description) for q in (a, b, c))
    assert same(ta, tb) and same(tb, tc) and not same(ta, tc)
    (claim,) = claims([a, c, b])  # order must not matter
    assert claim.witnesses == ["fable", "opus", "sonnet"] and claim.wording is a


def test_bank_and_type_separate_claims():
    found = claims([
        p("fable", "Use uv", "Install with uv"),
        p("opus", "Use uv", "Install with uv", type_="feedback"),
        p("sonnet", "Use uv", "Install with uv", bank="/home/user"),
    ])
    assert len(found) == 3 and not any(c.agreed() for c in found)


def test_unknown_minds_rank_after_known_ones():
    (claim,) = claims([p("zeta", "Use uv", "Install with uv"), p("sonnet", "Use uv", "Install with uv")])
    assert claim.witnesses == ["sonnet", "zeta"] and claim.wording.mind == "sonnet"


def test_held_by_matches_any_proposal_of_the_claim():
    # The live memory is the same as opus's wording but not as fable's: still held.
    (claim,) = claims([p("fable", "alpha beta gamma", "x"), p("opus", "beta gamma delta", "x")])
    live = [("project_other.md", "Deploy with make", "make release deploys"),
            ("project_greek.md", "gamma delta epsilon", "x")]
    assert not same(tokens("alpha beta gamma", "x"), tokens("gamma delta epsilon", "x"))
    assert held_by(claim, live) == "project_greek.md"
    assert held_by(claim, live[:1]) is None


@given(st.frozensets(st.sampled_from("abcdefghij")), st.frozensets(st.sampled_from("abcdefghij")))
def test_same_is_exactly_the_designs_inequality(a, b):
    assert same(a, b) == (2 * len(a & b) >= len(a | b))
