"""sync between two roots and a bare remote on disk: setup, fast-forward, merges (docs/sync.md)."""

from __future__ import annotations

import json

import pytest
from helpers import git, sandman
from syncworld import PROJECT, add, archive, bare_remote, edit, head, make_world, remote_head, versioned

from sandman.banks import frontmatter
from sandman.banks.commit import bank_transaction
from sandman.banks.index import render_index
from sandman.banks.memory import read_memory
from sandman.banks.names import bank_name
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, BANK_REFLECT, Layout
from sandman.verbs.init import init
from sandman.verbs.sync import setup, sync

BANK = bank_name(PROJECT)


def parents(layout: Layout, rev: str = "HEAD") -> list[str]:
    return git(layout.root, "rev-list", "--parents", "-n1", rev).split()[1:]


def assert_indexes_regenerated(layout: Layout) -> None:
    """Every bank's MEMORY.md is exactly what render_index makes of its folder now."""
    banks = [p for p in layout.memories.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert banks
    for bank in banks:
        assert (bank / BANK_INDEX).read_text(encoding="utf-8") == render_index(bank), bank.name


def assert_clean(layout: Layout) -> None:
    assert git(layout.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_setup_pushes_first_and_a_fresh_root_adopts_it(tmp_path, monkeypatch):
    remote, url = bare_remote(tmp_path)
    a, b = Layout(tmp_path / "a"), Layout(tmp_path / "b")
    add(a, "Build with make", "Run make before committing.")
    first = setup(a, url)
    assert (first.action, first.pushed) == ("pushed", True)
    assert remote_head(remote) == head(a)
    assert git(a.root, "config", "branch.main.remote").strip() == "origin"
    monkeypatch.setenv("SANDMAN_GIT_NAME", "Other Machine")  # its init commit differs from A's
    init(b)
    assert head(b) != git(a.root, "rev-list", "--max-parents=0", "HEAD").strip()
    second = setup(b, url)
    assert second.action == "adopted"
    assert head(b) == head(a)
    assert versioned(b) == versioned(a)
    assert_clean(b)


def test_setup_of_a_root_that_does_not_exist_creates_it(tmp_path, layout):
    _, url = bare_remote(tmp_path)
    result = setup(layout, url)
    assert result.action == "pushed"
    assert (layout.root / ".git").is_dir()


def test_remote_ahead_fast_forwards(tmp_path):
    world = make_world(tmp_path)
    path = add(world.a, "Deploy on Fridays", "Never deploy on Fridays.")
    assert sync(world.a).action == "pushed"
    result = sync(world.b)
    assert (result.action, result.incoming, result.outgoing) == ("fast-forwarded", 1, 0)
    assert head(world.b) == head(world.a)
    assert (world.b.root / path.relative_to(world.a.root)).read_bytes() == path.read_bytes()
    assert_clean(world.b)
    assert sync(world.b).action == "up-to-date"


def test_disjoint_memories_on_both_sides_merge_into_one_history(tmp_path):
    world = make_world(tmp_path)
    only_a = add(world.a, "Tests use pytest", "Run pytest -rs.")
    only_b = add(world.b, "Docs use mkdocs", "Build docs with mkdocs build --strict.")
    user_b = add(world.b, "Prefers short answers", "Answer briefly.", directory=None, memory_type="user")
    a_commit, b_commit = head(world.a), head(world.b)
    sync(world.a)
    result = sync(world.b)
    assert (result.action, result.pushed, result.kept) == ("merged", True, [])
    assert sorted(parents(world.b)) == sorted([a_commit, b_commit])
    message = git(world.b.root, "log", "-1", "--format=%B")
    assert message.startswith("sync: merge origin/main\n") and "Verb: sync" in message
    for path in (only_a, only_b, user_b):
        side = world.a if path.is_relative_to(world.a.root) else world.b
        assert (world.b.root / path.relative_to(side.root)).is_file()
    assert sync(world.a).action == "fast-forwarded"
    assert head(world.a) == head(world.b) == remote_head(world.remote)
    assert versioned(world.a) == versioned(world.b)
    for side in (world.a, world.b):
        assert_indexes_regenerated(side)
        assert_clean(side)


def test_same_memory_edited_on_both_sides_keeps_both_versions(tmp_path):
    world = make_world(tmp_path)
    original = add(world.a, "Release checklist", "Tag, build, upload.")
    sync(world.a)
    sync(world.b)
    edit(world.a, original.name, "Tag, build, sign, upload.")
    edit(world.b, original.name, "Tag, build, upload, announce.")
    sync(world.a)
    result = sync(world.b)
    assert result.action == "merged"
    [kept] = result.kept
    assert (kept.kind, kept.path) == ("both-changed", f"memories/{BANK}/{original.name}")
    copy = world.b.root / kept.copy
    assert copy.name == original.stem + "_2.md"
    assert read_memory(world.b.root / kept.path).body == "Tag, build, upload, announce.\n"
    assert read_memory(copy).body == "Tag, build, sign, upload.\n"
    assert read_memory(copy).front.get("conflict_of") == original.name
    lines = result.lines()
    assert any("kept both versions" in line and copy.name in line for line in lines)
    assert "kept both versions" in git(world.b.root, "log", "-1", "--format=%B")
    # Both sides archived the base version; both archive files survive.
    archived = list((world.b.bank(BANK) / BANK_ARCHIVE).iterdir())
    assert {read_memory(p).body for p in archived} == {"Tag, build, upload.\n"}
    assert_indexes_regenerated(world.b)
    index = (world.b.bank(BANK) / BANK_INDEX).read_text(encoding="utf-8")
    assert original.name in index and copy.name in index
    journal = "".join(p.read_text() for p in world.b.trace.glob("sync-*.log"))
    assert "sync kept kind=both-changed" in journal


def test_same_name_added_on_both_sides_keeps_both(tmp_path):
    world = make_world(tmp_path)
    add(world.a, "Cache location", "The cache lives in /var/cache/app.")
    add(world.b, "Cache location", "The cache lives in ~/.cache/app.")
    sync(world.a)
    result = sync(world.b)
    [kept] = result.kept
    assert kept.kind == "both-added"
    bodies = {read_memory(p).body for p in world.b.bank(BANK).glob("project_cache_location*.md")}
    assert bodies == {"The cache lives in /var/cache/app.\n", "The cache lives in ~/.cache/app.\n"}
    assert_indexes_regenerated(world.b)


def test_memory_archived_on_one_side_and_edited_on_the_other_stays_live(tmp_path):
    world = make_world(tmp_path)
    original = add(world.a, "Staging URL", "Staging is at staging.example.org.")
    sync(world.a)
    sync(world.b)
    archive(world.a, original.name)
    edit(world.b, original.name, "Staging moved to stage.example.org.")
    sync(world.a)
    result = sync(world.b)
    assert [k.kind for k in result.kept] == ["edit-kept"]
    live = world.b.bank(BANK) / original.name
    assert read_memory(live).body == "Staging moved to stage.example.org.\n"
    archived = {read_memory(p).body for p in (world.b.bank(BANK) / BANK_ARCHIVE).iterdir()}
    assert archived == {"Staging is at staging.example.org.\n"}
    assert_indexes_regenerated(world.b)


def test_archive_on_one_side_of_an_untouched_memory_travels(tmp_path):
    world = make_world(tmp_path)
    original = add(world.a, "Old port", "The API listens on 8080.")
    add(world.a, "Keeper", "Stays.")
    sync(world.a)
    sync(world.b)
    archive(world.a, original.name)
    add(world.b, "Unrelated", "Something else.")
    sync(world.a)
    assert sync(world.b).kept == []
    assert not (world.b.bank(BANK) / original.name).exists()
    assert [p.name.endswith(original.name) for p in (world.b.bank(BANK) / BANK_ARCHIVE).iterdir()] == [True]
    assert original.name not in (world.b.bank(BANK) / BANK_INDEX).read_text(encoding="utf-8")


def test_forget_on_one_side_of_an_untouched_memory_travels(tmp_path):
    """The one deliberate exception to "never lost": forget's deletion is the decision being synced."""
    world = make_world(tmp_path)
    secret = add(world.a, "Client name", "Working for ACME.")
    sync(world.a)
    sync(world.b)
    with bank_transaction(world.a, verb="forget", subject="forget") as tx:
        tx.delete(BANK, secret.name)
    add(world.b, "Unrelated", "Something else.")
    sync(world.a)
    sync(world.b)
    assert not (world.b.bank(BANK) / secret.name).exists()
    assert not (world.b.bank(BANK) / BANK_ARCHIVE).exists()


def test_other_file_changed_on_both_sides_keeps_this_machines(tmp_path):
    world = make_world(tmp_path)
    add(world.a, "Anchor", "So the bank exists.")
    sync(world.a)
    sync(world.b)
    for side, count in ((world.a, 1), (world.b, 2)):
        with bank_transaction(side, verb="reflect", subject="upkeep") as tx:
            tx.write_file(side.bank(BANK) / BANK_REFLECT, json.dumps({"at": "x", "count": count, "last_ops": 0}))
    sync(world.a)
    result = sync(world.b)
    assert [(k.kind, k.path) for k in result.kept] == [("file-both-changed", f"memories/{BANK}/{BANK_REFLECT}")]
    assert json.loads((world.b.bank(BANK) / BANK_REFLECT).read_text())["count"] == 2


def test_no_push_merges_locally_and_leaves_the_remote(tmp_path):
    world = make_world(tmp_path)
    add(world.a, "One", "From A.")
    add(world.b, "Two", "From B.")
    sync(world.a)
    published = remote_head(world.remote)
    result = sync(world.b, push=False)
    assert (result.action, result.pushed) == ("merged", False)
    assert remote_head(world.remote) == published
    assert len(parents(world.b)) == 2
    again = sync(world.b, push=False)
    assert (again.action, again.outgoing) == ("not-pushed", 2)
    assert sync(world.b).action == "pushed"
    assert remote_head(world.remote) == head(world.b)


def test_changes_left_in_the_working_tree_are_committed_and_pushed(tmp_path):
    world = make_world(tmp_path)
    path = add(world.a, "Half written", "First draft.")
    path.write_text(path.read_text().replace("First draft.", "Second draft."))
    result = sync(world.a)
    assert result.recovered and result.action == "pushed"
    assert_clean(world.a)
    assert "Second draft." in git(world.remote, "show", f"main:{path.relative_to(world.a.root).as_posix()}")


def test_hidden_tier_stays_local_after_sync(tmp_path):
    world = make_world(tmp_path)
    (world.a.trace / "secret.log").write_text("journal\n")
    world.a.recent.mkdir(parents=True, exist_ok=True)
    (world.a.recent / "s1.json").write_text("{}")
    add(world.a, "Visible", "Travels.")
    sync(world.a)
    sync(world.b)
    assert not (world.b.trace / "secret.log").exists()
    assert not (world.b.recent / "s1.json").exists()
    tracked = git(world.remote, "ls-tree", "-r", "--name-only", "main").split()
    assert all(not part.startswith(".") for path in tracked if path != ".gitignore" for part in path.split("/"))


def test_cli_sync_prints_what_it_did(tmp_path, layout):
    _, url = bare_remote(tmp_path)
    done = sandman("sync", "--setup", url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("pushed 1 commit(s) to origin/main")
    again = sandman("sync")
    assert again.returncode == 0
    assert again.stdout.decode().startswith("up to date with origin/main")


@pytest.mark.parametrize("seed", range(3))
def test_each_side_sees_the_same_tree_after_syncing_both_ways(tmp_path, seed):
    world = make_world(tmp_path)
    for i in range(seed + 1):
        add(world.a, f"A fact {i}", f"A body {i}.")
        add(world.b, f"B fact {i}", f"B body {i}.")
    for side in (world.a, world.b, world.a):
        sync(side)
    assert versioned(world.a) == versioned(world.b)
    assert frontmatter.parse((world.a.bank(BANK) / BANK_INDEX).read_text())[1].count("\n") == 2 * (seed + 1)


def test_help_lists_sync_and_doctor():
    done = sandman("--help")
    text = done.stdout.decode()
    assert "Carry memory to and from a git remote (never forced)." in text
    assert "Check root, hooks, minds, queue, journal and remote." in text
    options = sandman("sync", "--help").stdout.decode()
    assert "--setup URL" in options and "--no-push" in options


def _log_entry(layout: Layout, day: str, title: str) -> None:
    from sandman.banks.commit import bank_transaction
    from sandman.voyage import LogEntry, render_log_index

    with bank_transaction(layout, verb="reflect", subject=f"voyage {day}") as tx:
        tx.write_file(layout.log_entry(day), LogEntry(day=day, kind="passage", title=title, body="A day.\n").text())
        tx.write_file(layout.log_index, render_log_index(layout))


def test_voyage_entries_from_both_sides_merge_and_the_log_index_is_regenerated(tmp_path):
    from sandman.voyage import render_log_index

    world = make_world(tmp_path)
    _log_entry(world.a, "2026-11-20", "The first day, on A")
    sync(world.a)
    sync(world.b)
    _log_entry(world.a, "2026-11-22", "A sails on")
    _log_entry(world.b, "2026-11-21", "B sails on")
    sync(world.a)
    sync(world.b)
    index = world.b.log_index.read_text(encoding="utf-8")
    assert index == render_log_index(world.b)
    assert "began: 2026-11-20" in index
    assert [line[3:13] for line in index.splitlines() if line.startswith("- [")] == [
        "2026-11-20", "2026-11-21", "2026-11-22"]


def test_sync_setup_with_a_relative_path_stores_it_absolute_so_later_syncs_work(tmp_path, layout):
    remote, _ = bare_remote(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = sandman("sync", "--setup", "remote.git", cwd=tmp_path)  # relative to where it was typed
    assert done.returncode == 0, done.stderr
    assert git(layout.root, "remote", "get-url", "origin").strip() == str(remote)
    add(layout, "Build with make", "Run make before committing.")
    again = sandman("sync", cwd=elsewhere)  # the hooks run it from any folder
    assert again.returncode == 0, again.stderr
    assert remote_head(remote) == head(layout)


@pytest.mark.parametrize("url, stored", [
    ("git@github.com:me/memory.git", "git@github.com:me/memory.git"),
    ("host:memory.git", "host:memory.git"),
    ("https://example.com/me/memory.git", "https://example.com/me/memory.git"),
    ("file:///srv/memory.git", "file:///srv/memory.git"),
    ("/srv/memory.git", "/srv/memory.git"),
    ("../memory.git", "{cwd_parent}/memory.git"),
    ("./a:b/memory.git", "{cwd}/a:b/memory.git"),
])
def test_only_a_local_relative_path_is_made_absolute(tmp_path, monkeypatch, url, stored):
    from sandman.store.sync import absolute_url

    monkeypatch.chdir(tmp_path)
    assert absolute_url(url) == stored.format(cwd=tmp_path, cwd_parent=tmp_path.parent)


@pytest.mark.parametrize("name", ["-x", "--push", "a b", "a..b", "bad~name", "x:y", "-"])
def test_sync_refuses_a_remote_name_git_would_not_accept(tmp_path, layout, name):
    _, url = bare_remote(tmp_path)
    init(layout)
    for args in (["sync", "--setup", url, "--remote", name], ["sync", "--remote", name]):
        done = sandman(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.decode() == (
            f"sandman: remote name {name!r} is not one git accepts (it may not start with '-' or '.', nor hold "
            "a space, '..', '~', '^', ':', '?', '*', '[' or a backslash); pass another --remote NAME\n")
    assert git(layout.root, "remote").strip() == ""


def test_trail_lines_from_both_sides_are_kept_and_the_merge_carries_its_own_event(tmp_path):
    from sandman.machine import trail

    world = make_world(tmp_path)
    on_a = trail.append(world.a, "shift.commit", "a's decision")
    on_b = trail.append(world.b, "shift.commit", "b's decision")
    sync(world.a)
    assert sync(world.b).action == "merged"
    events = trail.read(world.b).events
    merge = events[-1]
    assert {on_a.id, on_b.id} <= {event.id for event in events} and merge.kind == "sync.merge"
    message = git(world.b.root, "log", "-1", "--format=%B")
    assert f"Event: {merge.id}" in message and "Kind: sync.merge" in message
    assert trail.read(world.b).skipped == []
    assert_clean(world.b)


def test_regression_trail_log_after_a_sync_merge_lists_oldest_first(tmp_path):
    """Issue 33: a merged day file holds this machine's lines, then the remote's; `trail log` listed
    them in that order, not oldest first as docs/trail.md says."""
    from datetime import datetime, timezone

    from sandman.machine import trail
    from sandman.verbs import trail as verb

    world = make_world(tmp_path)
    day = datetime.now(timezone.utc).replace(microsecond=0)
    older = trail.new_event("shift.commit", "a's earlier decision", now=day.replace(hour=1, minute=0, second=0))
    newer = trail.new_event("shift.commit", "b's later decision", now=day.replace(hour=2, minute=0, second=0))
    trail.append_event(world.a, older)
    trail.append_event(world.b, newer)
    sync(world.a)
    assert sync(world.b).action == "merged"
    listed = [event.id for event in verb.log(world.b, kind="shift")[0].events]
    assert listed == [older.id, newer.id]
    lines = sandman("trail", "log", "--kind", "shift", env={"SANDMAN_ROOT": str(world.b.root)}).stdout.decode().splitlines()
    assert [line.split()[1] for line in lines] == [older.id, newer.id]


@pytest.mark.parametrize("initial", ["master", "trunk"])
def test_setup_to_a_fresh_bare_remote_makes_a_git_clone_of_it_work(tmp_path, layout, initial):
    """Issue 20, fault 5: a bare remote made by `git init --bare` names refs/heads/master as its
    HEAD while sandman pushes main; `git clone` then warned 'remote HEAD refers to nonexistent
    ref' and checked out nothing."""
    import subprocess

    remote = tmp_path / "fresh.git"
    subprocess.run(["git", "-c", f"init.defaultBranch={initial}", "init", "-q", "--bare", str(remote)], check=True)
    result = sandman("sync", "--setup", str(remote))
    assert result.returncode == 0, result.stderr
    clone = subprocess.run(["git", "clone", str(remote), str(tmp_path / "second")], capture_output=True, text=True)
    assert clone.returncode == 0, clone.stderr
    assert "nonexistent ref" not in clone.stderr and "warning" not in clone.stderr, clone.stderr
    assert git(tmp_path / "second", "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert (tmp_path / "second" / ".gitignore").read_bytes() == layout.gitignore.read_bytes()
    assert git(remote, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
