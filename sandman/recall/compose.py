"""Composing the recall surface a session starts with (design, "Verbs", recall).

Four surfaces (sandman/recall/surfaces.py) share one budget
(``config.RECALL_BUDGET_UTF16``, 9,000 UTF-16 code units: Claude Code counts a
hook's ``additionalContext`` in those and caps it at 10,000; sandman/recall/budget.py).

The payload reads top to bottom: a header, the tool index, the banks (the
user-wide bank, then the outermost ancestor down to the cwd's own), the
pointers, the log, and, when anything was trimmed, one last line naming every
trim and where to read it whole. Trimming follows the design's order exactly
(docs/recall.md gives the reading): the log is costed first and kept whole;
then the tool index goes, then the pointers, oldest first; then banks fall
back to their MEMORY.md lines, the most distant first and the cwd's own last;
at that floor index lines go, from the tail of the most distant bank. Once the
payload fits, what was trimmed returns in reverse order if it fits. Every cut
takes whole lines, and none falls on the log at the payload's end.

Standard library only at module level: ``recall --hook`` runs before the
user's first prompt. recall never reads the archive.
"""

from __future__ import annotations

import os
from collections import namedtuple
from datetime import datetime, timezone

from sandman import config, journal, note as notes
from sandman.banks.listing import Bank, memory_body
from sandman.banks.names import normalize_directory
from sandman.banks.worktrees import bank_directory
from sandman.layout import Layout
from sandman.marks import visible
from sandman.pointers import Pointer
from sandman.recall.budget import check_budget, cost as _cost, memories, one_line as _one_line, utf16_units
from sandman.recall.surfaces import bank_chain, bank_heads, dream_queue_line, log_tail, recent_pointers

VERB = "recall"
HIGHLIGHT_CHARS = 200
# A cost no room holds: the index lines past a bank's cached head cost more than any budget
# up to the cache's cap (banks/listing.py, read_bank_head).
_OVER = 1 << 62

# The verbs a session can call, ``remember`` above all. Keep under 1,200 characters.
TOOL_INDEX = (
    "## Tools",
    '- `sandman remember "<body>"`: when you learn something worth keeping beyond this session '
    "(a decision, a convention, a fact about this project, how the user wants the work done), "
    "commit it now; it lands in this directory's bank at once. `--type feedback` (how to work), "
    "`--type user` (about the person) or `--type reference` (where things are); `project` by default.",
    "- `sandman recall [--cwd DIR] [--budget N]`: print this surface again, for another directory "
    "or with a larger budget.",
    "- `sandman --help`: every other verb.",
)


# --- rendering ---------------------------------------------------------------


def _pointer_lines(pointer: Pointer) -> list[str]:
    data = pointer.data
    parts = [f"{pointer.ended:%Y-%m-%d %H:%M} UTC", _one_line(data.get("title") or "(untitled)", 120)]
    if isinstance(data.get("cwd"), str):
        parts.append(_one_line(data["cwd"]))
    lines = ["- " + " · ".join(parts)]
    highlights = data.get("highlights")
    for highlight in highlights if isinstance(highlights, list) else []:
        lines.append("  - kept: " + _one_line(highlight, HIGHLIGHT_CHARS))
    return lines


def _log_lines(entries: list[tuple[str, str, str]]) -> list[str]:
    lines = ["## Voyage log (newest first)"]
    for day, title, body in entries:
        lines.append(f"### {day} · {title}" if title else f"### {day}")
        lines += [visible(line) for line in body.splitlines()]
    return lines


def _indent(body: str) -> list[str]:
    # Shown as marks: a memory's escape sequence must not run in the terminal of `sandman recall`.
    return ["  " + visible(line) if line.strip() else "" for line in body.splitlines()]


