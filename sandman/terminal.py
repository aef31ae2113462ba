"""Third-party text on its way to a terminal: made inert before it is printed.

Transcript titles and cwds, memory names and bodies, file names a remote
sent, commands found in Claude Code's settings: sandman wrote none of them.
Printed raw, an escape sequence in one acts on the terminal (``ESC ] 0 ;
PWNED BEL`` retitles the window, ``ESC [ 2 J`` clears it) and a
bidirectional override makes a line read as something it is not. ``printable``
shows each such character as a ``‹U+001B›`` mark, as the site does
(sandman/site/markup.py), so the text stays legible and nothing acts.

The CLI (sandman/cli.py) passes everything it prints through ``printable``;
the verbs' formatting functions use it on the third-party fields of a line, so
that a newline inside a title cannot forge a line of its own either.

Standard library only.
"""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls (CSI is one: U+009B), bidirectional marks,
# overrides and isolates, and the Unicode line and paragraph separators.
_BIDI_AND_SEPARATORS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_UNSAFE_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")


def _mark(match: re.Match[str]) -> str:
    return f"‹U+{ord(match.group()):04X}›"


def printable(text: object, *, lines: bool = False) -> str:
    """Return ``text`` (str() of it) with every control character and bidi mark shown as ``‹U+XXXX›``.

    One field of a line by default: newline and tab are marked too. With
    ``lines=True`` (whole output, many lines) newline and tab stay as they are.
    Idempotent: a mark holds no control character.
    """
    return (_UNSAFE_BUT_LINES if lines else _UNSAFE).sub(_mark, str(text))
