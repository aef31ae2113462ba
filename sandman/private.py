"""Private spans: text a person marks ``<private>…</private>`` never leaves the archive.

The archived transcript keeps every byte (take moves it whole); everything
sandman derives from a session — the turns a mind reads, a pointer's title and
highlights, a memory's name, description and body, hence recall, search and
the site — sees ``[private]`` in the span's place (docs/BANK-FORMAT.md,
"Private spans").

The grammar, the same on every path:

- the tags are ``<private>`` and ``</private>``, matched case-insensitively;
- spans nest: an opener inside a span deepens it, a closer ends only the
  innermost, and the span ends with the closer that brings the depth back
  to 0 (``<private>A <private>B</private> C</private>`` is one span);
- a closer outside any span is literal text, kept as it is;
- an opener left open hides the rest of its text, and in a session the rest
  of the session: a span the person opened in one prompt and never closed
  hides every later prompt, reply, tool call and title (``Spans``). Only
  what the person typed (``Spans.person``) opens or closes a span across
  texts; a reply, a tool's text or a title (``Spans.other``) is hidden whole
  while a span is open, else its own spans are hidden within it;
- the span, tags included, becomes one ``[private]``.

Standard library only: take --hook imports this module.
"""

from __future__ import annotations

import re

MARK = "[private]"
TAG = re.compile(r"<(/?)private>", re.IGNORECASE)
# The same test on a transcript's raw bytes (the lean path of take --hook).
TAG_BYTES = re.compile(rb"<(/?)private>", re.IGNORECASE)
# Contents shorter than this are not scrubbed where they recur unmarked (a "yes" would eat every "yes").
ECHO_MIN_CHARS = 6


def hide(text: str, depth: int = 0, secrets: list[str] | None = None, mark: str = MARK) -> tuple[str, int]:
    """Return ``text`` with its private spans as ``mark`` (``[private]``), and the depth left open at its end.

    ``depth`` (>= 0) is the number of spans already open when ``text`` begins
    (the text then begins inside a span). The text of every span, cut at its
    tags and stripped, is appended to ``secrets`` when given.
    """
    if depth == 0 and "<" not in text:
        return text, 0
    out: list[str] = []
    kept = 0  # the start of the text not yet copied (outside any span)
    inner = 0  # the start of the span text not yet added to secrets
    for match in TAG.finditer(text):
        closer = match.group(1) == "/"
        if not closer:
            if depth == 0:
                out.append(text[kept : match.start()])
            elif secrets is not None:
                secrets.append(text[inner : match.start()])
            inner = match.end()
            depth += 1
        elif depth:  # a closer outside any span is literal: left in text[kept:]
            if secrets is not None:
                secrets.append(text[inner : match.start()])
            inner = match.end()
            depth -= 1
            if depth == 0:
                out.append(mark)
                kept = match.end()
    if depth:
        out.append(mark)
        if secrets is not None:
            secrets.append(text[inner:])
    else:
        out.append(text[kept:])
    return "".join(out), depth


def redact(text: str) -> str:
    """Return ``text`` with every private span, tags included, replaced by ``[private]``;
    an opener left open hides the rest of the text."""
    return hide(text)[0]


def outside(text: str) -> str:
    """Return the text outside ``text``'s private spans, each span (tags included) a space: what a
    search may read of a prompt, a query or a path (the word "private" of a ``[private]`` mark
    would be searched for). An opener left open hides the rest of the text."""
    return hide(text, mark=" ")[0]



class Spans:
    """The private spans of one session, its texts read in the order they were written.

    ``person`` reads what the person typed and carries the depth it leaves
    open into the rest of the session; ``other`` reads any other text (a
    reply, a tool call or result, a title), hidden whole while a span is
    open. ``secrets`` holds each span's text, for ``scrub``.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.secrets: list[str] = []
        self._echoes_of: tuple[int, list[str]] = (0, [])

    def person(self, text: str) -> str:
        """Return ``text`` (a prompt) hidden, carrying the depth it leaves open."""
        text, self.depth = hide(text, self.depth, self.secrets)
        return text

    def other(self, text: str) -> str:
        """Return ``text`` hidden: ``[private]`` whole while a span is open, else its own spans."""
        if self.depth:
            return MARK if text.strip() else text
        return hide(text, 0, self.secrets)[0]

    def scrub(self, text: str) -> str:
        """Return ``text`` (already hidden) with every verbatim recurrence of a span's text of
        ``ECHO_MIN_CHARS`` or more replaced by ``[private]``: an assistant that quotes the
        private text back must not carry it out."""
        for secret in self._echoes():
            if secret in text:
                text = text.replace(secret, MARK)
        return text

    def _echoes(self) -> list[str]:
        if self._echoes_of[0] != len(self.secrets):
            echoes = {s.strip() for s in self.secrets if len(s.strip()) >= ECHO_MIN_CHARS}
            # A longer secret first: a shorter one may be inside it.
            self._echoes_of = (len(self.secrets), sorted(echoes, key=len, reverse=True))
        return self._echoes_of[1]
