"""Keeping a served site up to date: re-render before answering when the root changed.

``report serve`` runs for weeks as a service (``schedule install``); the site it
serves must follow the root. Before a page request, ``Refresher.refresh`` takes a
cheap look at the root (``stamp``: the HEAD commit id, the identity of
``.reports-read``, of ``shifts/.current.json``, of the shift folders and of the
newest trail day file) and runs the incremental render (site.render) when that
look differs from the one taken at the last render, or when the last render is
older than ``config.SITE_SERVE_REFRESH_S`` seconds (what the look does not see).
One refresh runs at a time; the render writes each page atomically under the
render lock, so a request never reads a half-written page. A render that fails
leaves the last good site served and is logged in the journal (``report``,
``serve-render-failed``). docs/site.md § sandman report serve.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from sandman import config, journal
from sandman.layout import Layout


def _identity(path: Path) -> tuple | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _head(layout: Layout) -> str | None:
    from sandman.store.repo import head_id, open_repo

    try:
        return head_id(open_repo(layout))
    except Exception:  # an unreadable repository: the render reports it, the look only differs
        return None


def _newest(folder: Path, depth: int) -> Path | None:
    """The lexically last file ``depth`` folders below ``folder`` (trail/<yyyy>/<mm>/<dd>.jsonl)."""
    for _ in range(depth):
        try:
            names = sorted(name for name in os.listdir(folder) if not name.startswith("."))
        except OSError:
            return None
        if not names:
            return None
        folder = folder / names[-1]
    return folder


def stamp(layout: Layout) -> tuple:
    """Return a cheap look at what the machine pages and the memory pages are made of.

    Two equal stamps mean nothing the render reads is known to have changed: the
    HEAD commit id, the identity (inode, bytes, mtime in ns) of ``.reports-read``,
    ``shifts/.current.json``, the ``shifts/`` folder and each shift folder's
    newest file, and the newest trail day file. Never raises.
    """
    shifts: list = [_identity(layout.shifts)]
    try:
        entries = sorted(os.scandir(layout.shifts), key=lambda entry: entry.name)
    except OSError:
        entries = []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            files = [(child.name, child.stat(follow_symlinks=False).st_mtime_ns, child.stat(follow_symlinks=False).st_size)
                     for child in os.scandir(entry.path)]
        except OSError:
            files = []
        shifts.append((entry.name, tuple(sorted(files))))
    trail_day = _newest(layout.trail, 3)
    return (_head(layout), _identity(layout.reports_read), _identity(layout.shift_current),
            tuple(shifts), str(trail_day), _identity(trail_day) if trail_day else None)


class Refresher:
    """Re-renders ``layout``'s site before a page is served when the root changed.

    ``refresh()`` never raises: a failing render is journaled and the last good
    site stays served. ``render`` is site.render.render_site (a parameter for tests).
    """

    def __init__(self, layout: Layout, render, *, every: float | None = None, clock=time.monotonic):
        self.layout = layout
        self.render = render
        self.every = config.SITE_SERVE_REFRESH_S if every is None else every
        self.clock = clock
        self._lock = threading.Lock()
        self._stamp: tuple | None = None
        self._at = clock()

    def rendered(self) -> None:
        """Record that the site was just rendered (``open_server`` renders before serving)."""
        self._stamp, self._at = stamp(self.layout), self.clock()

    def refresh(self) -> bool:
        """Render when the root's stamp changed or the last render is too old; True when it rendered."""
        with self._lock:  # one refresh at a time; a request waiting here then sees the fresh site
            look = stamp(self.layout)
            if look == self._stamp and self.clock() - self._at < self.every:
                return False
            try:
                self.render(self.layout)
            except Exception as error:  # any render failure: keep serving the last good site
                journal.write(self.layout, "report", "serve-render-failed", error=f"{type(error).__name__}: {error}")
                self._at = self.clock()  # not again on every request; a changed root tries again
                self._stamp = look
                return False
            self._stamp, self._at = look, self.clock()
            return True
