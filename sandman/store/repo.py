"""The memory root's git repository, through pygit2 (never a ``git`` subprocess).

This module is the one boundary where pygit2 errors (``GitError``, ``KeyError``)
become RepositoryError. It creates or adopts the root (``ensure_root``), and
commits a given set of repo-relative paths with trailers: through the git index
(``commit_paths``), or onto HEAD's tree without it (``commit_flat``, a remember's:
the index catches up later, ``catch_up_index``; docs/BANK-FORMAT.md, "The index
behind HEAD").
Callers hold ``.commit.lock`` (banks.commit does) around anything that writes.

Paths here are repo-relative POSIX strings, as git tree entries are.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from stat import S_ISREG

import pygit2
from pygit2.enums import DiffOption, FileMode, FileStatus, Option

from sandman import config, procs
from sandman.errors import ForeignRepository, GitBusy, LockBusy, RepositoryError
from sandman.layout import BANK_STAT, GIT_WRITER, GITIGNORE_LINES, GITIGNORE_SIGNATURE, INDEX_BEHIND, Layout
from sandman.store.runlock import WaitLock

DEFAULT_IDENTITY = ("sandman", "sandman@localhost")
BANK_STAT_VERSION = 1


def commit_lock(layout: Layout, timeout: float = config.COMMIT_LOCK_TIMEOUT_S) -> WaitLock:
    """Return the root's ``.commit.lock`` (a store.runlock.WaitLock; enter it with ``locked``)."""
    return WaitLock(layout.commit_lock, timeout)


def locked(lock: WaitLock):
    """Enter ``lock``; raise LockBusy (naming the lock file) when it times out.

    Raises OSError (naming the lock file) at once when the lock file cannot be
    created or opened.
    """
    try:
        return lock.acquire()
    except TimeoutError:
        raise LockBusy(f"{lock.lock_file} is held by another sandman process; try again") from None


def is_repository(layout: Layout) -> bool:
    """True when the root holds a repository: a ``.git`` file (a linked worktree) or a ``.git``
    folder with its ``HEAD``. A ``.git`` folder without ``HEAD`` is what a creation killed
    half way left (before this creation was atomic): no repository, rebuilt by ensure_root."""
    git = layout.root / ".git"
    return git.is_file() or (git / "HEAD").exists()


def open_repo(layout: Layout) -> pygit2.Repository:
    """Open the root's repository. Raises RepositoryError when it is not one."""
    try:
        return pygit2.Repository(str(layout.root), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, KeyError) as error:
        raise RepositoryError(f"{layout.root} is not a git repository ({error}); run `sandman init`") from None


def ensure_root(layout: Layout) -> bool:
    """Create or adopt the memory root as a git repository; return True if it changed.

    Idempotent (docs/BANK-FORMAT.md, "The data root"). A missing root is
    created; a folder that is not a repository, or a repository with no commit
    yet, is adopted in place (its visible files become the first commit,
    nothing is overwritten); a memory root gets any missing .gitignore line.
    A repository with history is a memory root only when its committed
    .gitignore carries sandman's rules (``GITIGNORE_SIGNATURE``); any other is
    refused before anything is written in it, lest its work in progress be
    committed as sandman's. Files being adopted are scanned by the secrets ban
    first. Takes ``.commit.lock`` only when there is something to do. Raises
    ForeignRepository, LeftoverSecret (nothing committed), RepositoryError,
    LockBusy; OSError when the root cannot be created.
    """
    if is_repository(layout):
        if _gitignore_complete(layout):
            return False
        try:
            refuse_foreign(layout, open_repo(layout))  # before the lock file is made in it
        except RepositoryError:
            pass  # another sandman may be creating it right now: decided under the lock
    layout.root.mkdir(parents=True, exist_ok=True)
    with locked(commit_lock(layout)):
        try:
            _sweep_creation_leftovers(layout)
            if is_repository(layout):
                repo = open_repo(layout)
                refuse_foreign(layout, repo)
            else:
                _create_repository(layout)
                repo = open_repo(layout)
            _complete_gitignore(layout)
            paths = committable_paths(repo)
            if paths:
                from sandman.banks.secrets import refuse_secret_files  # betterleaks is slow to load

                refuse_secret_files(layout.root, paths)
            if paths or repo.head_is_unborn:
                commit_paths(repo, paths, "init: memory root", {"Verb": "init"})
        except pygit2.GitError as error:
            raise RepositoryError(f"cannot set up {layout.root} as a git repository: {error}") from None
    return True


# A repository being built (``.git.<32 hex>.tmp/``) and a ``.git`` set aside (``.git.broken-<UTC stamp>``).
_BUILDING = re.compile(r"\.git\.[0-9a-f]{32}\.tmp")


def _create_repository(layout: Layout) -> None:
    """Create the root's ``.git`` atomically: built in a dotted sibling folder, then renamed into place.

    A process killed while libgit2 writes leaves only the dotted folder (swept
    by the next ensure_root), never a ``.git`` without ``HEAD``. A ``.git``
    folder without ``HEAD`` already there is moved aside to
    ``.git.broken-<UTC stamp>``, never deleted. The caller holds ``.commit.lock``.
    Raises pygit2.GitError, OSError.
    """
    from datetime import datetime, timezone

    git = layout.root / ".git"
    if git.is_dir():
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        os.rename(git, layout.root / f".git.broken-{stamp}")
    building = layout.root / f".git.{os.urandom(16).hex()}.tmp"
    pygit2.init_repository(str(building), initial_head="main")
    _fsync_tree(building / ".git")
    os.rename(building / ".git", git)
    building.rmdir()
    _fsync_dir(layout.root)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(top: Path) -> None:
    """fsync every file and folder under ``top``: the rename must not publish a ``.git`` whose bytes are lost."""
    for folder, _, files in os.walk(top):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(folder))


