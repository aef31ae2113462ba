"""The calendar sweep (issue 35): the tests marked ``calendar`` run under libfaketime at ten clocks.

A test whose verdict could depend on the weekday, the hour, the ISO week, the night window or
the time zone carries ``@pytest.mark.calendar`` (registered in pyproject.toml). The sweep runs
those tests, and only those, in a child pytest per clock, the child's wall clock moved by
libfaketime (``faketime -f +<seconds>``: a relative offset, so every process the child spawns,
``sandman`` and ``git`` included, reads the same moved clock) and its ``TZ`` set:

- each of the seven weekdays, at hours and zones that put the local and the UTC day apart
  (Pacific/Kiritimati is UTC+14, America/Los_Angeles UTC-8/-7), inside and outside the
  default night window;
- 23:59 and 00:01 local time, on the days around the ISO week's end (23:59:50 UTC on Sunday:
  the child run crosses into Monday and the next ISO week while it runs);
- 01:59:30 local on the next day America/Los_Angeles changes its clocks (the DST edge).

The days are the next ones after today (one to seven days ahead), so the sweep moves with the
calendar and its offsets stay under eight days (the DST edge aside). libfaketime moves the clocks
a process reads, not the times the kernel stamps on files: a test that compares a fresh file's
mtime with the clock sees the file days old under the sweep, so such tests are not marked
(their verdict does not depend on the calendar: both sides are the real clock).

Run by hand: ``python tests/calendar_sweep.py`` prints each clock, its command and the child's
verdict; ``python tests/calendar_sweep.py Saturday-1200-UTC`` runs the clocks named.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

TESTS = Path(__file__).resolve().parent
MARK = "calendar"
DST_ZONE = "America/Los_Angeles"
# weekday -> (hour, minute, zone): the seven weekdays of the sweep
WEEKDAY_CLOCKS = {
    "Sunday": (12, 0, "UTC"),
    "Monday": (3, 0, "Pacific/Kiritimati"),  # Sunday 13:00 UTC
    "Tuesday": (22, 30, "America/Los_Angeles"),  # Wednesday 06:30 UTC, inside the night
    "Wednesday": (6, 59, "UTC"),  # the night's last minute
    "Thursday": (21, 0, "Pacific/Kiritimati"),  # Thursday 07:00 UTC
    "Friday": (17, 0, "America/Los_Angeles"),  # Saturday 01:00 UTC, the default rest day
    "Saturday": (12, 0, "UTC"),  # the default rest day, the day issue 35 was found
}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")  # date.weekday()


@dataclass(frozen=True)
class Clock:
    """One clock of the sweep: ``local`` is an aware datetime in ``zone`` (an IANA name)."""

    label: str
    zone: str
    local: datetime

    def offset(self, now: float) -> int:
        """Seconds from ``now`` (a Unix time) to this clock."""
        return round(self.local.timestamp() - now)


def _next(today: date, weekday: str) -> date:
    """The first ``weekday`` after ``today`` (one to seven days ahead)."""
    ahead = (WEEKDAYS.index(weekday) - today.weekday()) % 7 or 7
    return today + timedelta(days=ahead)


def _at(day: date, hour: int, minute: int, zone: str, second: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=ZoneInfo(zone))


def dst_change(zone: str, after: date) -> date:
    """The first day after ``after`` on which ``zone``'s UTC offset at noon differs from the day
    before's. Raises LookupError when none falls within two years (a zone without DST)."""
    tz = ZoneInfo(zone)
    day = after
    for _ in range(2 * 366):
        following = day + timedelta(days=1)
        if _at(following, 12, 0, zone).utcoffset() != _at(day, 12, 0, zone).utcoffset():
            return following
        day = following
    raise LookupError(f"{tz} changes no clocks within two years of {after}")


