"""The backstop for missed endings: sessions whose SessionEnd never fired (issue 17).

A crash, a killed terminal or a closed laptop ends a session without its
SessionEnd hook, so ``take --hook`` never runs and the session would never be
remembered. The backstop finds such transcripts and takes them, unforced,
through take_all's survey and take's ``take_source``. It runs:

- at every SessionStart that is not a compaction: ``recall --hook`` calls
  ``start``, which records the starting session (``.started/<sid>.json``,
  the Claude Code pid from ``$CLAUDE_PID``) and spawns ``sandman take
  --missed --except <sid>`` fully detached, at most once per
  ``config.BACKSTOP_EVERY_S`` (``.backstop.stamp``) and only when a stat of the
  recent transcripts says it could take something (sandman/archive/missed.py),
  so the hook never waits for it and a quiet start spawns nothing;
- in every ``reflect`` pass (its ``missed`` step).

A transcript under Claude Code's projects folder is taken when it was last
written more than the live window (120 s) ago and less than
``config.BACKSTOP_LOOKBACK_S`` ago (older sessions are the backfill's,
``take --all``: taking a user's whole history is their decision, since
every session taken costs a dream), and it is not:

- the session that is starting (``--except``), nor any session whose
  ``.started`` record names a Claude Code process still running (an idle
  live session's transcript can be hours old);
- held by a live job (``locate.live_job``), a dream mind's own session, a
  subagent transcript, or anything else take_all's survey skips.

A take leaves Claude Code's name of a transcript in place (for --resume), so a
transcript its take record shows unchanged is passed over as ``taken``; one
that grew since (a resumed session whose ending was missed) is taken from
where its last take ended.
Each session taken is take's own ``archived`` line; a batch that looked at
any transcript is one ``missed`` line in ``.trace/take-<date>.log`` with the
skips counted by reason.

``start`` and everything it imports are standard library only: it runs on the
SessionStart hook's path.

The substance is one floor down, in sandman/archive/backstop.py (the start
record, the spawn, the live sessions, the candidates) and
sandman/archive/backfill.py (the survey, the take of one item); this module is
the run: the batch, its drain and dream, its journal line.
"""

from __future__ import annotations

import time

from sandman import config, journal
from sandman.archive.backstop import VERB, candidates, live_sessions, record_start, spawn, start
from sandman.layout import Layout

__all__ = ["live_sessions", "record_start", "spawn", "start", "take_missed", "take_missed_background"]


def take_missed(layout: Layout, *, starting: str | None = None, dry_run: bool = False, drain_after: bool = True,
                dream_after: bool = True):
    """Take the sessions whose ending was missed (docs/take.md, "The backstop"); return a Backfill (archive/backfill.py).

    ``starting`` is the session whose SessionStart started this run: never
    taken. ``drain_after`` False leaves the pending-take ledger to the caller
    (reflect drains it next), ``dream_after`` False the dream (reflect dreams
    what is due itself, and must not find a detached dream holding the lock). A root that does
    not exist yet is created first, except by a dry run, which writes nothing; what init raises
    when it cannot be. Never raises for a
    transcript (each is an Item, skipped with a reason).
    """
    from sandman.archive import backfill
    from sandman.verbs.take import dream_if_due, drain

    if not layout.memories.is_dir() and not dry_run:
        from sandman.verbs.init import init

        init(layout)  # the first use creates the root, as every verb that writes does
    now = time.time()
    live = live_sessions(layout)
    items = backfill.survey(layout, config.TAKE_LIVE_WINDOW_S, None, paths=candidates(now), orphans=False)
    for item in items:
        if item.reason is not None:
            continue
        if starting is not None and item.session == starting:
            item.skip("starting")
        elif item.session in live:
            item.skip("live-session")
    result = backfill.Backfill(items=items, older_than_s=config.TAKE_LIVE_WINDOW_S, project=None, dry_run=dry_run)
    if dry_run:
        return result
    for item in result.taken:
        backfill.take_item(layout, item)
    if drain_after:
        result.reclaimed = drain(layout)
    result.dream_pid = dream_if_due(layout) if dream_after else None
    if not result.items:
        return result  # nothing under the projects folder is recent: no line for a quiet start
    reasons = ",".join(f"{reason}:{count}" for reason, count in sorted(result.reasons().items()))
    journal.write(layout, VERB, "missed", taken=len(result.taken), skipped=len(result.skipped),
                  sessions=",".join(item.session for item in result.taken) or None,
                  starting=starting, reasons=reasons or None)
    return result


def take_missed_background(layout: Layout, starting: str | None) -> None:
    """``take --missed --background``: ``take_missed`` with every failure a journal line, never output."""
    from sandman.errors import SandmanError

    try:
        take_missed(layout, starting=starting)
    except (SandmanError, OSError) as error:
        journal.write(layout, VERB, "failed", step="missed", error=f"{type(error).__name__}: {error}")
