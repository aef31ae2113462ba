"""``sandman forget <session>``: the privacy ending. Destroy every copy of a session (docs/forget.md).

What is destroyed, and what is only listed, is described and done one floor
down, in sandman/forget/session.py; the CLI's arguments and output are
sandman/sandman/cli's ``forget`` command. This module keeps the verb's old import
path: the names below are that module's.
"""

from __future__ import annotations

from sandman.forget.session import Forgotten, forget, forget_derived

__all__ = ["Forgotten", "forget", "forget_derived"]
