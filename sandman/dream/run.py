"""The dream run: route queued pointers into banks (design, station ④; docs/dream.md).

``sandman.verbs.dream.dream`` (the verb) holds the run lock and calls ``run_queue``. For
each pointer, oldest ended first, at most 20 per run, the queue re-read before
every pick and no pointer tried twice in a run:

1. its archived transcript is read (sandman.transcripts) and capped for the minds;
2. the three minds (``config.MINDS``) dream it at the same time, with the
   same prompt (prompts/dream.md), each bounded by ``$SANDMAN_MIND_TIMEOUT``;
3. a reply that is not a proposal list (sandman.minds.reply) is an abstention;
   an unusable memory in a reply (a defect or a secret) is dropped, the rest
   of the reply counts; fewer than two answering minds leave the pointer queued;
4. the proposals become claims (sandman.minds.consensus); an agreed claim is
   committed through ``bank_transaction`` into the bank consensus files it in,
   unless a live memory of that bank or a bank above it already states it
   (deduped, under the commit lock);
5. the pointer is stamped ``"dreamed": "<ISO time>"`` and a journal line
   records the counts and each mind's cost.

The day's budget (config.day_budget_usd) is checked before each pointer's minds start.
Before the first, mind transcripts a killed run left in Claude Code's
projects folder are moved into ``.dream/orphans/`` (``sweep_leftovers``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sandman import config, journal, transcripts
from sandman.archive.parts import read_part
from sandman.banks.commit import bank_transaction
from sandman.banks.worktrees import bank_directory
from sandman.curators import retired
from sandman.banks.index import memory_files
from sandman.banks.memory import Memory, read_memory
from sandman.banks.names import bank_name
from sandman.errors import FormatError, InputError, ReplyRejected, SandmanError
from sandman.layout import BANK_ARCHIVE, Layout
from sandman.minds import budget, prompts
from sandman.minds.consensus import Claim, claims, evidence, held_by
from sandman.minds.reply import Proposal, allowed_banks, parse_reply
from sandman.minds import runner
from sandman.minds.runner import ORPHANS, MindResult, run_minds
from sandman.pointers import Pointer, parse_time, read_pointer, write_pointer
from sandman.dreamqueue import due, queue
from sandman.store.atomic import write_atomic

VERB = "dream"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TAKEN = re.compile(r"\d{6}-(.+)")


@dataclass
class PointerOutcome:
    """What one pointer's dream decided: ``routed``, ``queued`` or ``skipped``, with counts."""

    session: str
    decision: str
    reason: str | None = None
    proposed: int = 0
    claims: int = 0
    committed: int = 0
    deduped: list[str] = field(default_factory=list)  # the files already stating an agreed claim
    forgotten: int = 0
    tripped: int = 0  # agreed memories refused: a curator or upkeep retired them (curators.retired)
    dropped: int = 0
    abstained: int = 0
    failed: int = 0
    skipped_lines: int = 0  # transcript lines the reader could not use (a last line cut short included)


@dataclass
class RunSummary:
    """One ``sandman dream``: the pointers it tried, why it stopped early (if it did), what is left."""

    outcomes: list[PointerOutcome] = field(default_factory=list)
    stopped: str | None = None
    left: int = 0

    def count(self, decision: str) -> int:
        return sum(1 for outcome in self.outcomes if outcome.decision == decision)

    def total(self, key: str) -> int:
        values = [getattr(outcome, key) for outcome in self.outcomes]
        return sum(len(value) if isinstance(value, list) else value for value in values)

    def text(self) -> str:
        """One line for a person: what the run did and what is still queued."""
        if not self.outcomes and not self.stopped:
            return "dream: nothing queued"
        line = (
            f"dream: {len(self.outcomes)} pointer(s) tried: {self.count('routed')} routed, "
            f"{self.count('queued')} left queued, {self.count('skipped')} skipped; "
            f"{self.total('committed')} memories committed, {self.total('deduped')} deduped, "
            f"{self.total('forgotten')} forgotten; {self.left} still queued"
        )
        if self.total("tripped"):
            line += f"; {self.total('tripped')} refused as retired by a curator, upkeep or forget"
        if self.stopped == "budget":
            line += "; stopped: the day's budget (machine.budget_usd_day) is spent"
        return line


