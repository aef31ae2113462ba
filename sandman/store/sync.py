"""The memory root's traffic with a git remote, through pygit2 (never a ``git`` subprocess).

sync (sandman/sync/run.py) is built from these pieces:

- ``fetch`` and ``push`` talk to the remote. Credentials come from the usual
  places, through pygit2's RemoteCallbacks: the SSH agent (``$SSH_AUTH_SOCK``)
  for ssh URLs, a git credential helper (``credential.helper`` in git's config,
  run by sandman with the helper protocol) for https URLs. Nothing ever
  prompts. Every failure is a SyncError whose ``reason`` says which kind it was
  (``unreachable``, ``credentials``, ``rejected``) and whose message is one line.
  A push never forces: libgit2 refuses a non-fast-forward update, and sync
  reports it.
- Trees as flat dicts (``FlatTree``: repo-relative POSIX path -> (blob id hex,
  file mode)), so the merge policy (banks.merge) works on paths, and a merged
  flat tree is written back as a git tree without touching the working tree.
- ``create_commit`` makes a commit object without moving any reference, so a
  merge can be pushed before the local branch is moved: a rejected push leaves
  the local root as it was.
- ``move_branch`` checks a commit out (safe strategy: it never overwrites a
  change that is not committed) and moves the branch to it.
- ``hidden_paths`` finds dotted paths in commits about to be pushed: the hidden
  tier (raw transcripts, the journal) never leaves the machine. ``links``
  finds symbolic links in a tree: none is pushed or checked out.
  ``added_lines`` gives what those commits add, file by file, for the secrets
  ban.

The caller holds ``.commit.lock`` around all of it.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
import subprocess
from urllib.parse import unquote, urlsplit, urlunsplit

import pygit2
from pygit2.enums import CheckoutStrategy, CredentialType, FileMode

from sandman import config
from sandman.errors import InputError, SyncError
from sandman.store.capture import EXITED, TIMEOUT, Capture
from sandman.store.repo import catch_up_index, format_message, signature, tree_added_lines, writing

Entry = tuple[str, int]  # (blob id as hex, git file mode)
FlatTree = dict[str, Entry]  # repo-relative POSIX path -> entry


# --- names and URLs ----------------------------------------------------------


def redact(url: str) -> str:
    """Return ``url`` without a password in its user part (``https://me:tok@host`` -> ``https://me@host``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


def absolute_url(url: str) -> str:
    """Return a remote URL as it can be stored: a local path made absolute, anything else as given.

    A relative path (``../memory.git``) names a folder only from the folder it
    was typed in; stored as given, every later sync, run by a hook from
    another folder, fails. Local means git's rule: no ``<scheme>://``, and not
    scp-like ``[user@]host:path`` (a ``:`` before any ``/``). ``~`` is expanded.
    """
    if _SCHEME.match(url) or os.path.isabs(url):
        return url
    colon, slash = url.find(":"), url.find("/")
    if colon != -1 and (slash == -1 or colon < slash):
        return url
    return os.path.abspath(os.path.expanduser(url))


def is_relative_local(url: str) -> bool:
    """True when ``url`` is a local path that is not absolute (it works from one folder only)."""
    return absolute_url(url) != url


def check_remote_name(name: str) -> str:
    """Return ``name`` when git accepts it as a remote name; raise InputError otherwise.

    A name that starts with ``-`` is refused too, though ``git remote add --``
    takes one: every ``git push <name>`` would read it as an option.
    """
    if not name or name.startswith("-") or not pygit2.reference_is_valid_name(f"refs/remotes/{name}/HEAD"):
        raise InputError(
            f"remote name {name!r} is not one git accepts (it may not start with '-' or '.', nor hold a space, "
            "'..', '~', '^', ':', '?', '*', '[' or a backslash); pass another --remote NAME"
        )
    return name


def current_branch(repo: pygit2.Repository) -> str:
    """Return the short name of the branch HEAD is on. Raises SyncError (``not-a-branch``)."""
    if repo.head_is_unborn:
        raise SyncError("not-a-branch", f"{repo.workdir} has no commit yet; run `sandman init`")
    if repo.head_is_detached:
        raise SyncError(
            "not-a-branch", f"HEAD of {repo.workdir} is detached; check out a branch (git switch main)"
        )
    return repo.head.shorthand


def remote_url(repo: pygit2.Repository, name: str) -> str | None:
    """Return the URL of remote ``name``, or None when there is no such remote."""
    try:
        return repo.remotes[name].url
    except (KeyError, ValueError, pygit2.GitError):
        return None


def remotes(repo: pygit2.Repository) -> list[tuple[str, str]]:
    """Return ``(name, redacted URL)`` of every configured remote."""
    return [(remote.name, redact(remote.url or "")) for remote in repo.remotes]


def add_remote(repo: pygit2.Repository, name: str, url: str) -> bool:
    """Add remote ``name`` at ``url``; return False when it already points there.

    Raises SyncError (``remote-exists``) when it points elsewhere.
    """
    existing = remote_url(repo, name)
    if existing == url:
        return False
    if existing is not None:
        raise SyncError(
            "remote-exists",
            f"remote {name!r} already points at {redact(existing)}; "
            f"remove it (git -C {repo.workdir} remote remove {name}) or pass --remote NAME",
        )
    try:
        repo.remotes.create(name, url)
    except (ValueError, pygit2.GitError) as error:
        raise SyncError("unreachable", f"cannot add remote {name!r} at {redact(url)}: {error}") from None
    return True


def remove_remote(repo: pygit2.Repository, name: str) -> None:
    """Remove remote ``name`` (undoing a failed ``--setup``)."""
    try:
        repo.remotes.delete(name)
    except (KeyError, ValueError, pygit2.GitError):
        pass


def set_upstream(repo: pygit2.Repository, branch: str, remote: str) -> None:
    """Record ``remote``/``branch`` as the branch's upstream, so plain ``git pull`` works too."""
    repo.config[f"branch.{branch}.remote"] = remote
    repo.config[f"branch.{branch}.merge"] = f"refs/heads/{branch}"


def tracking_ref(remote: str, branch: str) -> str:
    return f"refs/remotes/{remote}/{branch}"


def tracking(repo: pygit2.Repository, remote: str, branch: str) -> pygit2.Oid | None:
    """Return what the last fetch saw of ``remote``'s ``branch``, or None when it has none."""
    ref = repo.references.get(tracking_ref(remote, branch))
    return ref.target if ref is not None else None


# --- credentials -------------------------------------------------------------


class Callbacks(pygit2.RemoteCallbacks):
    """Credentials from the SSH agent or a git credential helper; records push rejections.

    Each source is offered once: libgit2 asks again after a refusal, and the
    second ask ends the attempt with a SyncError (``credentials``) instead of a
    loop. ``rejected`` collects ``(ref, message)`` the remote refused.
    """

    def __init__(self, repo: pygit2.Repository):
        super().__init__()
        self.repo = repo
        self.tried: list[str] = []
        self.rejected: list[tuple[str, str]] = []

    def credentials(self, url: str, username_from_url: str | None, allowed_types: CredentialType):
        user = username_from_url or getpass.getuser()
        if allowed_types & CredentialType.USERNAME and "username" not in self.tried:
            self.tried.append("username")
            return pygit2.Username(user)
        if allowed_types & CredentialType.SSH_KEY and "ssh-agent" not in self.tried:
            self.tried.append("ssh-agent")
            if config.ssh_agent_socket():
                return pygit2.KeypairFromAgent(user)
        if allowed_types & CredentialType.USERPASS_PLAINTEXT and "credential-helper" not in self.tried:
            self.tried.append("credential-helper")
            found = helper_credentials(self.repo, url, username_from_url)
            if found is not None:
                return pygit2.UserPass(*found)
        raise SyncError("credentials", _no_credentials(url, allowed_types, self.tried))

    def push_update_reference(self, refname: str, message: str | None) -> None:
        if message:
            self.rejected.append((refname, message))


def _no_credentials(url: str, allowed: CredentialType, tried: list[str]) -> str:
    where = redact(url)
    if allowed & CredentialType.SSH_KEY:
        if "ssh-agent" in tried and config.ssh_agent_socket():
            return f"{where} refused the SSH agent's keys; add the right key (ssh-add) and check the remote grants it access"
        return f"no credentials for {where}: no SSH agent is running (SSH_AUTH_SOCK is unset); start one and ssh-add your key"
    if "credential-helper" in tried:
        return (
            f"no credentials for {where}: no git credential helper answered, or the remote refused what it gave; "
            "configure one (git config --global credential.helper ...) that knows this host"
        )
    return f"no usable credentials for {where}"


def helper_credentials(repo: pygit2.Repository, url: str, username: str | None) -> tuple[str, str] | None:
    """Ask the configured git credential helpers for ``url``; return ``(username, password)`` or None.

    Speaks the helper protocol (``get`` on stdin/stdout) with each
    ``credential.helper`` in config order, the way git would, but runs the
    helper program itself: ``!cmd`` through ``/bin/sh``, an absolute path as
    given, a bare name as ``git-credential-<name>`` from PATH or git's exec
    folders. A helper that fails, is missing, or takes over 20 s is skipped.
    Never prompts.
    """
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    request = f"protocol={parts.scheme}\nhost={host}\n" + (f"username={username}\n" if username else "") + "\n"
    for helper in _helpers(repo):
        argv = _helper_argv(helper)
        if argv is None:
            continue
        answer = _ask_helper([*argv, "get"], request)
        if answer is None:
            continue
        fields = dict(line.split("=", 1) for line in answer.splitlines() if "=" in line)
        if fields.get("password"):
            return fields.get("username") or username or "", fields["password"]
        if fields.get("quit", "").lower() in ("1", "true", "yes", "on"):
            break
    return None


def _ask_helper(argv: list[str], request: str) -> str | None:
    """Run one credential helper; return what it printed, None when it failed, took over
    ``config.CREDENTIAL_HELPER_TIMEOUT_S`` seconds, or printed over
    ``config.CREDENTIAL_HELPER_MAX_BYTES`` (it is killed, never read whole)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except OSError:
        return None
    capture = Capture(proc, request.encode("utf-8", "replace"), config.CREDENTIAL_HELPER_MAX_BYTES)
    try:
        ended = capture.until(config.CREDENTIAL_HELPER_TIMEOUT_S)
    except OSError:
        ended = TIMEOUT
    finally:
        capture.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    if ended != EXITED or proc.returncode != 0:
        return None
    return capture.stdout.decode("utf-8", "replace")


def _helpers(repo: pygit2.Repository) -> list[str]:
    helpers: list[str] = []
    try:
        values = list(repo.config.get_multivar("credential.helper"))
    except pygit2.GitError:
        return []
    for value in values:
        if value:
            helpers.append(value)
        else:  # git: an empty value clears the helpers configured before it
            helpers.clear()
    return helpers


def _helper_argv(helper: str) -> list[str] | None:
    if helper.startswith("!"):
        return ["/bin/sh", "-c", helper[1:] + ' "$@"', helper[1:]]
    try:
        words = shlex.split(helper)
    except ValueError:
        return None
    if not words:
        return None
    if os.path.isabs(words[0]):
        return words
    name = f"git-credential-{words[0]}"
    found = shutil.which(name)
    for folder in config.git_exec_dirs():
        if found:
            break
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found = str(candidate)
    return [found, *words[1:]] if found else None


# --- fetch and push ----------------------------------------------------------


def _remote(repo: pygit2.Repository, name: str) -> pygit2.Remote:
    try:
        return repo.remotes[name]
    except (KeyError, ValueError):
        raise SyncError(
            "no-remote", f"{repo.workdir} has no remote {name!r}; set one up with `sandman sync --setup <url>`"
        ) from None


def _timeouts() -> None:
    # libgit2's defaults wait on a dead server for minutes, holding .commit.lock.
    pygit2.settings.server_connect_timeout = int(config.SYNC_CONNECT_TIMEOUT_S * 1000)
    pygit2.settings.server_timeout = int(config.SYNC_SERVER_TIMEOUT_S * 1000)


def _local_path(url: str) -> str | None:
    """Return the folder a local remote names (a path or a file:// URL), else None."""
    if url.startswith("file://"):
        return unquote(urlsplit(url).path)
    return url if os.path.isabs(url) else None


def _failure(error: Exception, verb: str, name: str, url: str) -> SyncError:
    text = " ".join(str(error).split())
    local = _local_path(url)
    if local is not None and not os.path.isdir(local):
        # libgit2 words a missing folder as "unsupported URL protocol".
        text = f"{local} does not exist"
    lowered = text.lower()
    if any(word in lowered for word in ("authenticat", "credential", "401", "403", "permission denied")):
        return SyncError("credentials", f"cannot {verb} {name} ({redact(url)}): {text}")
    return SyncError("unreachable", f"cannot reach {name} ({redact(url)}): {text}")


def fetch(repo: pygit2.Repository, name: str) -> None:
    """Fetch remote ``name``'s branches into ``refs/remotes/<name>/``.

    Touches no branch, index or working-tree file. Raises SyncError
    (``no-remote``, ``unreachable``, ``credentials``).
    """
    remote = _remote(repo, name)
    _timeouts()
    try:
        remote.fetch(callbacks=Callbacks(repo), message=f"sandman sync: fetch {name}")
    except SyncError:
        raise
    except (pygit2.GitError, OSError) as error:
        raise _failure(error, "fetch from", name, remote.url or "") from None


def push(repo: pygit2.Repository, name: str, target: pygit2.Oid, branch: str) -> None:
    """Push commit ``target`` to ``refs/heads/<branch>`` of remote ``name``, never forced.

    On success the tracking ref ``refs/remotes/<name>/<branch>`` points at
    ``target``. Raises SyncError: ``rejected`` when the remote refused (it moved
    on since the fetch, or a server rule refused it), ``unreachable``,
    ``credentials``, ``no-remote``.
    """
    remote = _remote(repo, name)
    _timeouts()
    callbacks = Callbacks(repo)
    try:
        remote.push([f"{target}:refs/heads/{branch}"], callbacks=callbacks)
    except SyncError:
        raise
    except (pygit2.GitError, OSError) as error:
        # libgit2 words a remote that moved on in two ways, depending on
        # whether it has the remote's new commits locally.
        text = str(error).replace("-", "").lower()
        if "fastforward" in text or "not present locally" in text:
            raise SyncError(
                "rejected",
                f"{name} refused the push: its {branch} moved on after the fetch (another machine pushed); "
                "run sync again",
            ) from None
        raise _failure(error, "push to", name, remote.url or "") from None
    if callbacks.rejected:
        ref, message = callbacks.rejected[0]
        raise SyncError("rejected", f"{name} refused the push of {ref}: {' '.join(message.split())}")
    repo.references.create(tracking_ref(name, branch), target, force=True)
    point_unborn_head(remote.url or "", branch)


def point_unborn_head(url: str, branch: str) -> bool:
    """Point a local remote's HEAD at ``refs/heads/<branch>`` when it names a branch that does
    not exist; return True when it did.

    ``git init --bare`` makes HEAD name ``master`` (or ``init.defaultBranch``)
    while sandman pushes ``main``: a ``git clone`` of that remote then checks
    out nothing (docs/sync.md, "Setting up a private remote"). Only a remote
    on a path (or ``file://``) can be fixed here; a server sets its own default
    branch. Best effort: any error leaves the remote as it was.
    """
    local = _local_path(url)
    if local is None:
        return False
    try:
        remote = pygit2.Repository(local)
        if not remote.head_is_unborn or f"refs/heads/{branch}" not in remote.references:
            return False
        remote.set_head(f"refs/heads/{branch}")
        return True
    except (pygit2.GitError, KeyError, OSError, ValueError):
        return False


# --- trees and commits -------------------------------------------------------


def flat_tree(repo: pygit2.Repository, commit: pygit2.Oid | None) -> FlatTree:
    """Return every file of ``commit``'s tree as path -> (blob hex, mode); {} for None."""
    out: FlatTree = {}
    if commit is None:
        return out

    def walk(tree: pygit2.Tree, prefix: str) -> None:
        for entry in tree:
            path = prefix + entry.name
            if entry.type_str == "tree":
                walk(repo[entry.id], path + "/")
            else:
                out[path] = (str(entry.id), entry.filemode)

    walk(repo[commit].peel(pygit2.Tree), "")
    return out


def read_blob(repo: pygit2.Repository, blob: str) -> bytes:
    return repo[blob].read_raw()


def write_blob(repo: pygit2.Repository, data: bytes) -> str:
    return str(repo.create_blob(data))


def write_flat_tree(repo: pygit2.Repository, flat: FlatTree) -> pygit2.Oid:
    """Write a flat tree into the object database (not the index); return the tree id.

    Raises SyncError when a path is both a file and a folder.
    """
    # libgit2's index silently drops a file that a later path needs as a folder.
    folders = {path.rsplit("/", 1)[0] for path in flat if "/" in path}
    folders |= {folder.rsplit("/", i)[0] for folder in folders for i in range(1, folder.count("/") + 1)}
    clash = sorted(folders & set(flat))
    if clash:
        raise SyncError("conflict", f"cannot merge: {clash[0]} is a file on one side and a folder on the other")
    index = pygit2.Index()
    try:
        for path, (blob, mode) in sorted(flat.items()):
            index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=blob), mode))
        return index.write_tree(repo)
    except (pygit2.GitError, ValueError) as error:
        raise SyncError("conflict", f"cannot write the merged tree: {error}") from None


