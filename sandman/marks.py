"""Characters that change how text displays or what a terminal does, shown as marks: ``‹U+202E›``.

Memory text comes from model output and hand edits; transcript titles, cwds,
file names a remote sent and commands found in Claude Code's settings come
from elsewhere too. Shown as they are, a right-to-left override makes a line
read as something it is not, and a terminal runs an escape sequence (``ESC
]52;`` writes the clipboard, ``ESC ] 0 ;`` retitles the window, ``ESC [2J``
clears the screen). The site (sandman.site.markup), ``sandman recall`` and
everything the CLI prints (sandman/cli/) show each such character as a mark
instead, so the text stays legible and nothing acts. Standard library only:
the recall hook imports this module.
"""

from __future__ import annotations

import functools
import re

# C0 controls, DEL and C1 controls (CSI is one: U+009B), bidirectional marks,
# overrides and isolates, and the Unicode line and paragraph separators.
_BIDI_AND_SEPARATORS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ONE_FIELD = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_MANY_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")


# What text a person or a session gives sandman to keep may not hold (refused, never cut or kept raw):
# C0 controls, DEL, C1 controls and the line/paragraph separators; a text of many lines keeps newline and tab.
# One line (a title, a summary) also may not hold a bidirectional mark, override or isolate: it would
# reorder how the line reads, and it could only be kept as a ``‹U+202E›`` mark.
_REFUSED_FIELD = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_REFUSED_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def holds_controls(text: str, *, lines: bool = True) -> bool:
    """True when ``text`` holds what refuse_controls refuses."""
    return (_REFUSED_LINES if lines else _REFUSED_FIELD).search(text) is not None


def refuse_controls(text: str, what: str, *, lines: bool = True) -> None:
    """Raise InputError ("<what> holds a NUL or control character; write plain text") when ``text``
    holds a C0 or C1 control character or DEL; ``lines`` (a body) allows newline and tab,
    ``lines=False`` (a title, a summary) refuses them, the Unicode line separators and the bidi
    marks, overrides and isolates (U+061C, U+200E/F, U+202A–E, U+2066–9) too. The one
    check for text sandman is given to store (proposals, shift handoffs, breaths, trail events)."""
    if holds_controls(text, lines=lines):
        from sandman.errors import InputError

        raise InputError(f"{what} holds a NUL or control character; write plain text")


def _mark(match: re.Match[str]) -> str:
    return f"‹U+{ord(match.group()):04X}›"


def visible(text: object, *, lines: bool = True) -> str:
    """Return ``text`` (str() of it) with control characters and bidi marks shown as ``‹U+XXXX›``.

    ``lines`` (the default: a body, a whole output) keeps newline and tab;
    ``lines=False`` (one field of a line: a title, a path) marks them too, so a
    newline inside a title cannot forge a line of its own. A carriage return
    is always marked. Idempotent: a mark holds no control character.
    """
    return (_MANY_LINES if lines else _ONE_FIELD).sub(_mark, str(text))


# ``visible(text)`` for a ``str`` (newline and tab kept), as one C call with no Python frame of its
# own: the site's templates print some 300,000 values in a full render (sandman.site.markup).
visible_str = functools.partial(_MANY_LINES.sub, _mark)


def fence_ticks(text: str) -> str:
    """The backticks of a markdown fence that ``text`` cannot close: at least 3, one more than its
    longest run of backticks (untrusted text shown as data: the brief's slots, report.md, the digest)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)
