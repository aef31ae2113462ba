"""The rest day's self-pass: what its brief gathers and what it writes (docs/shift.md, "The rest day").

The rest day ([machine] ``rest_day``) runs no repository. Its brief (``prompts/sabbath.md``,
on an ablation week ``prompts/ablation.md``) sees the week as it was:

- every shift of the week with its outcome, a revoked one as ``revoked`` (the revoke's why),
  never as handed-off (``shifts_text``);
- every proposal filed in the week with its state, a revoked one as ``revoked``
  (``proposals_text``);
- the voyage log's entries of the week's days (``voyage_text``), from which the session
  writes the week's voyage entry (``score/<week>-voyage.md``, ``shift voyage``);
- the breath store's reweight, run when the brief opens (``reweight_text``): adoptions
  since the last run raise their sources, silence lowers them.

Every seventh ISO week (week number divisible by ABLATION_EVERY) is the ablation week.

The targets the rest day writes are read by every brief until the next rest day:
``targets_week`` names the week whose targets file a day reads (the week after the
latest rest day before it), so the day after the rest day reads what it wrote, never
the targets of eight days before.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

from sandman import config
from sandman.layout import Layout
from sandman.machine import trail as trails
from sandman.machine import week

ABLATION_EVERY = 7  # the design's seventh week: ISO weeks 7, 14, ... 49
VOYAGE_MAX_CHARS = 4_000  # the week's voyage entry, as `shift voyage` takes it


def last_rest_before(settings: config.Machine, day: date) -> date:
    """The latest rest day strictly before ``day``."""
    for back in range(1, 8):
        earlier = day - timedelta(days=back)
        if week.is_rest(settings, earlier):
            return earlier
    raise AssertionError("a week has a rest day")  # config checks rest_day is a weekday


def targets_week(settings: config.Machine, day: date) -> str:
    """``yyyy-Www`` of the targets file ``day``'s brief reads: the one the latest rest day before
    ``day`` wrote (``score/<iso week of that rest day + 7 days>-targets.md``, write_targets)."""
    return week.next_week(last_rest_before(settings, day))


def is_ablation(week_name: str) -> bool:
    """Whether ``yyyy-Www`` is an ablation week (its number divisible by ABLATION_EVERY)."""
    return int(week_name.rsplit("W", 1)[1]) % ABLATION_EVERY == 0


def shifts_text(metas: list[dict], trail: trails.Trail) -> str:
    """One line per shift: ``<id> <repo> <theme> <outcome>``; a revoked shift's outcome is
    ``revoked (<why>; was <outcome>)`` and an open one ``open``."""
    lines = []
    for meta in metas:
        ident = meta.get("id")
        revoke = trail.revocation(ident) if isinstance(ident, str) else None
        outcome = meta.get("outcome") or "open"
        if revoke is not None:
            why = (revoke.data or {}).get("why") or revoke.summary
            outcome = f"revoked ({why}; was {outcome})"
        lines.append(f"{ident} {meta.get('repo')} {meta.get('theme')} {outcome}")
    return "\n".join(lines)


def proposals_text(trail: trails.Trail, since_day: str) -> str:
    """One line per proposal filed on or after ``since_day`` (``YYYY-MM-DD``): its state (open,
    approved, declined, taken, or revoked), id, repository name and title."""
    from sandman.machine import proposals

    known = {item.id: item for item in proposals.from_trail(trail)}
    lines = []
    for event in trail.events:
        if event.kind != proposals.OPEN or event.day < since_day:
            continue
        item = known.get(event.id)
        title = (event.data or {}).get("title") or event.summary
        name = Path(event.repo).name if event.repo else "-"
        state = item.state if item is not None else "revoked"
        lines.append(f"{state:<8} {event.id} {name} — {title}")
    return "\n".join(lines)


def handoff_revoked(trail: trails.Trail, shift_id: str) -> bool:
    """Whether shift ``shift_id`` (or its handoff) was revoked: its handoff is not carried forward."""
    if trail.revocation(shift_id) is not None:
        return True
    return any(e.kind == "shift.handoff" and trail.revoked_by(e) is not None for e in trail.of_shift(shift_id))


def voyage_text(layout: Layout, first: date, last: date) -> str:
    """The voyage log's entries of the days ``first``…``last``: ``<day> · <kind> — <title>``, the body
    and ``next``, or a line saying a day has no entry."""
    from sandman import voyage
    from sandman.errors import FormatError

    parts = []
    day = first
    while day <= last:
        path = layout.log_entry(str(day))
        if path.is_file():
            try:
                entry = voyage.read_entry(path)
                parts.append(f"{day} · {entry.kind} — {entry.title}\n{entry.body.strip()}"
                             + (f"\nnext: {entry.next}" if entry.next else ""))
            except (FormatError, OSError) as error:  # an unreadable entry is named, never fatal to the brief
                parts.append(f"{day}: unreadable ({error})")
        else:
            parts.append(f"{day}: no entry")
        day += timedelta(days=1)
    return "\n\n".join(parts)


def reweight_text(layout: Layout, now: datetime) -> str:
    """Run the breath store's reweight as of ``now`` and say what moved; a store with no
    ``sources.toml`` or a refused reweight is said, never raised."""
    from sandman.errors import InputError
    from sandman.machine import breath

    if not layout.breath_sources.is_file():
        return "(no breath store: breath/sources.toml does not exist)"
    try:
        moved = breath.reweight(layout, now=now)
    except InputError as error:
        return f"(reweight refused: {error})"
    if not moved:
        return "reweight ran: no source moved"
    return "reweight ran:\n" + "\n".join(f"- {name}: {old:.2f} -> {new:.2f}" for name, (old, new) in moved.items())
