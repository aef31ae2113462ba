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
4. bank upkeep where due (sandman.verbs.upkeep);
5. the week that ended is scored (sandman.machine.score) when its page is
   missing or no longer matches its data;
6. the site is rendered, and a sync follows when anything was committed.

``--day`` runs step 2 for one day and step 6, nothing else. Every decision is
a line in ``.trace/reflect-<date>.log``; one pass runs at a time
(``.reflect.lock``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from sandman import config, journal, voyage
from sandman.banks.commit import bank_transaction, settle
from sandman.banks.frontmatter import Frontmatter
from sandman.banks.index import memory_files
from sandman.banks.listing import bank_directory_of, bank_folders
from sandman.banks.memory import Memory, clean_body, one_line, read_memory
from sandman.banks.secrets import find_secrets
from sandman.errors import FormatError, InputError, LockBusy, ReplyRejected, SandmanError
from sandman.layout import Layout
from sandman.machine import trail
from sandman.minds import budget, prompts
from sandman.minds.reply import extract_json
from sandman.minds.runner import run_mind
from sandman.pointers import Pointer, list_pointers, parse_time, read_pointer
from sandman.store.atomic import move_no_replace, read_regular
from sandman.store.runlock import RunLock
from sandman.verbs import upkeep
from sandman.voyage import KINDS, LogEntry

VERB = "reflect"
LOG_MIND = "log"


@dataclass(frozen=True)
class Source:
    """One memory of a day: ``key`` is ``<bank>/<file>`` (relative to ``memories/``)."""

    key: str
    label: str  # the bank's directory, or ``user-wide``
    memory: Memory


@dataclass
class EntryOutcome:
    """What the voyage step decided for one day.

    ``decision`` is ``written``, ``kept`` (the fingerprint matched), ``quiet``
    (no sources), ``abstained`` (the mind's reply was not used) or
    ``deferred`` (the daily budget is spent).
    """

    day: str
    decision: str
    reason: str | None = None
    sources: int = 0
    commit: str | None = None


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
                "deferred": "not written: the daily budget ($SANDMAN_DAILY_BUDGET_USD) is spent",
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
    timeout, cap = config.mind_timeout(), config.daily_budget_usd()
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


# --- 2. the voyage entry --------------------------------------------------------


def _on_day(stamp: str, day: str) -> bool:
    moment = parse_time(stamp)
    return moment is not None and moment.date().isoformat() == day


def day_sources(layout: Layout, day: str) -> list[Source]:
    """Return the live memories whose ``created`` or ``updated`` fall in UTC ``day``, by key.

    Archived memories do not count: they are lineage, and the memory that
    replaced them carries the claim (a merge keeps the earliest ``created``).
    A file that cannot be read is not a source.
    """
    found = []
    for folder in bank_folders(layout):
        label = bank_directory_of(folder) or "user-wide"
        for path in memory_files(folder):
            try:
                memory = read_memory(path)
            except (FormatError, OSError):
                continue
            if _on_day(memory.created, day) or _on_day(memory.updated, day):
                found.append(Source(f"{folder.name}/{path.name}", label, memory))
    return found


def _existing(layout: Layout, day: str) -> LogEntry | None:
    try:
        return voyage.read_entry(layout.log_entry(day))
    except (FormatError, OSError):
        return None


def voyage_entry(layout: Layout, day: str, *, timeout: float, cap: float | None) -> EntryOutcome:
    """Write, keep or abstain on the voyage entry of ``day`` (docs/BANK-FORMAT.md, "log/").

    Raises LockBusy, RepositoryError, OSError from the commit; the mind's
    failures are abstentions, journaled, never raised.
    """
    sources = day_sources(layout, day)
    if not sources:
        journal.write(layout, VERB, "quiet", day=day, existing=layout.log_entry(day).is_file())
        return EntryOutcome(day, "quiet")
    print_ = voyage.fingerprint((source.memory.name, source.memory.body) for source in sources)
    current = _existing(layout, day)
    if current is not None and current.fingerprint == print_:
        commit = _refresh_index(layout)
        journal.write(layout, VERB, "kept", day=day, sources=len(sources), fingerprint=print_[:12],
                      index=commit[:12] if commit else None)
        return EntryOutcome(day, "kept", sources=len(sources), commit=commit)
    reached, spent = budget.exhausted(layout, cap, journal.now_utc().strftime("%Y-%m-%d"))
    if reached:
        journal.write(layout, VERB, "deferred", day=day, reason="budget", spent_usd=round(spent, 6), budget_usd=cap)
        return EntryOutcome(day, "deferred", reason="budget", sources=len(sources))
    prompt, nonce = log_prompt(layout, day, sources)
    result = run_mind(prompt, mind=LOG_MIND, model=config.model(config.MIND_LOG), cwd=layout.dream_dir,
                      timeout=timeout, persist=False)
    cost = {f"{budget.COST_PREFIX}{LOG_MIND}": budget.cost_fact(result.cost_usd)}
    reason = result.reason
    reply = None
    if result.answered:
        try:
            reply = parse_log_reply(result.text or "", nonce)
        except ReplyRejected as rejected:
            reason = rejected.reason
    if reply is None:
        extra = {"detail": result.detail} if result.detail and not result.answered else {}
        journal.write(layout, VERB, "abstained", day=day, mind=LOG_MIND, model=result.model, reason=reason,
                      **extra, **cost)
        return EntryOutcome(day, "abstained", reason=reason, sources=len(sources))
    keys = sorted(source.key for source in sources)
    event = trail.new_event("reflect.entry", f"voyage {day}: {reply['title']}", model=result.model,
                            cost_usd=result.cost_usd, data={"day": day, "sources": len(sources)})
    with bank_transaction(layout, verb=VERB, subject=f"voyage {day}: {reply['title']}") as tx:
        trail.write(tx, event)
        entry = LogEntry(day=day, kind=reply["kind"], title=reply["title"], body=reply["body"],
                         position=day_position(layout, day), next=reply["next"], fingerprint=print_,
                         sources=keys, front=current.front if current is not None else Frontmatter())
        tx.write_file(layout.log_entry(day), entry.text())
        tx.write_file(layout.log_index, voyage.render_log_index(layout))
    journal.write(layout, VERB, "written", day=day, kind=reply["kind"], sources=len(sources),
                  fingerprint=print_[:12], commit=(tx.commit or "")[:12], **cost)
    return EntryOutcome(day, "written", sources=len(sources), commit=tx.commit)


def day_position(layout: Layout, day: str) -> int:
    """Return ``day``'s position once its entry is written: counted from INDEX.md's ``began``, else
    from the earliest entry on disk or ``day`` itself (what ``render_log_index`` will then record)."""
    began = voyage.read_began(layout) or min([path.stem for path in voyage.entry_paths(layout)] + [day])
    return voyage.position(began, day)


def _refresh_index(layout: Layout) -> str | None:
    """Rewrite log/INDEX.md when it is not what the entries on disk give; return the commit id."""
    try:
        current = layout.log_index.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    if current == voyage.render_log_index(layout):
        return None
    with bank_transaction(layout, verb=VERB, subject="voyage log index") as tx:
        trail.write(tx, trail.new_event("reflect.entry", "voyage log index regenerated"))
        tx.write_file(layout.log_index, voyage.render_log_index(layout))
    return tx.commit


def _source_text(source: Source) -> str:
    memory = source.memory
    return (f"### {source.key} (bank {source.label})\n"
            f"type: {memory.type}; created {memory.created or 'unknown'}; updated {memory.updated or 'unknown'}\n"
            f"name: {one_line(memory.name)}\ndescription: {one_line(memory.description)}\n\n{memory.body.rstrip()}\n")


def log_prompt(layout: Layout, day: str, sources: list[Source]) -> tuple[str, str]:
    """Return ``(prompt, nonce)``: prompts/log.md filled for ``day``.

    The day's memories and the last five entries before it (whole files) are
    fenced as data. Raises FileNotFoundError when the template is missing.
    """
    before = [path for path in voyage.entry_paths(layout) if path.stem < day][-config.REFLECT_LOG_CONTEXT_ENTRIES:]
    entries = []
    for path in before:
        try:
            entries.append(read_regular(path).decode("utf-8", "replace").rstrip() + "\n")
        except OSError:
            continue
    memories = "\n".join(_source_text(source) for source in sorted(sources, key=lambda s: s.key))
    behind = "\n".join(entries) or "(none yet: this may be the voyage's first entry)"
    nonce = prompts.new_nonce([memories, behind])
    values = {
        "day": day,
        "position": str(day_position(layout, day)),
        "count": str(len(sources)),
        "memories": prompts.fence("memories", memories, nonce),
        "entries": prompts.fence("entries", behind, nonce),
        "nonce": nonce,
        "title_max": str(config.LOG_TITLE_MAX_CHARS),
        "body_max": f"{config.LOG_BODY_MAX_CHARS:,}",
    }
    return prompts.fill(prompts.load("log"), values), nonce


def parse_log_reply(text: str, nonce: str) -> dict[str, str]:
    """Return the ``{kind, title, body, next}`` of a log mind's reply, cleaned, or raise ReplyRejected.

    Reasons: ``echo``, ``refusal``, ``unparseable``, ``not an object``,
    ``<key> missing or not a string``, ``unknown kind``, ``empty title``,
    ``empty body``, ``title over 60 characters``, ``body over 1000
    characters``, ``secret (<kinds>)`` (docs/BANK-FORMAT.md, "Log replies").
    """
    if nonce in text:
        raise ReplyRejected("echo")
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ReplyRejected("not an object")
    for key in ("kind", "title", "body", "next"):
        if not isinstance(data.get(key), str):
            raise ReplyRejected(f"{key} missing or not a string")
    kind = data["kind"].strip().lower()
    if kind not in KINDS:
        raise ReplyRejected("unknown kind")
    title, next_ = one_line(data["title"]), one_line(data["next"])
    body = clean_body(data["body"]) if data["body"].strip() else ""
    if not title:
        raise ReplyRejected("empty title")
    if not body:
        raise ReplyRejected("empty body")
    if len(title) > config.LOG_TITLE_MAX_CHARS:
        raise ReplyRejected(f"title over {config.LOG_TITLE_MAX_CHARS} characters")
    if len(body.rstrip()) > config.LOG_BODY_MAX_CHARS:
        raise ReplyRejected(f"body over {config.LOG_BODY_MAX_CHARS} characters")
    kinds = find_secrets(title, body, next_)
    if kinds:
        raise ReplyRejected("secret (" + ", ".join(kinds) + ")")
    return {"kind": kind, "title": title, "body": body, "next": next_}


# --- 3. the pointer sweep -------------------------------------------------------


def _sweepable(pointer: Pointer | None, cutoff: datetime) -> bool:
    return pointer is not None and pointer.dreamed and pointer.ended is not None and pointer.ended < cutoff


def sweep(layout: Layout, now: datetime) -> list[str]:
    """Delete the pointers that are dreamed and ended more than 72 h before ``now``; return their sessions.

    An undreamed pointer never expires, nor one whose end time is unknown.
    Each pointer is moved aside and read again before it is deleted, so one
    that take rewrote meanwhile (undreamed again) is put back, never lost.
    """
    cutoff = now - timedelta(hours=config.SWEEP_AFTER_HOURS)
    swept = []
    for pointer in list_pointers(layout):
        if not _sweepable(pointer, cutoff):
            continue
        aside = layout.sweeping_pointer(pointer.session)
        try:
            move_no_replace(pointer.path, aside)
        except (FileNotFoundError, FileExistsError):
            continue
        if not _sweepable(read_pointer(aside), cutoff):
            try:
                move_no_replace(aside, pointer.path)
            except FileExistsError:
                pass  # take wrote a newer pointer meanwhile: both stay, the set-aside one dotted
            journal.write(layout, VERB, "unswept", session=pointer.session, reason="rewritten")
            continue
        aside.unlink()
        swept.append(pointer.session)
        journal.write(layout, VERB, "swept", session=pointer.session, ended=pointer.data.get("ended"),
                      dreamed=pointer.data.get("dreamed"))
    return swept
