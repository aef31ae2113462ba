"""The spine: nights, weekdays, themes and ISO weeks in the configured zone (docs/shift.md, "The week").

A night of weekday D runs from the night window's start on D to its end (on
D+1 when the window crosses midnight) and carries D's theme. Days and weeks are
read in ``[machine] time_zone`` (the system's local zone when unset); a week is
the ISO week ``yyyy-Www`` of the night's day.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from sandman.config import WEEKDAYS, Machine


def local(settings: Machine, moment: datetime) -> datetime:
    """``moment`` (aware) in the configured zone."""
    return moment.astimezone(settings.zone())


def night_of(settings: Machine, moment: datetime) -> date | None:
    """The day whose night holds ``moment``, or None when ``moment`` is outside the night window."""
    here = local(settings, moment)
    minute = here.hour * 60 + here.minute
    start, end = settings.night
    if start < end:
        return here.date() if start <= minute < end else None
    if minute >= start:
        return here.date()
    if minute < end:
        return here.date() - timedelta(days=1)
    return None


def night_end(settings: Machine, day: date) -> datetime:
    """When the night of ``day`` ends (aware, in the configured zone): the window's end on ``day``,
    or on the day after when the window crosses midnight."""
    start, end = settings.night
    last = day if start < end else day + timedelta(days=1)
    return datetime.combine(last, time(end // 60, end % 60), tzinfo=settings.zone())


def describe_night(settings: Machine, day: date) -> str:
    """``the night of Tuesday 2026-12-01 (21:00-07:00 Europe/Paris)``: the night a refusal computed."""
    start, end = settings.night
    window = f"{start // 60:02d}:{start % 60:02d}-{end // 60:02d}:{end % 60:02d}"
    return f"the night of {weekday(day)} {day} ({window} {settings.time_zone or 'local time'})"


def weekday(day: date) -> str:
    """``Sunday``…``Saturday``."""
    return WEEKDAYS[(day.weekday() + 1) % 7]


def theme(settings: Machine, day: date) -> tuple[str, str, str]:
    """``(weekday, theme, job)`` of ``day`` from ``[machine] week``."""
    name = weekday(day)
    chosen, job = settings.week[name]
    return name, chosen, job


def is_rest(settings: Machine, day: date) -> bool:
    return weekday(day) == settings.rest_day


def iso_week(day: date) -> str:
    """``yyyy-Www`` of ``day`` (ISO 8601)."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def next_week(day: date) -> str:
    return iso_week(day + timedelta(days=7))


def day_of(settings: Machine, moment: datetime) -> date:
    """The night's day when ``moment`` is inside the window, else the local date."""
    return night_of(settings, moment) or local(settings, moment).date()