def _sweep_creation_leftovers(layout: Layout) -> None:
    """Delete what a killed first write left at the root's top level: half-built repositories
    (``.git.<hex>.tmp/``: built only under ``.commit.lock``, which the caller holds) and
    write_atomic's temp files older than ``config.TAKE_INTENT_STALE_S`` seconds (take writes
    beside the root without the lock, so a younger one may be a running write's), and a temp
    file of ``.gitignore`` at any age (written only under the lock)."""
    import shutil
    import time

    from sandman.store.atomic import TEMP_NAME

    cutoff = time.time() - config.TAKE_INTENT_STALE_S
    # .gitignore is written only here, under the lock: a temp file of it is a killed write's at any age.
    ours = f".{layout.gitignore.name}."
    try:
        entries = list(os.scandir(layout.root))
    except OSError:
        return
    for entry in entries:
        try:
            if _BUILDING.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif (TEMP_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
                  and (entry.name.startswith(ours) or entry.stat(follow_symlinks=False).st_mtime < cutoff)):
                os.unlink(entry.path)
        except OSError:
            pass


def refuse_foreign(layout: Layout, repo: pygit2.Repository) -> None:
    """Raise ForeignRepository unless the root's repository has no commit or is a memory root."""
    try:
        if repo.head_is_unborn:
            return
        entry = repo.head.peel(pygit2.Commit).tree[".gitignore"]
        rules = set(repo[entry.id].data.decode("utf-8", errors="replace").splitlines())
    except (KeyError, pygit2.GitError):
        rules = set()
    if not rules >= set(GITIGNORE_SIGNATURE):
        raise ForeignRepository(
            f"{layout.root} is a git repository sandman did not create (its committed .gitignore lacks "
            "sandman's rules), and sandman will not commit into it; point SANDMAN_ROOT at a new folder"
        )


