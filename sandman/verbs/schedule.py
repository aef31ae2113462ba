"""``sandman schedule install|uninstall|show``: reflect nightly, serve the site, tick the shifts (issue 17).

The jobs, their unit files per scheduler (systemd, launchd, cron), and
install, uninstall and show live one floor down, in sandman/schedule/jobs.py
(its docstring describes each file); the CLI's options and messages are
sandman/sandman/cli's ``schedule`` commands. This module keeps the verb's old import
path: the names below are the jobs module's.
"""

from __future__ import annotations

from sandman.schedule.jobs import (
    DEFAULT_AT, KINDS, ScheduleChange, Unit, check_at, cron_line, cron_shift_line, detect, install, installed,
    machine_on, show, uninstall, units)

__all__ = ["DEFAULT_AT", "KINDS", "ScheduleChange", "Unit", "check_at", "cron_line", "cron_shift_line", "detect",
           "install", "installed", "machine_on", "show", "uninstall", "units"]
