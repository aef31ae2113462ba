"""A shift's state files, read and written below the shift itself (docs/BANK-FORMAT.md § shifts):
``shifts/.current.json`` (runtime: the open shift, see machine.shift) and ``shifts/<id>/meta.json``.

The lowest module that reads them: machine.proposals files a proposal in the open shift, and
machine.shift (which re-exports these three) opens and closes it, so neither imports the other's
way up.
"""

from __future__ import annotations

import json

from sandman.layout import Layout
from sandman.store.atomic import write_atomic

__all__ = ["read_current", "read_meta", "write_current"]


def read_current(layout: Layout) -> dict | None:
    """``shifts/.current.json`` as a dict, None when absent; an unreadable one is ``{"state": "broken"}``."""
    try:
        data = json.loads(layout.shift_current.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError, UnicodeDecodeError):
        return {"state": "broken"}
    return data if isinstance(data, dict) else {"state": "broken"}


def write_current(layout: Layout, data: dict) -> None:
    write_atomic(layout.shift_current, json.dumps(data, indent=2) + "\n")


def read_meta(layout: Layout, shift_id: str) -> dict | None:
    path = layout.shift_dir(shift_id) / "meta.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None