def _gitignore_complete(layout: Layout) -> bool:
    try:
        present = set(layout.gitignore.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return False
    return all(line in present for line in GITIGNORE_LINES if not line.startswith("#"))


def _complete_gitignore(layout: Layout) -> None:
    from sandman.store.atomic import write_atomic

    try:
        text = layout.gitignore.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    present = set(text.splitlines())
    missing = [line for line in GITIGNORE_LINES if line not in present]
    if missing:
        if text and not text.endswith("\n"):
            text += "\n"
        write_atomic(layout.gitignore, text + "\n".join(missing) + "\n")


def dirty_paths(repo: pygit2.Repository) -> dict[str, FileStatus]:
    """Return repo-relative paths whose working-tree or index state differs from HEAD.

    A path the index has not caught up with yet (``index_behind``: committed by a flat
    commit) is judged against HEAD alone, as if the index held HEAD's entry: dirty
    (``WT_NEW``, ``WT_MODIFIED`` or ``WT_DELETED``) only when the working tree differs
    from HEAD there. Raises RepositoryError."""
    try:
        found = {
            path: flags
            for path, flags in repo.status(untracked_files="all", ignored=False).items()
            if flags != FileStatus.CURRENT and not flags & FileStatus.IGNORED
        }
    except pygit2.GitError as error:
        raise RepositoryError(f"cannot read the status of {repo.workdir}: {error}") from None
    behind = index_behind(repo)
    if behind:
        tree = _head_tree(repo)
        workdir = Path(repo.workdir)
        for path in behind:
            found.pop(path, None)
            if repo.path_is_ignored(path):
                continue
            on_disk = workdir / path
            present = on_disk.is_file() and not on_disk.is_symlink()
            committed = _blob_at(tree, path)
            if not present:
                if committed is not None:
                    found[path] = FileStatus.WT_DELETED
            elif committed is None:
                found[path] = FileStatus.WT_NEW
            elif pygit2.hashfile(str(on_disk)) != committed:
                found[path] = FileStatus.WT_MODIFIED
    return found


def new_paths(repo: pygit2.Repository) -> set[str]:
    """The repo-relative paths HEAD does not hold: untracked, or staged as new. Raises RepositoryError."""
    return {path for path, flags in dirty_paths(repo).items()
            if flags & (FileStatus.WT_NEW | FileStatus.INDEX_NEW)}


def _head_tree(repo: pygit2.Repository):
    """HEAD's tree, None while HEAD is unborn."""
    return None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree


def _blob_at(tree, path: str) -> pygit2.Oid | None:
    """The id of the blob at repo-relative ``path`` in ``tree``, None when it holds none there."""
    if tree is None:
        return None
    try:
        entry = tree[path]
    except KeyError:
        return None
    return entry.id if entry.type_str == "blob" else None


def _blobs_at(tree, paths: list[str]) -> dict[str, pygit2.Oid | None]:
    """``_blob_at`` for each of ``paths``, each folder's tree loaded once: a lookup by whole path
    inflates every tree on the way again (0.35 ms for a bank of 1,000 memories)."""
    return {path: None if entry is None else entry.id for path, entry in _entries_at(tree, paths).items()}


def _entries_at(tree, paths: list[str]) -> dict:
    """The blob entry (id and mode) of ``tree`` at each of ``paths``, None where it holds no file."""
    folders: dict[str, object] = {"": tree}
    found: dict = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        if folder not in folders:
            try:
                node = tree[folder] if tree is not None else None
            except KeyError:
                node = None
            folders[folder] = node if node is not None and node.type_str == "tree" else None
        node = folders[folder]
        try:
            entry = node[name] if node is not None else None
        except KeyError:
            entry = None
        found[path] = entry if entry is not None and entry.type_str == "blob" else None
    return found


def dirty_among(repo: pygit2.Repository, paths: list[str]) -> list[str]:
    """Return those of the repo-relative file ``paths`` whose working-tree file differs from HEAD's
    (changed, new, or deleted), in order; git-ignored paths are left out, as ``dirty_paths`` leaves them.

    Each path's file is hashed and compared with HEAD's blob: a transaction's commit asks only
    about the files it wrote, so its cost does not grow with the root (issue 29; libgit2's
    ``status_file`` reads the whole index at each call). A path neither in HEAD nor present is
    not dirty. Raises RepositoryError."""
    workdir = Path(repo.workdir)
    try:
        committed = _blobs_at(_head_tree(repo), paths)
        found = []
        for path in paths:
            on_disk = workdir / path
            present = on_disk.is_file() and not on_disk.is_symlink()
            current = pygit2.hashfile(str(on_disk)) if present else None
            if current != committed[path] and not repo.path_is_ignored(path):
                found.append(path)
        return found
    except (pygit2.GitError, OSError) as error:
        raise RepositoryError(f"cannot read the status of {paths} in {repo.workdir}: {error}") from None


def is_clean(repo: pygit2.Repository, path: str, record: Path | None = None,
             on_disk: dict[str, os.stat_result] | None = None) -> bool:
    """True when the working tree holds exactly HEAD's content at ``path`` (repo-relative): the
    same file, or a folder holding the same files (its subfolders too), or nothing where HEAD
    holds nothing.

    Each file is hashed and compared with HEAD's blob; in a folder, dotted names
    (the git-ignored tier) and symbolic links (never committed) are left out. What
    one bank costs, whatever the size of the root (issue 29: the recovery of a
    remember looks at the bank it writes). With ``record`` (a folder's stat record,
    ``layout.BANK_STAT``), a folder whose record was made at HEAD's tree there is
    compared by the stat data of its files instead, and only a file whose size, times
    or inode differ, or that changed since the record was written, is hashed: one
    ``lstat`` per file rather than an open, a read and a close (about 8 ms of a
    remember into a bank of 1,000). A folder found clean by hashing gets its record
    written. ``on_disk``: ``list_files`` of the folder at ``path``, when the caller has listed
    it (a bank transaction lists its bank once). Raises RepositoryError.
    """
    workdir = Path(repo.workdir)
    top_path = workdir / path
    try:
        tree = _head_tree(repo)
        try:
            top = tree[path] if tree is not None else None
        except KeyError:
            top = None
        if (top is not None and top.type_str == "blob") or (top_path.is_file() and not top_path.is_symlink()):
            return path not in dirty_among(repo, [path])
        if on_disk is None:
            on_disk = list_files(top_path) if top_path.is_dir() and not top_path.is_symlink() else {}
        if record is not None and top is not None and top.type_str == "tree":
            kept = _read_record(record, str(top.id))
            if kept is not None:
                files, written = kept
                if on_disk.keys() != files.keys():
                    return False
                # _stat_key and the racy test written out: a call each per file was a fifth of this check.
                suspects = [name for name, st in on_disk.items()
                            if files[name] != [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
                            or st.st_ctime_ns >= written or st.st_mtime_ns >= written]
                if not suspects:
                    return True
                committed = _tree_files(top)
                return all(committed.get(name) == pygit2.hashfile(str(top_path / name)) for name in suspects)
        committed = _tree_files(top) if top is not None and top.type_str == "tree" else {}
        if on_disk.keys() != committed.keys():
            return False
        if not all(committed[name] == pygit2.hashfile(str(top_path / name)) for name in on_disk):
            return False
        if record is not None and top is not None:
            _write_record(record, str(top.id), {name: _stat_key(st) for name, st in on_disk.items()})
        return True
    except (pygit2.GitError, OSError) as error:
        raise RepositoryError(f"cannot read the status of {path} in {repo.workdir}: {error}") from None


def list_files(top: Path) -> dict[str, os.stat_result]:
    """The files under folder ``top`` (subfolders too; dotted names and links left out), by POSIX path
    relative to it, with their ``lstat``; each entry's type from the directory, no stat of its own.
    Raises OSError (``top`` is not a readable folder)."""
    found: dict[str, os.stat_result] = {}
    folders = [("", str(top))]
    while folders:
        prefix, folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(".") or entry.is_symlink():
                    continue
                if entry.is_dir():
                    folders.append((prefix + entry.name + "/", entry.path))
                else:
                    found[prefix + entry.name] = entry.stat(follow_symlinks=False)
    return found


def _tree_files(top) -> dict[str, pygit2.Oid]:
    """The blobs of tree ``top`` (its subtrees too), by path relative to it."""
    committed: dict[str, pygit2.Oid] = {}
    pending = [("", top)]
    while pending:
        prefix, node = pending.pop()
        for entry in node:
            name = prefix + entry.name
            if entry.type_str == "tree":
                pending.append((name + "/", entry))
            else:
                committed[name] = entry.id
    return committed


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


# The last stat record each ``_read_record`` read, by its path: ``(its file's identity, tree, files)``.
# ``note_clean`` takes it rather than read the file again (0.5 ms of every remember into a bank of
# 1,000) while the file is the same one: every writer replaces the record whole (a new inode).
_READ: dict[Path, tuple[tuple[int, int, int], str, dict[str, list[int]]]] = {}


def _read_record(record: Path, tree: str) -> tuple[dict[str, list[int]], int] | None:
    """The files of a folder's stat record and the record's own modification time (ns), when it
    was made at ``tree``; None when it is missing, unreadable, or of another tree."""
    try:
        with open(record, "rb") as stream:
            st = os.fstat(stream.fileno())
            data = json.loads(stream.read())
        if data.get("version") == BANK_STAT_VERSION and data.get("tree") == tree and isinstance(data.get("files"), dict):
            _READ[record] = ((st.st_ino, st.st_size, st.st_mtime_ns), tree, data["files"])
            return data["files"], st.st_mtime_ns
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _record_at(record: Path, tree: str) -> dict[str, list[int]]:
    """The files of the stat record ``record`` made at ``tree``, from ``_READ`` while its file is the
    one read there, else read; ValueError when it is of another tree, OSError when unreadable."""
    st = os.stat(record)
    kept = _READ.pop(record, None)
    if kept is not None and kept[0] == (st.st_ino, st.st_size, st.st_mtime_ns) and kept[1] == tree:
        return kept[2]
    with open(record, "rb") as stream:
        data = json.loads(stream.read())
    if not isinstance(data, dict) or data.get("tree") != tree or not isinstance(data.get("files"), dict):
        raise ValueError("a record of another tree")
    return data["files"]


def _write_record(record: Path, tree: str, files: dict[str, list[int]]) -> None:
    """Write a folder's stat record (derived: a failure loses only speed)."""
    from sandman.store.atomic import write_atomic

    try:
        write_atomic(record, json.dumps({"version": BANK_STAT_VERSION, "tree": tree, "files": files},
                                        separators=(",", ":")), durable=False)
    except OSError:
        pass


def stat_record(repo: pygit2.Repository, folder: str) -> Path:
    """The stat record of the folder named ``folder`` (a bank's name): ``.git/<BANK_STAT>/<folder>.json``."""
    return Path(repo.path) / BANK_STAT / f"{folder}.json"


def head_blob(repo: pygit2.Repository, path: str) -> str | None:
    """The id (hex) of the blob HEAD holds at repo-relative ``path``; None when it holds none."""
    found = _blob_at(_head_tree(repo), path)
    return None if found is None else str(found)


def tree_at(repo: pygit2.Repository, path: str) -> str | None:
    """The id (hex) of HEAD's tree at folder ``path``; None when HEAD holds no folder there."""
    try:
        top = _head_tree(repo)[path]
    except (KeyError, TypeError):
        return None
    return str(top.id) if top.type_str == "tree" else None


def note_clean(repo: pygit2.Repository, path: str, record: Path, previous: str | None, changed: list[str]) -> None:
    """After a commit that wrote ``changed`` (paths relative to folder ``path``) and nothing else
    there, bring the folder's stat record to HEAD: those files' stat data taken again, the rest
    kept (``is_clean`` found them as recorded at ``previous``, the tree the commit started from).
    A record of another tree is removed: the next ``is_clean`` hashes the folder and writes one."""
    workdir = Path(repo.workdir) / path
    try:
        top = _head_tree(repo)[path]
        if previous is None:
            raise ValueError("no tree to bring the record from")
        files = _record_at(record, previous)
        for name in changed:
            try:
                files[name] = _stat_key(os.lstat(workdir / name))
            except FileNotFoundError:
                files.pop(name, None)
    except (OSError, ValueError, KeyError, TypeError, pygit2.GitError):
        record.unlink(missing_ok=True)
        return
    _write_record(record, str(top.id), files)


def committable_paths(repo: pygit2.Repository) -> list[str]:
    """Return the dirty paths (``dirty_paths``) sandman may commit, sorted: all but symbolic links.

    A link is never committed (docs/BANK-FORMAT.md, "Symbolic links"): pushed,
    it would make every machine's checkout read whatever it points at there.
    It stays in the working tree, dirty, for doctor to name. Raises
    RepositoryError.
    """
    workdir = Path(repo.workdir)
    return sorted(path for path in dirty_paths(repo) if not (workdir / path).is_symlink())


def head_id(repo: pygit2.Repository) -> str | None:
    """Return the id (hex) of HEAD's commit; None while HEAD is unborn. Raises RepositoryError."""
    try:
        return None if repo.head_is_unborn else str(repo.head.target)
    except pygit2.GitError as error:
        raise RepositoryError(f"cannot read HEAD of {repo.workdir}: {error}") from None


def reset_index(repo: pygit2.Repository) -> None:
    """Make the index HEAD's tree again, leaving the working tree alone (what a killed commit staged goes).

    The index then holds HEAD's entry at every path, so the ``index_behind`` record
    is removed too. The caller holds ``.commit.lock``; stale lock files are cleared
    as for a commit. Raises RepositoryError.
    """
    with writing(repo):
        try:
            index = repo.index
            if repo.head_is_unborn:
                index.clear()
            else:
                index.read_tree(repo.head.peel(pygit2.Commit).tree)
            _write_index(index)
            _behind_path(repo).unlink(missing_ok=True)
        except (pygit2.GitError, KeyError, OSError) as error:
            raise RepositoryError(f"cannot reset the index of {repo.workdir}: {error}") from None


# --- the index behind HEAD (docs/BANK-FORMAT.md, "The index behind HEAD") -----------------


def _behind_path(repo: pygit2.Repository) -> Path:
    return Path(repo.path) / INDEX_BEHIND


def index_behind(repo: pygit2.Repository) -> list[str]:
    """The repo-relative paths flat commits made without the git index and that it has not caught up
    with yet (``layout.INDEX_BEHIND``, NUL-separated), sorted, each once; [] when none.
    Raises RepositoryError when the record cannot be read."""
    try:
        data = _behind_path(repo).read_bytes()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise RepositoryError(f"cannot read {_behind_path(repo)}: {error}") from None
    return sorted({path for path in data.decode("utf-8", "surrogateescape").split("\0") if path})


def _stage_head_entries(repo: pygit2.Repository, index: pygit2.Index, paths: list[str],
                        entries: dict | None = None) -> None:
    """Set each of ``paths`` in ``index`` to HEAD's entry there, or remove it when HEAD holds none:
    never from the working tree (a hand edit there must not be staged by another verb's commit).
    ``entries``: ``_entries_at(HEAD's tree, paths)``, when the caller has them."""
    for path, entry in (_entries_at(_head_tree(repo), paths) if entries is None else entries).items():
        if entry is not None:
            index.add(pygit2.IndexEntry(path, entry.id, entry.filemode))
        elif path in index:
            index.remove(path)


def catch_up_index(repo: pygit2.Repository) -> bool:
    """Bring the git index up to HEAD at every path of ``index_behind`` and remove the record;
    return True when there was one.

    Reads and writes the whole index once (what costs as the root grows, issue 29).
    Idempotent: a process killed at any point leaves the record, and the next catch-up
    does the same again. The caller holds ``.commit.lock``. Raises RepositoryError
    (GitBusy: a person's git holds the index's lock; the record stays).
    """
    behind = index_behind(repo)
    if not behind:
        return False
    with writing(repo):
        _catch_up(repo, behind)
    return True


def _catch_up(repo: pygit2.Repository, behind: list[str]) -> None:
    """``catch_up_index``'s work, inside ``writing``: a recorded file the working tree lost (a
    person's ``git clean`` while git showed it untracked) is put back (``restore_behind``) once
    the index is written, as recovery would have, since the record that lets it is gone after."""
    try:
        entries = _entries_at(_head_tree(repo), behind)
        index = repo.index
        _write_index(index, lambda: (index.read(force=False), _stage_head_entries(repo, index, behind, entries)))
        # A `git clean` that read the old index (the file untracked there) may have deleted a file until
        # now; from now on git sees it tracked and leaves it alone.
        restore_behind(repo, behind, entries)
        _behind_path(repo).unlink(missing_ok=True)
    except (pygit2.GitError, KeyError, OSError) as error:
        raise RepositoryError(f"cannot bring the index of {repo.workdir} up to HEAD: {error}") from None


def _write_index(index: pygit2.Index, prepare: Callable[[], object] | None = None) -> None:
    """``index.write()``, tried again for up to ``config.GIT_LOCK_WAIT_S`` seconds while a running git
    holds ``index.lock`` (a ``git status`` takes it for milliseconds to refresh the index's stat data,
    and libgit2 fails at once when it finds it); ``prepare`` (reading and staging) runs before each
    try, so what that git wrote is read again. Raises pygit2.GitError."""
    import time

    deadline = time.monotonic() + config.GIT_LOCK_WAIT_S
    while True:
        try:
            if prepare is not None:
                prepare()
            index.write()
            return
        except pygit2.GitError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
        time.sleep(0.01)


def catch_up_in_child(root: Layout, lock: WaitLock) -> None:
    """Catch the index of ``root`` up (``catch_up_index``) in a forked child that keeps ``lock``
    (the held ``.commit.lock``), and return at once: what ``sandman remember`` does after
    printing, so its caller neither waits for the index nor sees it behind once the child ends
    (docs/BANK-FORMAT.md, "The index behind HEAD").

    The standard streams are flushed before the fork (the child never writes buffered
    output twice); the child points its standard streams at ``/dev/null`` at once, so a
    caller reading this process's output to its end gets it when this process exits. The
    child shares the lock's open file, so the lock stays held until it exits; this process
    closes its descriptor without unlocking. A child that fails leaves the record for the
    next writer. Without ``os.fork``, or when it fails, the catch-up runs here. With nothing
    behind, the lock is released. For a process about to exit, with no other thread: never
    the MCP server's. Never raises.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass  # the reader has gone: nothing more reaches it
    try:
        if not _behind_file(root).exists():
            lock.release()
            return
        pid = os.fork()
    except (OSError, AttributeError, RepositoryError):
        try:
            catch_up_index(open_repo(root))
        except RepositoryError:
            pass  # the record stays for the next writer
        lock.release()
        return
    if pid:
        lock.leave_to_child()
        return
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        os.setsid()  # a Ctrl-C at the caller's terminal after it returned does not reach the child
        catch_up_index(open_repo(root))
        code = 0
    except BaseException as error:  # the child of a fork must reach os._exit whatever happens
        try:
            from sandman import journal

            journal.write(root, "remember", "catch-up-failed", error=f"{type(error).__name__}: {error}")
        except BaseException:
            pass
    finally:
        os._exit(code)


def _behind_file(root: Layout) -> Path:
    git = root.root / ".git"
    return (git if git.is_dir() else Path(open_repo(root).path)) / INDEX_BEHIND


def restore_behind(repo: pygit2.Repository, behind: list[str] | None = None, entries: dict | None = None) -> list[str]:
    """Put HEAD's file back at each path of ``index_behind`` the working tree lacks; return those
    paths, sorted.

    While the index is behind, ``git status`` shows a remembered memory as untracked and a
    person's ``git clean`` deletes it: recovery restores it rather than commit its deletion
    (docs/BANK-FORMAT.md, "The index behind HEAD"). ``behind``: the record, when the caller has
    read it; ``entries``: ``_entries_at(HEAD's tree, behind)``, when the caller has them. The caller
    holds ``.commit.lock``. Raises RepositoryError.
    """
    from sandman.store.atomic import write_atomic

    behind = index_behind(repo) if behind is None else behind
    if not behind:
        return []
    workdir = Path(repo.workdir)
    restored = []
    try:
        for path, entry in (_entries_at(_head_tree(repo), behind) if entries is None else entries).items():
            if entry is None or entry.filemode not in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
                continue
            if os.path.lexists(workdir / path) or repo.path_is_ignored(path):
                continue
            write_atomic(workdir / path, repo[entry.id].data,
                         0o755 if entry.filemode == FileMode.BLOB_EXECUTABLE else 0o644)
            restored.append(path)
    except (pygit2.GitError, OSError) as error:
        raise RepositoryError(f"cannot restore {behind} from HEAD in {repo.workdir}: {error}") from None
    return restored


def _new_tree(repo: pygit2.Repository, tree, changes: dict, before: dict, prefix: str = "") -> pygit2.Oid | None:
    """Write ``tree`` (None: an empty tree) with ``changes`` applied; return its id, None when it is empty.

    ``changes`` maps a name to a ``(blob id, mode)``, None (remove it) or the changes of the
    subtree of that name; only the trees on the changed paths are rebuilt. ``before`` receives
    the blob id each changed path had (None: none). The caller has turned libgit2's check that
    each entry exists off: they come from HEAD's trees and the blobs just written."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    for name, change in changes.items():
        old = builder.get(name)
        if isinstance(change, dict):
            sub = repo[old.id] if old is not None and old.type_str == "tree" else None
            written = _new_tree(repo, sub, change, before, prefix + name + "/")
            if written is not None:
                builder.insert(name, written, pygit2.enums.FileMode.TREE)
            elif old is not None:
                builder.remove(name)
            continue
        before[prefix + name] = old.id if old is not None and old.type_str == "blob" else None
        if change is not None:
            builder.insert(name, *change)
        elif old is not None:
            builder.remove(name)
    return builder.write() if len(builder) else None


def _leaves(changes: dict, prefix: str = ""):
    """``(path, change)`` of every file of a ``_new_tree`` changes mapping."""
    for name, change in changes.items():
        if isinstance(change, dict):
            yield from _leaves(change, prefix + name + "/")
        else:
            yield prefix + name, change


def commit_flat(
    repo: pygit2.Repository, paths: list[str], subject: str, trailers: dict[str, str],
    vet: Callable[[list[tuple[str, str]]], None] | None = None, catch_up_below: int = 0,
) -> str | None:
    """``commit_paths`` without the git index: HEAD's tree with exactly ``paths`` (repo-relative files,
    added, changed or deleted in the working tree) applied, one commit; return its id, or None (no
    commit, nothing recorded) when that tree is HEAD's: ``paths`` need not be checked against HEAD
    first (``dirty_among`` would read and hash each file once more).

    Only the blobs of ``paths`` and the trees on their way to the root are written, so
    the cost follows what the commit changes, not the root's size (issue 29: reading
    and writing the index of 50,000 memories took 60 ms). ``vet`` is called as for
    ``commit_paths``. Before HEAD moves, ``paths`` are appended to the ``index_behind``
    record (fsynced), which the next writer that uses the index catches up
    (``catch_up_index``); when the index file is at most ``catch_up_below`` bytes, it is
    caught up now. HEAD must be born (a first commit goes through ``commit_paths``). The
    caller holds ``.commit.lock``. Raises RepositoryError (GitBusy: a person's git holds one
    of git's lock files, nothing written); what ``vet`` raises.
    """
    with writing(repo):
        oid = _commit_flat(repo, paths, subject, trailers, vet)
        if oid is None:
            return None
        try:
            if os.stat(Path(repo.path) / "index").st_size <= catch_up_below:
                _catch_up(repo, index_behind(repo))
        except (OSError, RepositoryError):
            pass  # the commit is made: the record stays, and the next writer using the index catches up
    return str(oid)


def _commit_flat(repo: pygit2.Repository, paths: list[str], subject: str, trailers: dict[str, str],
                 vet: Callable[[list[tuple[str, str]]], None] | None) -> pygit2.Oid | None:
    """``commit_flat``'s commit, inside ``writing``; None when the tree is HEAD's."""
    workdir = Path(repo.workdir)
    try:
        head = repo.head.peel(pygit2.Commit)
        changes: dict = {}
        written: dict[str, bytes] = {}  # each blob's bytes, for vet: not read back and inflated again
        for path in paths:
            *folders, name = path.split("/")
            node = changes
            for folder in folders:
                node = node.setdefault(folder, {})
            on_disk = workdir / path
            try:
                status = os.lstat(on_disk)
            except FileNotFoundError:
                status = None
            if status is not None and S_ISREG(status.st_mode):
                mode = FileMode.BLOB_EXECUTABLE if status.st_mode & 0o111 else FileMode.BLOB
                # The bytes as they are, as hashfile reads them (dirty_among): create_blob_fromdisk would
                # look for filters in .gitattributes, which libgit2 reads from the whole index.
                with open(on_disk, "rb") as file:
                    written[path] = file.read()
                node[name] = (repo.create_blob(written[path]), mode)
            else:
                node[name] = None  # gone, or a link: never committed (docs/BANK-FORMAT.md, "Symbolic links")
        before: dict[str, pygit2.Oid | None] = {}
        pygit2.option(Option.ENABLE_STRICT_OBJECT_CREATION, False)
        try:
            tree = _new_tree(repo, head.tree, changes, before)
            if tree is None:
                tree = repo.TreeBuilder().write()
        finally:
            pygit2.option(Option.ENABLE_STRICT_OBJECT_CREATION, True)
        if tree == head.tree.id:
            return None  # every path holds HEAD's bytes (or HEAD holds no file there and neither does the disk)
        if vet is not None:
            after = {path: None if change is None else change[0] for path, change in _leaves(changes)}
            vet(_added_lines(repo, [(path, before[path], after[path]) for path in sorted(after)], written))
        record = os.open(_behind_path(repo), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(record, "".join(path + "\0" for path in paths).encode("utf-8", "surrogateescape"))
            os.fsync(record)
        finally:
            os.close(record)
        author = signature(repo)
        oid = repo.create_commit("HEAD", author, author, format_message(subject, trailers), tree, [head.id])
    except (pygit2.GitError, KeyError, OSError) as error:
        raise RepositoryError(f"cannot commit {subject!r} in {repo.workdir}: {error}") from None
    return oid


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """Build the commit signature: $SANDMAN_GIT_NAME/EMAIL, else git config, else sandman."""
    identity = config.git_identity()
    if identity is None:
        try:
            identity = (repo.config["user.name"], repo.config["user.email"])
        except (KeyError, pygit2.GitError):
            identity = DEFAULT_IDENTITY
    return pygit2.Signature(*identity)


def format_message(subject: str, trailers: dict[str, str | list[str]], body: str = "") -> str:
    """Return a commit message: one subject line, a blank line, ``Key: value`` trailers.

    A ``body`` (sync's list of kept conflicts) goes between the subject and the
    trailers, separated by blank lines. A list value gives one trailer line per
    item (an upkeep commit carries ``Event:`` of its plan and of each merge).
    """
    subject = " ".join(subject.split())
    lines = [f"{key}: {' '.join(str(item).split())}" for key, value in trailers.items()
             for item in (value if isinstance(value, (list, tuple)) else [value]) if item]
    text = subject + "\n"
    if body.strip():
        text += "\n" + body.strip() + "\n"
    return text + ("\n" + "\n".join(lines) + "\n" if lines else "")


# --- git's lock files (docs/BANK-FORMAT.md, "Git's lock files") ------------------------------


def _git_locks(repo: pygit2.Repository) -> list[Path]:
    """The lock files of git's that a sandman commit takes: the index's, HEAD's, the branch's."""
    gitdir = Path(repo.path)
    locks = [gitdir / "index.lock", gitdir / "HEAD.lock"]
    try:
        head = repo.lookup_reference("HEAD")
        if head.type == pygit2.enums.ReferenceType.SYMBOLIC:
            locks.append(gitdir / f"{head.target}.lock")
    except (pygit2.GitError, KeyError, ValueError):
        pass
    return locks


def _clear_stale_locks(repo: pygit2.Repository) -> None:
    """Remove the git lock files a killed sandman left; raise GitBusy when one is anyone else's.

    A lock file is a killed sandman's only when ``.git/sandman-writing`` (``GIT_WRITER``)
    names a process that no longer runs (or this one: an earlier write of this process
    failed, under the commit lock it holds). Any other lock file is a live ``git``'s (a
    person's ``git commit`` with its editor open): deleting it would let two writers tear
    the index. It is waited for, up to ``config.GIT_LOCK_WAIT_S`` seconds (a ``git status``
    holds index.lock for milliseconds); then nothing is written.
    """
    import time

    present = [path for path in _git_locks(repo) if os.path.lexists(path)]
    if not present:
        return
    writer = Path(repo.path) / GIT_WRITER
    try:
        left = json.loads(writer.read_bytes())
        pid, start = (left.get("pid"), left.get("start")) if isinstance(left, dict) else (None, None)
    except (OSError, ValueError):
        pid = start = None
    if pid is None or (pid != os.getpid() and procs.running(pid, start)):
        deadline = time.monotonic() + config.GIT_LOCK_WAIT_S
        while present and time.monotonic() < deadline:
            time.sleep(0.01)
            present = [path for path in present if os.path.lexists(path)]
        if not present:
            return
        raise GitBusy(f"git is busy in the memory root: {present[0]} is held by a running git command "
                      f"(not sandman's); let it finish and try again, or delete that file if no git runs "
                      f"in {repo.workdir}")
    for path in present:
        path.unlink(missing_ok=True)


@contextmanager
def writing(repo: pygit2.Repository) -> Iterator[None]:
    """Around sandman's writes of git's index or refs: the stale lock files of a killed sandman
    removed (GitBusy for anyone else's), then ``.git/sandman-writing`` holding this process's
    pid and start time (atomically), removed at the end. The caller holds ``.commit.lock``.
    Not nested (the inner one's end would remove the outer one's record). Raises GitBusy,
    RepositoryError."""
    from sandman.store.atomic import write_atomic

    _clear_stale_locks(repo)
    writer = Path(repo.path) / GIT_WRITER
    me = os.getpid()
    try:
        write_atomic(writer, json.dumps({"pid": me, "start": procs.process_start(me)}), durable=False)
    except OSError as error:
        raise RepositoryError(f"cannot write {writer}: {error}") from None
    try:
        yield None
    finally:
        try:
            writer.unlink(missing_ok=True)
        except OSError:
            pass  # left: it names this process, whose end makes it stale


def commit_paths(
    repo: pygit2.Repository, paths: list[str], subject: str, trailers: dict[str, str],
    vet: Callable[[list[tuple[str, str]]], None] | None = None,
) -> str:
    """Stage exactly ``paths`` (added, changed or deleted) and commit them; return the id.

    The index first catches up with what flat commits left behind (``index_behind``:
    HEAD's entries there, never the working tree's), so its tree is HEAD's plus ``paths``.

    ``vet``, when given, is called with ``(path, added lines)`` for every file
    the commit changes (``added_lines_of``: what sync's pre-push scan
    will read of this commit) before the commit is made; what it raises is
    raised, with the paths staged in the repository's index in memory, not
    on disk (the caller resets the index).

    The caller holds ``.commit.lock``. The lock files a killed sandman commit
    leaves (``.git/index.lock``, and ``HEAD.lock`` or the branch's
    ``refs/heads/<branch>.lock`` when it died moving the branch) are removed
    first, and only those (``writing``): a lock left there would fail every
    later commit, while one a person's running git holds is theirs.
    Raises RepositoryError (GitBusy: nothing written).
    """
    with writing(repo):
        return _commit_paths(repo, paths, subject, trailers, vet)


def _commit_paths(repo: pygit2.Repository, paths: list[str], subject: str, trailers: dict[str, str],
                  vet: Callable[[list[tuple[str, str]]], None] | None) -> str:
    """``commit_paths``' work, inside ``writing``."""
    try:
        index = repo.index
        index.read(force=False)
        behind = index_behind(repo)
        _stage_head_entries(repo, index, behind)  # what flat commits left behind, then the paths
        workdir = Path(repo.workdir)
        for path in paths:
            if (workdir / path).exists():
                index.add(path)
            elif path in index:
                index.remove(path)
        # The tree first, then the index written once: it then keeps the tree cache, so the next
        # commit rebuilds only the trees of the paths it stages, not every tree of the root. libgit2's
        # check that each entry of a rebuilt tree exists (a stat per entry) is off meanwhile: every
        # entry comes from the index, whose blobs index.add has just written (issue 29).
        pygit2.option(Option.ENABLE_STRICT_OBJECT_CREATION, False)
        try:
            tree = index.write_tree()
        finally:
            pygit2.option(Option.ENABLE_STRICT_OBJECT_CREATION, True)
        parents = [] if repo.head_is_unborn else [repo.head.target]
        if vet is not None:
            vet(added_lines_of(repo, repo[parents[0]].tree if parents else None, repo[tree], paths))
        _write_index(index)
        if behind:
            _behind_path(repo).unlink(missing_ok=True)
        author = signature(repo)
        message = format_message(subject, trailers)
        oid = repo.create_commit("HEAD", author, author, message, tree, parents)
    except (pygit2.GitError, KeyError, OSError) as error:
        raise RepositoryError(f"cannot commit {subject!r} in {repo.workdir}: {error}") from None
    return str(oid)


def tree_added_lines(repo: pygit2.Repository, old, new) -> list[tuple[str, str]]:
    """Return ``(path, text)``: the lines tree ``new`` adds to each file of tree ``old`` (None: an
    empty tree), joined by newlines. Every file is diffed as text (a binary-looking file too).
    The one reading of "what a commit adds": sync's pre-push scan and the check every commit
    sandman makes is held to (store.repo.commit_paths' ``vet``)."""
    if old is not None:
        diff = repo.diff(old, new, flags=DiffOption.FORCE_TEXT)
    else:
        diff = new.diff_to_tree(swap=True, flags=DiffOption.FORCE_TEXT)
    found = []
    for patch in diff:
        lines = [line.content for hunk in patch.hunks for line in hunk.lines if line.origin == "+"]
        if lines:
            found.append((patch.delta.new_file.path, "".join(lines)))
    return found


def added_lines_of(repo: pygit2.Repository, old, new, paths: list[str]) -> list[tuple[str, str]]:
    """``tree_added_lines`` for a commit known to change only ``paths`` (repo-relative files): each
    path's blob in tree ``old`` (None: an empty tree) diffed with its blob in ``new``, as text.

    The same ``(path, text)`` pairs, in path order, for a cost that grows with what the commit
    changes; libgit2's diff of two trees walks every entry of both (issue 29).
    """
    paths = sorted(set(paths))
    before, after = _blobs_at(old, paths), _blobs_at(new, paths)
    return _added_lines(repo, [(path, before[path], after[path]) for path in paths])


def _added_lines(repo: pygit2.Repository, changes: list[tuple[str, pygit2.Oid | None, pygit2.Oid | None]],
                 contents: dict[str, bytes] | None = None) -> list[tuple[str, str]]:
    """``added_lines_of`` from ``(path, blob before or None, blob after or None)`` triples;
    ``contents`` maps a path to the bytes of its blob after, when the caller has them."""
    found = []
    for path, before, after in changes:
        if after is None or before == after:
            continue
        # The two buffers diffed without the repository: a blob's diff there first reads the
        # attributes of the path, and libgit2 reads them from the whole index (45 ms at 50,000
        # memories). ``old_data`` and ``new_data`` stay referenced while the patch is read.
        old_data = repo[before].data if before is not None else None
        new_data = contents[path] if contents is not None and path in contents else repo[after].data
        text = _inserted(old_data or b"", new_data)
        if text is None:
            patch = pygit2.Patch.create_from(old_data, new_data, flag=DiffOption.FORCE_TEXT)
            text = "".join(line.content for hunk in patch.hunks for line in hunk.lines if line.origin == "+")
            del patch
        if text:
            found.append((path, text))
    return found


def _inserted(old: bytes, new: bytes) -> str | None:
    """The lines ``new`` inserts into ``old`` at one place, as text, when that is all it changes
    (a memory written, MEMORY.md given its line); None otherwise, and for bytes that are not
    UTF-8. What a diff's added lines are for such a change, without the diff: libgit2's diff
    of MEMORY.md in a bank of 1,000 took 1.3 ms of every remember."""
    try:
        before = old.decode("utf-8").splitlines(keepends=True)
        after = new.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None
    if len(after) < len(before):
        return None
    start = 0
    while start < len(before) and before[start] == after[start]:
        start += 1
    if after[len(after) - len(before) + start:] != before[start:]:
        return None
    return "".join(after[start:len(after) - len(before) + start])
