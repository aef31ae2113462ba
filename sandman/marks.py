"""Characters that change how text displays, shown as marks: ``‹U+202E›``.

Memory text comes from model output and hand edits. Shown as it is, a
right-to-left override makes a line read as something it is not, and a
terminal runs an escape sequence (``ESC ]52;`` writes the clipboard, ``ESC
[2J`` clears the screen). Both the site (sandman.site.markup) and ``sandman
recall`` print such characters as marks instead. Standard library only: the
recall hook imports this module.
"""

from __future__ import annotations

import re

# C0 and C1 controls (tab, newline and carriage return excepted), bidirectional
# marks, overrides and isolates, and the Unicode line and paragraph separators.
_INVISIBLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: object) -> str:
    """Return ``text`` as a string with control and bidi characters replaced by ``‹U+XXXX›``."""
    return _INVISIBLE.sub(lambda match: f"‹U+{ord(match.group()):04X}›", str(text))
