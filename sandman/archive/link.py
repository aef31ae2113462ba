"""Giving a taken transcript its archive name (docs/BANK-FORMAT.md, "The archive"; docs/take.md, step 3).

``archive`` links the live transcript into ``.archive/<host>/<yyyy>/<mm>/<dd>/<HHMMSS>-<relpath>``
(a hard link: one file, never a copy; a cross-device destination is an error)
and links its Claude Code companion folder's files beside it, leaving both
where Claude Code keeps them for ``--resume``. Where a filesystem refuses hard
links the transcript and folder are moved instead. Standard library only:
take --hook imports it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from sandman import journal
from sandman.archive import parts
from sandman.errors import SandmanError, TranscriptNotFound
from sandman.layout import Layout
from sandman.store.atomic import is_real_dir, link_no_replace, move_no_replace
from sandman.transcripts.locate import Source

VERB = "take"  # the journal these decisions are lines of
_SAME_SECOND_RETRIES = 5


def _link(layout: Layout, src: Path, host: str, relpath: str, taken: datetime,
          record: Callable[[Path], None] | None) -> tuple[Path, bool]:
    """Give ``src`` its archive name; return it, and whether it is a link (False: moved).

    ``record(dst)`` runs before each attempt. A clash with another file of the
    same name and second moves the stamp on a second. A filesystem that refuses
    hard links gets the transcript moved instead (no copy ever): the archive
    keeps it, and the session can no longer be resumed.
    """
    for delta in range(_SAME_SECOND_RETRIES):
        dst = layout.archive_path(host, taken + timedelta(seconds=delta), relpath)
        if record is not None:
            record(dst)
        try:
            try:
                link_no_replace(src, dst)
                return dst, True
            except (FileExistsError, FileNotFoundError, SandmanError):
                raise
            except OSError:
                move_no_replace(src, dst)
                return dst, False
        except FileExistsError:
            # A concurrent take of the same session linked the same name first.
            try:
                gone = not src.exists() or os.path.samefile(src, dst)
            except FileNotFoundError:
                gone = True
            if gone:
                raise TranscriptNotFound(f"transcript {src} is already archived: another take linked it") from None
        except FileNotFoundError:
            raise TranscriptNotFound(f"transcript {src} is already gone: another take archived it") from None
    raise FileExistsError(f"archive names for {src} are all taken around {taken:%H%M%S}")


def archive(layout: Layout, source: Source, taken: datetime,
            record: Callable[[Path], None] | None = None,
            existing: Path | None = None) -> tuple[Path, Path | None, bool]:
    """Link the transcript (then its companion folder's files) into ``.archive/`` (BANK-FORMAT "The archive").

    ``existing``: the archive already holds this very file under that name (a
    resumed session appended to it): no new name is made. ``record(dst)`` is
    called with each destination just before the link is tried (take's
    intent record). Returns the archived transcript, the archived companion
    folder (None: none), and whether the live name stayed (False: a
    filesystem without hard links, the transcript moved). Raises
    TranscriptNotFound (gone, or another take linked it first),
    CrossDeviceError (the archive is on another filesystem: nothing is
    copied), OSError.
    """
    if existing is not None:
        if record is not None:
            record(existing)
        dst, linked = existing, True
    else:
        dst, linked = _link(layout, source.path, source.host, source.relpath, taken, record)
    companion = None
    if source.companion is not None:
        companion = (link_companion if linked else move_companion)(layout, source.companion, dst)
    return dst, companion, linked


def link_companion(layout: Layout, folder: Path, archived: Path) -> Path | None:
    """Link a companion folder's files beside the transcript's archived name (``<sid>.jsonl`` gets
    ``<sid>/``), leaving the folder where Claude Code keeps it; return the archived folder, None when none."""
    target = archived.with_suffix("")
    try:
        parts.link_tree(folder, target)
    except (OSError, SandmanError) as error:
        journal.write(layout, VERB, "companion-left", folder=str(folder), error=str(error))
    return target if is_real_dir(target) else None


def move_companion(layout: Layout, folder: Path, archived: Path) -> Path | None:
    """Move a companion folder beside the transcript's archived name, where no hard link can be
    made (``<HHMMSS>-<project>/<sid>.jsonl`` gets ``<HHMMSS>-<project>/<sid>/``); return it, None when it stays."""
    target = archived.with_suffix("")
    try:
        move_no_replace(folder, target)
        return target
    except (OSError, SandmanError) as error:
        journal.write(layout, VERB, "companion-left", folder=str(folder), error=str(error))
        return None
