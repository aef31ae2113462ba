"""shift pick: which repository a shift works (docs/BANK-FORMAT.md § shifts, "Rotation").

Candidates are the git repositories under ``[machine] roots`` (store.repos.discover),
never the memory root's repository, one containing the memory root (``holds_memory_root``)
nor one under ``[machine] exclude``. A candidate is picked
only when Claude Code trusts it: its own per-project flag
``projects[<path>].hasTrustDialogAccepted`` in its global config
(``~/.claude.json``; ``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set), on the
repository's folder or one of its parents, as Claude Code reads it. A repository
whose trunk does not resolve is never picked either (a shift branch is cut from
the trunk).

Order: a repository with an approved proposal no shift has taken yet comes first
(machine.proposals; the oldest approval first, its reason naming the proposal),
then least recently shifted (the newest ``shift.start`` naming it; rest day
shifts do not count), never-shifted before any; ties by path. Trust, the trunk
and ``exclude`` still decide what is pickable: an approved proposal never makes
an untrusted repository pickable. Breaths and a red check, the design's further
tie-breakers, are not read here.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sandman import config
from sandman.errors import ConfigError, InputError, RepositoryError
from sandman.layout import Layout
from sandman.machine import proposals as proposing
from sandman.machine.trail import Trail
from sandman.store import repos as git


@dataclass
class Candidate:
    """One repository under the roots and why it is (or is not) pickable."""

    path: str
    trusted: bool
    pickable: bool
    last_shifted: str | None = None  # the ``at`` of its newest shift.start, UTC
    trunk: str | None = None
    proposals: list[str] = field(default_factory=list)  # approved proposals waiting, oldest approval first
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def trusted_folders() -> dict[str, bool]:
    """Claude Code's per-project trust flags: ``{absolute folder: hasTrustDialogAccepted}``.

    A missing file is no trust at all. Raises ConfigError naming the file when it
    is not a JSON object.
    """
    path = config.claude_global_config_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ConfigError(f"{path} (Claude Code's config) is not readable JSON: {error}") from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {os.path.normpath(key): entry.get("hasTrustDialogAccepted") is True
            for key, entry in projects.items() if isinstance(key, str) and isinstance(entry, dict)}


def is_trusted(path: Path, flags: dict[str, bool]) -> bool:
    """True when ``path`` or a parent folder carries Claude Code's trust flag."""
    current = Path(os.path.normpath(path))
    for folder in (current, *current.parents):
        if flags.get(str(folder)):
            return True
    return False


def holds_memory_root(path: Path, memory_root: Path) -> str | None:
    """Why the repository at ``path`` may never be shifted because of the memory root, or None.

    The memory root's own repository (the same folder, or a worktree sharing its git folder)
    and any repository whose folder contains the memory root (a dotfiles repository at ``~``
    holding ``~/.sandman``: a shift there could edit the trail) are never pickable. Paths are
    compared resolved (symbolic links followed)."""
    here, root = path.resolve(), memory_root.resolve()
    if here == root:
        return "the memory root: never shifted"
    if root.is_relative_to(here):
        return f"contains the memory root ({memory_root}): never shifted"
    try:
        if git.common_dir(git.open_at(path)) == git.common_dir(git.open_at(memory_root)):
            return f"a worktree of the memory root ({memory_root}): never shifted"
    except RepositoryError:
        pass
    return None


def last_shifted(trail: Trail) -> dict[str, str]:
    """``{repository path: at of its newest shift.start}`` (rest day starts left out)."""
    found: dict[str, str] = {}
    for event in trail.events:
        if event.kind == "shift.start" and event.repo and not event.data.get("rest"):
            if event.at > found.get(event.repo, ""):
                found[event.repo] = event.at
    return found


def candidates(layout: Layout, trail: Trail) -> list[Candidate]:
    """Every repository under the roots, pickable ones first in rotation order, with reasons.

    Raises ConfigError (bad ``[machine]``, unreadable Claude Code config),
    InputError when the machine is off (no roots) or a root does not exist.
    """
    settings = config.machine(layout)
    if not settings.on:
        raise InputError("the machine is off: no [machine] roots in "
                         f"{layout.settings_file}; docs/shift.md sets it up")
    missing = [str(root) for root in settings.roots if not root.is_dir()]
    if missing:
        raise InputError(f"machine.roots names folder(s) that do not exist: {', '.join(missing)}")
    flags = trusted_folders()
    shifted = last_shifted(trail)
    approved = proposing.waiting(proposing.from_trail(trail))
    excluded = [Path(os.path.normpath(path)) for path in settings.exclude]
    memory_root = Path(os.path.normpath(layout.root))
    found: list[Candidate] = []
    for path in git.discover(settings.roots):
        path = Path(os.path.normpath(path))
        trusted = is_trusted(path, flags)
        item = Candidate(str(path), trusted, False, shifted.get(str(path)))
        waiting = approved.get(str(path), [])
        item.proposals = [proposal.id for proposal in waiting]
        holds = holds_memory_root(path, memory_root)
        if holds:
            item.reasons.append(holds)
        elif any(path == folder or path.is_relative_to(folder) for folder in excluded):
            item.reasons.append("excluded by machine.exclude")
        else:
            try:
                item.trunk, _ = git.trunk(git.open_at(path), str(path))
            except RepositoryError as error:
                item.reasons.append(f"no trunk: {error}")
            if not trusted:
                item.reasons.append("untrusted: Claude Code has not trusted this folder "
                                    "(open it once in claude and accept)")
            item.pickable = not item.reasons
        if item.pickable:
            if waiting:
                more = f" and {len(waiting) - 1} more" if len(waiting) > 1 else ""
                item.reasons.append(f"approved proposal {waiting[0].id} \u201c{waiting[0].title}\u201d{more} "
                                    "waits: approved work first")
            item.reasons.append(f"last shifted {item.last_shifted}" if item.last_shifted else "never shifted")
        found.append(item)
    first_approval = {repo: items[0].decided_at or "" for repo, items in approved.items()}
    pickable = sorted((c for c in found if c.pickable),
                      key=lambda c: (not c.proposals, first_approval.get(c.path, ""), c.last_shifted or "", c.path))
    return pickable + [c for c in found if not c.pickable]


def pick(layout: Layout, trail: Trail, path: str | None = None) -> Candidate | None:
    """The repository the next shift works: ``path`` when given (it must be pickable), else the
    first pickable candidate; None when there is none. Raises InputError naming why ``path``
    cannot be picked."""
    found = candidates(layout, trail)
    if path is None:
        return next((c for c in found if c.pickable), None)
    wanted = os.path.normpath(os.path.abspath(path))
    for item in found:
        if item.path == wanted:
            if not item.pickable:
                raise InputError(f"{wanted} cannot be picked: {'; '.join(item.reasons)}")
            return item
    raise InputError(f"{wanted} is not a git repository under machine.roots")


def waiting_for(trail: Trail, repo: str) -> list[proposing.Proposal]:
    """The approved proposals on ``repo`` no shift has taken yet, oldest approval first: what the
    brief of a shift on ``repo`` carries (its ``proposals`` slot) and takes."""
    return proposing.waiting(proposing.from_trail(trail)).get(os.path.normpath(repo), [])
