"""Evidence of sameness: what consensus compares between two memories (docs/BANK-FORMAT.md, "Consensus").

Integers and sets only; no model, no float. A memory's evidence is read from
its whole name and whole description:

- **terms.** The text is cut into terms, tried in this order: a span in
  backticks, a URL, a dotted module name (``Spotter.Services.TranscriptRenderer``),
  a path (``lib/a/b.ex``, ``app.js``), a command-line flag (``-x``,
  ``--status``), a CamelCase or snake_case identifier (``SessionLive``,
  ``mount_computers``, ``@max_result_lines``, ``SANDMAN_ROOT``), a number, a word.
- **words.** Every term gives its words: runs of letters and digits,
  CamelCase humps split, lowercased, crudely depluralised, stop words (``the``,
  ``is``, ``with``...) dropped.
- **anchors.** Every term but a plain word or number is also an anchor, kept
  whole (lowercased; a path also by its last part; a backticked span also
  read for the terms inside it). An anchor is a strong sign of one fact: it
  counts once more than a word.
- **numbers** are kept apart: two memories that each name a number the other
  does not (``port 7000`` / ``port 7001``) state different facts.
- **negation.** In the name, the first term after ``not``, ``never``,
  ``don't``, ``avoid``... is negated: ``never use pytest -x`` negates
  ``pytest``; a term one name negates and the other states plainly is a
  contradiction. (After ``no``, ``none``, ``without`` a term is neither: they
  mostly qualify a noun, as in "no Igniter installers exist". Descriptions
  are not read for negation: they restate a term plainly too often, "a
  baseline timed in the same run; no timed assertion".)
- **body.** The anchors of the body are read only when name and description
  come close without being the same (``same``).

Standard library only, like the rest of consensus.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Words that carry no fact of their own: articles, pronouns, auxiliaries, prepositions.
STOP_WORDS = frozenset("""
a an the and or but if then else so as of to in on at by for with from into onto via per about
is are was were be been being am it its it's this that these those there here which who whom whose
what when where why how all any each every some such than too very also just only own same both
do does did done doing has have had having can could should would will shall may might must
i we you he she they them their our your my me us his her one ones
up down out off over under again further once more most other others
e g eg ie i.e etc s t d ll re ve m
use uses used using now still longer
""".split())

NEGATORS = frozenset("""
not never don dont doesn doesnt didn didnt isn isnt aren arent wasn wasnt won wont cannot cant
shouldn shouldnt mustn mustnt avoid
""".split())
# "no", "none", "without" mostly qualify a noun ("no Igniter installers exist", "no config
# needed"): the term after one is neither negated nor stated plainly.
WEAK_NEGATORS = frozenset("no none without nor neither non".split())

_TERM = re.compile(
    r"""
      `(?P<tick>[^`\n]+)`
    | (?P<url>https?://[^\s`<>()\[\]"']+)
    | (?P<dotted>\b[A-Z]\w*(?:\.[A-Z]\w*)+\b)
    | (?P<path>(?:[\w.~@-]*\w)?/[\w.~@-]*\w[\w.~@/-]*|\b[\w-]{2,}\.[a-z][a-z0-9]{0,4}\b)
    | (?P<flag>(?<![\w-])--?[A-Za-z][\w-]*)
    | (?P<ident>@?\b[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+\b|\b[A-Za-z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b|\b[A-Z]{2,}[a-z]\w*\b)
    | (?P<number>\b\d{1,3}(?:,\d{3})+\b|\b\d+(?:\.\d+)*\b)
    | (?P<word>[^\W_]+)
    """,
    re.VERBOSE,
)
_TICKS = re.compile(r"`([^`\n]+)`")
_PUNCTUATION = ",.;:!?()[]{}\"'<>*"
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[^\W_]+")
# Anchors live in the same set as words, marked by a character no word holds.
ANCHOR = "`"


def depluralise(word: str) -> str:
    """Return ``word`` crudely made singular: ``queries``→``query``, ``tests``→``test``; ``class``, ``bus`` kept."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@lru_cache(maxsize=65536)
def word_token(raw: str) -> str | None:
    """Return the token of one word (lowercased, depluralised), None for a stop word, a
    negator or a single letter. Cached: a pure function of a word, called for every word."""
    word = raw.lower()
    if word in STOP_WORDS or word in NEGATORS or word in WEAK_NEGATORS or (len(word) < 2 and not word.isdigit()):
        return None
    return depluralise(word)


def words_of(text: str) -> list[str]:
    """Return the meaningful words of ``text``: CamelCase split, lowercased, depluralised, stop words dropped."""
    return [token for token in map(word_token, _WORD.findall(_HUMP.sub(" ", text))) if token]


# What a plain chunk is (``_plain``): a word's token, a negator, or a number.
WORD, NEGATOR, NUMBER = "word", "negator", "number"


@lru_cache(maxsize=65536)
def _plain(chunk: str) -> tuple[str, str | bool | None] | None:
    """Classify a whitespace-separated chunk that is one lowercase or capitalised word, or a
    number, as ``_read`` takes it: ``(WORD, token)`` (token None for a stop word),
    ``(NEGATOR, True)`` for a negator, ``(NEGATOR, None)`` for a weak one, ``(NUMBER, digits)``;
    None for any other chunk, which ``_TERM`` cuts. Most of a memory is such chunks, and the
    same ones recur across proposals: hence the cache."""
    bare = chunk.strip(_PUNCTUATION)
    if bare.isalpha() and (bare.islower() or bare[1:].islower()):
        word = bare.lower()
        if word in NEGATORS:
            return NEGATOR, True
        if word in WEAK_NEGATORS:
            return NEGATOR, None
        return WORD, word_token(word)
    if bare.isdigit():
        return NUMBER, bare
    return None


def _read(text: str, tokens: set[str], numbers: set[str], keys: list[tuple[str, bool | None]]) -> None:
    """Add the terms of ``text`` to ``tokens`` (words, and anchors marked ``ANCHOR``) and
    ``numbers``; append each term's key and whether it is negated (None: after a weak
    negator, so neither) to ``keys``.

    Terms are read in order: a span in backticks is one term; outside them a plain
    chunk (``_plain``) is one, and any other chunk is cut by ``_TERM``.
    """
    negate: bool | None = False
    parts = _TICKS.split(text) if "`" in text else [text]
    for n, part in enumerate(parts):
        if n % 2:
            negate = _term("tick", part, tokens, numbers, keys, negate)
            continue
        for chunk in part.split():
            plain = _plain(chunk)
            if plain is None:
                for match in _TERM.finditer(chunk):
                    kind = match.lastgroup
                    negate = _term(kind, match.group(kind), tokens, numbers, keys, negate)
                continue
            kind, value = plain
            if kind is NEGATOR:
                negate = value
            elif value is not None:  # a stop word leaves the negation for the next term
                tokens.add(value)
                if kind is NUMBER:
                    numbers.add(value)
                keys.append((value, negate))
                negate = False


def _term(kind: str, value: str, tokens: set[str], numbers: set[str], keys: list[tuple[str, bool | None]],
          negate: bool | None) -> bool | None:
    """Read one term of ``kind`` (a group of ``_TERM``) as ``_read`` does; return the negation
    that holds for the next term."""
    if kind == "word":
        word = value.lower()
        if word in NEGATORS:
            return True
        if word in WEAK_NEGATORS:
            return None
        key = word_token(word)
        if key is None:
            return negate
        tokens.add(key)
    elif kind == "number":
        key = value.replace(",", "")  # 9,000 is 9000
        tokens.add(key)
        numbers.add(key)
    else:
        key = ANCHOR + " ".join(value.lower().split()).rstrip(".,;:")
        tokens.add(key)
        if kind == "path":
            tail = value.rstrip("/").rsplit("/", 1)[-1].lower()
            if tail:
                tokens.add(ANCHOR + tail)
        if kind == "tick":
            _read(value, tokens, numbers, keys)
        else:
            tokens.update(words_of(value))
    keys.append((key, negate))
    return False


class Evidence:
    """What one memory offers for comparison: ``tokens`` (words and anchors, one
    frozenset), the ``anchors`` alone and those of the name (``name_anchors``),
    ``numbers``, the term keys the name ``negated`` and those it states
    ``plain``, and the anchors of its body, read on first use."""

    __slots__ = ("tokens", "anchors", "name_anchors", "numbers", "negated", "plain", "_body", "_body_anchors")

    def __init__(self, name: str, description: str, body: str = "") -> None:
        tokens: set[str] = set()
        numbers: set[str] = set()
        keys: list[tuple[str, bool | None]] = []
        _read(name, tokens, numbers, keys)
        self.name_anchors = frozenset(token for token in tokens if token[0] == ANCHOR)
        _read(description, tokens, numbers, [])
        self.tokens = frozenset(tokens)
        self.anchors = frozenset(token for token in tokens if token[0] == ANCHOR)
        self.numbers = frozenset(numbers)
        self.negated = frozenset(key for key, negated in keys if negated)
        self.plain = frozenset(key for key, negated in keys if negated is False)
        self._body = body
        self._body_anchors: frozenset[str] | None = None

    @property
    def body_anchors(self) -> frozenset[str]:
        """The anchors (never the plain words) of the body."""
        if self._body_anchors is None:
            tokens: set[str] = set()
            _read(self._body, tokens, set(), [])
            self._body_anchors = frozenset(token for token in tokens if token[0] == ANCHOR)
        return self._body_anchors


def contradicts(a: Evidence, b: Evidence) -> bool:
    """True when ``a`` and ``b`` cannot state one fact, however many words they share:

    - each names a number the other does not (``port 7000`` / ``port 7001``);
    - a term one name negates, the other name states plainly (``never use
      pytest -x`` / ``use pytest -x``);
    - both carry anchors and share none (``make deploy-staging`` /
      ``make deploy-prod``);
    - both names carry anchors and neither name's anchors occur anywhere in
      the other memory (``SessionLive owns...`` / ``SubagentLive owns...``):
      the subjects differ.
    """
    if a.numbers and b.numbers and not (a.numbers <= b.numbers or b.numbers <= a.numbers):
        return True
    if a.negated & b.plain - b.negated or b.negated & a.plain - a.negated:
        return True
    if a.anchors and b.anchors and not a.anchors & b.anchors:
        return True
    return bool(a.name_anchors and b.name_anchors and not a.name_anchors & b.tokens
                and not b.name_anchors & a.tokens)


def same(a: Evidence, b: Evidence) -> bool:
    """True when two memories state the same fact (docs/BANK-FORMAT.md, "Consensus").

    With ``s`` the tokens they share and ``n`` the sum of their token counts
    (an anchor counts as its words and once more), the Dice overlap is
    ``2·s/n``. Same when it is at least 5/9 (``18·s ≥ 5·n``); or, from 1/3
    (``6·s ≥ n``), when the anchors of the two bodies overlap by at least one
    half by the same measure (``4·s_body ≥ n_body``). Never when ``contradicts``
    or when they share nothing (two names of stop words alone).
    """
    shared = len(a.tokens & b.tokens)
    total = len(a.tokens) + len(b.tokens)
    if not shared or 6 * shared < total:  # nothing shared: two texts of stop words say nothing alike
        return False
    if 18 * shared < 5 * total:
        body_a, body_b = a.body_anchors, b.body_anchors
        if not body_a or not body_b or 4 * len(body_a & body_b) < len(body_a) + len(body_b):
            return False
    return not contradicts(a, b)
