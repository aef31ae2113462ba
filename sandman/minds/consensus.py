"""Consensus: which proposed memories commit (design, station ④ "consensus" and "dedupe").

Pure Python over integers; no model and no float decides a commit.

- **Tokens.** A proposal's tokens are the words of the slugs of its name and
  its description (``banks.names.slug``: lowercased, non-alphanumeric runs
  as separators, each slug cut at 60 characters), each crudely depluralised:
  ``-ies`` becomes ``-y``, and a final ``s`` goes unless the word ends in
  ``ss`` or has three letters or fewer.
- **Sameness.** Two proposals in the same bank and of the same type say the
  same thing when their token sets A and B satisfy ``2·|A∩B| ≥ |A∪B|``
  (integer Jaccard at least one half).
- **Claims.** Sameness is made transitive: a claim is a connected component
  of the relation, so a chain A~B, B~C is one claim even when A and C share
  little. A claim's witnesses are the distinct minds among its proposals.
- **Agreement.** A claim with at least ``quorum`` (2) witnesses is agreed;
  its wording is the first proposal of the strongest witness in tier order
  (``config.MINDS``: fable, opus, sonnet). With fewer, it is forgotten.
- **Dedupe.** An agreed claim is already held by a bank when any of its
  proposals is the same (same test) as a live memory of the same type there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sandman import config
from sandman.banks.names import slug
from sandman.minds.reply import Proposal


def depluralise(word: str) -> str:
    """Return ``word`` crudely made singular: ``queries``→``query``, ``tests``→``test``; ``class``, ``bus`` kept."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tokens(name: str, description: str) -> frozenset[str]:
    """Return the token set of a memory's name and description."""
    words = slug(name).split("_") + slug(description).split("_")
    return frozenset(depluralise(word) for word in words if word)


def same(a: frozenset[str], b: frozenset[str]) -> bool:
    """True when ``2·|a∩b| ≥ |a∪b|``: the two token sets overlap by at least half.

    Computed as ``3·|a∩b| ≥ |a| + |b|`` (the same inequality, since
    ``|a∪b| = |a| + |b| - |a∩b|``), which spares building the union.
    """
    return 3 * len(a & b) >= len(a) + len(b)


@dataclass
class Claim:
    """One connected component of same-bank, same-type, same-saying proposals."""

    bank: str
    type: str
    proposals: list[Proposal] = field(default_factory=list)
    witnesses: list[str] = field(default_factory=list)  # distinct minds, tier order
    wording: Proposal | None = None  # the strongest witness's first proposal

    def agreed(self, quorum: int = config.DREAM_QUORUM) -> bool:
        return len(self.witnesses) >= quorum


def claims(proposals: Sequence[Proposal], order: Sequence[str] = tuple(config.MINDS)) -> list[Claim]:
    """Group ``proposals`` into claims; return them in order of their first proposal.

    ``order`` ranks the minds, strongest first; a mind missing from it ranks
    after every listed one (by name). Every proposal lands in exactly one claim.
    """
    token_sets = [tokens(p.name, p.description) for p in proposals]
    parent = list(range(len(proposals)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    groups: dict[tuple[str, str], list[int]] = {}
    for i, proposal in enumerate(proposals):
        groups.setdefault((proposal.bank, proposal.type), []).append(i)
    sizes = [len(t) for t in token_sets]
    for members in groups.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                # |a∩b| ≤ min(|a|, |b|), so sets more than twice the other's size never meet.
                if sizes[i] > 2 * sizes[j] or sizes[j] > 2 * sizes[i]:
                    continue
                if root(i) != root(j) and same(token_sets[i], token_sets[j]):
                    parent[root(j)] = root(i)

    rank = {mind: n for n, mind in enumerate(order)}

    def strength(mind: str) -> tuple[int, str]:
        return (rank.get(mind, len(rank)), mind)

    found: dict[int, Claim] = {}
    for i, proposal in enumerate(proposals):
        claim = found.setdefault(root(i), Claim(bank=proposal.bank, type=proposal.type))
        claim.proposals.append(proposal)
    for claim in found.values():
        claim.witnesses = sorted({p.mind for p in claim.proposals}, key=strength)
        claim.wording = next(p for p in claim.proposals if p.mind == claim.witnesses[0])
    return list(found.values())


def held_by(claim: Claim, live: Iterable[tuple[str, str, str]]) -> str | None:
    """Return the file name of a live memory that already states ``claim``, else None.

    ``live`` yields ``(file name, name, description)`` of the live memories
    of the claim's type in its bank (never ``_archive/``); the first match wins.
    """
    claim_tokens = [tokens(p.name, p.description) for p in claim.proposals]
    for filename, name, description in live:
        held = tokens(name, description)
        if any(same(held, mine) for mine in claim_tokens):
            return filename
    return None
