"""The secrets ban's pre-check (docs/secrets.md): plain text cleared without loading the rule set.

``suspected`` (and ``suspected_path`` for a directory) is False only for text no rule of the
full check (sandman.banks.secret_rules with betterleaks, through sandman.banks.secrets) could
match; the writers call it first, so a plain ``remember`` never loads the rules (about 12 ms,
issue 29). ``scan_text`` is the text every rule reads. Standard library only.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter

_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@functools.lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """``char`` without its nonspacing marks: itself when it holds none, else its canonical decomposition (NFD)
    less every character of category Mn (``ṕ`` becomes ``p``, U+FE0F and U+0301 alone become nothing)."""
    if unicodedata.category(char) == "Mn":
        return ""
    parts = unicodedata.normalize("NFD", char)
    if len(parts) == 1 or not any(unicodedata.category(part) == "Mn" for part in parts):
        return char
    return "".join(part for part in parts if unicodedata.category(part) != "Mn")


def scan_text(text: str) -> str:
    """Return the text the rules read, from ``text`` already without format characters and in NFKC.

    Nonspacing marks (category Mn: combining accents, variation selectors such as U+FE0F) are dropped, and a
    letter composed with one is read as its base letter: a mark inside a token (``ghp_…`` with U+0301 or U+FE0F
    after a letter) hides it from every pattern and not from a reader who copies it, and NFKC composes
    ``p`` + U+0301 into ``ṕ``. For the scan only: what is stored or shown keeps its marks
    (sandman.banks.secrets.mask_secrets maps a finding back with ``scan_origin``). Same length or shorter.
    """
    return text if text.isascii() else _NON_ASCII.sub(lambda match: _fold_char(match.group(0)), text)


def scan_origin(text: str) -> list[int]:
    """Return, for each character of ``scan_text(text)``, the index in ``text`` of the character it comes from."""
    origin: list[int] = []
    for index, char in enumerate(text):
        origin.extend([index] * (1 if char.isascii() else len(_fold_char(char))))
    return origin


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values()) if value else 0.0


def _random_letters(value: str) -> bool:
    """True when ``value`` is letters alone (``_`` and ``-`` between them aside) drawn at random from both
    cases (``hfCnuVcYOgiRjlDEmAoRbN``): 16 letters or more, the case changing at three letters in ten or
    more, 3.5 bits per character. A name in code changes case once a word (``AgencyIdentificationCode``)."""
    letters = value.replace("_", "").replace("-", "")
    if len(letters) < 16 or not (letters.isascii() and letters.isalpha()) or letters.islower() or letters.isupper():
        return False
    changes = sum(a.islower() != b.islower() for a, b in zip(letters, letters[1:]))
    return changes * 10 >= 3 * len(letters) and entropy(letters) >= 3.5 and not _code_name(value)


def _classes(value: str) -> int:
    """How many of lowercase, uppercase and digits ``value`` holds."""
    return sum((any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value)))


_IDENTIFIER = re.compile(r"(?:[a-z]+|[0-9]+|[a-z]{1,8}[0-9]{1,3}[a-z]{0,2})"
                         r"(?:[_-](?:[a-z]+|[0-9]+|[a-z]{1,8}[0-9]{1,3}[a-z]{0,2}))+[_-]?")


# A name in code: CamelCase words (`CreateLightmapTexturesIndividual`, `RHFSearchEXPSubsK2Click`), or upper-case
# words joined by `_` (`SYSMEMINFO1_PERF_CCTOTALDIRTYPAGES`). A generated body has single letters between its
# digits and capitals, and no `_` between upper-case words.
# Each part is read whole (a word to its end, capitals to the next word or the end, digits to the end): one
# way to split a run, so a long run of capitals and digits is read once, not in every split (seconds each).
_CAMEL = re.compile(r"(?:[A-Z]?[a-z]{2,}(?![a-z])|[A-Z]{2,}(?=[A-Z][a-z]|[^A-Za-z]|$)|[A-Z]?\d+(?!\d))+")


_UPPER_WORDS = re.compile(r"[A-Z]{2,}\d{0,2}(?:_[A-Z]{2,}\d{0,2}){2,}")


def _code_name(body: str) -> bool:
    """True when ``body`` reads as a name in code (CamelCase words, UPPER_SNAKE words), or a path of words."""
    if _UPPER_WORDS.fullmatch(body):
        return True
    if "/" in body:
        return all(_IDENTIFIER.fullmatch(part.lower()) or re.fullmatch(r"[A-Za-z]+\d{0,2}|\d+", part)
                   for part in body.split("/") if part)
    parts = [part for part in re.split(r"[_.\-]", body) if part]
    return bool(parts) and all(_CAMEL.fullmatch(part) for part in parts) and len(re.findall(r"[a-z]{2,}", body)) >= 2


# What any secret the full check finds has, once normalised: a long run mixing letters with digits,
# a credential word given a value, a URL with a user part, a key envelope, a command-line credential.
# The long run is found whole and then checked for a letter and a digit: lookaheads at every start
# of a run took time quadratic in its length (minutes on a 64 KiB body of letters). The tail of a
# credential word is bounded for the same reason: `keykeykey…` re-read the rest of the run from every
# `key` in it (79 s on 64 KiB).
_SUSPECT_RUN = re.compile(r"[\w\-+/=.~:@]{16,}")


_LETTER_RUN = re.compile(r"[A-Za-z_\-]{16,}")


# A run that is one ISO 8601 time and nothing else (``2026-12-05T10:28:35Z``: the ``created`` and
# ``updated`` of every memory file, which made every commit of a memory load the full scan) holds
# two letters, T and Z, and no random body; a run with anything glued to the time is still checked.
_TIME_RUN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)?")


# Nor is a run that is a memory file name alone (``project_release_v2_notes.md``, the link of every
# MEMORY.md line): its slug is the memory's name lowercased, and the name stands beside it, in its
# own case, in the same line (the link text), where the check reads it. A digit in a name made every
# commit of its memory run the full scan.
_FILE_RUN = re.compile(r"(?:user|feedback|project|reference)_[a-z0-9]+(?:_[a-z0-9]+)*\.md")


_LETTER = re.compile(r"[A-Za-z]")


_DIGIT = re.compile(r"\d")


# The credential words include the keywords of the betterleaks rules whose value has no such run: Sidekiq's
# `BUNDLE_GEMS__CONTRIBSYS__COM: <8 hex>:<8 hex>`, Sumo Logic's access id `su` + 12 after `access_id`. The name may
# close a subscript (`os.environ["API_KEY"] = …`); a value may be quoted, follow ` - ` (`nethunt token - '<value>'`,
# the assignment rule's dash form) or be a call's second quoted argument (`("X-Api-Key", "<value>")`).
_SUSPECT = re.compile(
    r"(?i:pass|pwd|pw|secret|token|key|auth|credential|bearer|basic|cookie|contribsys|sumo|access[_.-]?id)"
    r"[\w\-\"']{0,64}\]?\s*"
    r"(?:[:=]|\s(?:is|[a-z0-9$'\"]|-\s)|[\"']\s*,\s*[\"'])"
    r"|(?i:password|passwort|passphrase|passwd|kennwort|contrase|senha|parola\s+d.ordine|mot\s+de\s+passe)\w*\s+\S"
    r"|(?i:creds|credenciales|credenziali|identifiants|zugangsdaten)\W"
    r"|\bP(?:IN|UK)\b|://\S*@|BEGIN|PuTTY|\s-[pu]\s*\S|sshpass|login\s")


def suspected(text: str) -> bool:
    """True unless ``text`` plainly holds no secret: a cheap pre-check for the hook paths.

    ``text`` is normalised first (as the full check does). False only for text
    with no run of 16 or more characters mixing letters with digits (a run
    that is an ISO 8601 time alone, or a memory file name alone, is not one) or
    letters of both cases drawn at random (``_random_letters``), no
    credential word followed by a value (the words include the keywords of
    the betterleaks rules whose values are shorter or of one class:
    ``contribsys``, ``sumo``, ``access_id``), no URL with a user part, no key
    envelope and no command-line credential flag: no rule of the full check
    (sandman.banks.secrets) matches such text. tests/test_secrets_corpus.py
    holds it to that on every credential kind and on every public vector
    (``refuse_secrets`` refuses what ``find_secrets`` refuses).
    """
    text = scan_text(unicodedata.normalize("NFKC", "".join(c for c in text if unicodedata.category(c) != "Cf")))
    if _SUSPECT.search(text):
        return True
    if any(_random_letters(run.group(0)) for run in _LETTER_RUN.finditer(text)):
        return True
    return any(_LETTER.search(run.group(0)) and _DIGIT.search(run.group(0)) and not _TIME_RUN.fullmatch(run.group(0))
               and not _FILE_RUN.fullmatch(run.group(0)) for run in _SUSPECT_RUN.finditer(text))


_PATH_RUN = re.compile(r"[A-Za-z0-9+=]{16,}")


_PATH_WORD_RUN = re.compile(r"[\w\-]{16,}")


def suspected_path(path: str) -> bool:
    """True unless the directory ``path`` plainly holds no secret: the cwd's pre-check on the hook path.

    Narrower than ``suspected``, which flags almost every temporary or
    versioned directory (``/tmp/pytest-of-user/test_x_0``: a long run of word
    characters and ``/`` with a digit). A path is suspected when one of its
    segments (split at ``/``, which no directory name holds) has a run of 16
    or more letters, digits, ``+`` and ``=`` mixing letters with digits (the
    random body every token, key id and key has), a run of 16 or more word
    characters and ``-`` holding lower- and upper-case letters and digits
    (``AIza…`` with its ``-`` and ``_``) or letters of both cases drawn at
    random (``_random_letters``), or a credential word given
    a value, a user part before ``@``, a key envelope or a command-line flag
    (``suspected``'s other alternatives). Not looked for: a secret whose every
    run of letters and digits is shorter than 16 characters or of one class.
    """
    path = scan_text(unicodedata.normalize("NFKC", "".join(c for c in path if unicodedata.category(c) != "Cf")))
    for segment in path.split("/"):
        if _SUSPECT.search(segment) or "@" in segment:
            return True
        if any(_LETTER.search(run.group(0)) and _DIGIT.search(run.group(0)) for run in _PATH_RUN.finditer(segment)):
            return True
        if any(_classes(run.group(0)) == 3 or _random_letters(run.group(0)) for run in _PATH_WORD_RUN.finditer(segment)):
            return True
    return False
