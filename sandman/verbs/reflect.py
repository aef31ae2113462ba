"""``sandman reflect``: the 24-hour pass (design, station ⑤ and "The voyage log"; docs/reflect.md).

One pass, in the design's order, every step idempotent (a double fire or an
early run is harmless), after the root is recovered (banks.commit.settle: a
transaction a killed process left half done is rolled back before the pass
reads a bank):

1. the pending-take ledger is drained (``take.drain``) before anything is
   written: a take it reclaims belongs to the day being written; then a
   dream runs when one is due (``dream_waiting``): a session queued longer
   than ``config.dream_wait_s()`` (12 h) is dreamt tonight though the queue
   never reached ``config.dream_due_pointers()``, under the dream's own lock,
   budget and guards;
2. the voyage entry ``log/<day>.md`` of the UTC day that ended: its sources
   are the live memories whose ``created`` or ``updated`` fall in the day; an
   entry already carrying their fingerprint is kept without a model call;
   otherwise one mind (``$SANDMAN_MIND_LOG``) answers ``{kind, title, body,
   next}`` and the entry and ``log/INDEX.md`` are committed together; an
   abstention leaves the disk alone; a day without sources gets no file;
3. the sweep deletes pointers that are dreamed and ended more than 72 h ago;
4. bank upkeep where due (sandman.reflect.upkeep);
5. the week that ended is scored (sandman.machine.score) when its page is
   missing or no longer matches its data;
6. the site is rendered, and a sync follows when anything was committed.

``--day`` runs step 2 for one day and step 6, nothing else. Every decision is
a line in ``.trace/reflect-<date>.log``; one pass runs at a time
(``.reflect.lock``).

The substance lives one floor down: the voyage entry in
``sandman.reflect.entry``, the sweep in ``sandman.reflect.sweep``, bank upkeep
in ``sandman.reflect.upkeep`` (its plan in ``sandman.curators.upkeep_plan``).
This module is the verb: the pass's order, its lock and its summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from sandman import config, journal, voyage
from sandman.banks.commit import settle
from sandman.errors import FormatError, InputError, LockBusy, SandmanError
from sandman.layout import Layout
from sandman.reflect import upkeep
from sandman.reflect.entry import EntryOutcome, voyage_entry
from sandman.reflect.sweep import sweep
from sandman.store.runlock import RunLock

VERB = "reflect"


@dataclass
class ReflectSummary:
    """One pass: what each step did, the commits it made, and the errors that stopped a step."""

    day: str
    drained: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    dream: object | None = None  # sandman.dream.run.RunSummary, None when a dream was running already
    entry: EntryOutcome | None = None
    swept: list[str] = field(default_factory=list)
    upkeep: list = field(default_factory=list)  # upkeep.BankOutcome
    commits: list[str] = field(default_factory=list)
    site: object | None = None  # site.render.RenderStats
    score: tuple[str, str | None, bool] | None = None  # (the week that ended, its commit or None, empty)
    errors: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The pass for a person, one line per step that ran."""
        lines = []
        if self.drained:
            lines.append(f"drained: {len(self.drained)} pending take(s) reclaimed")
        if self.missed:
            lines.append(f"missed endings: {len(self.missed)} session(s) taken")
        if self.dream is not None and self.dream.stopped != "not due":
            lines.append(self.dream.text())
        if self.entry is not None:
            entry = self.entry
            text = {
                "written": f"written ({entry.sources} source(s))",
                "kept": "kept: its sources did not change",
                "quiet": "no entry: no memory landed that day",
                "abstained": f"not written: the log mind abstained ({entry.reason}); the next reflect asks again",
                "deferred": "not written: the day's budget (machine.budget_usd_day) is spent",
            }[entry.decision]
            lines.append(f"voyage {entry.day}: {text}")
        if self.swept:
            lines.append(f"swept: {len(self.swept)} dreamed pointer(s) older than {config.SWEEP_AFTER_HOURS} h")
        for outcome in self.upkeep:
            if outcome.decision != "idle":
                lines.append(outcome.text())
        if self.score is not None:
            week, commit, empty = self.score
            lines.append(f"score {week}: " + ("written" if commit else "no data, no page" if empty else "up to date"))
        if self.site is not None:
            lines.append(f"site: {self.site.written} page(s) written, {self.site.removed} removed")
        lines.append(f"reflect: {len(self.commits)} commit(s)")
        return lines


