"""Atomic file writes and no-copy moves.

Every file sandman writes under the root goes through ``write_atomic``: a unique
sibling temp file (dotted, so git ignores it), fsync, ``os.replace``. A reader
sees the old bytes or the new ones, never a half-written file; a process killed
mid-write leaves at most a dotted temp file behind.

Moves never copy: ``move_no_replace`` is a same-volume rename that refuses to
overwrite, and a cross-device move is a CrossDeviceError.

Reads of the versioned tier never follow a symbolic link (``read_regular``,
``is_regular``): a link in a bank pointing at ``~/.ssh/id_ed25519`` would
otherwise put the key in recall, the site and its search index, past the
secrets ban that guards every memory sandman writes.

Standard library only: the hook entry points import this module.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from sandman.errors import CrossDeviceError


# The name of write_atomic's temp files: ``.<name>.<32 hex digits>.tmp``.
TEMP_NAME = re.compile(r"\..+\.[0-9a-f]{32}\.tmp")


def write_atomic(path: Path, data: bytes | str, mode: int = 0o644, *, durable: bool = True,
                 sync_folder: bool = True) -> None:
    """Replace ``path`` with ``data`` (str is encoded UTF-8) atomically; create parents.

    ``durable=False`` skips the two fsyncs, for derived files written by the
    thousand (the rendered site): the caller makes them durable in one
    ``os.sync()`` before it records them. ``sync_folder=False`` skips the second
    alone, the folder's: the caller that writes several files of one folder
    fsyncs it once (``fsync_dir``) when the last is written. Readers still see old or
    new bytes. Raises OSError when the directory cannot be written; the temp file is removed.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    # os.urandom, not uuid: importing uuid costs take --hook ~3 ms (it loads platform).
    temp = path.with_name(f".{path.name}.{os.urandom(16).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable and sync_folder:
        fsync_dir(path.parent)


def sweep_temps(path: Path, older_than: float | None = None) -> int:
    """Delete the temp files ``write_atomic(path, ...)`` left behind (``.<name>.<32 hex>.tmp``
    beside ``path``); with ``older_than`` (epoch seconds) only those last modified before it.

    For a caller holding the lock every writer of ``path`` holds, so any such temp file is
    a killed writer's. Returns how many were deleted; never raises (OSError is skipped).
    """
    prefix = f".{path.name}."
    try:
        entries = [entry for entry in os.scandir(path.parent)
                   if entry.name.startswith(prefix) and TEMP_NAME.fullmatch(entry.name)
                   and len(entry.name) == len(prefix) + 36]
    except OSError:
        return 0
    swept = 0
    for entry in entries:
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if older_than is not None and entry.stat(follow_symlinks=False).st_mtime >= older_than:
                continue
            os.unlink(entry.path)
            swept += 1
        except OSError:
            pass
    return swept


def remove_wrong_kind(path: Path, folder: bool) -> bool:
    """Remove ``path`` unless it is what a cache there must be: a real folder (``folder``) or
    a regular file. A symbolic link is removed itself, never followed; a folder with all it
    holds (its links removed, not followed). For derived files only (``.site/.state/``).
    Returns True when something was removed; raises OSError when it cannot be.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode):
        return False
    try:
        if stat.S_ISDIR(mode):
            import shutil  # not at the top: the hook entry points import this module

            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:  # another process removed it first
        pass
    return True


def fsync_dir(directory: Path) -> None:
    """Flush a directory's entries to disk (best effort; some filesystems refuse)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def move_no_replace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst`` on the same volume, never overwriting, never copying.

    Parents of ``dst`` are created, and removed again (those still empty) when
    the move fails: a refused move leaves no empty folder behind. A file is
    moved with link-then-unlink, which refuses an existing ``dst`` atomically;
    a directory with a checked rename. Raises FileExistsError when ``dst``
    exists, FileNotFoundError when ``src`` is gone (another process moved it
    first), CrossDeviceError when they are on different filesystems.
    """
    created = _make_parents(dst.parent)
    try:
        _move(src, dst)
    except BaseException:
        _remove_made(created)
        raise


def _remove_made(created: list[Path]) -> None:
    """Remove the parents ``_make_parents`` made, deepest first, while empty: one another writer
    filled stays, and so do those above it."""
    for folder in created:
        try:
            folder.rmdir()
        except OSError:
            break


def link_no_replace(src: Path, dst: Path) -> None:
    """Give the file ``src`` a second name ``dst`` (a hard link): same volume, never overwriting, never copying.

    Both names then are one file (one inode): what is written through one is
    read through the other. Parents of ``dst`` are created, and removed again
    (those still empty) when the link fails. Raises FileExistsError when
    ``dst`` exists, FileNotFoundError when ``src`` is gone, CrossDeviceError
    when they are on different filesystems, OSError (``EPERM``, ``EMLINK``...)
    when the filesystem refuses a hard link.
    """
    created = _make_parents(dst.parent)
    try:
        try:
            os.link(src, dst, follow_symlinks=False)
        except OSError as error:
            if error.errno == errno.EXDEV:
                raise CrossDeviceError(f"cannot link {src} to {dst}: different filesystems") from None
            raise
    except BaseException:
        _remove_made(created)
        raise
    fsync_dir(dst.parent)


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; return those created, deepest first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    created = []
    for path in reversed(missing):
        try:
            path.mkdir()
            created.append(path)
        except FileExistsError:  # a concurrent writer made it: not ours to remove
            pass
    return created[::-1]


def _move(src: Path, dst: Path) -> None:
    if src.is_dir() and not src.is_symlink():
        if dst.exists():
            raise FileExistsError(errno.EEXIST, "destination exists", str(dst))
        _rename(src, dst)
        return
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as error:
        if error.errno == errno.EXDEV:
            raise CrossDeviceError(f"cannot move {src} to {dst}: different filesystems") from None
        if error.errno in (errno.EEXIST, errno.ENOENT):
            raise
        # A filesystem without hard links: a checked rename is the best left.
        if dst.exists():
            raise FileExistsError(errno.EEXIST, "destination exists", str(dst)) from None
        _rename(src, dst)
        return
    try:
        os.unlink(src)
    except FileNotFoundError:
        # Another process moved src between our link and unlink: its copy of the
        # name stands, ours is a second name of the same bytes and goes.
        os.unlink(dst)
        raise
    fsync_dir(dst.parent)
    fsync_dir(src.parent)


def _rename(src: Path, dst: Path) -> None:
    try:
        os.rename(src, dst)
    except OSError as error:
        if error.errno == errno.EXDEV:
            raise CrossDeviceError(f"cannot move {src} to {dst}: different filesystems") from None
        raise


def is_regular(path: Path) -> bool:
    """True when ``path`` is a regular file itself: not a symbolic link, FIFO, device or folder."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def is_real_dir(path: Path) -> bool:
    """True when ``path`` is a folder itself, not a symbolic link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def read_regular(path: Path) -> bytes:
    """Return the bytes of the regular file ``path``, never following a symbolic link.

    Raises OSError: FileNotFoundError when it is gone, ``ELOOP`` (strerror "is
    a symbolic link ...") for a link, ``EINVAL`` for a FIFO, device or socket
    (opened without blocking, so a FIFO never hangs the reader), and any other
    read error.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "is a symbolic link; sandman does not follow links", str(path)) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "is not a regular file", str(path))
        return handle.read()
