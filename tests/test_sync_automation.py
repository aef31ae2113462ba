"""sync's automation, off by default: after each commit, and a detached sync at SessionStart."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from syncworld import add, head, make_world, remote_head

from sandman import config
from sandman.errors import ConfigError
from sandman.verbs.sync import maybe_sync_after_commit, spawn_background_sync, sync


def journal(layout) -> str:
    return "".join(path.read_text() for path in sorted(layout.trace.glob("sync-*.log")))


def test_settings_default_off(layout):
    assert config.settings(layout) == {}
    assert (config.sync_after_commit(layout), config.sync_fetch_at_start(layout)) == (False, False)
    assert config.sync_remote(layout) == "origin"


def test_settings_are_read_from_the_root(layout):
    layout.root.mkdir()
    layout.settings_file.write_text('[sync]\nafter_commit = true\nfetch_at_start = true\nremote = "backup"\n')
    assert (config.sync_after_commit(layout), config.sync_fetch_at_start(layout)) == (True, True)
    assert config.sync_remote(layout) == "backup"


@pytest.mark.parametrize("text, expected", [
    ("[sync\n", "is not readable TOML"),
    ("[sync]\nafter_commit = \"yes\"\n", "sync.after_commit must be a bool, not 'yes'"),
    ("sync = 3\n", "[sync] must be a table"),
])
def test_bad_settings_are_named(layout, text, expected):
    layout.root.mkdir()
    layout.settings_file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        config.sync_after_commit(layout)
    assert str(layout.settings_file) in str(caught.value)
    assert expected in str(caught.value)


def test_after_commit_is_off_by_default(tmp_path):
    world = make_world(tmp_path)
    add(world.a, "Not pushed", "Stays local until a sync.")
    before = journal(world.a)
    assert maybe_sync_after_commit(world.a) is None
    assert remote_head(world.remote) != head(world.a)
    assert journal(world.a) == before


def test_after_commit_syncs_when_on(tmp_path):
    world = make_world(tmp_path)
    world.a.settings_file.write_text("[sync]\nafter_commit = true\n")
    add(world.a, "Pushed at once", "The commit travels.")
    result = maybe_sync_after_commit(world.a)
    assert result is not None and result.action == "pushed"
    assert remote_head(world.remote) == head(world.a)


def test_after_commit_never_raises(tmp_path):
    world = make_world(tmp_path)
    world.a.settings_file.write_text("[sync]\nafter_commit = true\n")
    world.remote.rename(tmp_path / "gone.git")
    add(world.a, "Stuck", "The remote is gone.")
    assert maybe_sync_after_commit(world.a) is None
    assert "sync failed remote=origin reason=unreachable" in journal(world.a)
    world.a.settings_file.write_text("[sync\n")
    assert maybe_sync_after_commit(world.a) is None
    assert "sync failed reason=settings" in journal(world.a)


def test_background_sync_is_not_spawned_when_off(tmp_path):
    world = make_world(tmp_path)
    assert spawn_background_sync(world.b) is None
    assert "spawned" not in journal(world.b)


def test_background_sync_runs_detached_and_integrates_without_pushing(tmp_path):
    world = make_world(tmp_path)
    add(world.a, "From the other machine", "Arrives by the next session.")
    sync(world.a)
    add(world.b, "Local only", "Not pushed by the background sync.")
    world.b.settings_file.write_text("[sync]\nfetch_at_start = true\n")
    pid = spawn_background_sync(world.b)
    assert pid is not None
    _, status = os.waitpid(pid, 0)  # the test waits; the hook never does
    assert os.waitstatus_to_exitcode(status) == 0
    text = journal(world.b)
    assert f"sync spawned pid={pid} background=true" in text
    assert "sync synced remote=origin action=merged" in text and "pushed=false kept=0 background=true" in text
    assert (world.b.bank("-work-proj") / "project_from_the_other_machine.md").is_file()
    assert remote_head(world.remote) == head(world.a)


def test_the_hook_can_import_sync_without_pygit2():
    code = (
        "import sys, sandman.verbs.sync as s; "
        "heavy = [m for m in ('pygit2', 'typer', 'jinja2', 'markdown_it', 'rich', 'yaml', 'filelock') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