def create_commit(
    repo: pygit2.Repository, tree: pygit2.Oid, parents: list[pygit2.Oid],
    subject: str, trailers: dict[str, str], body: str = "",
) -> pygit2.Oid:
    """Create a commit object with sandman's signature; no reference moves."""
    author = signature(repo)
    message = format_message(subject, trailers, body)
    return repo.create_commit(None, author, author, message, tree, parents)


def move_branch(repo: pygit2.Repository, branch: str, target: pygit2.Oid, reason: str) -> None:
    """Check ``target`` out over a clean working tree and point ``branch`` (HEAD) at it.

    The safe strategy never overwrites an uncommitted change. Under store.repo.writing: a
    killed sync's git lock files are removed by the next writer, a person's running git's never.
    Raises SyncError, GitBusy (a person's git holds a lock file).
    """
    catch_up_index(repo)  # the safe checkout compares the working tree with the index: HEAD's there first
    with writing(repo):
        try:
            repo.checkout_tree(repo[target], strategy=CheckoutStrategy.SAFE)
            repo.references[f"refs/heads/{branch}"].set_target(target, f"sandman sync: {reason}")
        except (pygit2.GitError, KeyError) as error:
            raise SyncError("checkout", f"cannot check out {str(target)[:12]} in {repo.workdir}: {error}") from None


