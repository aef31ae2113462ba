"""Which commits touched which file, and what each did to it: the history behind the site.

One walk of the log from HEAD records, per commit, the paths that differ from
its first parent (a root commit: every path it holds). The result is a
``PathHistory``: commit facts by id, and per repo-relative path the ids that
touched it, newest first. It serialises to JSON so a caller can keep it between
runs; ``update`` then walks only the commits HEAD gained since (HEAD rewritten
by a rebase or reset means one full walk again). Diffs are computed on demand
(``DiffReader``: one tree diff per commit, patches only for the files asked
for), so only the pages being written pay for them. A merge commit is
compared with its first parent.

Paths are repo-relative POSIX strings, as git tree entries are. Like
store.repo, this module is a pygit2 boundary: ``GitError`` and ``KeyError``
become RepositoryError here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pygit2

from sandman.errors import RepositoryError

FORMAT = 1


@dataclass(frozen=True)
class CommitInfo:
    """The facts of one commit the site shows: id (hex), UTC time, author, message parts."""

    id: str
    time: str  # YYYY-MM-DDTHH:MM:SSZ
    author: str
    subject: str
    trailers: tuple[tuple[str, str], ...]

    def to_json(self) -> list:
        return [self.time, self.author, self.subject, [list(pair) for pair in self.trailers]]

    @classmethod
    def from_json(cls, commit_id: str, data: list) -> "CommitInfo":
        time, author, subject, trailers = data
        return cls(commit_id, time, author, subject, tuple((key, value) for key, value in trailers))


@dataclass(frozen=True)
class FileChange:
    """One commit's change to one file: the commit, the path it changed, the unified diff."""

    commit: CommitInfo
    path: str
    diff: str


def _trailers(message: str) -> tuple[tuple[str, str], ...]:
    # Trailers are the last paragraph when every line of it is ``Key: value``.
    paragraphs = message.strip().split("\n\n")
    if len(paragraphs) < 2:
        return ()
    pairs = []
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(": ")
        if not sep or not key or " " in key:
            return ()
        pairs.append((key, value.strip()))
    return tuple(pairs)


def commit_info(commit: pygit2.Commit) -> CommitInfo:
    """Return the CommitInfo of a pygit2 commit (time converted to UTC)."""
    moment = datetime.fromtimestamp(commit.commit_time, timezone.utc)
    message = commit.message
    return CommitInfo(
        id=str(commit.id),
        time=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        author=commit.author.name,
        subject=message.split("\n", 1)[0].strip(),
        trailers=_trailers(message),
    )


def _tree_diff(repo: pygit2.Repository, commit: pygit2.Commit) -> pygit2.Diff:
    if commit.parents:
        return repo.diff(commit.parents[0].tree, commit.tree)
    return commit.tree.diff_to_tree(swap=True)


def _touched(diff: pygit2.Diff) -> list[str]:
    paths = set()
    for delta in diff.deltas:
        paths.add(delta.old_file.path)
        paths.add(delta.new_file.path)
    return sorted(paths)


