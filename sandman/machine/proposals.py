"""Proposals: work larger than a shift, filed by a shift session, decided by the owner
(docs/BANK-FORMAT.md § proposals; the design's "turns work larger than itself into a proposal").

Nothing is stored but trail events; a proposal's state is derived from the trail:

- ``proposal.open`` (filed by ``propose`` inside an open shift): ``shift`` = that
  shift, ``repo`` = its repository (or ``--repo``), ``summary`` = the title,
  ``data`` = ``{"title", "body"}``. Its event id is the proposal's id.
- ``proposal.approve`` / ``proposal.decline`` (the owner, ``approve``/``decline``):
  ``parent`` = the proposal's id, ``data`` = ``{"proposal", "why"}``. The first
  decision not revoked is the proposal's; a second one is refused.
- ``shift.start`` whose ``data.proposals`` lists the id: the brief of that shift
  carried the approved proposal, which is then ``taken`` (``taken_by`` that shift).

Revocation (``sandman trail revoke``) undoes each step: a revoked ``proposal.open``
(or the shift that filed it) is not listed; a revoked decision leaves the proposal
open again; a revoked ``shift.start`` (or its shift) returns a taken proposal to
approved, so the next night's pick takes it first again.

The API: ``Proposal``, ``proposals(layout)``, ``from_trail(trail)``, ``propose``,
``approve``, ``decline``, ``resolve``, ``waiting(found)``, ``of_shift(trail, shift)``,
``brief_text``, ``report_lines``, ``line``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from sandman import config, journal
from sandman.errors import InputError, SecretRefused
from sandman.layout import Layout
from sandman.marks import fence_ticks, holds_controls, refuse_controls
from sandman.machine import refs, shiftstate
from sandman.machine import trail as trails

OPEN, APPROVE, DECLINE = "proposal.open", "proposal.approve", "proposal.decline"
STATES = ("open", "approved", "declined", "taken")
TITLE_MAX_CHARS = 200
BODY_MAX_CHARS = 4_000
WHY_MAX_CHARS = 300
BRIEF_BODY_MAX_CHARS = 2_000  # what of each approved proposal's body the brief carries
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators (a title is one line).


@dataclass
class Proposal:
    """One proposal as the trail makes it (docs/BANK-FORMAT.md § proposals). Times are
    ``YYYY-MM-DDTHH:MM:SSZ``; ``decided_at``, ``why`` and ``taken_by`` are None until they happen."""

    id: str
    shift: str | None
    repo: str | None
    title: str
    body: str
    state: str
    opened_at: str
    decided_at: str | None = None
    why: str | None = None
    taken_by: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


# --- reading --------------------------------------------------------------------------------


def from_trail(trail: trails.Trail) -> list[Proposal]:
    """Every proposal on an already read ``trail``, oldest first; revoked ones left out."""
    found: dict[str, Proposal] = {}
    for event in trail.events:
        if event.kind == OPEN and event.id not in found and trail.revoked_by(event) is None:
            data = event.data
            title = data.get("title") if isinstance(data.get("title"), str) else event.summary
            body = data.get("body") if isinstance(data.get("body"), str) else ""
            found[event.id] = Proposal(event.id, event.shift, event.repo, title, body, "open", event.at)
    for event in trail.events:
        if event.kind in (APPROVE, DECLINE) and event.parent in found:
            item = found[event.parent]
            if item.state == "open" and trail.revoked_by(event) is None:
                item.state = "approved" if event.kind == APPROVE else "declined"
                item.decided_at = event.at
                why = event.data.get("why")
                item.why = why if isinstance(why, str) and why else None
    for event in trail.events:
        if event.kind == "shift.start" and isinstance(event.data.get("proposals"), list):
            for ident in event.data["proposals"]:
                item = found.get(ident) if isinstance(ident, str) else None
                if item is not None and item.state == "approved" and trail.revoked_by(event) is None:
                    item.state, item.taken_by = "taken", event.shift
    return list(found.values())


def proposals(layout: Layout) -> list[Proposal]:
    """Every proposal on the trail, oldest first (a revoked one is not listed)."""
    return from_trail(trails.read(layout))


def waiting(found: list[Proposal]) -> dict[str, list[Proposal]]:
    """``{repository path: its approved proposals not yet taken}``, each list oldest approval first."""
    by_repo: dict[str, list[Proposal]] = {}
    for item in sorted((p for p in found if p.state == "approved" and p.repo), key=lambda p: p.decided_at or ""):
        by_repo.setdefault(os.path.normpath(item.repo), []).append(item)
    return by_repo


def of_shift(trail: trails.Trail, shift_id: str) -> list[Proposal]:
    """The proposals shift ``shift_id`` filed, oldest first."""
    return [item for item in from_trail(trail) if item.shift == shift_id]


def resolve(trail: trails.Trail, ref: str) -> trails.Event:
    """The ``proposal.open`` event ``ref`` names: a full event id or a suffix of at least 4
    characters matching one proposal (machine.refs, as breath ids). Raises InputError: a malformed
    ref, an event that is not a proposal, an unknown or ambiguous ref, a revoked proposal."""
    listing = "`sandman report proposals`"
    proposed = {event.id: event for event in trail.events if event.kind == OPEN}
    try:
        ident = refs.resolve(ref, proposed, what="proposal", listing=listing)
    except refs.NoMatch:
        ref = ref.strip()
        other = next((event for event in trail.events if event.id.endswith(ref)), None)
        if other is not None:
            raise InputError(f"{other.id} is a {other.kind} event, not a proposal ({listing} lists them)") from None
        raise InputError(f"no proposal {ref} on the trail ({listing} lists them)") from None
    event = proposed[ident]
    if trail.revoked_by(event) is not None:
        raise InputError(f"proposal {event.id} was revoked; there is nothing to decide")
    return event


# --- writing --------------------------------------------------------------------------------


def _check_text(value: str | None, what: str, limit: int, *, lines: bool) -> str:
    text = (value or "").replace("\r\n", "\n").strip()
    refuse_controls(text, f"the proposal's {what}", lines=lines)
    if len(text) > limit:
        raise InputError(f"the proposal's {what} is {len(text):,} characters; the cap is {limit:,}")
    return text


def _refuse_secrets(*texts: str) -> None:
    from sandman.banks.secrets import refuse_secrets

    try:
        refuse_secrets(*texts)
    except SecretRefused as error:
        raise InputError(f"proposal refused: it contains a secret ({', '.join(error.kinds)}); "
                         "describe the work without the credential") from None


def open_shift(layout: Layout) -> dict:
    """The ``meta.json`` of the shift a proposal is filed in: ``$SANDMAN_SHIFT``, else the open one in
    ``shifts/.current.json``. Raises InputError: no shift, an unknown one, a closed one."""
    ident = config.current_shift()
    if ident is None:
        current = shiftstate.read_current(layout) or {}
        ident = current.get("shift") if current.get("state") == "open" else None
    if ident is None:
        raise InputError("no shift is open: a proposal is filed by a shift session, inside its shift "
                         "($SANDMAN_SHIFT or `sandman shift status`)")
    if not trails.is_shift_id(ident):
        raise InputError(f"${config.SHIFT_ENV} {ident!r} is not a shift id (s-<yyyymmddTHHMM[SS]>Z)")
    meta = shiftstate.read_meta(layout, ident)
    if meta is None:
        raise InputError(f"shift {ident} has no readable meta.json; it never opened")
    if meta.get("outcome"):
        raise InputError(f"shift {ident} is closed ({meta['outcome']}); file proposals before the handoff")
    return meta


def _check_repo(layout: Layout, repo: str, meta: dict) -> str:
    path = Path(repo)
    if not path.is_absolute() or holds_controls(repo, lines=False):
        raise InputError(f"--repo {repo!r} is not an absolute path")
    normal = os.path.normpath(path)
    if normal == os.path.normpath(meta.get("repo") or ""):
        return normal
    roots = [Path(os.path.normpath(root)) for root in config.machine(layout).roots]
    if not any(Path(normal).is_relative_to(root) for root in roots) or not Path(normal).is_dir():
        raise InputError(f"--repo {repo} is not a folder under machine.roots; a proposal bears on a "
                         "repository a shift can pick")
    return normal


def propose(layout: Layout, title: str, body: str = "", *, repo: str | None = None,
            now: datetime | None = None) -> Proposal:
    """File a proposal in the open shift: append ``proposal.open`` in its own commit; return it.

    ``title`` is one line of at most 200 characters; ``body`` at most 4,000
    characters (newlines and tabs kept); ``repo`` (an absolute folder under
    ``machine.roots``) defaults to the shift's repository. Raises InputError: no
    open shift, an empty or over-long title or body, a NUL or control character,
    a secret (the secrets ban of docs/secrets.md), a bad ``repo``. Nothing is
    written then.
    """
    meta = open_shift(layout)
    title = _check_text(title, "title", TITLE_MAX_CHARS, lines=False)
    if not title:
        raise InputError("a proposal needs --title: one line naming the work")
    body = _check_text(body, "body", BODY_MAX_CHARS, lines=True)
    target = _check_repo(layout, repo, meta) if repo is not None else meta["repo"]
    _refuse_secrets(title, body)
    event = trails.new_event(OPEN, title, shift=meta["id"], repo=target, data={"title": title, "body": body},
                             now=now)
    trails.append_event(layout, event, verb="report")
    journal.write(layout, "report", "proposed", id=event.id, shift=meta["id"])
    return Proposal(event.id, event.shift, event.repo, title, body, "open", event.at)


def _decide(layout: Layout, kind: str, ref: str, why: str | None, now: datetime | None) -> Proposal:
    from sandman.banks.commit import bank_transaction

    from sandman.machine import owner

    if config.current_shift() is not None:
        raise InputError("a shift session does not decide proposals: the owner approves or declines them")
    owner.refuse_in_shift(layout, "approving or declining a proposal")
    why = _check_text(why, "--why", WHY_MAX_CHARS, lines=False)
    if why:
        _refuse_secrets(why)
    target = resolve(trails.read(layout), ref)
    verb = "approve" if kind == APPROVE else "decline"
    event = trails.new_event(kind, f"{verb} {target.summary}", parent=target.id, repo=target.repo,
                             data={"proposal": target.id, "why": why}, now=now)

    def still_open() -> Proposal:
        item = next((p for p in from_trail(trails.read(layout)) if p.id == target.id), None)
        if item is None:
            raise InputError(f"proposal {target.id} was revoked; there is nothing to decide")
        if item.state != "open":
            taken = f", taken by {item.taken_by}" if item.taken_by else ""
            raise InputError(f"proposal {target.id} is already {item.state} ({item.decided_at}{taken}); "
                             "a decision stands unless `sandman trail revoke` revokes it")
        return item

    still_open()
    with bank_transaction(layout, verb="report", subject=f"{kind}: {event.summary}"[:120],
                          trailers=trails.trailers(event)) as tx:
        item = still_open()  # again under .commit.lock: two deciders never both land
        trails.write(tx, event)
    journal.write(layout, "report", verb + "d", id=target.id, event=event.id)
    item.state, item.decided_at, item.why = "approved" if kind == APPROVE else "declined", event.at, why or None
    return item


def approve(layout: Layout, ref: str, why: str | None = None, *, now: datetime | None = None) -> Proposal:
    """Approve the open proposal ``ref`` (an id or unambiguous suffix): append ``proposal.approve``
    (parent = the proposal) in its own commit; return the proposal, now approved. The next shift
    picks its repository first and its brief carries it. Raises InputError (``resolve``'s, a
    proposal already decided, a ``why`` over 300 characters or with a secret, inside a shift)."""
    return _decide(layout, APPROVE, ref, why, now)


def decline(layout: Layout, ref: str, why: str | None = None, *, now: datetime | None = None) -> Proposal:
    """Decline the open proposal ``ref``: append ``proposal.decline``; no shift takes it. Raises as
    ``approve``."""
    return _decide(layout, DECLINE, ref, why, now)


# --- text for people and for the brief --------------------------------------------------------


def line(item: Proposal) -> str:
    """One listing line: ``<state> <id> <repository name> — <title>`` (and who took it)."""
    name = Path(item.repo).name if item.repo else "-"
    tail = f" (taken by {item.taken_by})" if item.taken_by else ""
    return f"{item.state:<8} {item.id} {name} — {item.title}{tail}"


def brief_text(found: list[Proposal]) -> str:
    """The brief's ``proposals`` slot: each approved proposal, a header line then its body (at most
    ``BRIEF_BODY_MAX_CHARS`` characters)."""
    parts = []
    for item in found:
        body = item.body.strip()
        if len(body) > BRIEF_BODY_MAX_CHARS:
            body = body[:BRIEF_BODY_MAX_CHARS] + " […]"
        why = f"; the owner said: {item.why}" if item.why else ""
        parts.append(f"- {item.id}: {item.title} (filed by {item.shift or '?'} at {item.opened_at}; "
                     f"approved at {item.decided_at}{why})" + (f"\n  {body}" if body else ""))
    return "\n".join(parts)


def report_lines(filed: list[Proposal]) -> list[str]:
    """The lines of report.md's ``## Proposals`` section for the proposals a shift filed."""
    if not filed:
        return ["(none: this shift filed no proposal)"]
    lines: list[str] = []
    for item in filed:
        lines += [f"### {item.title}", "",
                  f"- id: `{item.id}` ({item.state})",
                  f"- approve: `sandman report approve {item.id}`",
                  f"- decline: `sandman report decline {item.id} --why \"…\"`", ""]
        if item.body.strip():
            ticks = fence_ticks(item.body.strip())  # the body as written; no backtick run inside can close it
            lines += [f"{ticks}text", item.body.strip(), ticks, ""]
    return lines[:-1] if lines and lines[-1] == "" else lines