class _BankBlock:
    """One bank as the payload shows it: a heading, index lines, bodies read lazily."""

    __slots__ = ("bank", "count", "head", "line_costs", "bodies", "body_total")

    def __init__(self, bank: Bank, cwd: str, count: int | None = None):
        """``count``: the bank's index lines in all, when ``bank.entries`` holds only the first
        of them (a head: every line past it costs more than any room, banks/listing.py)."""
        here = " (this directory)" if bank.directory == cwd else ""
        self.bank = bank
        self.count = len(bank.entries) if count is None else count
        self.head = f"### {visible(bank.label, lines=False)}{here} · {memories(self.count)} · {bank.folder}/"
        self.line_costs = [utf16_units(e.line) + 1 for e in bank.entries]
        self.bodies: list[list[str]] = []
        self.body_total = 0

    def index_cost(self, kept: int) -> int:
        if kept > len(self.line_costs):
            return _OVER
        return utf16_units(self.head) + 1 + sum(self.line_costs[:kept]) if kept else 0

    def full_cost(self, cap: int) -> int:
        """The full form's cost; exact when it is at most ``cap``, else some value over ``cap``.

        Bodies are read only as far as the cap needs: a bank that cannot fit
        whole is not read whole.
        """
        cost = self.index_cost(self.count)
        while cost + self.body_total <= cap and len(self.bodies) < len(self.line_costs):
            entry = self.bank.entries[len(self.bodies)]
            lines = _indent(memory_body(self.bank.folder, entry.file))
            self.bodies.append(lines)
            self.body_total += _cost(lines)
        return cost + self.body_total

    def lines(self, full: bool, kept: int) -> list[str]:
        if full:
            out = [self.head]
            for entry, body in zip(self.bank.entries, self.bodies, strict=True):
                out += [entry.line, *body]
            return out
        return [self.head, *(e.line for e in self.bank.entries[:kept])] if kept else []


class _Plan:
    """What the payload keeps: the tool index, the newest pointers, each bank's form."""

    __slots__ = ("tools", "pointers", "full", "kept")

    def __init__(self, tools: bool, pointers: int, full: list[bool], kept: list[int]):
        self.tools, self.pointers, self.full, self.kept = tools, pointers, full, kept


EMPTY_LOG = "[sandman recall: the voyage log has no entries yet; nothing was cut]"


class Recalled(namedtuple("Recalled", "text trims given", defaults=((),))):
    """A composed recall: the payload ``text`` (str), one short key per trim (a list of str,
    for the journal), and what it gave: ``given`` is ``(bodies, lines)``, the ``<bank>/<file>``
    paths of the memories shown with their body and of those shown by their MEMORY.md line alone
    (the deliveries ledger's ``recall`` and ``recall-line``, sandman/recall/ledger.py)."""

    __slots__ = ()


