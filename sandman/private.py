"""Private spans: text a person marks ``<private>…</private>`` never leaves the archive.

The archived transcript keeps every byte (take moves it whole); everything
sandman derives from a session — the turns a mind reads, a pointer's title and
highlights, a memory's name, description and body, hence recall and the site —
sees ``[private]`` in the span's place (docs/BANK-FORMAT.md, "Private spans").

The tags are matched case-insensitively. A ``<private>`` left open hides
everything after it: a prompt cut short (a title at 80 characters, a mind's
head and tail) must not spill what its closing tag would have hidden. A
``</private>`` with no opening tag is left as it is.

Standard library only: take --hook imports this module.
"""

from __future__ import annotations

import re

MARK = "[private]"
_SPAN = re.compile(r"<private>(.*?)(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
# Contents shorter than this are not scrubbed where they recur unmarked (a "yes" would eat every "yes").
ECHO_MIN_CHARS = 6


def redact(text: str) -> str:
    """Return ``text`` with every private span, tags included, replaced by ``[private]``."""
    if "<" not in text:
        return text
    return _SPAN.sub(MARK, text)


def spans(text: str) -> list[str]:
    """Return the contents of the private spans of ``text``, stripped, in order."""
    if "<" not in text:
        return []
    return [match.group(1).strip() for match in _SPAN.finditer(text) if match.group(1).strip()]


def scrub(text: str, secrets: list[str]) -> str:
    """Return ``text`` redacted, with every verbatim recurrence of a private span's contents
    (``secrets``, from ``spans``; those of ``ECHO_MIN_CHARS`` or more) replaced by ``[private]``
    too: an assistant that quotes the private text back must not carry it out."""
    text = redact(text)
    for secret in secrets:
        if len(secret) >= ECHO_MIN_CHARS and secret in text:
            text = text.replace(secret, MARK)
    return text
