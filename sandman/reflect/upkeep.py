"""Bank upkeep: reflect's gated rework of a bank (design, station ⑤; docs/reflect.md, "Upkeep").

Each bank carries ``_reflect.json {at, count, last_ops}`` (docs/BANK-FORMAT.md),
seeded on reflect's first sight of the bank with no upkeep. A bank is due when
it grew by ``config.UPKEEP_DUE_FILES`` memories and ``config.UPKEEP_DUE_HOURS``
passed since ``at``, or when the last pass applied all
``config.UPKEEP_MAX_OPS`` operations (a backlog is due on sight). Then:

1. the listing is read: each live memory's file, type, name, description and
   the first lines of its body, every file fingerprinted (SHA-256 of the bytes
   read);
2. one planning mind (``$SANDMAN_MIND_UPKEEP``, not persisted) proposes at most
   six operations, ``prune``, ``merge``, ``retitle``; the plan is validated
   whole (docs/BANK-FORMAT.md, "Upkeep plans") or rejected entire;
3. each merge's body is written by a second call (prompts/merge.md) that sees
   the members whole; its abstention skips that merge alone;
4. in one transaction, each operation's files are re-checked against the
   listing's fingerprints right before it runs: a file edited, gone or never
   listed skips that operation only (a conflict). A merge is committed with
   ``replaces`` naming the member with the earliest ``created`` (which it
   keeps) and the other members archived; a prune archives; a retitle
   rewrites name and description with ``replaces``. ``_reflect.json`` is
   written in the same commit.

No model call runs under the commit lock. Every operation is net-non-increasing:
upkeep never grows a bank. What the minds read and must answer (the listing,
the prompts, the plan and merge contracts) is sandman.curators.upkeep_plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sandman import config, journal
from sandman.banks.commit import ConflictError, bank_transaction
from sandman.curators import retired
from sandman.banks.index import memory_files
from sandman.banks.listing import bank_directory_of, bank_folders
from sandman.banks.memory import Memory, one_line, parse_memory
from sandman.errors import FormatError, ReplyRejected, SandmanError
from sandman.layout import BANK_REFLECT, Layout
from sandman.machine import trail
from sandman.minds import budget
from sandman.minds.runner import MindResult, run_mind
from sandman.pointers import parse_time
from sandman.curators.upkeep_plan import (
    Listed, Operation, merge_prompt, parse_merge, parse_plan, plan_prompt, read_listing,
)

VERB = "reflect"
PLAN_MIND = "upkeep"
MERGE_MIND = "merge"
_LATEST = datetime.max.replace(tzinfo=timezone.utc)
_NEVER = "never listed"  # the fingerprint a file missing from the listing is checked against: no file has it


@dataclass
class BankOutcome:
    """What upkeep decided for one bank.

    ``decision``: ``seeded``, ``idle`` (not due), ``upkept`` (a valid plan was
    applied, perhaps partly), ``proposed`` (a valid plan written as a proposal
    set: ``upkeep.review`` is on), ``rejected`` (an invalid plan), ``abstained``,
    ``deferred`` (the budget is spent) or ``failed`` (the commit failed).
    """

    bank: str
    decision: str
    reason: str | None = None
    planned: int = 0
    applied: int = 0
    skipped: list[str] = field(default_factory=list)  # merges whose second call abstained
    conflicts: list[str] = field(default_factory=list)  # files changed, gone or never listed
    conflicted_ops: int = 0
    commit: str | None = None

    def text(self) -> str:
        """One line for a person."""
        if self.decision == "upkept":
            line = f"upkeep {self.bank}: {self.applied} of {self.planned} operation(s) applied"
            if self.conflicted_ops:
                line += f", {self.conflicted_ops} skipped on conflict ({', '.join(self.conflicts)})"
            if self.skipped:
                line += f", {len(self.skipped)} merge(s) skipped (the merge mind abstained)"
            return line
        return f"upkeep {self.bank}: {self.decision}" + (f" ({self.reason})" if self.reason else "")


# --- the baseline ---------------------------------------------------------------


def read_baseline(folder: Path) -> dict | None:
    """Return a bank's ``_reflect.json`` as ``{at: datetime, count, last_ops}``; None when absent.

    Raises FormatError naming the file when it is not that shape.
    """
    path = folder / BANK_REFLECT
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as error:
        raise FormatError(f"{path} is not readable JSON ({error})") from None
    at = parse_time(data.get("at")) if isinstance(data, dict) else None
    numbers = [data.get(key) if isinstance(data, dict) else None for key in ("count", "last_ops")]
    if at is None or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        raise FormatError(f"{path} is not {{at, count, last_ops}}")
    return {"at": at, "count": numbers[0], "last_ops": numbers[1]}


def baseline_text(at: datetime, count: int, last_ops: int) -> str:
    """Return the bytes of ``_reflect.json``."""
    return json.dumps({"at": journal.iso(at), "count": count, "last_ops": last_ops}) + "\n"


def due(baseline: dict, count: int, now: datetime) -> bool:
    """True when the bank grew by 5+ memories and 20+ h passed, or the last pass spent every operation."""
    grown = count - baseline["count"] >= config.UPKEEP_DUE_FILES
    aged = (now - baseline["at"]).total_seconds() >= config.UPKEEP_DUE_HOURS * 3600
    return (grown and aged) or baseline["last_ops"] >= config.UPKEEP_MAX_OPS


# --- the pass over every bank ---------------------------------------------------


def banks(layout: Layout) -> list[Path]:
    """Return the bank folders under ``memories/`` (banks.listing.bank_folders), sorted."""
    return bank_folders(layout)


def upkeep(layout: Layout, *, now: datetime, timeout: float, cap: float | None) -> list[BankOutcome]:
    """Seed the banks seen for the first time (one commit), then tend each due bank; return the outcomes.

    A bank whose ``_reflect.json`` is unreadable is seeded again. Raises
    LockBusy, RepositoryError, OSError from the seeding commit; a bank's own
    failure is its outcome.
    """
    outcomes, seeds = [], []
    for folder in banks(layout):
        count = len(memory_files(folder))
        try:
            baseline = read_baseline(folder)
        except FormatError as error:
            journal.write(layout, VERB, "reseeded", bank=folder.name, error=str(error))
            baseline = None
        if baseline is None:
            seeds.append((folder, count))
        elif not due(baseline, count, now):
            journal.write(layout, VERB, "idle", bank=folder.name, count=count, baseline=baseline["count"],
                          last_ops=baseline["last_ops"])
            outcomes.append(BankOutcome(folder.name, "idle"))
        else:
            outcomes.append(tend(layout, folder, now=now, timeout=timeout, cap=cap))
    if seeds:
        event = trail.new_event("upkeep.seed", f"upkeep baseline of {len(seeds)} bank(s)",
                                data={"banks": [folder.name for folder, _ in seeds]})
        with bank_transaction(layout, verb=VERB, subject=f"upkeep baseline of {len(seeds)} bank(s)") as tx:
            trail.write(tx, event)
            for folder, count in seeds:
                tx.write_file(folder / BANK_REFLECT, baseline_text(now, count, 0))
        for folder, count in seeds:
            journal.write(layout, VERB, "seeded", bank=folder.name, count=count, commit=(tx.commit or "")[:12])
            outcomes.append(BankOutcome(folder.name, "seeded", commit=tx.commit))
    return outcomes


def _mind(layout: Layout, mind: str, prompt: str, timeout: float) -> MindResult:
    return run_mind(prompt, mind=mind, model=config.model(config.MIND_UPKEEP), cwd=layout.dream_dir,
                    timeout=timeout, persist=False)


def _spent(layout: Layout, cap: float | None) -> bool:
    return budget.exhausted(layout, cap, journal.now_utc().strftime("%Y-%m-%d"))[0]


def tend(layout: Layout, folder: Path, *, now: datetime, timeout: float, cap: float | None) -> BankOutcome:
    """Plan, validate and apply the upkeep of one due bank; never raises for the bank's sake."""
    bank = folder.name
    if _spent(layout, cap):
        journal.write(layout, VERB, "deferred", bank=bank, reason="budget")
        return BankOutcome(bank, "deferred", reason="budget")
    listed = read_listing(folder)
    prompt, nonce = plan_prompt(folder, listed)
    result = _mind(layout, PLAN_MIND, prompt, timeout)
    cost = {f"{budget.COST_PREFIX}{PLAN_MIND}": budget.cost_fact(result.cost_usd)}
    if not result.answered:
        journal.write(layout, VERB, "abstained", bank=bank, mind=PLAN_MIND, reason=result.reason, **cost)
        return BankOutcome(bank, "abstained", reason=result.reason)
    try:
        plan = parse_plan(result.text or "", nonce=nonce, bank=bank, listed=listed)
    except ReplyRejected as rejected:
        journal.write(layout, VERB, "rejected", bank=bank, mind=PLAN_MIND, reason=rejected.reason, **cost)
        return BankOutcome(bank, "rejected", reason=rejected.reason)
    journal.write(layout, VERB, "planned", bank=bank, operations=len(plan),
                  ops=",".join(op.op for op in plan) or None, **cost)
    outcome = BankOutcome(bank, "upkept", planned=len(plan))
    bodies, facts = {}, {}
    for number, op in enumerate(plan, 1):
        if op.op == "merge" and all(file in listed for file in op.files):
            facts[number] = {}
            body = merge_body(layout, folder, op, listed, timeout=timeout, cap=cap, facts=facts[number])
            if body is None:
                outcome.skipped += list(op.files)
            else:
                bodies[number] = body
    event = trail.new_event("upkeep.apply", f"upkeep of {bank}: {len(plan)} operation(s) planned",
                            model=result.model, cost_usd=result.cost_usd,
                            data={"bank": bank, "ops": [op.op for op in plan]})
    try:
        if config.upkeep_review(layout):
            return propose_plan(layout, folder, plan, listed, bodies, now=now)
        apply_plan(layout, folder, plan, listed, bodies, outcome, now=now, event=event, merge_facts=facts)
    except (SandmanError, OSError) as error:
        message = str(error) if isinstance(error, SandmanError) else f"{error.strerror or error} ({error.filename})"
        journal.write(layout, VERB, "failed", bank=bank, step="upkeep", error=message)
        return BankOutcome(bank, "failed", reason=message, planned=len(plan))
    journal.write(layout, VERB, "upkept", bank=bank, planned=len(plan), applied=outcome.applied,
                  skipped=",".join(outcome.skipped) or None,
                  conflicts=outcome.conflicted_ops, files=",".join(outcome.conflicts) or None,
                  commit=(outcome.commit or "")[:12])
    return outcome


