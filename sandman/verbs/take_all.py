"""``sandman take --all``: the backfill, every ended session a host still keeps (issue 8).

A new user's history is already on disk: Claude Code's projects folder and
Codex's sessions folder. The backfill lists every transcript there
(``locate.session_files``), decides for each, and takes the ones that qualify
through take's own ``take_source``, so the live-window guard, the move, the
pointer and the journal line are take's, not copies of them. A session is
taken when:

- its transcript was last written longer ago than ``--older-than`` (default
  2 days), and never within take's live window (120 s, ``check_live``);
- no Claude Code job would resume it (``locate.live_job``);
- it records an absolute cwd (a pointer without one can never be dreamt), and
  that cwd is not inside the memory root (a dream mind's own session);
- with ``--project DIR``, that cwd is DIR or below. The transcript's own cwd
  decides, not the project folder's name: Claude Code's slugs fold every
  non-alphanumeric character into ``-``, so ``/a/my_app`` and ``/a/my-app``
  share a folder. A session taken already is placed by its pointer's cwd (so
  ``taken`` counts the project's alone), and an orphan folder by the cwd its
  transcripts record, else by its project folder's name (``_orphan_in``).

Every other transcript is skipped with one of ``REASONS`` and the batch goes
on; a file that cannot be read is reported, never fatal. After the batch the
pending-take ledger is drained once and, when dream's queue is due, one
detached dream is started (take's ``dream_if_due``): the takes inside the
batch never start one each. A dry run reads and decides the same way and
writes nothing at all, not even a journal line.

Each decision is a journal line in ``.trace/take-<date>.log``: take's own
``archived`` per session taken, ``skipped`` per session passed over (those
outside ``--project`` are only counted), and one ``backfilled`` line for the
batch.

The deciding and the taking (``survey``, ``take_item``, ``Item``,
``Backfill``, ``REASONS``) live one floor down, in sandman/archive/backfill.py;
this module is the verb: the batch, its drain and dream, and its report.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from sandman import journal
from sandman.archive.backfill import QUIET, REASONS, Backfill, Item, survey, take_item
from sandman.banks.names import normalize_directory
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.marks import visible
from sandman.verbs.take import VERB, dream_if_due, drain

__all__ = ["DEFAULT_OLDER_THAN", "QUIET", "REASONS", "Backfill", "Item", "backfill", "backfill_with_progress",
           "listing", "parse_duration", "size_text", "summary_table", "survey", "take_item"]

DEFAULT_OLDER_THAN = "2d"

_DURATION = re.compile(r"([0-9]+)\s*([smhdw])", re.ASCII)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_duration(text: str) -> int:
    """Return the seconds a duration names: a whole number and a unit, ``s``, ``m``, ``h``, ``d``
    or ``w`` (``90m``, ``12h``, ``2d``, ``1w``). Raises InputError for anything else."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise InputError(
            f"--older-than {text!r} is not a duration: give a whole number and a unit "
            "(s, m, h, d or w), such as 90m, 12h, 2d or 1w"
        )
    return int(match.group(1)) * _UNIT_S[match.group(2)]


def backfill(layout: Layout, *, older_than: str = DEFAULT_OLDER_THAN, project: str | None = None,
             dry_run: bool = False, on_item: Callable[[Item, int], None] | None = None) -> Backfill:
    """Take every ended session in the hosts' folders (docs/take.md, "Backfill: take --all").

    ``older_than`` is a duration (``parse_duration``); ``project`` a directory
    (relative to the current one when relative) whose sessions alone are
    considered; ``dry_run`` decides without writing anything. ``on_item`` is
    called with each item before it is taken and how many will be (a
    progress bar). Raises InputError for a bad duration or directory; never
    for a transcript (each is an Item).
    """
    window_s = parse_duration(older_than)
    folder = normalize_directory(os.path.abspath(project)) if project is not None else None
    result = Backfill(items=survey(layout, window_s, folder), older_than_s=window_s, project=folder,
                      dry_run=dry_run)
    if dry_run:
        return result
    planned = result.taken
    for item in planned:
        if on_item is not None:
            on_item(item, len(planned))
        take_item(layout, item)
    for item in result.skipped:
        if item.reason not in QUIET:
            journal.write(layout, VERB, "skipped", reason=item.reason, session=item.session,
                          path=str(item.path), detail=item.detail)
    result.reclaimed = drain(layout)
    result.dream_pid = dream_if_due(layout)
    from sandman.dreamqueue import queue_depth

    result.queued = queue_depth(layout)
    reasons = ",".join(f"{reason}:{count}" for reason, count in sorted(result.reasons().items()))
    journal.write(layout, VERB, "backfilled", taken=len(result.taken), skipped=len(result.skipped),
                  bytes=result.bytes, older_than=older_than, project=None if folder is None else str(folder),
                  reasons=reasons or None, queued=result.queued)
    return result


def backfill_with_progress(layout: Layout, **options) -> Backfill:
    """``backfill`` with a rich progress bar on stderr (for an interactive terminal)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress

    done: list[Item] = []
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("taking", total=None)

        def on_item(item: Item, planned: int) -> None:
            label = visible((item.title or item.session or item.path.name)[:60], lines=False)
            progress.update(task, total=planned, completed=len(done), description=escape(f"taking {label}"))
            done.append(item)

        result = backfill(layout, on_item=on_item, **options)
        progress.update(task, completed=len(done))
    return result


# --- reporting -----------------------------------------------------------------


def size_text(count: int) -> str:
    """Return a byte count for people: ``812 B``, ``9.8 KiB``, ``1.2 MiB``."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"  # unreachable: GiB ends the loop


def _age_text(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    for unit, size in (("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{int(seconds)} s"


def listing(result: Backfill) -> list[str]:
    """Return one line per session: those taken (in a dry run only), then every skip but the QUIET ones."""
    lines = []
    if result.dry_run:
        for item in result.taken:
            lines.append(f"would take  {item.session}  {item.host}, {_age_text(item.age_s)} old, "
                         f"{size_text(item.size)}  {item.cwd}  {item.title or ''}".rstrip())
    for item in result.skipped:
        if item.reason in QUIET:
            continue
        detail = f": {item.detail}" if item.detail else ""
        lines.append(f"skip {item.reason}  {item.path}{detail}")
    return lines


def summary_table(result: Backfill):
    """Return the summary as a rich Table: sessions taken and bytes archived, then skips by reason."""
    from rich.table import Table

    verb = "would take" if result.dry_run else "taken"
    table = Table(title=f"take --all{' --dry-run' if result.dry_run else ''}", title_justify="left")
    table.add_column("outcome")
    table.add_column("sessions", justify="right")
    table.add_column("bytes", justify="right")
    table.add_column("why")
    table.add_row(verb, str(len(result.taken)), size_text(result.bytes), "")
    for reason, count in sorted(result.reasons().items()):
        table.add_row(f"skipped: {reason}", str(count), "", REASONS[reason])
    return table
