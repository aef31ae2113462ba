"""What recall reads: the bank chain of a directory, the recent pointers, the dream queue, the log.

The four surfaces of the design's recall (docs/recall.md): the banks of the cwd
and of each ancestor up to the user's home (inclusive) and the user-wide bank,
a cwd outside home walking up to ``/``; the ``.recent`` pointers that ended in
the last 72 h, at most 12, newest first; the voyage log tail, the newest
``config.RECALL_LOG_ENTRIES`` entries of ``log/``; and one line on the dream
queue. recall never reads the archive. Standard library only: ``recall --hook``
imports it.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta

from sandman import config
from sandman.banks.listing import Bank, read_bank, read_bank_head, scalar, split_frontmatter
from sandman.banks.names import USER_BANK, ancestors, bank_name
from sandman.errors import ConfigError
from sandman.layout import Layout
from sandman.pointers import Pointer, list_pointers
from sandman.recall.budget import one_line
from sandman.store.atomic import is_real_dir, read_regular

_LOG_ENTRY = re.compile(r"\d{4}-\d{2}-\d{2}\.md")


def bank_chain(layout: Layout, cwd: str | os.PathLike[str]) -> list[Bank]:
    """Return the banks recall reads for ``cwd``, outermost first, the cwd's own last.

    The user-wide bank comes first, then the ancestors from the user's home (or
    ``/`` for a cwd outside home) down to ``cwd``. Banks that do not exist have
    no entries. Raises InputError for a relative ``cwd``.
    """
    chain = ancestors(cwd, config.user_home())
    banks = [read_bank(layout.bank(USER_BANK), None)]
    banks += [read_bank(layout.bank(bank_name(path)), str(path)) for path in reversed(chain)]
    return banks


def bank_heads(layout: Layout, cwd: str | os.PathLike[str], cap: int) -> list[tuple[Bank, int]]:
    """Return ``bank_chain``'s banks, each with only the index lines a budget of at most ``cap``
    characters can show, and each bank's count of index lines: ``[(Bank, count)]``.

    Read through the recall cache (``.recall/``, rebuilt when missing or stale), so what
    recall reads does not grow with the banks. Raises InputError for a relative ``cwd``.
    """
    chain = ancestors(cwd, config.user_home())
    heads = [read_bank_head(layout, layout.bank(USER_BANK), None, cap)]
    heads += [read_bank_head(layout, layout.bank(bank_name(path)), str(path), cap) for path in reversed(chain)]
    return heads


def recent_pointers(layout: Layout, now: datetime) -> list[Pointer]:
    """Return the pointers that ended less than 72 h before ``now``, newest first, at most 12.

    A pointer without a readable ``ended`` time is not shown (its age is unknown).
    """
    cutoff = now - timedelta(hours=config.RECALL_POINTER_HOURS)
    young = [p for p in list_pointers(layout) if p.ended is not None and p.ended > cutoff]
    young.sort(key=lambda p: (p.ended, p.session), reverse=True)
    return young[: config.RECALL_MAX_POINTERS]


def dream_queue_line(layout: Layout, now: datetime) -> str | None:
    """One line saying how many sessions wait to be dreamt and since when (issue 27, item 6); None
    when none waits. Kept apart from composing: it is the recall's only look at the dream queue."""
    from sandman import dreamqueue

    count, oldest = dreamqueue.waiting(layout, now)
    if not count:
        return None
    since = f", the oldest since {oldest:%Y-%m-%d %H:%M} UTC" if oldest is not None else ""
    try:
        due = f"a dream is due at {config.dream_due_pointers()}, or once one has waited " \
              f"{config.dream_wait_s() / 3600:g} h"
    except ConfigError:
        due = "a dream's settings are unreadable: sandman doctor"
    return f"Waiting to be dreamt: {count} session{'' if count == 1 else 's'}{since} ({due})."


def log_tail(layout: Layout) -> list[tuple[str, str, str]]:
    """Return the newest voyage log entries as ``(day, title, body)``, newest first.

    An entry is ``log/<yyyy-mm-dd>.md``: frontmatter with a ``title:`` line, then
    the body. A file without frontmatter is all body; an unreadable one is skipped.
    """
    if not is_real_dir(layout.log):
        return []
    try:
        names = sorted((n for n in os.listdir(layout.log) if _LOG_ENTRY.fullmatch(n)), reverse=True)
    except (FileNotFoundError, NotADirectoryError):
        return []
    entries = []
    for name in names:
        try:
            text = read_regular(layout.log / name).decode("utf-8", "replace")
        except OSError:
            continue
        split = split_frontmatter(text)
        front, body = split if split is not None else ([], text)
        entries.append((name[: -len(".md")], one_line(scalar(front, "title") or ""), body.strip()))
        if len(entries) == config.RECALL_LOG_ENTRIES:
            break
    return entries

