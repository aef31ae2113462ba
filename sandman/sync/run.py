"""The sync: carry memory between machines through a git remote (docs/sync.md).

Under ``.commit.lock``, so it never races a commit:

1. fetch the remote (nothing local changes yet; an unreachable remote or
   missing credentials ends here);
2. commit what a killed process left in the working tree (banks.commit.recover);
3. remote ahead: fast-forward. Local ahead: push. Both moved: build the merge
   (banks.merge) as a commit object with two parents, push it, and only then
   check it out. A rejected push therefore leaves HEAD, index and working tree
   as they were. Never a force-push, never a rebase.

The automation entry points are here too, for the verbs that run them:
``maybe_sync_after_commit`` (dream and reflect call it after they commit) and
``spawn_background_sync`` (recall's SessionStart hook calls it). Module level
is standard library only, so the hook can import this module; git work is
imported inside the functions that do it. The ``sandman sync`` verb
(sandman/verbs/sync.py) is the command over this module; nothing here imports
sandman.verbs or sandman.cli.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from sandman import config, journal
from sandman.errors import ConfigError, InputError, LockBusy, SandmanError, SyncError
from sandman.layout import Layout
from sandman.store.detach import sandman_argv, spawn_detached


@dataclass
class SyncResult:
    """What one sync did.

    ``action``: ``up-to-date``, ``pushed`` (only this machine had new commits),
    ``fast-forwarded`` (only the remote had), ``merged`` (both), ``adopted`` (a
    fresh root took the remote's history whole), or ``not-pushed`` (``--no-push``
    with local commits the remote lacks). ``incoming``/``outgoing`` count
    commits; ``kept`` lists the banks.merge.Kept of a merge.
    """

    remote: str
    branch: str
    action: str
    head: str
    pushed: bool = False
    incoming: int = 0
    outgoing: int = 0
    recovered: str | None = None
    kept: list = field(default_factory=list)

    def lines(self) -> list[str]:
        """Return what to tell the person: one summary line, then one line per kept conflict."""
        target = f"{self.remote}/{self.branch}"
        summary = {
            "up-to-date": f"up to date with {target}",
            "pushed": f"pushed {self.outgoing} commit(s) to {target}",
            "fast-forwarded": f"fast-forwarded {self.incoming} commit(s) from {target}",
            "adopted": f"adopted {target}'s history ({self.incoming} commit(s)); this root had nothing of its own",
            "merged": f"merged {self.incoming} commit(s) from {target} with {self.outgoing} of this machine's",
            "not-pushed": f"{self.outgoing} commit(s) not pushed to {target} (--no-push)",
        }[self.action]
        if self.action == "merged":
            summary += "; pushed" if self.pushed else "; not pushed (--no-push)"
        lines = [f"{summary}; HEAD {self.head[:12]}"]
        if self.recovered:
            lines.append(f"committed changes left in the working tree first ({self.recovered[:12]}, recover)")
        lines += [kept.describe(self.remote) for kept in self.kept]
        return lines


def sync(layout: Layout, *, remote: str | None = None, push: bool = True, background: bool = False) -> SyncResult:
    """Fetch, then fast-forward, push, or merge and push; return what was done.

    ``remote`` defaults to ``sync.remote`` of ``<root>/.settings.toml``, else
    ``origin``. ``background`` gives up at once when ``.commit.lock`` is held.
    Raises InputError (a ``remote`` name git would not accept), SyncError (one line; the local root as it was: see docs/sync.md),
    LockBusy, ConfigError, RepositoryError.
    """
    from sandman.store import repo as store
    from sandman.store.sync import check_remote_name

    name = check_remote_name(remote) if remote is not None else config.sync_remote(layout)
    if not store.is_repository(layout):
        raise SyncError("no-root", f"{layout.root} is not a memory root yet; run `sandman init`")
    timeout = 0 if background else config.COMMIT_LOCK_TIMEOUT_S
    return _guarded(layout, name, background, lambda: _locked(layout, store.commit_lock(layout, timeout), name, push))


def setup(layout: Layout, url: str, *, remote: str | None = None) -> SyncResult:
    """Add remote ``url`` (as ``remote``, default ``origin``) and make the first push.

    The root is created first when needed. A remote that already has history
    is merged with (or, for a fresh root, adopted) before the push. On failure
    the remote is removed again. A relative local path is stored absolute
    (against the current folder). Raises InputError (an empty URL, a remote
    name git would not accept), SyncError, LockBusy, RepositoryError.
    """
    from sandman.store import repo as store
    from sandman.store import sync as git

    name = git.check_remote_name(remote) if remote is not None else config.sync_remote(layout)
    if not url.strip():
        raise InputError("--setup needs the URL of a git repository (ssh, https, or a path)")
    url = git.absolute_url(url)  # a relative path would work from this folder only
    store.ensure_root(layout)

    def run() -> SyncResult:
        with store.locked(store.commit_lock(layout)):
            repo = store.open_repo(layout)
            branch = git.current_branch(repo)
            added = git.add_remote(repo, name, url)
            try:
                result = _sync_locked(layout, name, push=True)
            except BaseException:
                if added:
                    git.remove_remote(repo, name)
                raise
            git.set_upstream(repo, branch, name)
        journal.write(layout, "sync", "set-up", remote=name, url=git.redact(url))
        return result

    return _guarded(layout, name, False, run)


def _guarded(layout: Layout, name: str, background: bool, action) -> SyncResult:
    """Run ``action``; journal its outcome; word a failure as one line saying what stayed."""
    try:
        result = action()
    except LockBusy:
        journal.write(layout, "sync", "declined", remote=name, reason="busy", background=background)
        raise
    except SyncError as error:
        journal.write(layout, "sync", "failed", remote=name, reason=error.reason, error=str(error),
                      background=background)
        tail = "the local root is unchanged"
        if error.recovered:
            tail += f" (apart from committing leftover changes first, {error.recovered[:12]})"
        raise SyncError(error.reason, f"sync: {error}; {tail}") from None
    journal.write(
        layout, "sync", "synced", remote=name, action=result.action, head=result.head[:12],
        incoming=result.incoming, outgoing=result.outgoing, pushed=result.pushed,
        kept=len(result.kept), background=background,
    )
    for kept in result.kept:
        journal.write(layout, "sync", "kept", kind=kept.kind, file=kept.path, copy=kept.copy)
    return result


def _locked(layout: Layout, lock, name: str, push: bool) -> SyncResult:
    from sandman.store import repo as store

    with store.locked(lock):
        return _sync_locked(layout, name, push)


def _sync_locked(layout: Layout, name: str, push: bool) -> SyncResult:
    """The sync itself; the caller holds ``.commit.lock``."""
    from sandman.banks.commit import recover
    from sandman.store import repo as store
    from sandman.store import sync as git

    repo = store.open_repo(layout)
    branch = git.current_branch(repo)
    git.fetch(repo, name)
    recovered = recover(layout, repo)
    try:
        return _integrate(layout, repo, name, branch, push, recovered)
    except SyncError as error:
        error.recovered = recovered
        raise


def _integrate(layout: Layout, repo, name: str, branch: str, push: bool, recovered: str | None) -> SyncResult:
    from sandman.machine import trail
    from sandman.store import sync as git

    local = repo.head.target
    theirs = git.tracking(repo, name, branch)
    result = SyncResult(name, branch, "up-to-date", str(local), recovered=recovered)
    if local == theirs:
        return result
    if theirs is None or repo.descendant_of(local, theirs):
        result.outgoing = len(git.outgoing(repo, local, theirs))
        if push:
            _push(repo, name, branch, local, theirs)
        result.action, result.pushed = ("pushed", True) if push else ("not-pushed", False)
        return result
    result.outgoing, result.incoming = repo.ahead_behind(local, theirs)
    ours_tree = git.flat_tree(repo, local)
    theirs_tree = git.flat_tree(repo, theirs)
    _refuse_incoming_links(name, branch, ours_tree, theirs_tree)
    base = repo.merge_base(local, theirs)
    if base == local:
        git.move_branch(repo, branch, theirs, f"fast-forward to {name}/{branch}")
        result.action, result.head = "fast-forwarded", str(theirs)
        return result
    if base is None and ours_tree.items() <= theirs_tree.items():
        # A fresh root (its init commit only) meeting a remote with history:
        # everything it holds is already there, so take that history whole.
        git.move_branch(repo, branch, theirs, f"adopt {name}/{branch}")
        result.action, result.head, result.outgoing = "adopted", str(theirs), 0
        return result
    merged = _merge(layout, repo, base, ours_tree, theirs_tree)
    event = trail.new_event("sync.merge", f"merge {name}/{branch}",
                            data={"remote": name, "branch": branch, "kept": len(merged.kept)})
    _add_event_line(layout, repo, merged.tree, event)
    tree = git.write_flat_tree(repo, merged.tree)
    body = "\n".join(kept.describe(name) for kept in merged.kept)
    commit = git.create_commit(
        repo, tree, [local, theirs], f"sync: merge {name}/{branch}",
        {"Verb": "sync", **trail.trailers(event)}, body,
    )
    if push:
        _push(repo, name, branch, commit, theirs)
    git.move_branch(repo, branch, commit, f"merge {name}/{branch}")
    result.action, result.head, result.pushed, result.kept = "merged", str(commit), push, merged.kept
    return result


def _add_event_line(layout: Layout, repo, tree: dict, event) -> None:
    """Append the merge's ``sync.merge`` event to its day file in the merged flat tree, so the
    event lands in the merge commit itself (docs/BANK-FORMAT.md § trail)."""
    from sandman.store import sync as git

    path = layout.trail_day(event.day).relative_to(layout.root).as_posix()
    old = git.read_blob(repo, tree[path][0]) if path in tree else b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    tree[path] = (git.write_blob(repo, old + event.line().encode("utf-8") + b"\n"), 0o100644)


def _merge(layout: Layout, repo, base, ours_tree, theirs_tree):
    from sandman.banks.merge import merge_trees
    from sandman.store import sync as git
    from sandman.voyage import render_log_index

    class Blobs:
        def read(self, blob: str) -> bytes:
            return git.read_blob(repo, blob)

        def write(self, data: bytes) -> str:
            return git.write_blob(repo, data)

    def log_index(folder: Path) -> str:
        # The scratch copy keeps the folder's name, so its parent stands in for the root.
        return render_log_index(Layout(folder.parent))

    return merge_trees(
        layout, git.flat_tree(repo, base), ours_tree, theirs_tree, Blobs(), log_index=log_index
    )


def _refuse_incoming_links(name: str, branch: str, ours, theirs) -> None:
    """Raise SyncError (``link``) when the remote's tree holds a symbolic link this machine's lacks.

    Checked out, the link would make recall and the site read whatever it
    points at on this machine (docs/BANK-FORMAT.md, "Symbolic links"); the
    whole sync is refused rather than the link dropped, so no memory is lost.
    """
    from sandman.store import sync as git

    new = [path for path in git.links(theirs) if ours.get(path) != theirs[path]]
    if new:
        raise SyncError(
            "link",
            f"refusing to take {name}/{branch}: {new[0]} is a symbolic link, which would make this machine "
            "read whatever it points at here; delete it on the machine that made it",
        )


def _push(repo, name: str, branch: str, target, theirs) -> None:
    """Push ``target`` after checking no outgoing commit carries the hidden tier off the machine
    or adds a credential, and that its tree holds no symbolic link."""
    from sandman.banks.secrets import versioned_secrets
    from sandman.store import sync as git

    linked = git.links(git.flat_tree(repo, target))
    if linked:
        # The tree, not each commit: a link deleted since is not checked out anywhere.
        raise SyncError(
            "link",
            f"refusing to push: {linked[0]} is a symbolic link, which would make every machine read "
            "whatever it points at there; delete it (git rm) and sync again",
        )
    outgoing = git.outgoing(repo, target, theirs)
    hidden = git.hidden_paths(repo, outgoing)
    if hidden:
        commit, path = hidden[0]
        raise SyncError(
            "hidden",
            f"refusing to push: commit {commit[:12]} carries {path}, which belongs to the hidden tier "
            "and never leaves this machine; take it out of that commit's history first",
        )
    # Every commit sandman makes met this same check on these same lines (banks.commit's vet), so only
    # a commit made by hand (or by an older sandman) can be refused here: only what it adds is read.
    for commit, path, text in git.added_lines(repo, outgoing):
        kinds = versioned_secrets(text)
        if kinds:
            raise SyncError(
                "secret",
                f"refusing to push: commit {commit[:12]} adds a secret ({', '.join(kinds)}) to {path}; "
                "take it out of that commit's history first",
            )
    git.push(repo, name, target, branch)


# --- automation (docs/sync.md, "Automation") ---------------------------------


def maybe_sync_after_commit(layout: Layout) -> SyncResult | None:
    """Sync when ``sync.after_commit`` is on; dream and reflect call this after their commit.

    Call it outside ``.commit.lock`` (sync takes the lock itself). Never
    raises a SandmanError or OSError: a sync that fails is journalled (and
    shown by ``sandman doctor``), and the verb that called it has already
    committed. Returns the SyncResult, or None when off or failed.
    """
    try:
        if not config.sync_after_commit(layout):
            return None
        return sync(layout)
    except ConfigError as error:
        journal.write(layout, "sync", "failed", reason="settings", error=str(error))
    except (SandmanError, OSError):
        pass  # sync journalled its own failure
    return None


def background_sync(layout: Layout) -> SyncResult | None:
    """The detached SessionStart sync: fetch and integrate, never push, never wait for the lock.

    Never raises a SandmanError or OSError; every outcome is a journal line.
    """
    try:
        return sync(layout, push=False, background=True)
    except ConfigError as error:
        journal.write(layout, "sync", "failed", reason="settings", error=str(error), background=True)
    except (SandmanError, OSError) as error:
        if isinstance(error, OSError):
            journal.write(layout, "sync", "failed", reason="os", error=str(error), background=True)
    return None


def spawn_background_sync(layout: Layout) -> int | None:
    """Start ``sandman sync --background`` fully detached when ``sync.fetch_at_start`` is on.

    For recall's SessionStart hook: standard library only, returns at once
    (the fetch never delays the hook; its result is there for the next
    session). Returns the child's pid, or None when off or it could not start
    (journalled). Never raises.
    """
    try:
        if not config.sync_fetch_at_start(layout):
            return None
    except ConfigError as error:
        journal.write(layout, "sync", "failed", reason="settings", error=str(error), background=True)
        return None
    if not layout.root.is_dir():
        return None
    log = layout.trace_file("sync", journal.now_utc().strftime("%Y-%m-%d"))
    try:
        pid = spawn_detached(
            sandman_argv("sync", "--background"), log, {**os.environ, "SANDMAN_ROOT": str(layout.root)}
        )
    except OSError as error:
        journal.write(layout, "sync", "failed", reason="spawn", error=str(error), background=True)
        return None
    journal.write(layout, "sync", "spawned", pid=pid, background=True)
    return pid
