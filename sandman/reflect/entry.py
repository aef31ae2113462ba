"""The voyage entry ``log/<day>.md`` of one UTC day (design, "The voyage log"; docs/reflect.md, step 2).

Its sources are the live memories whose ``created`` or ``updated`` fall in the
day; an entry already carrying their fingerprint is kept without a model call;
otherwise one mind (``$SANDMAN_MIND_LOG``) answers ``{kind, title, body,
next}`` (docs/BANK-FORMAT.md, "Log replies") and the entry and ``log/INDEX.md``
are committed together; an abstention leaves the disk alone; a day without
sources gets no file. ``sandman reflect`` (sandman/verbs/reflect.py) runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandman import config, journal, voyage
from sandman.banks.commit import bank_transaction
from sandman.banks.frontmatter import Frontmatter
from sandman.banks.index import memory_files
from sandman.banks.listing import bank_directory_of, bank_folders
from sandman.banks.memory import Memory, clean_body, one_line, read_memory
from sandman.banks.secrets import find_secrets
from sandman.errors import FormatError, ReplyRejected
from sandman.layout import Layout
from sandman.machine import trail
from sandman.minds import budget, prompts
from sandman.minds.reply import extract_json
from sandman.minds.runner import run_mind
from sandman.pointers import parse_time
from sandman.store.atomic import read_regular
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
