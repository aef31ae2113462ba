r"""A person's words into an FTS5 MATCH expression (docs/search.md, "The query").

Stdlib only, and nothing of sandman, not even ``re``: the prompt hook imports it on every
prompt, so it must cost next to nothing to import (``re`` alone costs a hook 0.25 x
``python -c pass``; sandman/recall/fast.py). The words are split by ``words`` and
``_parts``, which read as the regular expressions ``[^\W_]+`` and
``"([^"]*)"|([^\W_]+(?:[-_]+[^\W_]+)*)`` (``[^\W_]`` is a character ``str.isalnum``
accepts).

A query is read as a bag of words, the way a person asks: its words (runs of
letters and digits; ``mix_audit`` and ``parallel-safe`` are compounds: the
phrase of their words, and each word) are lower-cased, the common words of a
question (``how``, ``do``, ``the``, ``please`` ...: STOP_WORDS) are dropped,
and each remaining word becomes one alternative of an ``OR``: a memory needs
to share one of them, and bm25 ranks the memories sharing the most, and the
rarest, first. A part in double quotes is one alternative, a phrase of its
words. Stemming is the index's (FTS5's ``porter`` tokenizer), so
``deploy`` finds ``Deploys``.

Each word also brings the words of its RELATED group (``ship`` brings
``deploy`` and ``release``): the few sets of words software sessions use for
one act, so a question in other words than the memory's still meets it
(``fts_related``: search weighs them below the words typed), and its ``forms``
that Porter files under another stem (``deployment`` and ``deploy``). A word
no memory holds is corrected to the nearest word the memories hold
(``corrections``, against the search index's ``words`` table: a misspelling).
The prompt hook's relevance floor is here too (``weight``, ``enough``), so the
hook and search read a query one way (docs/recall.md, "The relevance floor").

The query is bounded before anything reads it whole: only its first
MAX_QUERY_CHARS characters are read, at most ``max_terms`` distinct terms are
kept (MAX_TERMS by default, related words not counted), and a word longer than
MAX_WORD_CHARS (a hash, a base64 run) is skipped; a longer compound is no phrase, but
its words are still searched. Only quoted words reach FTS5,
so nothing of a query is ever FTS5 syntax.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

MAX_QUERY_CHARS = 10_000  # characters of a query read; the rest is ignored
MAX_TERMS = 32  # distinct terms kept, in the order they first occur
MAX_WORD_CHARS = 40  # a longer run of letters is not a word a memory holds



def words(text: str) -> list[str]:
    r"""The runs of letters and digits of ``text`` (``re.findall(r"[^\W_]+", text)``), in order."""
    found = []
    start = -1
    for i, char in enumerate(text):
        if char.isalnum():
            if start < 0:
                start = i
        elif start >= 0:
            found.append(text[start:i])
            start = -1
    if start >= 0:
        found.append(text[start:])
    return found


def _parts(text: str) -> Iterator[tuple[str | None, str | None]]:
    r"""Each quoted part or word of ``text``, in order: ``(the text between the quotes, None)`` or
    ``(None, a word: letters and digits, joined by underscores or hyphens into one compound)``;
    what ``re.finditer(r'"([^"]*)"|([^\W_]+(?:[-_]+[^\W_]+)*)', text)`` finds, as its two groups."""
    i, end = 0, len(text)
    while i < end:
        char = text[i]
        if char == '"':
            close = text.find('"', i + 1)
            if close >= 0:
                yield text[i + 1:close], None
                i = close + 1
                continue
        elif char.isalnum():
            j = i + 1
            while j < end and text[j].isalnum():
                j += 1
            while True:  # (?:[-_]+[^\W_]+)*
                k = j
                while k < end and text[k] in "-_":
                    k += 1
                if k == j or k == end or not text[k].isalnum():
                    break
                j = k + 1
                while j < end and text[j].isalnum():
                    j += 1
            yield None, text[i:j]
            i = j
            continue
        i += 1

STOP_WORDS = frozenset("""
a about above after again against ago all almost also although always am among an and another any anybody
anyone anything anyway anywhere are aren around as ask asked at away be became because been before being
below best better between both but by can cannot could couldn d did didn do does doesn doing don done
down during each either else enough etc even ever every everything few find for from further get gets
getting give go going got had hadn has hasn have haven having he hello her here hers herself hey hi him
himself his how however i if in instead into is isn it its itself just know kind let like ll m many maybe
me might mine more most much must mustn my myself need needs never no nor not now of off often ok okay on
once one only or other others otherwise our ours ourselves out over own please quite rather re really
remember s said same say says see seem shall she should shouldn show since so some somebody someone
something sometimes somewhere still such sure t tell than thank thanks that the their theirs them
themselves then there these they thing things this those though through thus to too try trying under
until up upon us use used using usually ve very via want wanted was wasn way we well were weren what
whatever when whenever where whether which while who whom whose why will with within without won would
wouldn y yes yet you your yours yourself yourselves
actually alright awesome basically bit cheers cool definitely excellent great hmm lets nice nope oops perfect
per perhaps probably somewhat sorry super wow yeah yep
""".split())

# Words one act goes by in software sessions, each group a set of near-synonyms (one word
# per stem: the index stems every form). A query word of a group also seeks the others.
RELATED_GROUPS = (
    ("deploy", "ship", "release", "publish", "rollout"),
    ("version", "release"),
    ("bug", "error", "failure", "fault", "defect"),
    ("crash", "panic", "exception", "traceback"),
    ("test", "spec"),
    ("doc", "documentation", "readme"),
    ("config", "configuration", "setting"),
    ("install", "setup"),
    ("delete", "remove", "erase"),
    ("start", "launch", "boot"),
    ("stop", "kill", "terminate"),
    ("fast", "slow", "speed", "performance", "latency"),
    ("lint", "linter", "style"),
    ("directory", "folder"),
    ("function", "helper", "method"),
    ("task", "issue", "ticket"),
    ("auth", "authentication", "login"),
    ("database", "db"),
)


def _related(groups: tuple[tuple[str, ...], ...]) -> dict[str, tuple[str, ...]]:
    related: dict[str, list[str]] = {}
    for group in groups:
        for word in group:
            known = related.setdefault(word, [])
            known.extend(other for other in group if other != word and other not in known)
    return {word: tuple(others) for word, others in related.items()}


RELATED = _related(RELATED_GROUPS)


def terms(text: str, max_terms: int = MAX_TERMS) -> list[str]:
    """Return the meaningful terms of ``text``, in first-seen order, at most ``max_terms``.

    A term is a lower-cased word that is not a stop word (a single letter
    neither), or a phrase, its words joined by one space: the words of a
    quoted part (stop words kept), or a compound (``mix_audit``,
    ``parallel-safe``) followed by its meaningful words as terms of their own. Lower-cased, not
    case-folded: ``ß`` stays ``ß``, as the index keeps it. Reads at most
    MAX_QUERY_CHARS characters of ``text``; skips a word over MAX_WORD_CHARS, and a compound
    over MAX_WORD_CHARS is not a phrase term (its meaningful words still are terms).
    """
    found: list[str] = []
    seen = set()

    def keep(term: str) -> bool:
        if term not in seen:
            seen.add(term)
            found.append(term)
        return len(found) >= max_terms

    for quoted, compound in _parts(text[:MAX_QUERY_CHARS]):
        if quoted is not None:
            found_words = [word for word in words(quoted.lower()) if len(word) <= MAX_WORD_CHARS]
            if len(found_words) > 1:
                if keep(" ".join(found_words)):
                    break
                continue  # a phrase the person quoted: its words together, not apart
        else:
            compound = compound.lower()
            found_words = [word for word in words(compound) if len(word) <= MAX_WORD_CHARS]
            # A compound over MAX_WORD_CHARS is no phrase term, but its words still are terms.
            if len(found_words) > 1 and len(compound) <= MAX_WORD_CHARS and keep(compound):
                break
        if any(keep(word) for word in found_words
               if word not in STOP_WORDS and not (len(word) == 1 and word.isalpha())):
            break
    return found


def forms(term: str) -> tuple[str, ...]:
    """The other forms of the word ``term`` that the index's Porter stemmer files under another stem.

    Porter turns a final ``y`` after a vowel into ``i`` but keeps a ``-ment`` whose base is
    short: ``deploy``, ``deploys`` and ``deployed`` are all ``deploi``, ``deployment`` is
    ``deploy``, so neither would find the other (``employ``, ``enjoy``, ``pay`` alike). A
    ``-ment(s)`` word of such a base brings the base (``deployment`` -> ``deploy``), such a base
    its ``-ment`` (``deploy`` -> ``deployment``). Returns () for any other term (a phrase too)."""
    if " " in term:
        return ()
    for suffix in ("ments", "ment"):
        base = term[:-len(suffix)]
        if term.endswith(suffix) and _vowel_y(base):
            return (base,)
    return (term + "ment",) if _vowel_y(term) else ()


def _vowel_y(word: str) -> bool:
    return len(word) >= 3 and word[-1] == "y" and word[-2] in "aeiou"


def _group_of(term: str) -> tuple[str, ...]:
    """The RELATED words of ``term`` or of its stem by a plain suffix (``deploys``, ``shipping``,
    ``deployment``)."""
    if term in RELATED:
        return RELATED[term]
    for suffix, restore in (("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("es", ""), ("s", ""),
                            ("ments", ""), ("ment", "")):
        if term.endswith(suffix) and term[:-len(suffix)] + restore in RELATED:
            return RELATED[term[:-len(suffix)] + restore]
    return ()


def related_words(found: list[str]) -> list[str]:
    """Return the RELATED words of the terms ``found`` that are not among them, in order."""
    out: list[str] = []
    seen = set(found)
    for term in found:
        for word in _group_of(term):
            if word not in seen:
                seen.add(word)
                out.append(word)
    return out


def _quoted(term: str) -> str:
    """``term`` as an FTS5 string: its words, in double quotes (nothing of it read as syntax)."""
    return '"' + " ".join(words(term)) + '"'


def alternative(term: str, corrected: dict[str, str] | None = None) -> str:
    """The FTS5 alternative that stands for the typed ``term``: the term itself and its ``forms``,
    or, when ``corrected`` maps it (``corrections``: no memory holds it), the word it was
    corrected to and that word's forms."""
    word = corrected.get(term, term) if corrected else term
    return " OR ".join(_quoted(each) for each in (word, *forms(word)))