def outgoing(repo: pygit2.Repository, target: pygit2.Oid, remote_tip: pygit2.Oid | None) -> list[pygit2.Commit]:
    """Return the commits reachable from ``target`` that ``remote_tip`` does not have."""
    walker = repo.walk(target)
    if remote_tip is not None:
        walker.hide(remote_tip)
    return list(walker)


def is_hidden(path: str) -> bool:
    """True for a path of the hidden tier: any dotted component (but ``.gitignore``), or pending-takes/."""
    if path == ".gitignore":
        return False
    parts = path.split("/")
    return parts[0] == "pending-takes" or any(part.startswith(".") for part in parts)


def links(flat: FlatTree) -> list[str]:
    """Return the paths of ``flat`` that are symbolic links (git mode 120000), sorted.

    sync carries none either way (docs/BANK-FORMAT.md, "Symbolic links").
    """
    return sorted(path for path, (_, mode) in flat.items() if mode == FileMode.LINK)


def hidden_paths(repo: pygit2.Repository, commits: list[pygit2.Commit]) -> list[tuple[str, str]]:
    """Return ``(commit hex, path)`` for each hidden-tier path a commit adds or changes.

    Merge commits are skipped: their files come from their parents, which are
    checked themselves (or are already on the remote).
    """
    found = []
    for commit in commits:
        if len(commit.parents) > 1:
            continue
        if commit.parents:
            diff = repo.diff(commit.parents[0].tree, commit.tree)
        else:
            diff = commit.tree.diff_to_tree(swap=True)
        for delta in diff.deltas:
            path = delta.new_file.path
            if delta.status_char() != "D" and is_hidden(path):
                found.append((str(commit.id), path))
    return found


def added_lines(repo: pygit2.Repository, commits: list[pygit2.Commit]) -> list[tuple[str, str, str]]:
    """Return ``(commit hex, path, text)``: the lines each commit adds to each file, joined by newlines.

    Every file is diffed as text (a binary-looking file too). Merge commits
    are skipped, as for ``hidden_paths``: their files come from their parents.
    """
    found = []
    for commit in commits:
        if len(commit.parents) > 1:
            continue
        parent = commit.parents[0].tree if commit.parents else None
        found += [(str(commit.id), path, text) for path, text in tree_added_lines(repo, parent, commit.tree)]
    return found
