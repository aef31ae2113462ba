"""``sandman doctor``: is this machine's sandman healthy? (docs/doctor.md)

One check per line, each OK, WARN or FAIL, then one verdict line naming the
most important problem. The checks, their order and the report live one floor
down, in sandman/doctor/checks.py; the CLI's options, output and exit code are
sandman/sandman/cli's ``doctor`` command. This module keeps the verb's old import
path: the names below are the checks module's.
"""

from __future__ import annotations

from sandman.doctor.checks import FAIL, OK, PRIORITY, SCHEMA_VERSION, WARN, Check, Report, doctor

__all__ = ["FAIL", "OK", "PRIORITY", "SCHEMA_VERSION", "WARN", "Check", "Report", "doctor"]
