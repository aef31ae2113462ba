"""Measure what consensus reaches on real mind replies: agreed-claim recall and false merges,
the rule before issue 23 and the rule now, side by side.

The labelled set is bench/labelled/ (its README says how each file was made):
sessions whose three replies a person has read into claims, and pairs of
memories of the same shape that state different facts. For each session and
each rule the table counts the labelled claims two or more minds made
(``agreed``), how many of them the rule commits (each exactly once, in a
bank of its witnesses' chain), how many it commits more than once, how many
one-witness claims it commits, and its false merges (claims it formed that
hold proposals of two labelled claims). A must-not-merge pair is merged when
the rule makes one claim of it (two minds, one bank, one type).

The timing rows compare the two rules over the labelled sessions (medians,
interleaved): the new rule reads the body and more of the text.

    python bench/consensus_quality.py [--quick] [--runs N]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness import CORPUS, Row, interleaved, script, timed
from sandman import config
from sandman.banks.names import slug
from sandman.minds.consensus import claims
from sandman.minds.reply import Proposal

LABELLED = Path(__file__).resolve().parent / "labelled"
RUNS = 41
QUICK = {"runs": 11}
MINDS = ("fable", "opus", "sonnet")


@dataclass
class Session:
    """One labelled session: its proposals and, for each, the number of its labelled claim."""

    name: str
    written: str
    proposals: list[Proposal]
    claim_of: list[int]  # per proposal, the index of its claim in ``labels``
    labels: list[str]
    witnesses: list[set[str]] = field(default_factory=list)  # per claim, the minds of its required members

    def agreed(self) -> list[int]:
        return [k for k, minds in enumerate(self.witnesses) if len(minds) >= config.DREAM_QUORUM]


@dataclass
class Formed:
    """A claim as a rule formed it: which proposals, where it files, whether it is agreed."""

    members: list[int]  # indices into the session's proposals
    bank: str
    agreed: bool


def _replies(path: Path, data: dict) -> dict[str, list[dict]]:
    if "corpus" in data:
        folder = CORPUS / data["corpus"]
        return {mind: json.loads((folder / f"{mind}.json").read_text())["memories"] for mind in MINDS}
    return data["replies"]


def load_sessions(folder: Path = LABELLED) -> list[Session]:
    """Read every labelled session of ``folder`` (``*.json`` but ``must-not-merge.json``).

    Raises ValueError when a proposal is labelled twice or not at all.
    """
    sessions = []
    for path in sorted(folder.glob("*.json")):
        if path.name == "must-not-merge.json":
            continue
        data = json.loads(path.read_text())
        replies = _replies(path, data)
        index: dict[tuple[str, int], int] = {}
        proposals: list[Proposal] = []
        for mind in MINDS:
            for n, memory in enumerate(replies.get(mind, [])):
                index[(mind, n)] = len(proposals)
                proposals.append(Proposal(mind=mind, bank=memory["bank"].rstrip("/") or "/", type=memory["type"],
                                          name=memory["name"], description=memory["description"],
                                          body=memory["body"]))
        claim_of = [-1] * len(proposals)
        labels, witnesses = [], []
        for k, claim in enumerate(data["claims"]):
            labels.append(claim["claim"])
            witnesses.append({mind for mind in MINDS if claim.get(mind)})
            members = [(mind, n) for mind in MINDS for n in claim.get(mind, [])]
            members += [(mind, n) for mind, ns in claim.get("optional", {}).items() for n in ns]
            for member in members:
                if claim_of[index[member]] != -1:
                    raise ValueError(f"{path.name}: {member} is labelled twice")
                claim_of[index[member]] = k
        missing = [member for member, i in index.items() if claim_of[i] == -1]
        if missing:
            raise ValueError(f"{path.name}: proposals {missing} belong to no claim")
        sessions.append(Session(data["session"], data["written"], proposals, claim_of, labels, witnesses))
    return sessions


def load_pairs(folder: Path = LABELLED) -> list[tuple[Proposal, Proposal]]:
    """Read the must-not-merge pairs as two minds' proposals in one bank, of one type."""
    data = json.loads((folder / "must-not-merge.json").read_text())
    return [tuple(Proposal(mind=mind, bank="/home/user/proj", type="project", name=memory["name"],
                           description=memory["description"], body=memory.get("body", "")) for mind, memory
                  in zip(("fable", "opus"), pair)) for pair in data["pairs"]]


# --- the rule before issue 23, kept here as the baseline -------------------------------------

def _old_tokens(name: str, description: str) -> frozenset[str]:
    def single(word: str) -> str:
        if len(word) > 4 and word.endswith("ies"):
            return word[:-3] + "y"
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            return word[:-1]
        return word
    return frozenset(single(w) for w in slug(name).split("_") + slug(description).split("_") if w)


