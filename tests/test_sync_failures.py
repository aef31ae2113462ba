"""sync's failures: one clear line, a non-zero exit, and the local root exactly as it was."""

from __future__ import annotations

import shutil
import stat
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pygit2
import pytest
from helpers import git, sandman
from syncworld import add, bare_remote, head, make_world, remote_head, snapshot

from sandman.errors import LockBusy, SyncError
from sandman.layout import Layout
from sandman.store import repo as store
from sandman.store import sync as gitsync
from sandman.verbs import sync as verb
from sandman.verbs.init import init
from sandman.verbs.sync import background_sync, setup, sync


def diverge(world) -> None:
    add(world.a, "From A", "Written on A.")
    add(world.b, "From B", "Written on B.")
    sync(world.a)


def test_unreachable_remote_leaves_a_diverged_root_untouched(tmp_path, monkeypatch):
    world = make_world(tmp_path)
    diverge(world)
    world.remote.rename(tmp_path / "moved.git")
    before = snapshot(world.b)
    with pytest.raises(SyncError) as caught:
        sync(world.b)
    assert caught.value.reason == "unreachable"
    assert str(caught.value) == (f"sync: cannot reach origin ({world.url}): {world.remote} does not exist; "
                                 "the local root is unchanged")
    assert snapshot(world.b) == before
    monkeypatch.setenv("SANDMAN_ROOT", str(world.b.root))
    done = sandman("sync")
    assert done.returncode == 1
    assert done.stdout == b""
    assert done.stderr.decode().count("\n") == 1
    assert done.stderr.decode().startswith("sandman: sync: cannot reach origin")
    assert snapshot(world.b) == before
    journal = "".join(p.read_text() for p in world.b.trace.glob("sync-*.log"))
    assert "sync failed remote=origin reason=unreachable" in journal


def test_push_rejected_when_the_remote_moved_during_the_sync(tmp_path, monkeypatch):
    world = make_world(tmp_path)
    diverge(world)
    third = Layout(tmp_path / "c")
    init(third)
    setup(third, world.url)
    real_fetch = gitsync.fetch
    moved = []

    def fetch_then_someone_pushes(repo, name):
        real_fetch(repo, name)
        if not moved:  # the first fetch is B's; C's own sync fetches normally
            moved.append(True)
            add(third, "From C", "Pushed while B was merging.")
            sync(third)

    monkeypatch.setattr(gitsync, "fetch", fetch_then_someone_pushes)
    before = snapshot(world.b)
    with pytest.raises(SyncError) as caught:
        sync(world.b)
    assert caught.value.reason == "rejected", str(caught.value)
    assert "moved on after the fetch" in str(caught.value)
    assert snapshot(world.b) == before
    assert remote_head(world.remote) == head(third)
    monkeypatch.setattr(gitsync, "fetch", real_fetch)
    assert sync(world.b).action == "merged"  # the next sync takes C's commit in too
    assert remote_head(world.remote) == head(world.b)


def test_a_remote_refusal_reported_by_the_server_is_a_rejection(tmp_path, monkeypatch):
    """A server hook's refusal arrives through push_update_reference; libgit2's local
    transport runs no hooks, so the remote's answer is played here."""
    world = make_world(tmp_path)
    add(world.a, "Refused", "The server says no.")

    def refusing_push(self, specs, callbacks=None, **kwargs):
        callbacks.push_update_reference("refs/heads/main", "pre-receive hook declined")

    monkeypatch.setattr(pygit2.Remote, "push", refusing_push)
    before = snapshot(world.a)
    with pytest.raises(SyncError) as caught:
        sync(world.a)
    assert caught.value.reason == "rejected"
    assert "refused the push of refs/heads/main: pre-receive hook declined" in str(caught.value)
    assert snapshot(world.a) == before