@dataclass
class _Material:
    cwd: str
    archived: Path
    project: str
    text: str
    title: str
    highlights: list[str]
    turns: int
    skipped: int


def run_queue(
    layout: Layout, *, everything: bool = False, on_pointer: Callable[[Pointer, int], None] | None = None
) -> RunSummary:
    """Dream queued pointers until the queue is empty, 20 were tried, or the budget is spent.

    Only due pointers are tried, unless ``everything`` (``dream --now``): a
    pointer waiting out a failed attempt is tried too. A pointer left queued
    or skipped is stamped with its attempt (``attempts``, ``tried``), which sets
    when it is due again. The caller holds the run lock. ``on_pointer(pointer, planned)`` is called
    before each pointer with the number of pointers the run now expects to try
    (the progress bar). Raises ConfigError for a bad ``$SANDMAN_MIND_TIMEOUT``
    or day's budget (config.day_budget_usd), before any mind starts.
    """
    timeout = config.mind_timeout()
    cap = config.day_budget_usd(layout)
    sweep_leftovers(layout)
    summary = RunSummary()
    tried: set[str] = set()
    while len(tried) < config.DREAM_POINTERS_PER_RUN:
        candidates = queue(layout) if everything else due(layout)
        waiting = [pointer for pointer in candidates if pointer.session not in tried]
        if not waiting:
            break
        day = journal.now_utc().strftime("%Y-%m-%d")
        reached, spent = budget.exhausted(layout, cap, day)
        if reached:
            summary.stopped = "budget"
            journal.write(layout, VERB, "stopped", reason="budget", spent_usd=round(spent, 6),
                          budget_usd=cap, queued=len(waiting))
            break
        pointer = waiting[0]
        tried.add(pointer.session)
        if on_pointer is not None:
            planned = len(tried) + min(len(waiting) - 1, config.DREAM_POINTERS_PER_RUN - len(tried))
            on_pointer(pointer, planned)
        outcome = dream_pointer(layout, pointer, timeout=timeout)
        if outcome.decision != "routed" and outcome.reason != "forgotten":
            stamp_attempt(layout, pointer.session)
        summary.outcomes.append(outcome)
    summary.left = len(queue(layout))
    journal.write(layout, VERB, "finished", tried=len(summary.outcomes), routed=summary.count("routed"),
                  queued=summary.count("queued"), skipped=summary.count("skipped"),
                  committed=summary.total("committed"), left=summary.left, stopped=summary.stopped)
    return summary


def sweep_leftovers(layout: Layout) -> None:
    """Move the mind transcripts a killed dream left in Claude Code's projects folder into
    ``.dream/orphans/`` (docs/BANK-FORMAT.md, "Mind transcripts"); one journal line each.

    Run first by every dream run, under the run lock: nothing of a dreamt
    session stays in Claude Code's folder, where ``claude --resume`` would list it.
    """
    for entry, target, error in runner.sweep_leftovers(layout, layout.dream_dir):
        if target is not None:
            journal.write(layout, VERB, "orphaned", **{"from": str(entry)},
                          to=target.relative_to(layout.root).as_posix())
        else:
            journal.write(layout, VERB, "orphan-left", path=str(entry), error=error)