# --- the review gate: a proposal set instead of an applied plan ---------------


def propose_plan(layout: Layout, folder: Path, plan: list[Operation], listed: dict[str, Listed],
                 bodies: dict[int, str], *, now: datetime) -> BankOutcome:
    """Write a validated plan as a proposal set (``upkeep.review`` on) and advance ``_reflect.json``
    in the same commit, so the bank is not due again before it grows; apply is the owner's
    (``sandman curate apply``). Raises LockBusy, RepositoryError, OSError."""
    from sandman.curators.propose import write_set

    bank, proposals = folder.name, []
    for number, op in enumerate(plan, 1):
        if any(file not in listed for file in op.files):
            continue  # the planner named a file the listing does not hold: apply would skip it too
        evidence = [f"{file}: {one_line(listed[file].memory.name)} — {one_line(listed[file].memory.description)}"
                    for file in op.files]
        common = {"bank": bank, "targets": list(op.files), "evidence": evidence, "confidence": "high",
                  "reasoning": f"upkeep planned a {op.op} of this bank"}
        if op.op == "prune":
            proposals.append({**common, "action": "archive"})
        elif op.op == "retitle":
            proposals.append({**common, "action": "modify", "name": op.name, "description": op.description})
        elif number in bodies:
            proposals.append({**common, "action": "merge", "type": op.type, "name": op.name,
                              "description": op.description, "body": bodies[number]})
    fingerprints = {f"{bank}/{file}": item.fingerprint for file, item in listed.items()}
    baseline = {folder / BANK_REFLECT: baseline_text(now, len(memory_files(folder)), 0)}
    set_id, commit = write_set(layout, "upkeep", [bank], proposals, fingerprints,
                               model=config.model(config.MIND_UPKEEP), also=baseline)
    journal.write(layout, VERB, "proposed", bank=bank, set=set_id, proposals=len(proposals),
                  commit=(commit or "")[:12])
    return BankOutcome(bank, "proposed", reason=f"set {set_id}", planned=len(plan), commit=commit)


