"""Consensus (sandman/minds/consensus.py, evidence.py): claims, witnesses, wording, filing, dedupe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandman.minds.consensus import claims, filing_bank, held_by, on_chain
from sandman.minds.evidence import Evidence, contradicts, depluralise, same
from sandman.minds.reply import Proposal, parse_reply

BANK = "/home/user/proj"
LABELLED = Path(__file__).resolve().parent.parent / "bench" / "labelled"


def p(mind, name, description, *, bank=BANK, type_="project", body="body"):
    return Proposal(mind=mind, bank=bank, type=type_, name=name, description=description, body=body)


def ev(name, description="", body=""):
    return Evidence(name, description, body)


def test_depluralise():
    assert [depluralise(w) for w in ("tests", "queries", "class", "bus", "is", "uses", "ies")] == [
        "test", "query", "class", "bus", "is", "use", "ies"
    ]


def test_words_drop_stop_words_and_split_camel_case():
    assert ev("Run the tests with pytest", "Tests: pytest!").tokens == {"run", "test", "pytest"}
    assert {"session", "live", "`sessionlive"} <= ev("SessionLive renders it").tokens


def test_anchors_are_kept_whole_beside_their_words():
    found = ev("CSS lives in priv/static/assets/spotter.css",
               "Claim with `bd update <id> --status in_progress`; see https://example.org/a_b and "
               "Spotter.Services.TranscriptRenderer, mount_computers, SANDMAN_ROOT").tokens
    assert {"`priv/static/assets/spotter.css", "`spotter.css", "`bd update <id> --status in_progress",
            "`--status", "`in_progress", "`https://example.org/a_b", "`spotter.services.transcriptrenderer",
            "`mount_computers", "`sandman_root"} <= found
    assert {"priv", "static", "asset", "spotter", "css", "mount", "computer", "transcript", "renderer"} <= found


def test_the_whole_description_counts_not_its_first_60_characters():
    # Regression: the old tokens cut the description's slug at 60 characters, so two
    # memories agreeing past that point were strangers.
    head = "Spotter's TranscriptRenderer no longer truncates tool results; "
    a = ev("Renderer", head + "lines past 10 carry hidden_by_default and expand per tool_result_group")
    b = ev("Renderer", head + "each line carries hidden_by_default, grouped by tool_result_group")
    c = ev("Renderer", head + "the debug sidecar shows a JSON payload per row, highlighted by highlight.js")
    assert same(a, b) and not same(a, c)


def test_same_is_a_dice_overlap_of_five_ninths():
    assert same(ev("alpha beta gamma delta epsilon"), ev("alpha beta gamma delta zeta"))  # 8 of 10
    assert not same(ev("alpha beta gamma delta"), ev("alpha beta epsilon zeta"))  # 2·2 of 8: 1/2 < 5/9


def test_bodies_decide_in_the_near_zone_by_their_anchors():
    a_text = ("alpha beta gamma delta", "epsilon zeta")
    b_text = ("alpha beta gamma eta", "theta iota")  # 6 shared of 12: a half, under 5/9
    shared = "See `lib/a.ex`, `lib/b.ex` and `Mod.fun/2`."
    assert same(ev(*a_text, shared), ev(*b_text, shared + " Also `x_y`."))
    assert not same(ev(*a_text, shared), ev(*b_text, "See `lib/c.ex` and `other_thing`."))
    assert not same(ev(*a_text), ev(*b_text))


@pytest.mark.parametrize(("a", "b"), [
    (("Service listens on port 7000", "it binds 7000"), ("Service listens on port 7001", "it binds 7001")),
    (("Use pytest -x for the suite", "stop at the first failure"),
     ("Never use pytest -x for the suite", "stop at the first failure")),
    (("Commit the lock file", "uv.lock with every change"), ("Don't commit the lock file", "uv.lock with every change")),
    (("Deploy with make", "run `make deploy-staging` from the root"),
     ("Deploy with make", "run `make deploy-prod` from the root")),
    (("SessionLive owns the debug toggle", "show_debug changes in handle_event"),
     ("SubagentLive owns the debug toggle", "show_debug changes in handle_event")),
])
def test_same_shape_different_fact_contradicts(a, b):
    assert contradicts(ev(*a), ev(*b)) and not same(ev(*a), ev(*b))


def test_a_weak_negator_or_a_description_negation_is_no_contradiction():
    # "No Igniter installers" qualifies a noun; a description restates terms plainly too often.
    assert not contradicts(ev("No Igniter installers; `mix igniter.install` adds them", "x"),
                           ev("Add tools with `mix igniter.install`", "Igniter handles the deps"))
    assert not contradicts(ev("Bench scripts measure", "a baseline timed in the same run"),
                           ev("Benchmarks print medians", "never a timed assertion"))


def test_texts_of_stop_words_alone_are_never_the_same():
    assert ev("It is", "to be").tokens == frozenset()
    assert not same(ev("It is", "to be"), ev("This was", "it"))
    found = claims([p("fable", "It is", "to be"), p("opus", "This was", "it")])
    assert not any(claim.agreed() for claim in found)


def test_words_beyond_ascii_count():
    a = ev("Die Übersetzung läuft über Crowdin", "Änderungen an de.json gehen über Crowdin, nie direkt")
    b = ev("Übersetzung über Crowdin", "Änderungen an de.json laufen über Crowdin")
    assert {"übersetzung", "änderungen", "`de.json"} <= a.tokens and same(a, b)


def test_one_number_set_inside_the_other_is_no_contradiction():
    assert not contradicts(ev("Credo max depth 2", "was 3"), ev("Credo max depth 2", "x"))


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
    a = p("fable", "alpha beta gamma delta", "x")
    b = p("opus", "beta gamma delta epsilon", "x")
    c = p("sonnet", "gamma delta epsilon zeta", "x")
    ea, eb, ec = (ev(q.name, q.description) for q in (a, b, c))
    assert same(ea, eb) and same(eb, ec) and not same(ea, ec)
    (claim,) = claims([a, c, b])  # order must not matter
    assert claim.witnesses == ["fable", "opus", "sonnet"] and claim.wording is a


def test_banks_on_one_ancestor_chain_hold_one_claim_filed_where_both_witnesses_vouch():
    # Regression: spotter-dov's minds filed one fact in the session's directory and in its
    # parent, and the claim never met.
    (claim,) = claims([p("fable", "Use uv", "Install with uv", bank="/home/user/proj/app"),
                       p("opus", "Use uv", "Install with uv", bank="/home/user/proj")])
    assert claim.agreed() and claim.bank == "/home/user/proj/app" and claim.directory == "/home/user/proj/app"


def test_three_witnesses_file_in_the_broadest_bank_two_of_them_vouch_for():
    banks = ["/home/user", "/home/user/proj", "/home/user/proj/app"]
    (claim,) = claims([p(mind, "Use uv", "Install with uv", bank=bank)
                       for mind, bank in zip(("fable", "opus", "sonnet"), banks)])
    assert claim.bank == "/home/user/proj"
    (claim,) = claims([p(mind, "Use uv", "Install with uv", bank=bank)
                       for mind, bank in zip(("fable", "opus", "sonnet"), ["/home/user", "/home/user", "/home/user/proj"])])
    assert claim.bank == "/home/user"


def test_a_mind_vouches_for_its_broadest_bank():
    assert filing_bank([p("fable", "a", "b", bank="/home/user/proj/app"), p("fable", "a", "b", bank="/home/user"),
                        p("opus", "a", "b", bank="/home/user/proj")]) == "/home/user/proj"


def test_unrelated_directories_never_share_a_claim_even_through_a_common_parent():
    found = claims([p("fable", "Use uv", "Install with uv", bank="/home/user/proj/a"),
                    p("opus", "Use uv", "Install with uv", bank="/home/user/proj"),
                    p("sonnet", "Use uv", "Install with uv", bank="/home/user/proj/b")])
    assert sorted(len(c.proposals) for c in found) == [1, 2]
    for claim in found:
        banks = [q.bank for q in claim.proposals]
        assert all(on_chain(x, y) for x in banks for y in banks)


def test_on_chain():
    assert on_chain("/a", "/a/b") and on_chain("/a/b", "/a") and on_chain("/", "/a") and on_chain("user", "user")
    assert not on_chain("/a/b", "/a/c") and not on_chain("/a", "/ab") and not on_chain("user", "/a")


def test_type_and_the_user_bank_separate_claims():
    found = claims([
        p("fable", "Use uv", "Install with uv"),
        p("opus", "Use uv", "Install with uv", type_="feedback"),
        p("sonnet", "Use uv", "Install with uv", bank="user", type_="feedback"),
    ])
    assert len(found) == 3 and not any(c.agreed() for c in found)
    assert [c.directory for c in found] == [BANK, BANK, None]


def test_unknown_minds_rank_after_known_ones():
    (claim,) = claims([p("zeta", "Use uv", "Install with uv"), p("sonnet", "Use uv", "Install with uv")])
    assert claim.witnesses == ["sonnet", "zeta"] and claim.wording.mind == "sonnet"


def test_held_by_matches_any_proposal_of_the_claim_by_the_same_test():
    # The live memory is the same as opus's wording but not as fable's: still held.
    (claim,) = claims([p("fable", "alpha beta gamma delta", "x"), p("opus", "beta gamma delta epsilon", "x")])
    live = [("project_other.md", "Deploy with make", "make release deploys", "b"),
            ("project_greek.md", "gamma delta epsilon zeta", "x", "b")]
    assert not same(ev("alpha beta gamma delta", "x"), ev("gamma delta epsilon zeta", "x"))
    assert held_by(claim, live) == "project_greek.md"
    assert held_by(claim, live[:1]) is None


def test_held_by_never_dedupes_a_contradiction():
    (claim,) = claims([p("fable", "Mind timeout is 300 seconds", "killed after 300 s"),
                       p("opus", "Mind timeout is 300 seconds", "killed after 300 s")])
    assert held_by(claim, [("f.md", "Mind timeout is 30 seconds", "killed after 30 s", "b")]) is None


@given(st.lists(st.sampled_from("alpha beta gamma delta epsilon zeta eta theta".split()), max_size=8),
       st.lists(st.sampled_from("alpha beta gamma delta epsilon zeta eta theta".split()), max_size=8))
def test_same_is_symmetric(a, b):
    assert same(ev(" ".join(a)), ev(" ".join(b))) == same(ev(" ".join(b)), ev(" ".join(a)))


# --- the real replies of ../shared/corpus/minds (issue 23's "Must show") -----------------------

def test_spotter_dov_real_replies_commit_the_agreed_claims_once_each(corpus, monkeypatch):
    """At least 5 of the 6 claims two or three minds made commit, each once, in a bank of its
    witnesses' chain; neither one-witness claim commits (corpus/minds/README.md)."""
    monkeypatch.setenv("HOME", "/home/USER")
    labels = json.loads((LABELLED / "spotter-dov.json").read_text())
    folder = corpus / labels["corpus"]
    proposals, claim_of = [], {}
    for mind in ("fable", "opus", "sonnet"):
        reply = parse_reply((folder / f"{mind}.json").read_text(), mind=mind, cwd=labels["cwd"])
        for n, proposal in enumerate(reply.proposals):
            proposals.append(proposal)
            claim_of[id(proposal)] = next(k for k, claim in enumerate(labels["claims"])
                                          if n in claim.get(mind, []) + claim.get("optional", {}).get(mind, []))
    assert len(proposals) == 20
    multi = {k for k, claim in enumerate(labels["claims"]) if sum(1 for m in ("fable", "opus", "sonnet") if claim.get(m)) >= 2}
    assert len(multi) == 6
    commits: dict[int, int] = {}
    for claim in claims(proposals):
        kinds = {claim_of[id(q)] for q in claim.proposals}
        assert len(kinds) == 1, f"claim mixes labelled claims {kinds}"
        if claim.agreed():
            (k,) = kinds
            commits[k] = commits.get(k, 0) + 1
            assert claim.bank in {q.bank for q in claim.proposals}
    assert set(commits) <= multi  # neither one-witness claim
    assert all(count == 1 for count in commits.values())
    assert len(commits) >= 5


