"""Git repositories the machine works, through pygit2 (never a ``git`` subprocess).

The trail's and reconcile's git layer (docs/BANK-FORMAT.md § reconcile):
finding repositories under folders, naming a repository's trunk, reading
commit trailers, walking what a branch reaches, and reverting commits into new
commit objects without a checkout (``revert_onto``: libgit2 merges in memory;
no commit hook ever runs, because libgit2 runs none). Like store.repo, this is a
pygit2 boundary: ``GitError``, ``KeyError`` and ``ValueError`` become
RepositoryError here.

A trunk is named, never guessed from what happens to be checked out:

1. ``sandman.trunk`` in the repository's git config, else
2. the branch ``refs/remotes/origin/HEAD`` points at, else
3. ``main`` or ``master`` when exactly one of them exists.

A trunk named by 1 or 2 that is not a local branch does not resolve, and the
repository fails (no fallback to 3).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import SortMode

from sandman.errors import RepositoryError
from sandman.store.repo import format_message, signature

_TRAILER = re.compile(r"([A-Za-z0-9][A-Za-z0-9-]*):[ \t]*(.*)")
SKIP_DIRS = {"node_modules", ".venv", "venv", "__pycache__", "target", "dist", "build"}


def trailers(message: str) -> list[tuple[str, str]]:
    """The trailers of a commit message: ``Key: value`` lines of its last paragraph (git's shape).

    The last paragraph counts when every non-blank line of it is a trailer or
    continues one (starts with a space), as ``git interpret-trailers`` reads it.
    """
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    if len(paragraphs) < 2:
        return []
    pairs: list[tuple[str, str]] = []
    for line in paragraphs[-1].splitlines():
        match = _TRAILER.fullmatch(line.rstrip())
        if match:
            pairs.append((match.group(1), match.group(2).strip()))
        elif line[:1] in (" ", "\t") and pairs:
            continue
        else:
            return []
    return pairs


def values(pairs: list[tuple[str, str]], key: str) -> list[str]:
    return [value for name, value in pairs if name.lower() == key.lower()]


def discover(folders: list[Path], *, depth: int = 4) -> list[Path]:
    """Return the git repositories under ``folders`` (a folder holding ``.git``), sorted.

    Does not descend into a repository it found, into dotted folders, or into
    dependency folders (``node_modules``…); at most ``depth`` levels down. A
    folder that cannot be listed is passed over.
    """
    found: set[Path] = set()

    def walk(folder: Path, level: int) -> None:
        if (folder / ".git").exists():
            found.add(folder)
            return
        if level >= depth:
            return
        try:
            children = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in children:
            if entry.name.startswith(".") or entry.name in SKIP_DIRS:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    walk(Path(entry.path), level + 1)
            except OSError:
                continue

    for folder in folders:
        walk(folder, 0)
    return sorted(found)


def open_at(path: Path) -> pygit2.Repository:
    """Open the repository whose working tree is ``path``. Raises RepositoryError."""
    try:
        return pygit2.Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, KeyError) as error:
        raise RepositoryError(f"{path} is not a git repository ({error})") from None


def common_dir(repo: pygit2.Repository) -> Path:
    """The repository's shared git folder: the same for a repository and each of its worktrees."""
    gitdir = Path(repo.path)
    commondir = gitdir / "commondir"
    if commondir.is_file():
        try:
            return (gitdir / commondir.read_text(encoding="utf-8").strip()).resolve()
        except OSError:
            pass
    return gitdir.resolve()


def trunk(repo: pygit2.Repository, where: str) -> tuple[str, pygit2.Oid]:
    """Return ``(branch name, tip)`` of the repository's trunk (the module's rules).

    ``where`` names the repository in messages. Raises RepositoryError when no
    trunk can be named or the named one does not resolve.
    """
    try:
        named = repo.config["sandman.trunk"]
        source = "sandman.trunk in its git config"
    except (KeyError, pygit2.GitError):
        named, source = None, ""
    if named is None:
        try:
            ref = repo.lookup_reference("refs/remotes/origin/HEAD")
            target = ref.target if isinstance(ref.target, str) else ""
            if target.startswith("refs/remotes/origin/"):
                named, source = target[len("refs/remotes/origin/"):], "origin/HEAD"
        except (KeyError, pygit2.GitError, ValueError):
            pass
    if named is not None:
        tip = _branch_tip(repo, named)
        if tip is None:
            raise RepositoryError(f"{where}: its trunk {named!r} (from {source}) does not resolve to a local "
                                  f"branch; create it or fix {source}")
        return named, tip
    candidates = [(name, tip) for name in ("main", "master") if (tip := _branch_tip(repo, name)) is not None]
    if len(candidates) != 1:
        raise RepositoryError(f"{where}: no trunk to name (no sandman.trunk, no origin/HEAD, and "
                              f"{'both main and master' if candidates else 'neither main nor master'}); "
                              "set one with `git config sandman.trunk <branch>`")
    return candidates[0]


def _branch_tip(repo: pygit2.Repository, name: str) -> pygit2.Oid | None:
    try:
        ref = repo.lookup_reference(f"refs/heads/{name}").resolve()
        return repo[ref.target].peel(pygit2.Commit).id
    except (KeyError, pygit2.GitError, ValueError, pygit2.InvalidSpecError):
        return None


def branch_tip(repo: pygit2.Repository, name: str) -> pygit2.Oid | None:
    """The commit ``refs/heads/<name>`` points at; None when there is no such branch."""
    return _branch_tip(repo, name)


def local_branches(repo: pygit2.Repository) -> list[str]:
    try:
        return sorted(repo.branches.local)
    except pygit2.GitError as error:
        raise RepositoryError(f"cannot list the branches of {repo.workdir or repo.path}: {error}") from None


@dataclass(frozen=True)
class Found:
    """A commit and its trailers."""

    id: str
    subject: str
    parents: int
    trailers: tuple[tuple[str, str], ...]


def walk(repo: pygit2.Repository, tips: list[pygit2.Oid], hide: list[pygit2.Oid] = (), *,
         needles: tuple[str, ...] = ()) -> Iterator[Found]:
    """Yield the commits ``tips`` reach (newest first, topological), ``hide`` and its ancestors left out.

    With ``needles``, only commits whose message contains one of them are
    parsed and yielded (a cheap filter before trailers are read). Raises
    RepositoryError.
    """
    try:
        if not tips:
            return
        walker = repo.walk(tips[0], SortMode.TOPOLOGICAL | SortMode.TIME)
        for oid in tips[1:]:
            walker.push(oid)
        for oid in hide:
            walker.hide(oid)
        for commit in walker:
            message = commit.message
            if needles and not any(needle in message for needle in needles):
                continue
            yield Found(str(commit.id), message.split("\n", 1)[0].strip(), len(commit.parent_ids),
                        tuple(trailers(message)))
    except (pygit2.GitError, KeyError, ValueError) as error:
        raise RepositoryError(f"cannot walk {repo.workdir or repo.path}: {error}") from None


def changed_paths(repo: pygit2.Repository, commit_id: str) -> list[str]:
    """The paths a (non-merge) commit changed against its parent. Raises RepositoryError."""
    try:
        commit = repo[commit_id]
        diff = repo.diff(commit.parents[0].tree, commit.tree) if commit.parents else \
            commit.tree.diff_to_tree(swap=True)
        return sorted({path for delta in diff.deltas for path in (delta.old_file.path, delta.new_file.path)})
    except (pygit2.GitError, KeyError, ValueError) as error:
        raise RepositoryError(f"cannot read commit {commit_id[:12]}: {error}") from None


class RevertConflict(RepositoryError):
    """Reverting a commit onto a tip conflicts; ``paths`` are the conflicted files."""

    def __init__(self, commit_id: str, paths: list[str], hint: str = ""):
        self.paths = paths
        super().__init__(f"reverting {commit_id[:12]} conflicts in {', '.join(paths)}" + (f": {hint}" if hint else ""))


def reverted_entries(repo: pygit2.Repository, commit_id: str, onto: pygit2.Oid,
                     ignore: tuple[str, ...] = ()) -> dict[str, tuple[bytes, int] | None]:
    """What reverting ``commit_id`` onto the commit ``onto`` does to each path the commit changed:
    ``path -> (bytes, mode)`` or None (removed). Paths under an ``ignore`` prefix are left out (and
    their conflicts forgiven). Computed in memory: no checkout. Raises RevertConflict,
    RepositoryError."""
    try:
        index = repo.revert_commit(repo[commit_id], repo[onto])
        conflicted = sorted({entry.path for trio in (index.conflicts or ()) for entry in trio if entry})
        bad = [path for path in conflicted if not path.startswith(ignore)]
        if bad:
            raise RevertConflict(commit_id, bad)
        result: dict[str, tuple[bytes, int] | None] = {}
        for path in changed_paths(repo, commit_id):
            if ignore and path.startswith(ignore):
                continue
            try:
                entry = index[path]
            except KeyError:
                result[path] = None
                continue
            result[path] = (repo[entry.id].data, entry.mode)
        return result
    except (pygit2.GitError, KeyError, ValueError) as error:
        raise RepositoryError(f"cannot revert {commit_id[:12]}: {error}") from None


def revert_onto(repo: pygit2.Repository, commit_id: str, onto: pygit2.Oid, trailers: dict[str, str]) -> pygit2.Oid:
    """Create (without moving any reference or touching the working tree) the commit that reverts
    ``commit_id`` on top of ``onto``: ``Revert "<subject>"``, the usual ``This reverts commit``
    line, then ``trailers``. Returns its id. Raises RevertConflict, RepositoryError."""
    try:
        original = repo[commit_id]
        index = repo.revert_commit(original, repo[onto])
        if index.conflicts is not None:
            paths = sorted({entry.path for trio in index.conflicts for entry in trio if entry})
            raise RevertConflict(commit_id, paths)
        tree = index.write_tree(repo)
        subject = original.message.split("\n", 1)[0].strip()
        message = format_message(f'Revert "{subject}"', trailers, body=f"This reverts commit {commit_id}.")
        author = signature(repo)
        return repo.create_commit(None, author, author, message, tree, [onto])
    except (pygit2.GitError, KeyError, ValueError) as error:
        raise RepositoryError(f"cannot revert {commit_id[:12]} in {repo.workdir or repo.path}: {error}") from None


def check_reverts(repo: pygit2.Repository, commit_ids: list[str], onto: pygit2.Oid) -> None:
    """Revert ``commit_ids`` (in order) one after another onto the commit ``onto`` in memory, as
    revert_onto would, and raise RevertConflict at the first that conflicts: a dry run's
    prediction. Moves no reference, touches no working tree and creates no commit (the merged
    trees it chains are unreachable objects). Raises RevertConflict, RepositoryError."""
    try:
        current = repo[onto].peel(pygit2.Commit).tree
        empty = None
        for commit_id in commit_ids:
            commit = repo[commit_id]
            if commit.parents:
                parent = commit.parents[0].tree
            else:
                empty = empty or repo[repo.TreeBuilder().write()]
                parent = empty
            index = repo.merge_trees(commit.tree, current, parent)
            if index.conflicts is not None:
                paths = sorted({entry.path for trio in index.conflicts for entry in trio if entry})
                raise RevertConflict(commit_id, paths)
            current = repo[index.write_tree(repo)]
    except (pygit2.GitError, KeyError, ValueError) as error:
        raise RepositoryError(f"cannot revert in {repo.workdir or repo.path}: {error}") from None


def branch_lock(repo: pygit2.Repository, name: str) -> Path | None:
    """Return the lock file of ``refs/heads/<name>`` when one exists (git, or a process killed
    while writing the branch, holds it), else None."""
    lock = Path(repo.path) / "refs" / "heads" / f"{name}.lock"
    return lock if os.path.lexists(lock) else None


def set_branch(repo: pygit2.Repository, name: str, target: pygit2.Oid, *, checked_out_ok: bool = False) -> None:
    """Point ``refs/heads/<name>`` at ``target`` (created or moved). Refuses, unless
    ``checked_out_ok``, a branch that is checked out (its working tree would no longer match).
    Raises RepositoryError."""
    try:
        if not checked_out_ok and not repo.head_is_unborn and not repo.head_is_detached \
                and repo.head.name == f"refs/heads/{name}":
            raise RepositoryError(f"{repo.workdir}: {name} is checked out; switch to another branch first")
        repo.references.create(f"refs/heads/{name}", target, force=True)
    except (pygit2.GitError, KeyError, ValueError) as error:
        raise RepositoryError(f"cannot set {name} in {repo.workdir or repo.path}: {error}") from None


def add_worktree(repo: pygit2.Repository, name: str, path: Path, branch: str, tip: pygit2.Oid) -> Path:
    """Create ``refs/heads/<branch>`` at ``tip`` and a worktree named ``name`` at ``path`` checking it
    out (the shift's own working tree; the repository's own checkout is not touched). Raises
    RepositoryError when the branch or the path already exists, or libgit2 refuses."""
    try:
        if branch_tip(repo, branch) is not None:
            raise RepositoryError(f"{repo.workdir}: branch {branch} already exists")
        if os.path.lexists(path):
            raise RepositoryError(f"{path} already exists; a worktree needs a new folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        ref = repo.references.create(f"refs/heads/{branch}", tip)
        repo.add_worktree(name, str(path), ref)
        return path
    except (pygit2.GitError, KeyError, ValueError, OSError) as error:
        raise RepositoryError(f"cannot add a worktree for {branch} in {repo.workdir or repo.path}: {error}") from None
