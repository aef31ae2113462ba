"""Reconcile: revert every commit of a revoked event, its descendants, or a revoked shift
(docs/BANK-FORMAT.md § reconcile; docs/reconcile.md).

``reconcile(layout, target, dry_run=False) -> Result``. The target must be
revoked (machine.trail). Its targets are the event and every descendant (a
shift: each of its events and theirs), revocations and reconciles aside. In
every known repository (machine.repositories) the commits that the trunk
reaches and whose ``Event:`` names a target (or whose ``Shift:`` names the
shift) are reverted, newest first:

- in another repository, onto the branch ``reconcile/<target>``, cut from the
  trunk (or continued, when a run already made it), built in memory by libgit2:
  no checkout, no commit hook, the trunk never moved. A conflict leaves that
  repository's branch as it was and is reported; the others proceed.
- in the memory root, onto its own trunk, each revert through a bank
  transaction (banks.commit): MEMORY.md of every touched bank is regenerated,
  trail lines are never reverted (the trail is append-only) and nothing in
  ``_archive/`` is deleted. The live memories a revert removes are listed as
  retired, and added to the retired ledger (curators.retired, ``by:
  "reconcile <target>"``) in the revert's own commit, so a later dream does
  not learn them again; those it brings back are listed as restored.

Each revert carries ``Reconciles: <target>``, ``Reverts: <commit>`` and
``Event: <the reconcile event>``; a commit some ``Reverts:`` already names is
not reverted again, so a second run is a no-op. A target commit that is a
merge refuses its repository; commits only other branches reach are reported
as off trunk; a trunk that cannot be named, a dirty memory root, a checked-out
``reconcile/`` branch fail their repository. When anything was reverted, one
``reconcile`` event is appended with what happened per repository.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from sandman import journal
from sandman.banks.memory import read_memory
from sandman.curators import retired
from sandman.errors import InputError, RepositoryError, SandmanError
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout
from sandman.machine import repositories
from sandman.machine import trail as trails
from sandman.machine.trail import Event
from sandman.store import repos as git

VERB = "reconcile"
TRAIL_PREFIX = "trail/"
# The record of what happened is never reverted: the trail (append-only) and the shifts' own
# folders (brief, meta, handoff, report: docs/BANK-FORMAT.md § shifts).
RECORD_PREFIXES = (TRAIL_PREFIX, "shifts/")


@dataclass
class RepoOutcome:
    """What reconcile did (or would do) in one repository.

    ``status``: ``nothing`` (no commit to revert), ``reverted``, ``would-revert``
    (dry run), ``done`` (every commit already reverted), ``failed``.
    """

    path: str
    memory_root: bool = False
    status: str = "nothing"
    trunk: str | None = None
    branch: str | None = None
    commits: list[dict] = field(default_factory=list)  # {"commit", "subject", "revert"}
    already: list[str] = field(default_factory=list)
    off_trunk: list[dict] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class Result:
    target: str
    dry_run: bool
    targets: list[str]
    repos: list[RepoOutcome]
    event: Event | None = None

    @property
    def failed(self) -> bool:
        return any(repo.status == "failed" for repo in self.repos)

    def to_json(self) -> dict:
        return {"target": self.target, "dry_run": self.dry_run, "targets": self.targets,
                "event": self.event.id if self.event else None, "failed": self.failed,
                "repos": [repo.to_json() for repo in self.repos]}


def check_revoked(trail: trails.Trail, target: str) -> list[Event]:
    """Return the target events of a revoked ``target``; raise InputError (malformed, unknown,
    not revoked, a shift with no events)."""
    trails.check_target(target)
    if trails.is_shift_id(target):
        if not trail.of_shift(target):
            raise InputError(f"shift {target} has no events on the trail; nothing to reconcile")
        if trail.revocation(target) is None:
            raise InputError(f"shift {target} is not revoked; revoke it first: "
                             f"sandman trail revoke {target} --why \"...\"")
    else:
        event = trail.get(target)
        if event is None:
            raise InputError(f"event {target} is not on the trail; `sandman trail log` lists the events")
        if trail.revoked_by(event) is None:
            raise InputError(f"event {target} is not revoked; revoke it first: "
                             f"sandman trail revoke {target} --why \"...\"")
    return trail.targets(target)


def reconcile(layout: Layout, target: str, *, dry_run: bool = False) -> Result:
    """Revert the commits of a revoked event or shift in every known repository; return what happened.

    Raises InputError (the target: malformed, unknown, not revoked, an empty
    shift) and ConfigError (bad ``[machine] roots``) before anything is done; a
    repository's own failure is its outcome (``Result.failed``).
    """
    trail = trails.read(layout)
    events = check_revoked(trail, target)
    ids = {event.id for event in events}
    shift = target if trails.is_shift_id(target) else None
    event = trails.new_event(trails.RECONCILE, f"reconcile {target}", data={"target": target})
    needed = {"Reconciles": target, "Event": event.id}
    result = Result(target, dry_run, [e.id for e in events], [])
    for place in repositories.places(layout, trail):
        outcome = RepoOutcome(str(place.path), place.memory_root)
        result.repos.append(outcome)
        if place.error:
            outcome.status, outcome.error = "failed", place.error
            continue
        try:
            if place.memory_root:
                _memory_root(layout, outcome, ids, shift, target, needed, dry_run)
            else:
                _other(place.path, outcome, ids, shift, target, needed, dry_run)
        except (SandmanError, OSError) as error:
            outcome.status = "failed"
            outcome.error = str(error) if isinstance(error, SandmanError) else f"{error.strerror or error}"
        journal.write(layout, VERB, outcome.status, target=target, repo=outcome.path,
                      reverted=sum(1 for c in outcome.commits if c.get("revert")), error=outcome.error)
    if not dry_run and any(repo.status == "reverted" for repo in result.repos):
        data = {"target": target, "targets": result.targets,
                "repos": [{"path": r.path, "status": r.status, "branch": r.branch, "error": r.error,
                           "reverts": [c["revert"] for c in r.commits if c.get("revert")],
                           "retired": r.retired} for r in result.repos if r.status != "nothing"]}
        reverted = sum(1 for r in result.repos for c in r.commits if c.get("revert"))
        event = dataclasses.replace(event, summary=f"reconcile {target}: {reverted} commit(s) reverted", data=data)
        trails.append_event(layout, event)
        result.event = event
    return result


def _find(repo, tip, ids, shift, *, trunk: str) -> tuple[list[git.Found], list[git.Found], set[str]]:
    """(commits on trunk carrying a target, those only other branches reach, commits already reverted)."""
    # One walk of the trunk finds both the target commits and the reverts already made.
    on_trunk, reverted = [], set()
    needles = ("Event:", "Reverts:") + (("Shift:",) if shift else ())
    for found in git.walk(repo, [tip], needles=needles):
        reverted.update(git.values(list(found.trailers), "Reverts"))
        if repositories.carries(found, ids, shift):
            on_trunk.append(found)
    others = [t for name in git.local_branches(repo)
              if name != trunk and not name.startswith("reconcile/") and (t := git.branch_tip(repo, name))]
    off = repositories.carriers(repo, others, ids, shift, hide=[tip]) if others else []
    return on_trunk, off, reverted


def _refuse_merges(found: list[git.Found]) -> None:
    merges = [c for c in found if c.parents > 1]
    if merges:
        raise RepositoryError(f"{merges[0].id[:12]} ({merges[0].subject}) is a merge commit carrying a target; "
                              "sandman never reverts a merge: revert it by hand (git revert -m 1) or leave it")


def _other(path: Path, outcome: RepoOutcome, ids, shift, target, needed, dry_run) -> None:
    repo = git.open_at(path)
    outcome.trunk, tip = git.trunk(repo, str(path))
    outcome.branch = f"reconcile/{target}"
    on_trunk, off, reverted = _find(repo, tip, ids, shift, trunk=outcome.trunk)
    existing = git.branch_tip(repo, outcome.branch)
    if existing is not None:
        for found in git.walk(repo, [existing], [tip], needles=("Reverts:",)):
            reverted.update(git.values(list(found.trailers), "Reverts"))
    outcome.off_trunk = [{"commit": c.id, "subject": c.subject} for c in off]
    _refuse_merges(on_trunk)
    todo = [c for c in on_trunk if c.id not in reverted]
    outcome.already = [c.id for c in on_trunk if c.id in reverted]
    outcome.commits = [{"commit": c.id, "subject": c.subject, "revert": None} for c in todo]
    if not todo:
        outcome.status = "done" if outcome.already else "nothing"
        outcome.branch = outcome.branch if existing is not None else None
        return
    if dry_run:
        outcome.status = "would-revert"
        return
    base = existing if existing is not None else tip
    for entry in outcome.commits:
        base = git.revert_onto(repo, entry["commit"], base, {**needed, "Reverts": entry["commit"]})
        entry["revert"] = str(base)
    git.set_branch(repo, outcome.branch, base)
    outcome.status = "reverted"


def _memory_root(layout: Layout, outcome: RepoOutcome, ids, shift, target, needed, dry_run) -> None:
    from sandman.banks.commit import bank_transaction
    from sandman.store import repo as store

    repo = store.open_repo(layout)
    if repo.head_is_unborn or repo.head_is_detached:
        raise RepositoryError(f"{layout.root}: HEAD is {'unborn' if repo.head_is_unborn else 'detached'}; "
                              "check out its branch (git switch main)")
    outcome.trunk, tip = repo.head.shorthand, repo.head.target
    on_trunk, off, reverted = _find(repo, tip, ids, shift, trunk=outcome.trunk)
    # A commit that only wrote the record (trail lines, a shift's folder) is never reverted.
    on_trunk = [c for c in on_trunk if not all(p.startswith(RECORD_PREFIXES) for p in git.changed_paths(repo, c.id))]
    off = [c for c in off if not all(p.startswith(RECORD_PREFIXES) for p in git.changed_paths(repo, c.id))]
    outcome.off_trunk = [{"commit": c.id, "subject": c.subject} for c in off]
    _refuse_merges(on_trunk)
    todo = [c for c in on_trunk if c.id not in reverted]
    outcome.already = [c.id for c in on_trunk if c.id in reverted]
    outcome.commits = [{"commit": c.id, "subject": c.subject, "revert": None} for c in todo]
    if not todo:
        outcome.status = "done" if outcome.already else "nothing"
        return
    if dry_run:
        outcome.status = "would-revert"
        for entry in outcome.commits:
            entries = git.reverted_entries(repo, entry["commit"], tip, ignore=RECORD_PREFIXES)
            _sort(layout, entries, outcome)
        return
    dirty = store.committable_paths(repo)
    if dirty:
        raise RepositoryError(f"{layout.root} has changes not committed ({dirty[0]}); nothing was reverted there: "
                              "commit or remove them (any sandman write commits them as `recover`) and run again")
    for entry in outcome.commits:
        head = store.open_repo(layout).head.target
        entries = git.reverted_entries(repo, entry["commit"], head, ignore=RECORD_PREFIXES)
        subject = f'revert "{entry["subject"]}"'
        _sort(layout, entries, outcome)
        ledger: list[dict] = []
        with bank_transaction(layout, verb=VERB, subject=subject, trailers={**needed, "Reverts": entry["commit"]}) as tx:
            for relpath, value in entries.items():
                parts = relpath.split("/")
                if parts[0] == "memories" and len(parts) >= 3:
                    tx.bank(parts[1])
                if parts[-1] == BANK_INDEX or (value is None and BANK_ARCHIVE in parts[:-1]):
                    continue  # indexes are regenerated; _archive/ is never deleted from
                full = layout.root / relpath
                if value is None:
                    ledger += _retiring(full, parts, target)
                    tx.remove_file(full)
                else:
                    tx.write_file(full, value[0])
            # After the reverted files (the ledger itself may be one): what the revert removed stays
            # retired, so a later dream does not bring it back (curators.retired, the tripwire).
            retired.append(tx, layout, ledger)
        entry["revert"] = tx.commit
    outcome.status = "reverted"


def _retiring(full: Path, parts: list[str], target: str) -> list[dict]:
    """The retired-ledger line of a live memory a revert removes (none for another file or an
    unreadable memory: the revert still removes it)."""
    if parts[0] != "memories" or len(parts) != 3 or parts[1].startswith(".") or not parts[2].endswith(".md"):
        return []
    try:
        memory = read_memory(full)
    except (SandmanError, OSError):
        return []
    return [retired.entry(parts[1], parts[2], memory, f"reconcile {target}")]


def _sort(layout: Layout, entries: dict, outcome: RepoOutcome) -> None:
    """Record the live memories a revert removes (retired) and brings back (restored)."""
    for relpath, value in entries.items():
        parts = relpath.split("/")
        if parts[0] != "memories" or len(parts) != 3 or parts[2] == BANK_INDEX or not parts[2].endswith(".md"):
            continue
        if value is None:
            outcome.retired.append(relpath)
        elif not (layout.root / relpath).exists() or relpath in outcome.retired:
            outcome.restored.append(relpath)