def test_must_not_merge_pairs_never_merge():
    pairs = json.loads((LABELLED / "must-not-merge.json").read_text())["pairs"]
    assert len(pairs) >= 10
    for a, b in pairs:
        found = claims([p("fable", a["name"], a["description"]), p("opus", b["name"], b["description"])])
        assert len(found) == 2, (a["name"], b["name"])
        assert held_by(found[0], [("f.md", b["name"], b["description"], "")]) is None


def test_the_bit_sliced_prefilter_finds_every_pair_the_direct_count_finds() -> None:
    import random

    from sandman.minds.consensus import _near, evidence

    rng = random.Random(18)
    words = ["port", "7000", "uses", "make", "release", "`src/app.py`", "--force", "tests", "never", "the",
             "cache", "deploy", "queue", "branch", "lint", "docs", "token", "index", "bank", "mind"]
    for _ in range(60):
        batch = [Proposal(mind="opus", bank="/p", type="project",
                          name=" ".join(rng.choice(words) for _ in range(rng.randint(0, 6))),
                          description=" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))), body="b")
                 for _ in range(rng.randint(1, 40))]
        found = [evidence(p) for p in batch]
        sizes = [len(e.tokens) for e in found]
        members = list(range(len(batch)))
        near = _near(members, found, sizes)
        for x in members:
            a = found[x].tokens
            direct = [y for y in members[x + 1:]  # same() needs a token shared, and 6·shared ≥ |a|+|b|
                      if (shared := len(a & found[y].tokens)) and 6 * shared >= sizes[x] + sizes[y]]
            offered = near(x)
            assert offered == sorted(set(offered)) and all(y > x for y in offered)
            assert set(direct) <= set(offered)  # a few more may come: same() turns them down
