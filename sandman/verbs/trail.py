"""``sandman trail append|log|show|today|trailers|revoke``: the event log (docs/trail.md).

Thin over sandman.machine.trail: parse, call, journal (the store journals its
appends). ``show`` also searches the known repositories
(sandman.machine.repositories) for the commits carrying the event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sandman import config, journal
from sandman.errors import InputError, RepositoryError
from sandman.layout import Layout
from sandman.marks import refuse_controls
from sandman.machine import trail as store
from sandman.machine.trail import Event, Trail


def append(layout: Layout, kind: str, summary: str, *, parent: str | None = None, shift: str | None = None,
           repo: str | None = None, model: str | None = None, cost_usd: float | None = None,
           data: str | None = None) -> Event:
    """Append one event (``shift`` defaults to ``$SANDMAN_SHIFT``; ``data`` is a JSON object's text).

    A summary a person typed is refused, not cut, when it holds a line break or
    is over ``trail.SUMMARY_MAX_CHARS`` (300) characters: the trail keeps one
    line, and silently shortening what was typed would lose it. Raises
    InputError, SecretRefused (a credential in ``model`` or ``data``: the trail
    is versioned and pushed), and what ``trail.append`` raises.
    """
    from sandman.machine.owner import refuse_owner_kind

    refuse_owner_kind(kind)
    if "\n" in summary or "\r" in summary:
        raise InputError("the summary holds a line break; an event's summary is one line")
    refuse_controls(summary, "the summary", lines=False)  # refused, not silently dropped
    if len(summary) > store.SUMMARY_MAX_CHARS:
        raise InputError(f"the summary is {len(summary):,} characters; the limit is {store.SUMMARY_MAX_CHARS} "
                         "(put the rest in --data)")
    parsed = None
    if data is not None:
        try:
            parsed = json.loads(data)
        except RecursionError:
            raise InputError("--data is JSON nested too deeply to read; give an object such as "
                             "'{\"pr\": 12}'") from None
        except ValueError as error:
            raise InputError(f"--data is not JSON ({error}); give an object such as '{{\"pr\": 12}}'") from None
        if not isinstance(parsed, dict):
            raise InputError("--data must be a JSON object such as '{\"pr\": 12}'")
    # The summary meets the ban as the commit's subject; the model and the data land in the trail's file.
    from sandman.banks.secrets import find_secrets
    from sandman.errors import SecretRefused

    kinds = find_secrets(model or "", data or "")
    if kinds:
        raise SecretRefused(kinds, "--model or --data holds", what="event")
    return store.append(layout, kind, summary, parent=parent, shift=shift or config.current_shift(),
                        repo=repo, model=model, cost_usd=cost_usd, data=parsed)


def log(layout: Layout, *, since: str | None = None, kind: str | None = None, repo: str | None = None,
        shift: str | None = None) -> tuple[Trail, Trail]:
    """Return ``(the events filtered, the whole trail)``: the whole trail says which are revoked.
    Raises InputError for a filter no event could match (a kind or family not in lower case, a
    relative repository, a malformed shift id), so a typo is not an empty answer."""
    import os

    since = store.check_day(since) if since is not None else None
    if kind is not None and not store.KIND.fullmatch(kind):
        raise InputError(f"kind {kind!r} is not a family or <family>.<what> in lower case (shift, dream.commit)")
    if repo is not None and not os.path.isabs(repo):
        raise InputError(f"repo {repo!r} is not an absolute path; the trail names repositories by absolute path")
    if shift is not None and not store.is_shift_id(shift):
        raise InputError(f"shift {shift!r} is not a shift id (s-<yyyymmddTHHMM[SS]>Z)")
    whole = store.read(layout)
    return store.select(whole, since=since, kind=kind, repo=repo, shift=shift), whole


def today(layout: Layout) -> tuple[Trail, Trail]:
    """Today's events and the whole trail. Today is the machine's day: midnight to midnight in
    ``[machine] time_zone`` (the system's zone when unset; docs/shift.md, "Configuration"), the
    zone that sets the days, weeks and the night. Raises ConfigError for unreadable settings."""
    from datetime import datetime, timedelta, timezone

    local = journal.now_utc().astimezone(config.machine(layout).zone())
    start = local.replace(hour=0, minute=0, second=0, microsecond=0).astimezone(timezone.utc)
    end = (local.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)).astimezone(timezone.utc)
    filtered, whole = log(layout, since=start.strftime("%Y-%m-%d"))

    def within(event: Event) -> bool:
        try:
            moment = datetime.fromisoformat(event.at.replace("Z", "+00:00"))
        except ValueError:
            return False
        return moment.tzinfo is not None and start <= moment < end

    return Trail([event for event in filtered.events if within(event)], filtered.skipped), whole


def line(event: Event, trail: Trail) -> str:
    """One line for a person: time, id, kind, summary, and what the score and an undo need to see."""
    parts = [event.at, event.id, event.kind]
    session = event.data.get("session")
    if isinstance(session, str):
        parts.append(f"session={session}")
    if event.shift:
        parts.append(f"shift={event.shift}")
    if event.repo:
        parts.append(f"repo={event.repo}")
    if event.parent:
        parts.append(f"parent={event.parent}")
    revoked = trail.revoked_by(event)
    if revoked is not None:
        parts.append(f"REVOKED by {revoked.id}")
    return " ".join(parts) + f" — {event.summary}"


def as_json(event: Event, trail: Trail) -> str:
    """The event as one JSON line, with ``revoked_by`` (a revoke id or null) added."""
    data = event.to_json()
    revoked = trail.revoked_by(event)
    data["revoked_by"] = revoked.id if revoked else None
    return json.dumps(data, ensure_ascii=False)


@dataclass
class Shown:
    """``trail show``: the event, its descendants, what revokes it, the commits carrying it per repository."""

    event: Event
    descendants: list[Event]
    revoked_by: Event | None
    commits: list[tuple[str, str, str]] = field(default_factory=list)  # (repository, commit id, subject)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (repository, why)


def show(layout: Layout, event_id: str) -> Shown:
    """Return the event, its descendants, its revoked state and the commits carrying it (or a
    descendant) on any local branch of every known repository. Raises InputError for a malformed or
    unknown id."""
    from sandman.machine import repositories
    from sandman.store import repos as git

    if not store.is_event_id(event_id):
        raise InputError(f"{event_id!r} is not an event id (ev-YYYYMMDDTHHMMSSZ-xxxxxx); "
                         "`sandman trail log` lists them")
    whole = store.read(layout)
    event = whole.get(event_id)
    if event is None:
        raise InputError(f"event {event_id} is not on the trail; `sandman trail log` lists the events")
    shown = Shown(event, whole.descendants(event_id), whole.revoked_by(event))
    ids = {event_id, *(child.id for child in shown.descendants)}
    for place in repositories.places(layout, whole):
        if place.error:
            shown.unreadable.append((str(place.path), place.error))
            continue
        try:
            repo = git.open_at(place.path)
            for found in repositories.carriers(repo, repositories.all_tips(repo), ids):
                shown.commits.append((str(place.path), found.id, found.subject))
        except RepositoryError as error:
            shown.unreadable.append((str(place.path), str(error)))
    return shown


def trailers(layout: Layout, event_id: str) -> list[str]:
    """The lines to hand to ``git commit --trailer`` for an event on the trail. Raises InputError."""
    if not store.is_event_id(event_id):
        raise InputError(f"{event_id!r} is not an event id (ev-YYYYMMDDTHHMMSSZ-xxxxxx)")
    event = store.find(layout, event_id)
    if event is None:
        raise InputError(f"event {event_id} is not on the trail; append it first (`sandman trail append`)")
    return [f"{key}: {value}" for key, value in store.trailers(event).items()]


def revoke(layout: Layout, target: str, why: str) -> tuple[Event, bool]:
    """Revoke an event or a shift (machine.trail.revoke); journal it. Refused inside a shift and
    for the running shift or its events (machine.owner)."""
    from sandman.machine import owner

    owner.refuse_in_shift(layout, "revoking")
    trail = store.read(layout)
    touched = {event.shift for event in trail.targets(target) if event.shift} if (
        store.is_shift_id(target) or store.is_event_id(target)) else set()
    owner.refuse_running(layout, target, touched, "the revoke of")
    event, appended = store.revoke(layout, target, why)
    journal.write(layout, "trail", "revoked" if appended else "already-revoked", target=target, revoke=event.id)
    return event, appended