def dream_pointer(layout: Layout, pointer: Pointer, *, timeout: float) -> PointerOutcome:
    """Dream one pointer with the three minds; commit what two agree on; return the outcome.

    Never raises for the pointer's sake: a pointer that cannot be read is
    ``skipped``, one without a quorum or with a failed commit stays ``queued``,
    and each is journaled.
    """
    session = pointer.session
    if pointer.data.get("cwd_masked") is True:
        # Routed, not skipped: a skipped pointer stays queued and would be retried every day for ever.
        return _nothing_to_dream(layout, session, 0, reason="cwd held a secret (masked by take)")
    try:
        material = _material(layout, pointer)
    except (SandmanError, OSError) as error:
        reason = str(error) if isinstance(error, SandmanError) else f"{error.strerror or error}"
        journal.write(layout, VERB, "skipped", session=session, reason=reason)
        return PointerOutcome(session, "skipped", reason=reason)

    if not material.turns and not material.highlights:
        return _nothing_to_dream(layout, session, material.skipped)
    prompt, nonce = dream_prompt(pointer, material)
    jobs = [(mind, config.model(var_default), prompt) for mind, var_default in config.MINDS.items()]
    results = run_minds(jobs, cwd=layout.dream_dir, timeout=timeout, keep=(layout, material.project))
    kept = [result.transcript for result in results if result.transcript]
    _record_kept(layout, session, kept)
    if not layout.pointer(session).exists():
        return _forgotten(layout, session, kept)

    outcome = PointerOutcome(session, "queued", skipped_lines=material.skipped)
    proposals: list[Proposal] = []
    verdicts: dict[str, str] = {}
    for result in results:
        verdict = result.reason or "answered"
        if result.answered:
            try:
                reply = parse_reply(result.text or "", mind=result.mind, cwd=material.cwd, nonce=nonce)
            except ReplyRejected as rejected:
                verdict = rejected.reason
            else:
                proposals += reply.proposals
                for number, kinds in reply.dropped:  # the kinds, never the value
                    journal.write(layout, VERB, "dropped-secret", session=session, mind=result.mind,
                                  memory=number, kinds=",".join(kinds))
                for number, defect in reply.rejected:  # the rest of the reply still counts
                    journal.write(layout, VERB, "dropped-memory", session=session, mind=result.mind,
                                  memory=number, reason=defect)
                outcome.dropped += len(reply.dropped) + len(reply.rejected)
        verdicts[result.mind] = verdict
        if verdict != "answered":
            outcome.abstained += 1
            extra = {"detail": result.detail} if result.detail else {}
            journal.write(layout, VERB, "abstained", session=session, mind=result.mind,
                          model=result.model, reason=verdict, **extra)
    outcome.proposed = len(proposals)
    answering = len(results) - outcome.abstained
    if answering < config.DREAM_QUORUM:
        outcome.reason = "quorum"
        _journal_pointer(layout, outcome, results, verdicts)
        return outcome

    found = claims(proposals)
    outcome.claims = len(found)
    event = dream_event(session, material.cwd, results, verdicts,
                        shift=_shift_of(layout, pointer))
    for claim in found:
        if not claim.agreed():
            outcome.forgotten += 1
            continue
        try:
            decision, path, commit = commit_claim(layout, claim, session, event=event)
        except SessionForgotten:
            return _forgotten(layout, session, kept)
        except (SandmanError, OSError) as error:
            outcome.failed += 1
            journal.write(layout, VERB, "failed", session=session, name=claim.wording.name,
                          error=str(error))
            continue
        relpath = path.relative_to(layout.root).as_posix()
        if decision == "tripped":
            outcome.tripped += 1
            journal.write(layout, VERB, "refused-retired", session=session, name=claim.wording.name,
                          bank=path.parent.parent.name, retired=path.name)
        elif decision == "deduped":
            outcome.deduped.append(relpath)
            journal.write(layout, VERB, "deduped", session=session, deduped=relpath)
        else:
            outcome.committed += 1
            journal.write(layout, VERB, "committed", session=session, file=relpath,
                          witnesses=",".join(claim.witnesses), commit=(commit or "")[:12])
    if outcome.failed:
        outcome.reason = "commit failed"
    elif stamp_dreamed(layout, session):
        outcome.decision = "routed"
    else:
        outcome.reason = "pointer gone"
    _journal_pointer(layout, outcome, results, verdicts)
    return outcome


def _nothing_to_dream(layout: Layout, session: str, skipped: int,
                      reason: str = "no turns in the transcript") -> PointerOutcome:
    """Route a session no mind may read without paying three minds: a transcript holding no
    turn (an empty file, say), or a cwd take masked for a secret (no bank may be named after it)."""
    outcome = PointerOutcome(session, "routed", reason=reason, skipped_lines=skipped)
    if not stamp_dreamed(layout, session):
        outcome.decision, outcome.reason = "queued", "pointer gone"
    _journal_pointer(layout, outcome, [], {})
    return outcome


class SessionForgotten(SandmanError):
    """The session was forgotten while its minds ran: nothing of it may be written."""


def _forgotten(layout: Layout, session: str, kept: list[Path]) -> PointerOutcome:
    """Leave no trace of a session forgotten mid-dream: its minds' transcripts and the
    manifest go, and no journal line names it (forget's promise, design "Observability")."""
    for path in [*kept, layout.dream_manifest(session)]:
        path.unlink(missing_ok=True)
    journal.write(layout, VERB, "dropped", reason="forgotten while dreamt")
    return PointerOutcome(session, "skipped", reason="forgotten")


