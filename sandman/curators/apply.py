"""``curate apply``: commit a proposal set's accepted proposals, one commit for the set.

Accepted are the proposals of ``high`` confidence, plus ``--accept``, minus
``--reject``. In one bank transaction (``curate: apply <set>``, ``Verb:
curate``, ``Set: <set>``) each accepted proposal's targets are checked against
the fingerprints the run read (a file changed since is a ``conflict``, that
proposal alone skipped), then applied: ``archive`` moves the memory to
``_archive/``; ``modify`` rewrites it (``replaces``); ``merge`` writes the
merged memory replacing the earliest member and archives the others;
``split`` writes the results, the first replacing the target; ``flag`` changes
nothing (lint's ``index`` flag regenerates the bank's MEMORY.md). Every
memory archived without a successor is added to the retired ledger
(curators.retired). The decisions go into ``proposals.json`` and
``REPORT.md`` in the same commit, so a set is applied once. The commit
carries the set's one trail event, ``curate.apply`` (its line, ``Event:`` and
``Kind:``; machine.trail), so a bad apply is ``sandman trail revoke <event>``
and ``sandman reconcile <event>`` away.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sandman import journal
from sandman.banks.commit import ConflictError, bank_transaction
from sandman.banks.memory import Memory, parse_memory
from sandman.curators import retired
from sandman.curators.proposals import read_set, report, set_json, set_paths
from sandman.errors import FormatError, InputError
from sandman.journal import iso, now_utc
from sandman.layout import BANK_INDEX, Layout
from sandman.machine import trail
from sandman.pointers import parse_time
from sandman.store.atomic import read_regular

VERB = "curate"


@dataclass
class Applied:
    """What one apply did: the proposal ids by decision and the commit."""

    set_id: str
    applied: list[str] = field(default_factory=list)
    noted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    commit: str | None = None
    event: str | None = None


def _ids(values: list[str] | None) -> list[str]:
    found = []
    for value in values or []:
        found += [part.strip() for part in value.split(",") if part.strip()]
    return found


def choose(data: dict, accept: list[str] | None, reject: list[str] | None) -> set[str]:
    """Return the ids accepted: high confidence, plus ``accept``, minus ``reject``.

    Raises InputError for an id the set does not hold, or one both accepted and rejected.
    """
    known = [p["id"] for p in data["proposals"]]
    accept_ids, reject_ids = _ids(accept), _ids(reject)
    for value in accept_ids + reject_ids:
        if value not in known:
            raise InputError(f"set {data['set']} has no proposal {value!r} (it has {', '.join(known) or 'none'})")
    both = sorted(set(accept_ids) & set(reject_ids))
    if both:
        raise InputError(f"proposal {both[0]} is both accepted and rejected; name it once")
    high = {p["id"] for p in data["proposals"] if p.get("confidence") == "high"}
    return (high | set(accept_ids)) - set(reject_ids)


def _read(folder, file: str) -> Memory:
    try:
        return parse_memory(read_regular(folder / file).decode("utf-8"))
    except (UnicodeDecodeError, FormatError) as error:
        raise FormatError(f"{folder.name}/{file} cannot be read as a memory ({error})") from None


def _created(memory: Memory):
    return parse_time(memory.created) or now_utc()


def _union(lists) -> list[str]:
    seen: dict[str, None] = {}
    for values in lists:
        seen.update(dict.fromkeys(values))
    return list(seen)


def _apply_one(tx, layout: Layout, proposal: dict, ledger: list[dict], set_id: str) -> list[str]:
    """Apply one checked proposal inside ``tx``; return the files it wrote or archived."""
    bank, action, targets = proposal["bank"], proposal["action"], proposal["targets"]
    folder = layout.bank(bank)
    by = f"curate {set_id}"
    if action == "flag":
        if proposal.get("check") == "index":
            tx.bank(bank)  # a touched bank's MEMORY.md is regenerated from its files
        return []
    if action == "archive":
        memory = _read(folder, targets[0])
        ledger.append(retired.entry(bank, targets[0], memory, by))
        return [tx.archive(bank, targets[0]).name]
    if action == "modify":
        memory = _read(folder, targets[0])
        for key in ("name", "description", "body"):
            if key in proposal:
                setattr(memory, key, proposal[key])
        return [tx.write_memory(bank, memory, replaces=targets[0]).name]
    if action == "merge":
        members = sorted(((file, _read(folder, file)) for file in targets), key=lambda fm: (_created(fm[1]), fm[0]))
        merged = Memory(name=proposal["name"], description=proposal["description"], type=proposal["type"],
                        body=proposal["body"], created=members[0][1].created,
                        source=_union(m.source for _, m in members), witnesses=_union(m.witnesses for _, m in members))
        written = [tx.write_memory(bank, merged, replaces=members[0][0]).name]
        for file, memory in members[1:]:
            ledger.append(retired.entry(bank, file, memory, by))
            written.append(tx.archive(bank, file).name)
        return written
    original = _read(folder, targets[0])  # split
    written = []
    for number, result in enumerate(proposal["results"]):
        memory = Memory(name=result["name"], description=result["description"], type=result["type"],
                        body=result["body"], created=original.created, source=list(original.source),
                        witnesses=list(original.witnesses))
        written.append(tx.write_memory(bank, memory, replaces=targets[0] if number == 0 else None).name)
    return written


def apply(layout: Layout, set_id: str, *, accept: list[str] | None = None,
          reject: list[str] | None = None) -> Applied:
    """Apply the accepted proposals of set ``set_id`` in one commit; return what happened.

    Raises InputError (a bad or unknown set, an unknown proposal id, a set
    already applied), FormatError (an unreadable set), LockBusy,
    RepositoryError; then no memory changed.
    """
    data = read_set(layout, set_id)
    if data.get("decisions"):
        raise InputError(f"set {set_id} was applied at {data.get('applied') or 'an unknown time'}; "
                         "a set is applied once (run the curator again for new proposals)")
    accepted = choose(data, accept, reject)
    fingerprints = data.get("fingerprints") or {}
    result = Applied(set_id)
    decisions: dict[str, dict] = {}
    ledger: list[dict] = []
    json_path, report_path = set_paths(layout, set_id)
    subject = f"apply {set_id}: {len(accepted)} of {len(data['proposals'])} accepted"
    event = trail.new_event("curate.apply", subject, model=data.get("model") or None,
                            data={"set": set_id, "curator": data.get("curator"), "banks": data.get("banks") or [],
                                  "accepted": sorted(accepted)})
    with bank_transaction(layout, verb=VERB, subject=subject, trailers={"Set": set_id}) as tx:
        for proposal in data["proposals"]:
            pid = proposal["id"]
            if pid not in accepted:
                decisions[pid] = {"decision": "rejected"}
                result.rejected.append(pid)
                continue
            folder = layout.bank(proposal["bank"])
            bad = []
            for file in proposal["targets"]:
                if file == BANK_INDEX or "/" in file:
                    continue  # lint's index and archive findings name no memory to check
                try:
                    tx.check(folder / file, fingerprints.get(f"{proposal['bank']}/{file}", "never read"))
                except ConflictError:
                    bad.append(file)
            if bad:
                decisions[pid] = {"decision": "conflict", "files": bad}
                result.conflicts.append(pid)
                continue
            written = _apply_one(tx, layout, proposal, ledger, set_id)
            if proposal["action"] == "flag":
                decisions[pid] = {"decision": "noted"}
                result.noted.append(pid)
            else:
                decisions[pid] = {"decision": "applied", "files": written}
                result.applied.append(pid)
        retired.append(tx, layout, ledger)
        data["decisions"], data["applied"] = decisions, iso(now_utc())
        tx.write_file(json_path, set_json(data))
        tx.write_file(report_path, report(data))
        trail.write(tx, event)  # the set's one event: `trail revoke` + `reconcile` undo this apply
    result.commit, result.event = tx.commit, event.id
    for pid, decision in decisions.items():
        journal.write(layout, VERB, f"proposal-{decision['decision']}", set=set_id, proposal=pid)
    journal.write(layout, VERB, "applied", set=set_id, applied=len(result.applied), noted=len(result.noted),
                  rejected=len(result.rejected), conflicts=len(result.conflicts), commit=(tx.commit or "")[:12],
                  event=event.id)
    return result