class _Composer:
    """Fits the four surfaces into ``budget`` UTF-16 code units in the design's trimming order."""

    def __init__(self, layout: Layout, cwd: str, budget: int, blocks: list[_BankBlock],
                 pointers: list[Pointer], log: list[tuple[str, str, str]]):
        self.layout, self.budget, self.blocks = layout, budget, blocks
        self.head = [f"# sandman recall: {visible(cwd, lines=False)}"]
        self.pointer_blocks = [_pointer_lines(p) for p in pointers]
        self.pointer_costs = [_cost(b) for b in self.pointer_blocks]
        self.pointer_head = "## Recent sessions (ended in the last 72 h, newest first)"
        self.banks_head = "## Memory banks (user-wide first, this directory last)"
        self.log = _log_lines(log) if log else []
        self.log_chars = _cost(self.log)
        self.log_trim: str | None = None  # "empty" or "wide": the log's two ways out
        self.compact = False
        if not log:
            self.log_trim = "empty"
        elif _cost(self.head) + 1 + self.log_chars + 1 + utf16_units(self._worst_line()) + 1 > budget:
            self.log_trim, self.log = "wide", []

    # -- the trim line --
    def _notes(self, plan: _Plan) -> list[str]:
        """What ``plan`` cut, one note each; folders are named relative to ``memories/``."""
        notes = [] if plan.tools else ["the tool index (sandman --help)"]
        dropped = len(self.pointer_blocks) - plan.pointers
        if dropped:
            total = len(self.pointer_blocks)
            if dropped == total:
                which = "the recent session" if total == 1 else f"all {total} recent sessions"
            else:
                which = f"the {dropped} oldest of {total} recent sessions"
            notes.append(f"{which} ({self.layout.recent.name}/)")
        fallen = [block.bank.name + "/" for block, full in zip(self.blocks, plan.full) if not full]
        if fallen:
            every = len(fallen) == len(self.blocks) and len(fallen) > 1
            notes.append("the bodies of every bank" if every else "the bodies of " + ", ".join(fallen))
        for block, kept in zip(self.blocks, plan.kept):
            total = block.count
            if kept < total:
                notes.append(f"{total - kept} of {total} index lines of {block.bank.name}/")
        if len(notes) > (0 if plan.tools else 1):
            notes.append(f"read them whole in {self.layout.memories}/<folder>")
        if self.log_trim == "wide":
            notes.append(f"the voyage log tail ({self.log_chars:,} UTF-16 units, wider than the budget; "
                         f"{self.layout.log}/)")
        return notes

    def _compact_line(self, plan: _Plan, log_trimmed: bool) -> str:
        parts = [] if plan.tools else ["the tool index"]
        dropped = len(self.pointer_blocks) - plan.pointers
        if dropped:
            parts.append(f"{dropped} recent session{'' if dropped == 1 else 's'}")
        fallen = sum(not full for full in plan.full)
        if fallen:
            parts.append(f"the bodies of {fallen} banks")
        cut = sum(b.count - k for b, full, k in zip(self.blocks, plan.full, plan.kept) if not full)
        if cut:
            parts.append(f"{cut} index lines")
        if log_trimmed:
            parts.append("the voyage log")
        return f"[sandman recall trimmed {', '.join(parts)}; read them whole in {self.layout.memories}/]"

    def _worst_line(self) -> str:
        """The longest compact trim line this payload can need: the log's floor leaves room for it."""
        worst = _Plan(False, 0, [False] * len(self.blocks), [0] * len(self.blocks))
        return self._compact_line(worst, log_trimmed=True)

    def trim_line(self, plan: _Plan) -> str:
        """The line saying what was cut, and that the voyage log is empty when it is: an empty
        log is reported (the design counts it among the log's ways out) but never as a cut."""
        if self.compact:
            return self._compact_line(plan, log_trimmed=self.log_trim is not None)
        notes = self._notes(plan)
        line = f"[sandman recall trimmed: {'; '.join(notes)}]" if notes else ""
        if self.log_trim == "empty":
            line = f"{line} {EMPTY_LOG}" if line else EMPTY_LOG
        return line

    # -- costing --
    def _fixed_cost(self, plan: _Plan) -> int:
        cost = _cost(self.head) + 1
        if plan.tools:
            cost += _cost(TOOL_INDEX) + 1
        if plan.pointers:
            cost += utf16_units(self.pointer_head) + 1 + sum(self.pointer_costs[: plan.pointers]) + 1
        if self.log:
            cost += _cost(self.log) + 1
        line = self.trim_line(plan)
        if line:
            cost += utf16_units(line) + 1
        if any(full or kept for full, kept in zip(plan.full, plan.kept)):
            cost += utf16_units(self.banks_head) + 1 + 1
        return cost

    def fits(self, plan: _Plan) -> bool:
        room = self.budget - self._fixed_cost(plan)
        # The cwd's own bank first: when the inner banks already fill the room,
        # the outer banks' bodies are never read.
        for block, full, kept in reversed(list(zip(self.blocks, plan.full, plan.kept))):
            room -= block.full_cost(room) if full else block.index_cost(kept)
            if room < 0:
                return False
        return room >= 0

    # -- the design's order --
    def plan(self) -> _Plan | None:
        """Return the plan that fits, detailed trim line first, else compact; None if nothing fits."""
        for compact in (False, True):
            self.compact = compact
            plan = self._trim()
            if plan is not None:
                return self._restore(plan)
        return None

    def _trim(self) -> _Plan | None:
        n = len(self.blocks)
        plan = _Plan(True, len(self.pointer_blocks), [True] * n, [b.count for b in self.blocks])
        if self.fits(plan):
            return plan
        plan.tools = False
        if self.fits(plan):
            return plan
        while plan.pointers:
            plan.pointers -= 1
            if self.fits(plan):
                return plan
        for i in range(n):
            plan.full[i] = False
            if self.fits(plan):
                return plan
        for i in range(n):
            if self._cut_lines(plan, i):
                return plan
        return None

    def _cut_lines(self, plan: _Plan, i: int) -> bool:
        """Cut bank ``i``'s index lines from its tail, as few as make the payload fit.

        Returns False, with every line of the bank cut, when even that does not fit.
        """
        plan.kept[i] = 0
        if not self.fits(plan):
            return False
        low, high = 0, self.blocks[i].count  # kept=low fits; find the largest that fits
        while low < high:
            mid = (low + high + 1) // 2
            plan.kept[i] = mid
            if self.fits(plan):
                low = mid
            else:
                high = mid - 1
        plan.kept[i] = low
        return True

    def _restore(self, plan: _Plan) -> _Plan:
        while plan.pointers < len(self.pointer_blocks):
            plan.pointers += 1
            if not self.fits(plan):
                plan.pointers -= 1
                break
        if not plan.tools:
            plan.tools = True
            if not self.fits(plan):
                plan.tools = False
        return plan

    def render(self, plan: _Plan) -> list[str]:
        lines = [*self.head, ""]
        if plan.tools:
            lines += [*TOOL_INDEX, ""]
        if any(full or kept for full, kept in zip(plan.full, plan.kept)):
            lines.append(self.banks_head)
            for block, full, kept in zip(self.blocks, plan.full, plan.kept):
                lines += block.lines(full, kept)
            lines.append("")
        if plan.pointers:
            lines.append(self.pointer_head)
            for block in self.pointer_blocks[: plan.pointers]:
                lines += block
            lines.append("")
        if self.log:
            lines += [*self.log, ""]
        line = self.trim_line(plan)
        if line:
            lines.append(line)
        return lines

    def given(self, plan: _Plan) -> tuple[list[str], list[str]]:
        """``(bodies, lines)``: the ``<bank>/<file>`` of each memory ``render(plan)`` shows with its body,
        and of each it shows by its index line alone."""
        bodies: list[str] = []
        lines: list[str] = []
        for block, full, kept in zip(self.blocks, plan.full, plan.kept):
            entries = block.bank.entries if full else block.bank.entries[:kept]
            (bodies if full else lines).extend(f"{block.bank.name}/{e.file}" for e in entries if e.file)
        return bodies, lines

    def trims(self, plan: _Plan) -> list[str]:
        keys = [] if plan.tools else ["tools"]
        if plan.pointers < len(self.pointer_blocks):
            keys.append("pointers")
        if not all(plan.full):
            keys.append("bodies")
        if any(k < b.count for b, k in zip(self.blocks, plan.kept)):
            keys.append("index-lines")
        if self.log_trim:
            keys.append(f"log-{self.log_trim}")
        return keys