def _record_kept(layout: Layout, session: str, kept: list[Path]) -> None:
    """Add the minds' kept transcripts to ``.dream/by-session/<session>.json`` for forget.

    A mind's session id is not the dreamt session's, so without this manifest
    forget could only find them by scanning every kept byte (docs/BANK-FORMAT.md,
    "Mind transcripts"). Best effort, like the move itself.
    """
    if not kept:
        return
    path = layout.dream_manifest(session)
    try:
        listed = json.loads(path.read_bytes()).get("transcripts", [])
    except (OSError, ValueError, RecursionError, AttributeError):
        listed = []
    listed += [p.relative_to(layout.root).as_posix() for p in kept if p.is_relative_to(layout.root)]
    try:
        write_atomic(path, json.dumps({"session": session, "transcripts": sorted(set(listed))}, indent=2) + "\n")
    except OSError:
        pass


def _material(layout: Layout, pointer: Pointer) -> _Material:
    """Read what the minds need from a pointer and its archived transcript.

    Raises InputError (a pointer without a usable cwd or archive path),
    ArchiveChanged (the archived part's bytes changed since the take),
    UnrecognisedTranscript, OSError.
    """
    data = pointer.data
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith("/") or _CONTROL.search(cwd):
        raise InputError("pointer has no usable cwd")
    archived = data.get("archived")
    if not isinstance(archived, str) or not archived:
        raise InputError("pointer names no archived transcript")
    path = (layout.root / archived).resolve()
    # A pointer is plain JSON on disk: never let one steer a mind to a file outside the archive.
    if not path.is_relative_to(layout.archive.resolve()):
        raise InputError("pointer's archived path is outside .archive/")
    host = data.get("host") if data.get("host") in transcripts.HOSTS else None
    session = transcripts.read_session(path, host, data=_part_bytes(data, path))
    text = transcripts.mind_text(session, config.MIND_TRANSCRIPT_HEAD_CHARS, config.MIND_TRANSCRIPT_TAIL_CHARS)
    title = data.get("title") if isinstance(data.get("title"), str) else session.title
    highlights = data.get("highlights")
    highlights = [h for h in highlights if isinstance(h, str)] if isinstance(highlights, list) else []
    # A session of a linked worktree dreams into its main worktree's banks (banks/worktrees.py).
    cwd = str(bank_directory(layout, cwd))
    return _Material(cwd=cwd, archived=path, project=claude_project(layout, path, host or session.host),
                     text=text, title=title or "", highlights=highlights or list(session.highlights),
                     turns=len(session.turns), skipped=sum(session.skipped.values()))


def _part_bytes(data: dict, path: Path) -> bytes | None:
    """The bytes of the part a pointer names (``offset``, ``bytes``, ``sha256``; BANK-FORMAT "Pointers"),
    checked against their digest; None for a pointer without a part (written before takes linked: the
    whole file is read).

    A resumed session appends to its archived file after the part, so the minds
    read exactly what was taken. Raises ArchiveChanged when the bytes changed
    since the take, InputError for a part that is not one, OSError.
    """
    offset, size, digest = data.get("offset", 0), data.get("bytes"), data.get("sha256")
    if size is None and digest is None:
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (offset, size)) \
            or offset > size or not isinstance(digest, str):
        raise InputError("pointer's part (offset, bytes, sha256) is not a byte range with its digest")
    return read_part(path, offset, size, digest)


def claude_project(layout: Layout, archived: Path, host: str) -> str:
    """Return the Claude Code project a transcript was taken from, read out of its archive name.

    ``.archive/claude/<yyyy>/<mm>/<dd>/<HHMMSS>-<project>/<session>.jsonl``
    gives ``<project>``; anything else (another host, another shape) is ``orphans``.
    """
    if host != "claude":
        return ORPHANS
    try:
        parts = archived.relative_to(layout.archive_host("claude").resolve()).parts
    except ValueError:
        return ORPHANS
    match = _TAKEN.fullmatch(parts[3]) if len(parts) == 5 else None
    return match.group(1) if match and match.group(1) not in (".", "..") else ORPHANS


def _when(value: object) -> str:
    moment = parse_time(value)
    return journal.iso(moment) if moment else "unknown"


