"""Benchmark the consensus step alone: three minds x 200 proposals, median wall time.

All 600 proposals go to one bank and one type (the worst case: every pair is
compared), a third of them paraphrases of another mind's proposal so claims
form. Two baselines, timed in the same run (interleaved): reading the evidence
of the 600 proposals (the linear part every consensus must do; the ratio
shows what the pairwise grouping costs on top, on any machine), and the rule
before issue 23 (bench/consensus_quality.py keeps its code) on the same
proposals, which issue 23 must not be slower than. Target (issue 18): 20 ms.

    python bench/consensus.py [--quick] [--runs N] [--per-mind N]
"""

from __future__ import annotations

import argparse
import random

from consensus_quality import old_rule
from harness import Row, Target, interleaved, script, timed
from sandman.minds.consensus import claims, evidence
from sandman.minds.reply import Proposal

RUNS = 21
QUICK = {"runs": 7}
PER_MIND = 200

WORDS = [f"{stem}{suffix}" for stem in ("build", "test", "deploy", "cache", "lint", "docs", "release", "queue",
                                        "index", "bank", "mind", "commit", "branch", "token", "config", "route")
         for suffix in ("", "er", "ing", "s", "ed", "able", "ion", "ly", "ness", "ful", "ist", "ize", "al")]


def sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def proposals(per_mind: int, seed: int = 7) -> list[Proposal]:
    rng = random.Random(seed)
    found: list[Proposal] = []
    for mind in ("fable", "opus", "sonnet"):
        for n in range(per_mind):
            if found and n % 3 == 0:  # a paraphrase of an earlier proposal: one word changed
                source = rng.choice(found)
                words = source.name.split()
                words[rng.randrange(len(words))] = rng.choice(WORDS)
                name, description = " ".join(words), source.description
            else:
                name, description = sentence(rng, 4, 6), sentence(rng, 8, 12)
            found.append(Proposal(mind=mind, bank="/home/user/proj", type="project",
                                  name=name, description=description, body="b"))
    return found


def rows(runs: int = RUNS, per_mind: int = PER_MIND) -> list[Row]:
    """Return the consensus row: ``claims`` over 3 x ``per_mind`` proposals against tokenising
    them alone, medians in seconds over ``runs`` interleaved runs."""
    batch = proposals(per_mind)
    found = claims(batch)
    agreed = sum(1 for claim in found if claim.agreed())
    consensus, baseline, before = interleaved([
        lambda: timed(lambda: claims(batch)),
        lambda: timed(lambda: [evidence(p) for p in batch]),
        lambda: timed(lambda: old_rule(batch)),
    ], runs)
    name = f"consensus, 3 × {per_mind} proposals, one bank ({len(found)} claims, {agreed} agreed)"
    target = Target("< 20 ms", seconds=0.020) if per_mind == PER_MIND else None  # issue 18
    return [Row(name, consensus, f"reading the evidence of the {len(batch)} alone", baseline, runs, target),
            Row(name, consensus, "the rule before issue 23, same proposals", before, runs)]


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--per-mind", type=int, help=f"proposals per mind (default {PER_MIND})")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    main()