def old_rule(proposals: Sequence[Proposal]) -> list[Formed]:
    """Claims as consensus formed them before issue 23 (the code as it was): one bank and one
    type, the name and the description's slug (60 characters) as tokens, Jaccard at least one
    half, made transitive."""
    tokens = [_old_tokens(p.name, p.description) for p in proposals]
    sizes = [len(t) for t in tokens]
    parent = list(range(len(proposals)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    groups: dict[tuple[str, str], list[int]] = {}
    for i, proposal in enumerate(proposals):
        groups.setdefault((proposal.bank, proposal.type), []).append(i)
    for members in groups.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                if sizes[i] > 2 * sizes[j] or sizes[j] > 2 * sizes[i]:
                    continue
                if root(i) != root(j) and 3 * len(tokens[i] & tokens[j]) >= sizes[i] + sizes[j]:
                    parent[root(j)] = root(i)
    found: dict[int, list[int]] = {}
    for i in range(len(proposals)):
        found.setdefault(root(i), []).append(i)
    return [Formed(members, proposals[members[0]].bank,
                   len({proposals[i].mind for i in members}) >= config.DREAM_QUORUM) for members in found.values()]


def new_rule(proposals: Sequence[Proposal]) -> list[Formed]:
    """Claims as ``sandman.minds.consensus.claims`` forms them now."""
    position = {id(p): i for i, p in enumerate(proposals)}
    return [Formed([position[id(p)] for p in claim.proposals], claim.bank, claim.agreed())
            for claim in claims(proposals)]


RULES: dict[str, Callable[[Sequence[Proposal]], list[Formed]]] = {"old": old_rule, "new": new_rule}


# --- scoring -------------------------------------------------------------------------------

@dataclass
class Score:
    agreed: int = 0  # labelled claims with two or more witnesses
    committed: int = 0  # of those, committed exactly once, alone, in a bank of its witnesses
    twice: int = 0  # agreed claims committed more than once
    lone: int = 0  # one-witness claims committed
    false_merges: int = 0  # formed claims holding proposals of two labelled claims
    off_chain: int = 0  # agreed formed claims filed outside their witnesses' banks

    def add(self, other: Score) -> None:
        for key in vars(self):
            setattr(self, key, getattr(self, key) + getattr(other, key))


def score(session: Session, rule: Callable[[Sequence[Proposal]], list[Formed]]) -> Score:
    """Score one rule on one labelled session."""
    result = Score(agreed=len(session.agreed()))
    commits = [0] * len(session.labels)
    for formed in rule(session.proposals):
        kinds = {session.claim_of[i] for i in formed.members}
        if len(kinds) > 1:
            result.false_merges += 1
        if not formed.agreed:
            continue
        if formed.bank not in {session.proposals[i].bank for i in formed.members}:
            result.off_chain += 1
        for k in kinds:
            commits[k] += 1
            if len(session.witnesses[k]) < config.DREAM_QUORUM:
                result.lone += 1
        if len(kinds) == 1:
            (k,) = kinds
            if len(session.witnesses[k]) >= config.DREAM_QUORUM and commits[k] == 1:
                result.committed += 1
    result.twice = sum(1 for k in session.agreed() if commits[k] > 1)
    return result


def merged_pairs(pairs: Sequence[tuple[Proposal, Proposal]],
                 rule: Callable[[Sequence[Proposal]], list[Formed]]) -> int:
    """Count the must-not-merge pairs ``rule`` makes one claim of."""
    return sum(1 for pair in pairs if len(rule(pair)) == 1)


def report(sessions: Sequence[Session], pairs: Sequence[tuple[Proposal, Proposal]]) -> str:
    """Return the side-by-side table, markdown."""
    lines = ["| labelled set | proposals | agreed claims | committed (old → new) | committed twice "
             "(old → new) | one-witness committed (old → new) | false merges (old → new) |",
             "|---|--:|--:|--:|--:|--:|--:|"]
    totals = {name: Score() for name in RULES}

    def pair(key: str, old: Score, new: Score) -> str:
        return f"{getattr(old, key)} → {getattr(new, key)}"

    for session in sessions:
        old, new = score(session, old_rule), score(session, new_rule)
        totals["old"].add(old)
        totals["new"].add(new)
        lines.append(f"| {session.name} | {len(session.proposals)} | {new.agreed} | {pair('committed', old, new)} | "
                     f"{pair('twice', old, new)} | {pair('lone', old, new)} | {pair('false_merges', old, new)} |")
    old, new = totals["old"], totals["new"]
    lines.append(f"| **all sessions** | {sum(len(s.proposals) for s in sessions)} | {new.agreed} | "
                 f"{pair('committed', old, new)} | {pair('twice', old, new)} | {pair('lone', old, new)} | "
                 f"{pair('false_merges', old, new)} |")
    lines.append(f"| must-not-merge pairs | {2 * len(pairs)} | 0 | — | — | — | "
                 f"{merged_pairs(pairs, old_rule)} → {merged_pairs(pairs, new_rule)} of {len(pairs)} |")
    recall = {name: totals[name].committed / totals[name].agreed for name in RULES}
    lines.append("")
    lines.append(f"agreed-claim recall: old {totals['old'].committed}/{totals['old'].agreed} "
                 f"({recall['old']:.0%}), new {totals['new'].committed}/{totals['new'].agreed} ({recall['new']:.0%}); "
                 f"filed outside the witnesses' banks: old {old.off_chain}, new {new.off_chain}")
    return "\n".join(lines)


def rows(runs: int = RUNS) -> list[Row]:
    """Return the timing row: the new rule over every labelled session against the old rule,
    medians in seconds over ``runs`` interleaved runs."""
    sessions = load_sessions()
    new, old = interleaved([
        lambda: timed(lambda: [claims(s.proposals) for s in sessions]),
        lambda: timed(lambda: [old_rule(s.proposals) for s in sessions]),
    ], runs)
    count = sum(len(s.proposals) for s in sessions)
    return [Row(f"consensus on the labelled real replies ({len(sessions)} sessions, {count} proposals)",
                new, "the rule before issue 23", old, runs)]


def main() -> None:
    print(report(load_sessions(), load_pairs()))
    print()
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
