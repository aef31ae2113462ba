"""The repositories the machine knows, and the commits in them that carry events.

Known, in this order (docs/BANK-FORMAT.md § reconcile): the memory root; every
repository an event on the trail names (``repo``); every git repository under
``[machine] roots`` (store.repos.discover). A worktree counts as the repository
it belongs to (one shared git folder), so nothing is visited twice; a path that
is gone or not a repository is kept as a place with its ``error``, for the
caller to report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandman import config
from sandman.errors import RepositoryError
from sandman.layout import Layout
from sandman.machine.trail import Trail, event_ids
from sandman.store import repos as git


@dataclass
class Place:
    """One repository: its working tree, whether it is the memory root, why it cannot be opened."""

    path: Path
    memory_root: bool = False
    error: str | None = None


def places(layout: Layout, trail: Trail) -> list[Place]:
    """Return the known repositories, the memory root first. Raises ConfigError (bad ``roots``)."""
    candidates: list[tuple[Path, bool]] = [(layout.root, True)]
    # Each path the trail names once, before a Path is made: a year of trail names a few paths 100,000 times.
    candidates += [(Path(repo), False) for repo in dict.fromkeys(event.repo for event in trail.events if event.repo)]
    candidates += [(path, False) for path in git.discover(config.machine_roots(layout))]
    seen: set[Path] = set()
    found: list[Place] = []
    named: set[Path] = set()
    for path, memory_root in candidates:
        if path in named:  # a repository the trail names a thousand times is opened once
            continue
        named.add(path)
        try:
            key = git.common_dir(git.open_at(path))
        except RepositoryError as error:
            key = path.resolve()
            if key in seen:
                continue
            seen.add(key)
            found.append(Place(path, memory_root, str(error)))
            continue
        if key in seen:
            continue
        seen.add(key)
        found.append(Place(path, memory_root))
    return found


def carries(found: git.Found, ids: set[str], shift: str | None = None) -> bool:
    """True when a commit's ``Event:`` is in ``ids`` or its ``Shift:`` is ``shift``."""
    pairs = list(found.trailers)
    return bool(set(event_ids(git.values(pairs, "Event"))) & ids) or bool(
        shift and shift in git.values(pairs, "Shift"))


def carriers(repo, tips, ids: set[str], shift: str | None = None, hide=()) -> list[git.Found]:
    """The commits ``tips`` reach (``hide`` left out) whose ``Event:`` is in ``ids`` or whose
    ``Shift:`` is ``shift``, newest first."""
    needles = ("Event:",) + (("Shift:",) if shift else ())
    return [found for found in git.walk(repo, tips, list(hide), needles=needles) if carries(found, ids, shift)]


def all_tips(repo) -> list:
    """The tips of every local branch (what ``trail show`` searches)."""
    tips = []
    for name in git.local_branches(repo):
        tip = git.branch_tip(repo, name)
        if tip is not None:
            tips.append(tip)
    return tips


# (common git folder, branch tips) -> ((event id, commit id, subject), ...): a long-lived process
# (`report serve`) walks a repository again only when one of its branches moved.
_CARRIED: dict[tuple, tuple] = {}


def carried_events(layout: Layout, trail: Trail) -> tuple[dict[str, list[tuple[str, str, str]]], list[tuple[str, str]]]:
    """The commits of every known repository but the memory root that carry an event, as
    ``trail show`` finds them (``places``, ``all_tips``, the ``Event:`` trailer), in one walk per
    repository: ``({event id: [(repository, commit id, subject), ...] newest first}, [(repository,
    why unreadable), ...])``. Raises ConfigError (bad ``roots``)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    unreadable: list[tuple[str, str]] = []
    for place in places(layout, trail):
        if place.memory_root:
            continue
        if place.error:
            unreadable.append((str(place.path), place.error))
            continue
        try:
            repo = git.open_at(place.path)
            tips = all_tips(repo)
            key = (str(git.common_dir(repo)), tuple(sorted(str(tip) for tip in tips)))
            if key not in _CARRIED:
                _CARRIED[key] = tuple((event, commit.id, commit.subject)
                                      for commit in git.walk(repo, tips, needles=("Event:",))
                                      for event in event_ids(git.values(list(commit.trailers), "Event")))
        except RepositoryError as error:
            unreadable.append((str(place.path), str(error)))
            continue
        for event, commit, subject in _CARRIED[key]:
            found.setdefault(event, []).append((str(place.path), commit, subject))
    return found, unreadable