class PathHistory:
    """Per path, the commits that touched it (newest first), as of one HEAD."""

    def __init__(self, head: str | None = None, commits: dict[str, CommitInfo] | None = None,
                 paths: dict[str, list[str]] | None = None):
        self.head = head
        self.commits: dict[str, CommitInfo] = commits or {}
        self.paths: dict[str, list[str]] = paths or {}
        # The tree diffs of the commits the last update walked (not serialised): a DiffReader
        # given them does not diff those trees a second time.
        self.diffs: dict[str, pygit2.Diff] = {}

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "head": self.head,
            "commits": {key: info.to_json() for key, info in self.commits.items()},
            "paths": self.paths,
        }

    @classmethod
    def from_json(cls, data: object) -> "PathHistory":
        """Rebuild from ``to_json`` output; anything unreadable gives an empty history (walked afresh)."""
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                return cls()
            commits = {key: CommitInfo.from_json(key, value) for key, value in data["commits"].items()}
            paths = {key: list(value) for key, value in data["paths"].items()}
            head = data["head"]
            if head is not None and not isinstance(head, str):
                return cls()
            return cls(head, commits, paths)
        except (KeyError, TypeError, ValueError, AttributeError):
            return cls()

    def commits_of(self, path: str) -> list[CommitInfo]:
        """Return the commits that touched ``path``, newest first (empty for an unknown path)."""
        return [self.commits[commit_id] for commit_id in self.paths.get(path, ())]

    def update(self, repo: pygit2.Repository) -> int:
        """Bring the history up to the repository's HEAD; return how many commits were walked.

        Walks only the commits HEAD gained since ``self.head`` when that is an
        ancestor of HEAD; otherwise (a rewritten history) starts over. An unborn
        HEAD empties the history. When HEAD has not moved, HEAD's commit and tree are
        still read, so a repository whose objects are gone is noticed without a walk.
        Raises RepositoryError.
        """
        try:
            if repo.head_is_unborn:
                self.head, self.commits, self.paths = None, {}, {}
                return 0
            head = str(repo.head.target)
            if head == self.head:
                # Nothing to walk, but the repository must still be readable: HEAD's commit and
                # its tree (two object reads, well under a millisecond) fail when its objects are gone.
                repo[repo.head.target].peel(pygit2.Tree)
                return 0
            known = self.head is not None and self.head in self.commits and _is_ancestor(repo, head, self.head)
            if not known:
                self.commits, self.paths = {}, {}
            walker = repo.walk(repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
            if known:
                walker.hide(pygit2.Oid(hex=self.head))
            fresh: dict[str, list[str]] = {}
            walked = 0
            for commit in walker:
                walked += 1
                info = commit_info(commit)
                self.commits[info.id] = info
                diff = self.diffs[info.id] = _tree_diff(repo, commit)
                for path in _touched(diff):
                    fresh.setdefault(path, []).append(info.id)
        except (pygit2.GitError, KeyError, ValueError) as error:
            raise RepositoryError(f"cannot walk the history of {repo.workdir}: {error}") from None
        for path, ids in fresh.items():
            self.paths[path] = ids + self.paths.get(path, [])
        self.head = head
        return walked


def _is_ancestor(repo: pygit2.Repository, head: str, old: str) -> bool:
    try:
        return repo.descendant_of(pygit2.Oid(hex=head), pygit2.Oid(hex=old))
    except (pygit2.GitError, KeyError, ValueError):
        return False


class DiffReader:
    """Per-file diffs of commits: one tree diff per commit however many of its files are asked for.

    A commit's patches are generated lazily, only for the paths asked for, so a
    commit touching a whole bank costs one tree diff, not one per file.
    """

    def __init__(self, repo: pygit2.Repository, diffs: dict[str, pygit2.Diff] | None = None):
        """``diffs``: tree diffs already made (``PathHistory.diffs``), by commit id."""
        self.repo = repo
        self._diffs: dict[str, tuple[pygit2.Diff, dict[str, int]]] = {}
        self._made = diffs or {}
        self._expected: dict[str, int] = {}  # commit id -> how many of its files will be asked for
        self._texts: dict[str, dict[str, str]] = {}  # commit id -> path -> diff, made in one pass

    def expect(self, commit_ids) -> None:
        """Say which commits' files will be asked for (one id per file). A commit with two or more
        files asked for has all its patches made in one pass over the diff, which costs less
        than making them one by one (pygit2 indexes a diff's patches slowly)."""
        for commit_id in commit_ids:
            self._expected[commit_id] = self._expected.get(commit_id, 0) + 1

    def diff(self, commit_id: str, path: str) -> str:
        """Return the unified diff of ``path`` between ``commit_id`` and its first parent.

        Empty when the commit did not touch ``path``; invalid UTF-8 shows as
        U+FFFD. Raises RepositoryError for an unknown commit.
        """
        try:
            found = self._diffs.get(commit_id)
            if found is None:
                diff = self._made.get(commit_id)
                if diff is None:
                    diff = _tree_diff(self.repo, self.repo[commit_id])
                where: dict[str, int] = {}
                for i, delta in enumerate(diff.deltas):
                    where[delta.new_file.path] = i
                    where.setdefault(delta.old_file.path, i)
                found = self._diffs[commit_id] = (diff, where)
            diff, where = found
            if path not in where:
                return ""
            if self._expected.get(commit_id, 0) >= 2:
                texts = self._texts.get(commit_id)
                if texts is None:
                    texts = self._texts[commit_id] = {}
                    for patch in diff:
                        text = patch.data.decode("utf-8", "replace")
                        texts[patch.delta.new_file.path] = text
                        texts.setdefault(patch.delta.old_file.path, text)
                return texts[path]
            data = diff[where[path]].data
        except (pygit2.GitError, KeyError, ValueError) as error:
            raise RepositoryError(f"cannot read commit {commit_id[:12]} of {self.repo.workdir}: {error}") from None
        return data.decode("utf-8", "replace")


def file_history(repo: pygit2.Repository, path: str, history: PathHistory | None = None) -> list[FileChange]:
    """Return every commit that touched ``path``, newest first, each with its diff of the file.

    ``history`` is brought up to HEAD and reused when given (one walk serves
    many files); without it the log is walked once for this call. Raises
    RepositoryError.
    """
    history = history if history is not None else PathHistory()
    history.update(repo)
    reader = DiffReader(repo)
    return [FileChange(info, path, reader.diff(info.id, path)) for info in history.commits_of(path)]