def dream_prompt(pointer: Pointer, material: _Material) -> tuple[str, str]:
    """Return ``(prompt, nonce)``: prompts/dream.md filled for one pointer.

    The cwd, the banks it allows, the archived transcript's path, the title,
    highlights and transcript are fenced as data under a nonce that none of
    them contains. Raises FileNotFoundError when the template is missing.
    """
    from sandman.banks.secrets import mask_secrets

    # The minds read the session with its secrets masked: what they never see, they cannot propose.
    highlights = "\n".join(f"- {mask_secrets(item)}" for item in material.highlights) or "(none)"
    title = mask_secrets(material.title) if material.title else "(none)"
    banks = "\n".join(f"- {bank}" for bank in allowed_banks(material.cwd))
    # The cwd, the banks under it and the archive path (a folder's name) are the session's words too.
    fenced = {"cwd": material.cwd, "archived": str(material.archived), "title": title,
              "highlights": highlights, "transcript": mask_secrets(material.text), "banks": banks}
    nonce = prompts.new_nonce(fenced.values())
    values = {label: prompts.fence(label, text, nonce) for label, text in fenced.items()}
    values.update(session=pointer.session, started=_when(pointer.data.get("started")),
                  ended=_when(pointer.data.get("ended")), pointer=str(pointer.path), nonce=nonce)
    return prompts.fill(prompts.load("dream"), values), nonce


def _chain(claim: Claim) -> list[str | None]:
    """The directories whose banks a claim reaches: its own and every one above it that recall
    reads, nearest first; ``[None]`` for the user-wide bank."""
    return [None] if claim.directory is None else allowed_banks(claim.directory)


def _live(layout: Layout, claim: Claim):
    """Yield ``(path, name, description, body)`` of the live memories of the claim's type in
    its bank and every bank above it that recall reads (docs/BANK-FORMAT.md, "Consensus")."""
    for directory in _chain(claim):
        for path in memory_files(layout.bank(bank_name(directory))):
            try:
                memory = read_memory(path)
            except (FormatError, OSError):
                continue
            if memory.type == claim.type:
                yield path, memory.name, memory.description, memory.body


def _shift_of(layout: Layout, pointer: Pointer) -> dict | None:
    """``meta.json`` of the shift the pointer's session ran in (its ``shift``, else the shift that
    attached this session), None for any other session or when the shifts cannot be read."""
    from sandman.machine import shift as shifts

    try:
        return shifts.of_session(layout, pointer.session, pointer.data.get("shift"))
    except (OSError, SandmanError):
        return None


def dream_event(session: str, cwd: str, results: list[MindResult], verdicts: dict[str, str],
                shift: dict | None = None):
    """The ``dream.commit`` event of one dreamt session (docs/BANK-FORMAT.md § trail): the session it
    read, the answering minds' models and their summed reported cost (None when none reported one).
    Its summary names the session by id alone: the trail is versioned and synced, and a session's
    title is its first prompt, which ``forget`` must be able to destroy (docs/forget.md).
    ``shift`` (the ``meta.json`` of the shift the session ran in) links it to that shift: its
    ``shift`` and a parent at the shift's start, so its commits carry ``Shift:`` and revoking the
    shift revokes what the dream learnt from it."""
    from sandman.machine import trail

    answered = [result for result in results if verdicts.get(result.mind) == "answered"]
    costs = [result.cost_usd for result in answered if result.cost_usd is not None]
    minds = {result.mind: {"model": result.model, "cost_usd": result.cost_usd, "verdict": verdicts.get(result.mind)}
             for result in results}
    start = (shift or {}).get("start_event")
    return trail.new_event(
        "dream.commit", f"dream of session {session}",
        parent=start if shift and trail.is_event_id(start) else None, shift=shift["id"] if shift else None,
        model=",".join(sorted({result.model for result in answered if result.model})) or None,
        cost_usd=round(sum(costs), 6) if costs else None,
        data={"session": session, "cwd": cwd, "minds": minds})