def group(term: str, corrected: dict[str, str] | None = None) -> str:
    """``alternative(term, corrected)`` OR the RELATED words of ``term``: what a memory must hold
    to share the term, for the prompt hook's count of shared terms (sandman/recall/moments.py)."""
    return " OR ".join([alternative(term, corrected), *(_quoted(word) for word in _group_of(term))])


def _expression(found: list[str], corrected: dict[str, str] | None = None) -> str:
    return " OR ".join(alternative(term, corrected) for term in found)


# --- misspellings: a word no memory holds, corrected to the nearest word of the index ---

CORRECT_MIN_CHARS = 5  # a shorter word has too many neighbours one edit away to guess from
CORRECT_MAX_WORDS = 4  # words corrected per query, in their order (each costs a look at the index)
VOCABULARY_MIN_CHARS = CORRECT_MIN_CHARS - 2  # the shortest word a correction can reach (two edits)


def vocabulary(text: str) -> set[str]:
    """The words of ``text`` a misspelling may be corrected to: its runs of letters (``words``),
    lower-cased, of VOCABULARY_MIN_CHARS to MAX_WORD_CHARS characters (the search index's
    ``words`` table counts them per memory)."""
    return {word for word in words(text.lower())
            if VOCABULARY_MIN_CHARS <= len(word) <= MAX_WORD_CHARS and word.isalpha()}