class _NeedsAuth(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="memory"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def auth_server():
    """An http server on 127.0.0.1 that answers every request with 401."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NeedsAuth)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/memory.git"
    server.shutdown()
    thread.join()


def test_missing_credentials_is_one_line_and_changes_nothing(tmp_path, auth_server):
    world = make_world(tmp_path)
    diverge(world)
    repo = store.open_repo(world.b)
    repo.remotes.set_url("origin", auth_server)
    before = snapshot(world.b)
    with pytest.raises(SyncError) as caught:
        sync(world.b)
    assert caught.value.reason == "credentials"
    assert "no credentials for http://127.0.0.1" in str(caught.value)
    assert "credential helper" in str(caught.value)
    assert snapshot(world.b) == before


def test_credentials_from_a_helper_are_offered_once(tmp_path, auth_server):
    helper = tmp_path / "helper.sh"
    helper.write_text("#!/bin/sh\ncat >/dev/null\necho username=me\necho password=wrong\n")
    helper.chmod(helper.stat().st_mode | stat.S_IEXEC)
    world = make_world(tmp_path)
    git(world.b.root, "config", "credential.helper", str(helper))
    store.open_repo(world.b).remotes.set_url("origin", auth_server)
    with pytest.raises(SyncError) as caught:
        sync(world.b)
    assert caught.value.reason == "credentials"
    assert "refused what it gave" in str(caught.value)


def test_credential_helper_protocol(tmp_path):
    remote, _ = bare_remote(tmp_path)
    repo = pygit2.Repository(str(remote))
    seen = tmp_path / "request.txt"
    helper = tmp_path / "git-credential-fake"
    helper.write_text(f"#!/bin/sh\ncat > {seen}\necho username=robot\necho password=s3cret\n")
    helper.chmod(helper.stat().st_mode | stat.S_IEXEC)
    repo.config["credential.helper"] = f"!{helper}"
    assert gitsync.helper_credentials(repo, "https://example.org:8443/me/memory.git", None) == ("robot", "s3cret")
    assert seen.read_text() == "protocol=https\nhost=example.org:8443\n\n"
    repo.config["credential.helper"] = str(tmp_path / "missing-helper")
    assert gitsync.helper_credentials(repo, "https://example.org/x.git", "me") is None


def test_no_ssh_agent_is_named_in_the_error(tmp_path):
    remote, _ = bare_remote(tmp_path)
    callbacks = gitsync.Callbacks(pygit2.Repository(str(remote)))
    with pytest.raises(SyncError) as caught:
        callbacks.credentials("ssh://git@example.org/memory.git", "git", gitsync.CredentialType.SSH_KEY)
    assert caught.value.reason == "credentials"
    assert "SSH_AUTH_SOCK is unset" in str(caught.value)


def test_hidden_tier_is_never_pushed(tmp_path):
    world = make_world(tmp_path)
    (world.a.trace / "leak.log").write_text("raw\n")
    git(world.a.root, "add", "-f", ".trace/leak.log")
    git(world.a.root, "-c", "user.name=Hand", "-c", "user.email=hand@example.org", "commit", "-qm", "oops")
    published = remote_head(world.remote)
    before = snapshot(world.a)
    with pytest.raises(SyncError) as caught:
        sync(world.a)
    assert caught.value.reason == "hidden"
    assert ".trace/leak.log" in str(caught.value)
    assert remote_head(world.remote) == published
    assert snapshot(world.a) == before


def test_no_remote(layout):
    init(layout)
    with pytest.raises(SyncError) as caught:
        sync(layout)
    assert caught.value.reason == "no-remote"
    assert "sandman sync --setup <url>" in str(caught.value)


def test_no_root(layout):
    with pytest.raises(SyncError) as caught:
        sync(layout)
    assert "run `sandman init`" in str(caught.value)
    assert not layout.root.exists()


def test_setup_refuses_a_remote_that_points_elsewhere(tmp_path):
    world = make_world(tmp_path)
    _, other = bare_remote(tmp_path, "other.git")
    with pytest.raises(SyncError) as caught:
        setup(world.a, other)
    assert caught.value.reason == "remote-exists"
    assert gitsync.remote_url(store.open_repo(world.a), "origin") == world.url


def test_setup_with_an_unreachable_url_adds_no_remote(tmp_path, layout):
    init(layout)
    with pytest.raises(SyncError):
        setup(layout, (tmp_path / "nothing.git").as_uri())
    assert gitsync.remote_url(store.open_repo(layout), "origin") is None


def test_detached_head_is_refused(tmp_path):
    world = make_world(tmp_path)
    git(world.a.root, "checkout", "-q", "--detach")
    with pytest.raises(SyncError) as caught:
        sync(world.a)
    assert caught.value.reason == "not-a-branch"


def test_sync_waits_for_no_commit_in_the_background(tmp_path):
    world = make_world(tmp_path)
    with store.locked(store.commit_lock(world.a)):
        assert background_sync(world.a) is None
        with pytest.raises(LockBusy):
            verb.sync(world.a, background=True)
    journal = "".join(p.read_text() for p in world.a.trace.glob("sync-*.log"))
    assert "sync declined remote=origin reason=busy background=true" in journal


def test_password_in_a_url_never_reaches_the_journal(tmp_path):
    world = make_world(tmp_path)
    shutil.rmtree(world.remote)
    store.open_repo(world.a).remotes.set_url("origin", "https://me:hunter2@127.0.0.1:9/x.git")
    with pytest.raises(SyncError) as caught:
        sync(world.a)
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in "".join(p.read_text() for p in world.a.trace.glob("*.log"))
    assert gitsync.redact("https://me:hunter2@host:8/x") == "https://me@host:8/x"


def test_setup_needs_a_url(layout):
    done = sandman("sync", "--setup", " ")
    assert done.returncode == 2
    assert done.stderr.decode() == "sandman: --setup needs the URL of a git repository (ssh, https, or a path)\n"


def test_a_credential_helper_printing_megabytes_is_cut_off_not_read_whole(tmp_path):
    """Issue 20, fault 2: sandman reads no child's output without a limit; a helper that
    prints more than config.CREDENTIAL_HELPER_MAX_BYTES is skipped."""
    remote, _ = bare_remote(tmp_path)
    repo = pygit2.Repository(str(remote))
    helper = tmp_path / "git-credential-flood"
    helper.write_text("#!/bin/sh\nhead -c 1000000 /dev/zero | tr '\\0' x\necho\necho username=robot\n"
                      "echo password=s3cret\n")
    helper.chmod(helper.stat().st_mode | stat.S_IEXEC)
    repo.config["credential.helper"] = f"!{helper}"
    assert gitsync.helper_credentials(repo, "https://example.org/x.git", None) is None