# --- merges: the second call ----------------------------------------------------


def merge_body(layout: Layout, folder: Path, op: Operation, listed: dict[str, Listed], *,
               timeout: float, cap: float | None, facts: dict | None = None) -> str | None:
    """Ask the merge mind for one merge's body; None (journaled) when it abstains or the budget is spent.

    ``facts``, when given, receives the mind's ``model`` and ``cost_usd`` (for the merge's trail event).
    """
    files = ",".join(op.files)
    if _spent(layout, cap):
        journal.write(layout, VERB, "deferred", bank=folder.name, files=files, reason="budget")
        return None
    prompt, nonce = merge_prompt(folder, op, listed)
    result = _mind(layout, MERGE_MIND, prompt, timeout)
    cost = {f"{budget.COST_PREFIX}{MERGE_MIND}": budget.cost_fact(result.cost_usd)}
    if facts is not None:
        facts.update(model=result.model, cost_usd=result.cost_usd)
    reason, body = result.reason, None
    if result.answered:
        try:
            body = parse_merge(result.text or "", nonce=nonce, op=op)
        except ReplyRejected as rejected:
            reason = rejected.reason
    if body is None:
        journal.write(layout, VERB, "abstained", bank=folder.name, mind=MERGE_MIND, files=files, reason=reason,
                      **cost)
    else:
        journal.write(layout, VERB, "drafted", bank=folder.name, mind=MERGE_MIND, files=files, **cost)
    return body