def commit_claim(layout: Layout, claim: Claim, session: str, *, event=None) -> tuple[str, Path, str | None]:
    """Commit an agreed claim, or find the live memory that already states it.

    Returns ``("committed", memory path, commit id)``, ``("deduped", the
    existing file, None)`` or ``("tripped", the retired file's name under
    its bank's ``_archive/``, None)`` when a curator, upkeep or forget retired
    that memory or the same claim in other words (curators.retired). The
    dedupe check runs under the commit lock, so a memory written meanwhile is
    seen. ``event`` (machine.trail.Event, the session's ``dream.commit``) goes
    on the commit as ``Event:``; its trail line lands in the first commit that
    carries it. Raises LockBusy, RepositoryError,
    InputError, SecretRefused, OSError.
    """
    from sandman.machine import trail

    wording = claim.wording
    name = bank_name(claim.directory)
    with bank_transaction(layout, verb=VERB, subject=wording.name, session=session,
                          trailers=trail.trailers(event) if event is not None else None) as tx:
        # Under the commit lock: forget deletes the pointer before it looks for the
        # session's memories under the same lock, so a forgotten session never gains one.
        if not layout.pointer(session).exists():
            raise SessionForgotten(f"session {session} was forgotten while it was dreamt")
        held = held_by(claim, _live(layout, claim))
        if held is not None:
            return "deduped", held, None
        memory = Memory(name=wording.name, description=wording.description, type=wording.type,
                        body=wording.body, source=[session], witnesses=list(claim.witnesses))
        # The failure-to-forget tripwire (sandman.curators.retired): the same memory, or the same
        # claim in other words by the test dedupe just used, in the banks dedupe read.
        line = retired.retired(layout, name, memory) or retired.retiring(
            layout, [bank_name(directory) for directory in _chain(claim)], claim.type,
            [evidence(proposal) for proposal in claim.proposals])
        if line is not None:
            archive = layout.bank(str(line.get("bank") or name)) / BANK_ARCHIVE
            return "tripped", archive / str(line.get("file") or ""), None
        path = tx.write_memory(name, memory, directory=claim.directory)
        if event is not None and trail.find(layout, event.id) is None:
            trail.write(tx, event)
    return "committed", path, tx.commit


def stamp_attempt(layout: Layout, session: str) -> None:
    """Count a failed dream on the pointer (``attempts`` + 1, ``tried`` now), if it still exists.

    sandman.verbs.dream.is_due reads them back: the pointer rests 1 h, 2 h, 4 h...
    at most 24 h before a detached dream tries it again. Best effort.
    """
    current = read_pointer(layout.pointer(session))
    if current is None:
        return
    data = dict(current.data)
    attempts = data.get("attempts")
    data["attempts"] = (attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else 0) + 1
    data["tried"] = journal.iso(journal.now_utc())
    try:
        write_pointer(layout, session, data)
    except (InputError, OSError):
        pass


def stamp_dreamed(layout: Layout, session: str) -> bool:
    """Stamp ``"dreamed": "<ISO time>"`` on a pointer (atomic rewrite); False when it is gone.

    The pointer is re-read first, so nothing written to it meanwhile is lost,
    and a pointer deleted meanwhile (forget) is never recreated.
    """
    current = read_pointer(layout.pointer(session))
    if current is None:
        return False
    data = dict(current.data)
    data["dreamed"] = journal.iso(journal.now_utc())
    try:
        write_pointer(layout, session, data)
    except (InputError, OSError):
        return False
    return True


def _tokens_fact(tokens: dict | None) -> str:
    if not tokens:
        return "unknown"
    return ",".join(f"{key}:{value}" for key, value in tokens.items())


def _journal_pointer(layout: Layout, outcome: PointerOutcome, results: list[MindResult],
                     verdicts: dict[str, str]) -> None:
    facts: dict[str, object] = {"session": outcome.session}
    if outcome.reason:
        facts["reason"] = outcome.reason
    for key in ("proposed", "claims", "committed", "forgotten", "dropped", "abstained"):
        facts[key] = getattr(outcome, key)
    if outcome.tripped:
        facts["tripped"] = outcome.tripped
    # The seed's form: deduped= names the files matched (- for none), not a count.
    facts["deduped"] = ",".join(outcome.deduped) or None
    if outcome.failed:
        facts["failed"] = outcome.failed
    facts["skipped_lines"] = outcome.skipped_lines
    for result in results:
        facts[result.mind] = verdicts[result.mind]
        facts[f"{budget.COST_PREFIX}{result.mind}"] = budget.cost_fact(result.cost_usd)
        facts[f"tokens_{result.mind}"] = _tokens_fact(result.tokens)
    journal.write(layout, VERB, outcome.decision, **facts)