def edit_distance(a: str, b: str, bound: int) -> int:
    """The optimal-string-alignment distance of ``a`` and ``b`` (insertions, deletions,
    substitutions and swaps of two neighbours, one each), or ``bound`` + 1 when it is over
    ``bound``: only the cells within ``bound`` of the diagonal are computed, and a row whose
    every cell is over ``bound`` ends it (the prompt hook corrects words on every prompt)."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    over = bound + 1
    before: list[int] = []
    row = [j if j <= bound else over for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        current = [i if i <= bound else over] + [over] * len(b)
        least = current[0]
        char = a[i - 1]
        for j in range(max(1, i - bound), min(len(b), i + bound) + 1):
            other = b[j - 1]
            best = row[j - 1] + (char != other)
            if row[j] + 1 < best:
                best = row[j] + 1
            if current[j - 1] + 1 < best:
                best = current[j - 1] + 1
            if i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other and before[j - 2] + 1 < best:
                best = before[j - 2] + 1
            current[j] = best
            if best < least:
                least = best
        if least > bound:
            return over
        before, row = row, current
    return row[-1] if row[-1] <= bound else over


def allowed_edits(word: str) -> int:
    """Edits a misspelling of ``word``'s length may be away from the word meant: 1 below 8
    characters, 2 from 8 on; 0 (never corrected) below CORRECT_MIN_CHARS."""
    return 0 if len(word) < CORRECT_MIN_CHARS else 1 if len(word) < 8 else 2


def corrections(connection, found: list[str]) -> dict[str, str]:
    """Map each term of ``found`` that no memory of the index holds to the index's word nearest it.

    ``connection`` is a sqlite3 (or ``_sqlite3``) connection to the search index (its FTS5
    table ``memories`` and its ``words`` table, docs/BANK-FORMAT.md, "The search index"). Only
    single words of letters, of CORRECT_MIN_CHARS characters or more, are looked at, the
    first CORRECT_MAX_WORDS of them that no memory holds in any form (``alternative``): each
    is compared with the words of the index that start with its first two letters (or its
    first and third: a second letter left out or swapped), the nearest within
    ``allowed_edits`` of it (``edit_distance``) winning, the word more memories hold on a tie,
    then the first in order. Returns ``{term: word}``, {} when nothing is corrected or the index
    has no ``words`` table (one of an older schema). Raises sqlite3.Error (a locked or broken
    index).
    """
    candidates = [term for term in found if len(term) >= CORRECT_MIN_CHARS and term.isalpha()]
    if not candidates or not connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'words'").fetchone():
        return {}
    absent = []
    for term in candidates:
        if connection.execute("SELECT 1 FROM memories WHERE memories MATCH ? LIMIT 1", [alternative(term)]).fetchone():
            continue
        absent.append(term)
        if len(absent) >= CORRECT_MAX_WORDS:
            break
    corrected = {}
    for term in absent:
        bound = allowed_edits(term)
        best: tuple[int, int, str] | None = None
        # The words that start as the term does, or with its second letter left out or swapped
        # with its third (a slip of the first letter is rare, and reading every word is slow).
        for prefix in dict.fromkeys((term[:2], term[0] + term[2])):
            for word, memories in connection.execute(
                    "SELECT word, memories FROM words WHERE word >= ? AND word < ? AND length(word) BETWEEN ? AND ?",
                    [prefix, prefix[0] + chr(ord(prefix[1]) + 1), len(term) - bound, len(term) + bound]):
                distance = edit_distance(term, word, bound)
                if distance <= bound and (best is None or (distance, -memories, word) < best):
                    best = (distance, -memories, word)
        if best is not None:
            corrected[term] = best[2]
    return corrected


def fts_query(text: str, max_terms: int = MAX_TERMS, related: bool = True,
              corrected: dict[str, str] | None = None) -> str | None:
    """Return the FTS5 MATCH expression for a person's ``text``, None when no meaningful word remains.

    The expression is ``"t1" OR "t2" OR ...``: each of ``terms(text,
    max_terms)`` (``alternative``: a term ``corrected`` maps stands as its
    correction; each with its ``forms``; and, with ``related``, their RELATED
    words) as a quoted string of its words, which FTS5 tokenizes (and stems) as
    the index does; a compound or quoted part is a phrase of its words. At
    most MAX_QUERY_CHARS characters of ``text`` are read.
    """
    found = terms(text, max_terms)
    if not found:
        return None
    expression = _expression(found, corrected)
    return f"{expression} OR {_expression(related_words(found))}" if related and related_words(found) else expression


def fts_related(text: str, max_terms: int = MAX_TERMS) -> str | None:
    """Return the MATCH expression of the RELATED words alone (those ``fts_query`` adds), None when none.

    search.rank scores them apart, at a lower weight than the words a person typed.
    """
    extra = related_words(terms(text, max_terms))
    return _expression(extra) if extra else None


# --- how relevant a memory is to a prompt (the prompt hook's floor) ---


def weight(holding: int, memories: int) -> float:
    """How much sharing one term says, its inverse document frequency: ``log((memories + 1) /
    (holding + 0.5))`` for a term ``holding`` of the index's ``memories`` hold (counted no
    further than the caller's cap). A term no memory holds weighs the most: a prompt made of
    words the banks do not know is about something they do not hold."""
    return math.log((memories + 1) / (holding + 0.5))


def enough(shared: int, shared_weight: float, terms: int, whole_weight: float, memories: int,
           floor: tuple[int, float, float]) -> bool:
    """The relevance floor (docs/recall.md, "The relevance floor"): is a memory sharing ``shared`` of a
    prompt's ``terms`` meaningful terms, ``shared_weight`` of their ``whole_weight`` (``weight``,
    in an index of ``memories``), relevant? ``floor`` is ``(least, coverage, rarity)``: it must
    share at least ``least`` terms (all, for a shorter prompt) and at least the share
    ``coverage`` of their weight; a one-term prompt's term must weigh at least ``rarity`` of
    what a term one memory holds weighs (a word many memories hold picks none out)."""
    least, coverage, rarity = floor
    if terms == 1:
        return shared == 1 and shared_weight >= rarity * weight(1, memories)
    return shared >= min(least, terms) and shared_weight >= coverage * whole_weight
