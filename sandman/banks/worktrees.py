"""Linked git worktrees share the bank of their repository's main worktree (issue 17).

``git worktree add ../feature`` makes a second working tree of one repository.
Its banks would be those of ``../feature`` and never meet the main worktree's,
so what was learned in one is not recalled in the other. ``shared_directory``
maps a directory inside a linked worktree to the same place inside the main
worktree; recall, remember and dream use the mapped directory, so both
worktrees read and write the same banks. ``[banks] share_worktrees = false``
in ``.settings.toml`` keeps them apart (config.share_worktrees).

How a linked worktree is recognised is git's own layout (gitrepository-layout,
"worktrees"), read the way libgit2 reads it: the worktree's ``.git`` is a file
``gitdir: <path>`` naming ``<common dir>/worktrees/<id>``; that folder's
``commondir`` file names the common directory; when the common directory is a
``.git`` folder, its parent is the main worktree. Anything else (a plain
repository, a submodule whose gitdir has no ``commondir``, a bare repository
with no main worktree, a file that cannot be read) leaves the directory as it
is. Standard library only, a few ``lstat`` calls: recall's SessionStart hook
calls it, and must not import pygit2 (tests/test_imports.py). tests/test_worktrees.py
checks the answer against pygit2's own view of a real ``git worktree add``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_GITDIR = "gitdir:"
_MAX_GITFILE_BYTES = 4096


def _read_small(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_GITFILE_BYTES)
        return data.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def main_worktree(worktree: Path) -> Path | None:
    """Return the main worktree of the linked worktree whose top folder is ``worktree``, or None.

    None when ``worktree/.git`` is not a linked worktree's ``gitdir:`` file
    (a folder, a submodule, a bare repository's worktree, unreadable).
    """
    text = _read_small(worktree / ".git")
    if text is None or not text.startswith(_GITDIR):
        return None
    gitdir = text[len(_GITDIR):].strip()
    gitdir_path = Path(os.path.normpath(os.path.join(worktree, gitdir)))
    common = _read_small(gitdir_path / "commondir")
    if not common:
        return None  # a submodule's gitdir: no common directory, no main worktree
    common_path = Path(os.path.normpath(os.path.join(gitdir_path, common)))
    if common_path.name != ".git":
        return None  # the worktree of a bare repository: there is no main worktree
    main = common_path.parent
    try:
        if not stat.S_ISDIR(os.lstat(common_path).st_mode):
            return None
    except OSError:
        return None
    return main


def worktree_top(directory: Path) -> Path | None:
    """Return the top folder of the linked worktree ``directory`` lies in, or None."""
    for candidate in (directory, *directory.parents):
        try:
            mode = os.lstat(candidate / ".git").st_mode
        except FileNotFoundError:
            continue
        except OSError:
            return None
        return candidate if stat.S_ISREG(mode) and main_worktree(candidate) is not None else None
    return None


def shared_directory(directory: Path) -> Path:
    """Return ``directory`` (absolute, normalized) mapped into its repository's main worktree
    when it lies inside a linked worktree; else ``directory`` itself. Never raises."""
    top = worktree_top(directory)
    if top is None:
        return directory
    main = main_worktree(top)
    if main is None:
        return directory
    return main / directory.relative_to(top)


def bank_directory(layout, directory: str | os.PathLike[str]) -> Path:
    """Return the directory whose banks serve ``directory`` (absolute; see shared_directory):
    mapped unless ``[banks] share_worktrees = false``. A settings file that cannot be read
    leaves the default, sharing (sync and doctor report the file); never raises for it."""
    from sandman import config
    from sandman.errors import ConfigError

    path = Path(directory)
    try:
        share = config.share_worktrees(layout)
    except ConfigError:
        share = True
    return shared_directory(path) if share else path


def worktree_banks(layout) -> list[tuple[object, Path]]:
    """Return ``(Bank, Path)`` pairs: the banks of ``layout`` (a Layout) holding memories whose directory lies inside a linked git worktree, with
    the main worktree's directory that now serves it (``shared_directory``); doctor's worktrees check."""
    from sandman.banks.index import memory_files
    from sandman.banks.listing import list_banks

    found = []
    for bank in list_banks(layout):
        if bank.directory is None or not bank.directory.startswith("/") or not memory_files(bank.folder):
            continue
        directory = Path(bank.directory)
        shared = shared_directory(directory)
        if shared != directory:
            found.append((bank, shared))
    return found