def recall(layout: Layout, cwd: str | os.PathLike[str], budget: int | None = None, *,
           now: datetime | None = None, deliver: bool = False, session: str | None = None,
           cache: bool = True) -> Recalled:
    """Compose the recall surface of ``cwd`` within ``budget`` UTF-16 code units (default 9,000).

    ``cwd`` is an absolute directory (it need not exist; inside a linked git
    worktree, the main worktree's place is recalled: banks/worktrees.py); ``now`` (aware) dates
    the pointers' 72 h window, default the current time. The text never exceeds
    the budget (``utf16_units``) and ends with the trim line when anything was cut. Raises
    InputError for a relative ``cwd`` or a budget below 1. Reads the banks,
    ``memories/.recent/`` and ``log/``; never the archive. With ``cache`` (the default) and a
    budget of at most 9,000 characters, the banks are read through the recall cache
    (``.recall/``, rewritten when missing or stale); the text is the same without it.

    The directory's note (sandman.note) comes first, inside the
    budget; ``deliver`` records this as one delivery of it (to ``session``).
    """
    budget = check_budget(budget)
    if layout.commit_undo.exists():
        # A transaction killed half way: rolled back now, not shown until the next write
        # (rare, so pygit2 is imported only then).
        from sandman.banks.commit import roll_back_if_killed

        roll_back_if_killed(layout)
    directory = str(bank_directory(layout, normalize_directory(cwd)))
    note = notes.read(layout, directory)
    head = notes.render(note, budget) if note is not None and note.shown else ""
    if head and deliver:
        notes.delivered(layout, note, session)
        journal.write(layout, VERB, "note-delivered", cwd=directory, session=session,
                      times=note.data["delivered"] + 1)
    if not head:
        return _compose(layout, directory, budget, now, cache)
    used = utf16_units(head)
    if budget - used < 2:
        return Recalled(text=head, trims=["everything"])
    rest = _compose(layout, directory, budget - used, now, cache)
    return Recalled(text=head + rest.text, trims=rest.trims, given=rest.given)


