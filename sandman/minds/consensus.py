"""Consensus: which proposed memories commit, and where (design, station ④ "consensus" and "dedupe";
docs/BANK-FORMAT.md, "Consensus").

Pure Python over integers and sets; no model and no float decides a commit.

- **Sameness.** Two proposals of the same type state one fact when
  ``sandman.minds.evidence.same`` says so: whole name and description, stop
  words dropped, anchors (paths, URLs, backticked spans, identifiers, flags)
  counted twice, the body's anchors as support in the near zone, and never
  across a contradiction (different numbers, a term one negates and the
  other states).
- **One chain.** They may sit in different banks when one bank's directory
  contains the other's (a session's directory and its parent): a claim's
  banks always lie on one ancestor chain; two unrelated directories never
  share a claim, and the user-wide bank only meets itself.
- **Claims.** Sameness is made transitive: a claim is a connected component
  of the relation (kept on one chain), so a chain A~B, B~C is one claim even
  when A and C share little. A claim's witnesses are the distinct minds
  among its proposals.
- **Agreement.** A claim with at least ``quorum`` (2) witnesses is agreed;
  its wording is the first proposal of the strongest witness in tier order
  (``config.MINDS``: fable, opus, sonnet). With fewer, it is forgotten.
- **Filing.** Each witness vouches for the broadest bank it filed the claim
  in, and so for every directory under it. The claim is filed in the
  broadest bank that ``quorum`` witnesses vouch for: with two witnesses the
  deeper of their banks, with three the middle one.
- **Dedupe.** An agreed claim is already held when any of its proposals is
  the same (same test) as a live memory of its type in its bank or a bank
  above it (every session that would recall the new memory recalls that one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from sandman import config
from sandman.minds.evidence import Evidence, same
from sandman.minds.reply import USER_BANK, Proposal

K = TypeVar("K")  # the key a caller gives a live memory (a path)


def evidence(proposal: Proposal) -> Evidence:
    """Return the evidence of one proposal: its name, description and body."""
    return Evidence(proposal.name, proposal.description, proposal.body)


def on_chain(a: str, b: str) -> bool:
    """True when bank ``a`` and bank ``b`` are one directory or one contains the other.

    Both are normalized absolute directories, or both ``user``.
    """
    if a == b:
        return True
    if USER_BANK in (a, b):
        return False
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long.startswith(short.rstrip("/") + "/")


@dataclass
class Claim:
    """One connected component of same-type, same-saying proposals whose banks lie on one chain."""

    bank: str  # where it is filed: a directory, or ``user``
    type: str
    proposals: list[Proposal] = field(default_factory=list)
    witnesses: list[str] = field(default_factory=list)  # distinct minds, tier order
    wording: Proposal | None = None  # the strongest witness's first proposal

    @property
    def directory(self) -> str | None:
        """The directory whose bank gets the claim; None for the user-wide bank."""
        return None if self.bank == USER_BANK else self.bank

    def agreed(self, quorum: int = config.DREAM_QUORUM) -> bool:
        return len(self.witnesses) >= quorum


def filing_bank(proposals: Sequence[Proposal], quorum: int = config.DREAM_QUORUM) -> str:
    """Return the bank a claim made of ``proposals`` is filed in (their banks lie on one chain).

    Each mind vouches for the broadest bank it used; the result is the
    broadest bank at least ``quorum`` minds vouch for (one whose directory
    is at or under theirs), or the deepest when fewer minds took part.
    """
    broadest: dict[str, str] = {}
    for proposal in proposals:
        held = broadest.get(proposal.mind)
        if held is None or len(proposal.bank) < len(held):
            broadest[proposal.mind] = proposal.bank
    vouched = sorted(broadest.values(), key=len)  # broadest first: a chain orders by length
    return vouched[min(quorum, len(vouched)) - 1]


def _near(members: list[int], found: list[Evidence], sizes: list[int]):
    """Return ``near(x)``: the positions ``y > x`` in ``members``, ascending, of the proposals
    whose tokens meet ``x``'s often enough that ``same()`` might hold: every ``y`` sharing a
    token with ``6·|a∩b| ≥ |a|+|b|``, and the few more that share as many tokens with ``x``
    but are longer than the shortest member (``same()`` turns those down by its own count).

    Counted for every ``y`` at once: each token is a bit mask over the members, and the
    shared-token counts of ``x`` against all of them are a bit-sliced sum of its tokens'
    masks (one bit plane per binary digit), compared with one threshold plane by plane, so
    the work per proposal grows with its tokens, not with the members.
    """
    postings: dict[str, int] = {}
    for y, i in enumerate(members):
        for token in found[i].tokens:
            postings[token] = postings.get(token, 0) | (1 << y)
    everyone = (1 << len(members)) - 1
    shortest = min((sizes[i] for i in members), default=0)

    def near(x: int) -> list[int]:
        i = members[x]
        after = x + 1  # bit b of a plane below is member after + b: those before x are shifted out
        planes: list[int] = []  # planes[k]: the members whose shared count has bit k set
        for token in found[i].tokens:
            carry = postings[token] >> after
            if not carry:
                continue
            for k in range(len(planes)):
                planes[k], carry = planes[k] ^ carry, planes[k] & carry
                if not carry:
                    break
            if carry:
                planes.append(carry)
        # 6·count ≥ size + other ≥ size + shortest ⇔ count ≥ need: compare the planes with need, top bit first.
        need = max(1, -(-(sizes[i] + shortest) // 6))
        equal, greater = everyone >> after, 0
        for k in range(max(len(planes), need.bit_length()) - 1, -1, -1):
            plane = planes[k] if k < len(planes) else 0
            if (need >> k) & 1:
                equal &= plane
            else:
                greater |= equal & plane
                equal &= ~plane
        chosen = greater | equal
        found_near = []
        while chosen:
            low = chosen & -chosen
            found_near.append(after + low.bit_length() - 1)
            chosen ^= low
        return found_near

    return near


def claims(proposals: Sequence[Proposal], order: Sequence[str] = tuple(config.MINDS),
           quorum: int = config.DREAM_QUORUM) -> list[Claim]:
    """Group ``proposals`` into claims; return them in order of their first proposal.

    ``order`` ranks the minds, strongest first; a mind missing from it ranks
    after every listed one (by name). Every proposal lands in exactly one claim.
    """
    found_evidence = [evidence(p) for p in proposals]
    sizes = [len(e.tokens) for e in found_evidence]
    parent = list(range(len(proposals)))
    deepest = [p.bank for p in proposals]  # per root: the deepest bank of its component

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    groups: dict[tuple[str, bool], list[int]] = {}
    for i, proposal in enumerate(proposals):
        groups.setdefault((proposal.type, proposal.bank == USER_BANK), []).append(i)
    for members in groups.values():
        near_pairs = _near(members, found_evidence, sizes)
        for x, i in enumerate(members):
            for y in near_pairs(x):
                j = members[y]
                ri, rj = root(i), root(j)
                if ri == rj or not on_chain(deepest[ri], deepest[rj]):
                    continue
                if same(found_evidence[i], found_evidence[j]):
                    parent[rj] = ri
                    if len(deepest[rj]) > len(deepest[ri]):
                        deepest[ri] = deepest[rj]

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
        claim.bank = filing_bank(claim.proposals, quorum)
    return list(found.values())


def held_by(claim: Claim, live: Iterable[tuple[K, str, str, str]]) -> K | None:
    """Return the key of a live memory that already states ``claim``, else None.

    ``live`` yields ``(key, name, description, body)`` of the live memories of
    the claim's type in its bank and the banks above it (never ``_archive/``);
    the first match wins. Sameness is ``same``, the test that formed the claim.
    """
    mine = [evidence(p) for p in claim.proposals]
    for key, name, description, body in live:
        held = Evidence(name, description, body)
        if any(same(held, proposal) for proposal in mine):
            return key
    return None