def reflect(layout: Layout, *, day: str | None = None, now: datetime | None = None) -> ReflectSummary:
    """Run the pass (``day`` None) or render one day's entry (``day`` = ``YYYY-MM-DD``); return what it did.

    ``now`` (UTC, default the clock) decides the day that ended, the sweep's
    cutoff and upkeep's due test. A step that fails is journaled and named in
    ``errors``; the steps after it still run. A root that does not exist yet is
    created first (verbs/init.py). Raises InputError (a bad or unfinished
    ``day``), ConfigError (a bad mind setting), LockBusy (another reflect runs),
    all before anything is done; what init raises when the root cannot be created.
    """
    now = now or journal.now_utc()
    target = check_day(day, now) if day is not None else (now.date() - timedelta(days=1)).isoformat()
    if not layout.memories.is_dir():
        from sandman.verbs.init import init

        init(layout)  # the first use creates the root, as every verb that writes does
    timeout, cap = config.mind_timeout(), config.day_budget_usd(layout)
    lock = RunLock(layout.reflect_lock)
    if not lock.acquire():
        holder = lock.holder() or {}
        raise LockBusy(f"another reflect is running (pid {holder.get('pid')}); this one exits")
    summary = ReflectSummary(day=target)
    with lock:
        # A transaction a killed process left half done is undone before anything is read.
        _step(summary, layout, "recover", lambda: settle(layout), None)
        if day is None:
            summary.missed = _step(summary, layout, "missed", lambda: take_missed(layout), [])
            summary.drained = _step(summary, layout, "drain", lambda: drain(layout), [])
            summary.dream = _step(summary, layout, "dream", lambda: dream_waiting(layout), None)
        summary.entry = _step(summary, layout, "voyage",
                              lambda: voyage_entry(layout, target, timeout=timeout, cap=cap), None)
        if summary.entry is not None and summary.entry.commit:
            summary.commits.append(summary.entry.commit)
        if day is None:
            summary.swept = _step(summary, layout, "sweep", lambda: sweep(layout, now), [])
            summary.upkeep = _step(summary, layout, "upkeep",
                                   lambda: upkeep.upkeep(layout, now=now, timeout=timeout, cap=cap), [])
            for outcome in summary.upkeep:
                if outcome.commit and outcome.commit not in summary.commits:
                    summary.commits.append(outcome.commit)  # seeded banks share one commit
                if outcome.decision == "failed":
                    summary.errors.append(f"reflect upkeep of {outcome.bank}: {outcome.reason}")
            summary.score = _step(summary, layout, "score", lambda: score_ended(layout, now), None)
            if summary.score is not None and summary.score[1]:
                summary.commits.append(summary.score[1])
    _finish(layout, summary)
    return summary


def score_ended(layout: Layout, now: datetime) -> tuple[str, str | None, bool]:
    """Step 5: score the ISO week that ended (sandman.machine.score.refresh_ended)."""
    from sandman.machine import score as scoring

    return scoring.refresh_ended(layout, now)


def describe(error: SandmanError | OSError) -> str:
    """Return an error as one line: a SandmanError's message, an OSError's reason and file."""
    if isinstance(error, SandmanError):
        return str(error)
    return f"{error.strerror or error}" + (f" ({error.filename})" if error.filename else "")


def _step(summary: ReflectSummary, layout: Layout, name: str, action, failed):
    """Run one step; a SandmanError or OSError is journaled and kept, and the pass goes on."""
    try:
        return action()
    except (SandmanError, OSError) as error:
        message = describe(error)
        journal.write(layout, VERB, "failed", step=name, error=message)
        summary.errors.append(f"reflect {name}: {message}")
        return failed


def _finish(layout: Layout, summary: ReflectSummary) -> None:
    """Render the site and, when the pass committed, sync (docs/sync.md, "Automation")."""
    from sandman.site.render import render_site

    try:
        summary.site = render_site(layout)
        journal.write(layout, VERB, "rendered", pages=summary.site.pages, written=summary.site.written,
                      removed=summary.site.removed)
    except (SandmanError, OSError) as error:
        message = describe(error)
        journal.write(layout, VERB, "failed", step="site", error=message)
        summary.errors.append(f"reflect site: {message}")
    journal.write(layout, VERB, "finished", day=summary.day, commits=len(summary.commits),
                  entry=summary.entry.decision if summary.entry else None, swept=len(summary.swept),
                  errors=len(summary.errors))
    if summary.commits:
        # Outside every lock: a sync takes the commit lock itself.
        from sandman.verbs.sync import maybe_sync_after_commit

        maybe_sync_after_commit(layout)


def check_day(text: str, now: datetime) -> str:
    """Return ``text`` if it is a UTC day that has ended by ``now``; raise InputError otherwise."""
    try:
        day = voyage.check_day(text)
    except FormatError:
        raise InputError(f"--day {text!r} is not a YYYY-MM-DD calendar date") from None
    if date.fromisoformat(day) >= now.date():
        raise InputError(f"--day {day} has not ended yet (UTC); an entry never claims hours still to come")
    return day


# --- 1. the drain ---------------------------------------------------------------


def take_missed(layout: Layout) -> list[str]:
    """Take the sessions whose ending was missed (the backstop, take_missed.py); return their ids."""
    from sandman.verbs.take_missed import take_missed as backstop

    return [item.session for item in backstop(layout, drain_after=False, dream_after=False).taken]


def drain(layout: Layout) -> list[str]:
    """Drain the pending-take ledger (take's own drain, which never raises); return the reclaimed."""
    from sandman.verbs.take import drain as take_drain

    reclaimed = take_drain(layout)
    journal.write(layout, VERB, "drained", reclaimed=len(reclaimed))
    return reclaimed


def dream_waiting(layout: Layout):
    """Dream what is due, as take's trigger would: the queue's depth, or a session waiting past
    ``config.dream_wait_s()``; return the dream's RunSummary, None when another dream runs
    (it does this work). Raises what ``dream`` raises otherwise (ClaudeNotFound, ConfigError)."""
    from sandman.verbs.dream import dream

    try:
        return dream(layout)
    except LockBusy as error:
        journal.write(layout, VERB, "dream-running", error=str(error))
        return None
