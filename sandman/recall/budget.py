"""recall's measure: UTF-16 code units, the budget, and the one-line form of a shown value.

Claude Code counts a hook's ``additionalContext`` in UTF-16 code units and caps it at
10,000 (``config.HOOK_CONTEXT_MAX_UTF16``); recall's budget is 9,000
(``config.RECALL_BUDGET_UTF16``; docs/recall.md, "The budget"). An emoji is one
character and two units. Standard library only: ``recall --hook`` imports it.
"""

from __future__ import annotations

import re

from sandman import config
from sandman.errors import InputError
from sandman.plainhook import utf16_units  # noqa: F401 - the one definition; recall imports it from here

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def one_line(text: object, limit: int | None = None) -> str:
    """``text`` on one line: control and bidirectional characters and every run of white space
    become one space; cut to ``limit`` characters with a closing ``…`` when longer."""
    line = " ".join(_CONTROL.sub(" ", str(text)).split())
    if limit is not None and len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def memories(count: int) -> str:
    """Return ``1 memory`` or ``<n> memories``."""
    return f"{count} memory" if count == 1 else f"{count} memories"



def cost(lines: list[str] | tuple[str, ...]) -> int:
    """UTF-16 code units ``lines`` take in the payload, one newline each."""
    return sum(utf16_units(line) + 1 for line in lines)


def check_budget(budget: int | None) -> int:
    """Return ``budget`` (default 9,000 UTF-16 code units); raise InputError unless it is positive."""
    if budget is None:
        return config.RECALL_BUDGET_UTF16
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise InputError(f"budget {budget!r} is not a positive number of UTF-16 code units")
    return budget