# --- applying -------------------------------------------------------------------


def _created(item: Listed) -> tuple[datetime, str]:
    return parse_time(item.memory.created) or _LATEST, item.file


def _union(lists) -> list[str]:
    seen: dict[str, None] = {}
    for values in lists:
        seen.update(dict.fromkeys(values))
    return list(seen)


def apply_plan(layout: Layout, folder: Path, plan: list[Operation], listed: dict[str, Listed],
               bodies: dict[int, str], outcome: BankOutcome, *, now: datetime, event=None,
               merge_facts: dict[int, dict] | None = None) -> None:
    """Apply a validated plan in one commit, each operation re-checked first; fill ``outcome``.

    ``bodies`` maps a merge's 1-based place in the plan to its drafted body (a
    merge without one is skipped). ``_reflect.json`` is written in the same
    commit. ``event`` (the plan's ``upkeep.apply``, machine.trail) is appended
    in that commit, and each applied merge as its child ``upkeep.merge``
    (model and cost from ``merge_facts``); the commit carries ``Event:`` of
    each. Raises LockBusy, RepositoryError, SandmanError, OSError: then
    nothing is committed, and nothing is journaled as applied.
    """
    bank = folder.name
    label = one_line(bank_directory_of(folder) or "the user-wide bank")
    lines: list[tuple[str, dict]] = []
    with bank_transaction(layout, verb=VERB, subject=f"upkeep of {label}") as tx:
        if event is not None:
            trail.write(tx, event)
        for number, op in enumerate(plan, 1):
            if op.op == "merge" and number not in bodies and all(file in listed for file in op.files):
                continue  # its merge mind abstained: the members stay as they are
            bad = []
            for file in op.files:
                try:
                    # Re-checked under the commit lock, right before the op: the plan was drawn
                    # against the listing, and only that bank may receive it.
                    tx.check(folder / file, listed[file].fingerprint if file in listed else _NEVER)
                except ConflictError:
                    bad.append(file)
            if bad:
                outcome.conflicts += bad
                outcome.conflicted_ops += 1
                lines.append(("conflict", {"op": op.op, "files": ",".join(bad)}))
                continue
            into = _apply(tx, folder, op, listed, bodies.get(number))
            outcome.applied += 1
            if event is not None and op.op == "merge":
                facts = (merge_facts or {}).get(number, {})
                trail.write(tx, trail.new_event(
                    "upkeep.merge", f"merge {', '.join(op.files)} into {into.name}", parent=event.id,
                    model=facts.get("model"), cost_usd=facts.get("cost_usd"),
                    data={"bank": bank, "files": list(op.files), "into": into.name}))
            lines.append(("applied", {"op": op.op, "files": ",".join(op.files),
                                      "into": into.relative_to(folder).as_posix()}))
        tx.write_file(folder / BANK_REFLECT, baseline_text(now, len(memory_files(folder)), outcome.applied))
    outcome.commit = tx.commit
    for decision, facts in lines:
        journal.write(layout, VERB, decision, bank=bank, **facts)


def _apply(tx, folder: Path, op: Operation, listed: dict[str, Listed], body: str | None) -> Path:
    """Run one checked operation inside ``tx``; return where its result went."""
    bank = folder.name
    if op.op == "prune":
        # The failure-to-forget ledger: a dream must not bring a pruned memory back.
        retired.append(tx, tx.layout, [retired.entry(bank, op.files[0], listed[op.files[0]].memory, "upkeep")])
        return tx.archive(bank, op.files[0])
    if op.op == "retitle":
        memory = parse_memory(listed[op.files[0]].text)
        memory.name, memory.description = op.name or "", op.description or ""
        return tx.write_memory(bank, memory, replaces=op.files[0])
    members = sorted((listed[file] for file in op.files), key=_created)
    memory = Memory(
        name=op.name or "", description=op.description or "", type=op.type or "", body=body or "",
        created=members[0].memory.created, source=_union(item.memory.source for item in members),
        witnesses=_union(item.memory.witnesses for item in members),
    )
    # The claim keeps the day it was first made: the earliest member is the one replaced.
    path = tx.write_memory(bank, memory, replaces=members[0].file)
    retired.append(tx, tx.layout, [retired.entry(bank, item.file, item.memory, "upkeep") for item in members[1:]])
    for item in members[1:]:
        tx.archive(bank, item.file)
    return path