def _compose(layout: Layout, directory: str, budget: int, now: datetime | None, cache: bool) -> Recalled:
    """The four surfaces of ``directory`` within ``budget`` UTF-16 units (``recall`` without the note)."""
    now = now or datetime.now(timezone.utc)
    if cache and budget <= config.RECALL_BUDGET_UTF16:
        heads = bank_heads(layout, directory, config.RECALL_BUDGET_UTF16)
        blocks = [_BankBlock(bank, directory, count) for bank, count in heads if count]
    else:
        blocks = [_BankBlock(bank, directory) for bank in bank_chain(layout, directory) if bank.entries]
    composer = _Composer(layout, directory, budget, blocks, recent_pointers(layout, now), log_tail(layout))
    waiting = dream_queue_line(layout, now)
    if waiting:
        composer.head.append(waiting)  # under the header: costed with it, never trimmed
    plan = composer.plan()
    if plan is None:
        line = f"[sandman recall: {budget} UTF-16 units hold nothing; read {layout.memories}/]"
        return Recalled(text=line + "\n" if utf16_units(line) < budget else "", trims=["everything"])
    text = "\n".join(composer.render(plan)).rstrip("\n") + "\n"
    return Recalled(text=text, trims=composer.trims(plan), given=composer.given(plan))


def resumed(layout: Layout, cwd: str | os.PathLike[str], budget: int | None = None) -> str:
    """Return the short note for a resumed (or forked) session, whose context still holds its surface.

    It names the banks of ``cwd`` with their sizes (memory counts) instead of
    repeating them; within ``budget`` UTF-16 code units, the outermost banks'
    lines dropped first. Raises InputError as recall does.
    """
    budget = check_budget(budget)
    if layout.commit_undo.exists():
        # A transaction killed half way: rolled back now, not shown until the next write
        # (rare, so pygit2 is imported only then).
        from sandman.banks.commit import roll_back_if_killed

        roll_back_if_killed(layout)
    directory = str(bank_directory(layout, normalize_directory(cwd)))
    banks = [bank for bank in bank_chain(layout, directory) if bank.entries]
    head = ["sandman: this session continues; its memory surface is already in its context and is not "
            "repeated."]
    import shlex  # only here: the resume note is the one place a path becomes a command

    shown = visible(directory, lines=False)
    tail = [f'Read a bank at its folder; `sandman recall --cwd {shlex.quote(shown)}` prints the surface again; '
            '`sandman remember "<body>"` still commits a memory now.']
    lines = [f"- {visible(bank.label, lines=False)}: {memories(len(bank.entries))}, {bank.folder}/" for bank in banks]
    if lines:
        head.append(f"Banks for {shown}:")
    while lines and _cost(head + lines + tail) > budget:
        lines.pop(0)
    text = "\n".join(head + lines + tail) + "\n"
    return text if utf16_units(text) <= budget else ""

