"""Benchmark the consensus step alone: three minds x 200 proposals, median wall time.

All 600 proposals go to one bank and one type (the worst case: every pair is
compared), a third of them paraphrases of another mind's proposal so claims
form. The baseline, timed in the same run, is tokenizing the 600 proposals
(the linear part every consensus must do); the ratio shows what the pairwise
grouping costs on top, on any machine.

    python bench/consensus.py [--runs N] [--per-mind N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from sandman.minds.consensus import claims, tokens
from sandman.minds.reply import Proposal

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


def median_seconds(action, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--per-mind", type=int, default=200)
    args = parser.parse_args()
    batch = proposals(args.per_mind)
    found = claims(batch)
    agreed = sum(1 for claim in found if claim.agreed())
    consensus = median_seconds(lambda: claims(batch), args.runs)
    baseline = median_seconds(lambda: [tokens(p.name, p.description) for p in batch], args.runs)
    print(f"consensus over 3 x {args.per_mind} proposals (one bank, one type), {args.runs} runs:")
    print(f"  claims            {len(found)} ({agreed} agreed)")
    print(f"  consensus         median {consensus * 1000:8.2f} ms")
    print(f"  tokenize only     median {baseline * 1000:8.2f} ms")
    print(f"  ratio             {consensus / baseline:8.2f}x")


if __name__ == "__main__":
    main()
