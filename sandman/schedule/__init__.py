"""The nightly jobs and the user scheduler's files for them (``jobs``), below ``sandman schedule``
and doctor's schedule check (docs/schedule.md)."""