def clocks(today: date) -> list[Clock]:
    """The sweep's ten clocks for a run on ``today`` (the UTC date)."""
    found = [Clock(f"{name}-{hour:02d}{minute:02d}-{zone.rsplit('/', 1)[-1]}", zone,
                   _at(_next(today, name), hour, minute, zone))
             for name, (hour, minute, zone) in WEEKDAY_CLOCKS.items()]
    sunday = _next(today, "Sunday")
    # ten seconds before the ISO week (and the UTC day) ends: the run crosses into Monday
    found.append(Clock("Sunday-2359-UTC", "UTC", _at(sunday, 23, 59, "UTC", 50)))
    found.append(Clock("Monday-0001-Kiritimati", "Pacific/Kiritimati",  # local Monday, Sunday 10:01 UTC
                       _at(sunday + timedelta(days=1), 0, 1, "Pacific/Kiritimati")))
    edge = dst_change(DST_ZONE, today)
    found.append(Clock(f"DST-{edge}-0159-Los_Angeles", DST_ZONE, _at(edge, 1, 59, DST_ZONE, 30)))
    return found


def marked_files() -> list[Path]:
    """The test files holding a ``calendar`` mark (read as text, so the sweep collects only them)."""
    pattern = re.compile(rf"pytest\.mark\.{MARK}\b")
    return sorted(path for path in TESTS.glob("test_*.py") if pattern.search(path.read_text(encoding="utf-8")))


def faketime() -> str | None:
    """Why the sweep cannot run here (libfaketime absent or not moving this Python's clock), or None."""
    binary = shutil.which("faketime")
    if binary is None:
        return "libfaketime is absent (Debian package `faketime`): the calendar sweep of issue 35 needs it"
    probe = subprocess.run([binary, "-f", "+86400", sys.executable, "-c", "import time; print(time.time())"],
                           capture_output=True, text=True, timeout=60)
    try:
        moved = float(probe.stdout.strip()) - time.time()
    except ValueError:
        return f"faketime does not run Python here: {probe.stderr.strip()[:200]}"
    if not 80_000 < moved < 90_000:
        return f"faketime does not move this Python's clock (moved {moved:.0f} s, not 86400)"
    return None


def command(clock: Clock, basetemp: Path, now: float | None = None) -> list[str]:
    """The child run of ``clock``: pytest over the marked tests, its clock moved by faketime."""
    offset = clock.offset(time.time() if now is None else now)
    return ["faketime", "-f", f"{offset:+d}", sys.executable, "-m", "pytest", "-q", "-m", MARK, "-rf",
            "--no-header", "-p", "no:randomly", f"--basetemp={basetemp}",
            *[str(path.relative_to(TESTS.parent)) for path in marked_files()]]


@dataclass
class Verdict:
    clock: Clock
    argv: list[str]
    code: int
    output: str

    @property
    def summary(self) -> str:
        """The child's last line (``N passed in Xs``)."""
        lines = [line for line in self.output.splitlines() if line.strip()]
        return lines[-1].strip("= ") if lines else "(no output)"

    def line(self) -> str:
        utc = self.clock.local.astimezone(timezone.utc)
        return (f"{self.clock.label:<28} {self.clock.local:%a %Y-%m-%d %H:%M:%S %Z} "
                f"(UTC {utc:%a %H:%M}) exit {self.code}: {self.summary}")


def run(clock: Clock, basetemp: Path) -> Verdict:
    """Run ``clock``'s child pytest; its environment is this one's with ``TZ`` set."""
    argv = command(clock, basetemp)
    env = {**os.environ, "TZ": clock.zone}
    done = subprocess.run(argv, cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=900)
    return Verdict(clock, argv, done.returncode, done.stdout + done.stderr)


def sweep(basetemp: Path, names: list[str] | None = None, workers: int | None = None) -> list[Verdict]:
    """Every clock (or those whose label is in ``names``), ``workers`` at a time (default: the CPUs, at most 4)."""
    chosen = [c for c in clocks(datetime.now(timezone.utc).date()) if not names or c.label in names]
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda c: run(c, basetemp / c.label), chosen))


def main(argv: list[str]) -> int:
    import tempfile

    reason = faketime()
    if reason:
        print(f"skipped: {reason}")
        return 0
    with tempfile.TemporaryDirectory(prefix="calendar-sweep-") as folder:
        verdicts = sweep(Path(folder), argv or None)
    for verdict in verdicts:
        print(verdict.line())
        print(f"    TZ={verdict.clock.zone} {' '.join(verdict.argv[:3])} python -m pytest -m {MARK} ...")
        if verdict.code:
            print("\n".join(line for line in verdict.output.splitlines() if line.startswith(("FAILED", "ERROR"))))
    return 1 if any(v.code for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
