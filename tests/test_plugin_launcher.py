"""hooks/sandman, the plugin's launcher: every hook of hooks/hooks.json runs through it (issue 28;
docs/hooks.md, "The plugin without the sandman command"). Real subprocesses, as Claude Code runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sandman.verbs.hooks import is_sandman_hook

REPO = Path(__file__).resolve().parent.parent
LAUNCHER = REPO / "hooks" / "sandman"
START = json.dumps({"session_id": "s1", "cwd": "/tmp", "hook_event_name": "SessionStart", "source": "startup"})
PROMPT = '{"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}'
END = json.dumps({"session_id": "s1", "cwd": "/tmp", "hook_event_name": "SessionEnd", "reason": "other"})


def launch(args: list[str], payload: str, path: Path, data: Path) -> subprocess.CompletedProcess:
    """Run the launcher as a plugin hook is run: ``sh <launcher> <args>``, the payload on stdin."""
    env = {"PATH": f"{path}:/usr/bin:/bin", "HOME": str(data.parent), "CLAUDE_PLUGIN_DATA": str(data)}
    return subprocess.run(["sh", str(LAUNCHER), *args], input=payload.encode(), capture_output=True, env=env,
                          timeout=60)


@pytest.fixture
def empty_path(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    return folder


def test_every_plugin_hook_runs_sandman_through_the_launcher() -> None:
    plugin = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    commands = [entry["command"] for groups in plugin.values() for group in groups for entry in group["hooks"]]
    assert commands and all(command.startswith('sh "${CLAUDE_PLUGIN_ROOT}/hooks/sandman" ') for command in commands)
    # doctor and hooks install know it for sandman's own hook
    assert is_sandman_hook({"command": 'sh "${CLAUDE_PLUGIN_ROOT}/hooks/sandman" recall --hook'}, "recall")


def test_with_sandman_on_path_the_launcher_is_sandman_itself(empty_path: Path, tmp_path: Path) -> None:
    fake = empty_path / "sandman"
    fake.write_text('#!/bin/sh\necho "args: $*"\ncat\nexit 3\n')
    fake.chmod(0o755)
    done = launch(["take", "--hook", "--detach"], END, empty_path, tmp_path / "data")
    assert (done.returncode, done.stdout.decode(), done.stderr) == (3, f"args: take --hook --detach\n{END}", b"")


def test_the_launcher_finds_sandman_on_path_as_the_shell_would(tmp_path: Path) -> None:
    # PATH read without a subshell (issue 29): the first executable sandman wins; an entry is not a
    # pattern (``o*`` would name ``odd``); a folder's name may hold a space; a plain file or a
    # folder named sandman is passed by.
    first, second, odd, folder_named = tmp_path / "first bin", tmp_path / "second", tmp_path / "odd", tmp_path / "bx"
    for folder in (first, second, odd, folder_named):
        folder.mkdir()
    (first / "sandman").write_text("not executable\n")
    (folder_named / "sandman").mkdir()
    for folder in (second, odd):
        fake = folder / "sandman"
        fake.write_text(f'#!/bin/sh\necho "{folder.name}: $*"\n')
        fake.chmod(0o755)
    env = {"PATH": f"{tmp_path / 'o*'}:{folder_named}:{first}:{second}:/usr/bin:/bin",
           "HOME": str(tmp_path), "CLAUDE_PLUGIN_DATA": str(tmp_path / "data")}
    done = subprocess.run(["sh", str(LAUNCHER), "dream"], input=b"", capture_output=True, env=env, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"second: dream\n")
    # The launcher itself on PATH, linked, is passed by for the sandman after it.
    mine = tmp_path / "plugin"
    mine.mkdir()
    (mine / "sandman").symlink_to(LAUNCHER)
    env["PATH"] = f"{mine}:{second}:/usr/bin:/bin"
    done = subprocess.run(["sh", str(LAUNCHER), "dream"], input=b"", capture_output=True, env=env, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"second: dream\n")
    # An empty PATH is the current directory.
    done = subprocess.run(["/bin/sh", str(LAUNCHER), "dream"], input=b"", capture_output=True, cwd=odd,
                          env={**env, "PATH": ""}, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"odd: dream\n")


def test_without_sandman_the_first_session_start_says_what_to_install_once(empty_path: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = launch(["recall", "--hook"], START, empty_path, data)
    assert (first.returncode, first.stderr) == (0, b"")
    message = json.loads(first.stdout)["systemMessage"]
    assert message.startswith("sandman plugin: the sandman command is not installed (not on PATH)")
    assert "pipx install sandman-memory" in message and "uv tool install sandman-memory" in message
    for args, payload in [(["report", "--hook"], START), (["recall", "--hook"], START), (["prompt", "--hook"], PROMPT)]:
        again = launch(args, payload, empty_path, data)
        assert (again.returncode, again.stdout, again.stderr) == (0, b"", b"")


def test_the_missing_sandman_message_says_the_plugins_hooks_cannot_run_not_that_no_session_is_recalled(
        empty_path: Path, tmp_path: Path) -> None:
    """Hooks that ``sandman hooks install`` registered still take and recall the session (found by a tester)."""
    message = json.loads(launch(["recall", "--hook"], START, empty_path, tmp_path / "data").stdout)["systemMessage"]
    assert "no session is archived or recalled" not in message
    assert "this plugin's hooks cannot run" in message and "sandman hooks install" in message


@pytest.mark.parametrize("payload", [END, "", "not json"], ids=["session-end", "empty", "not-json"])
def test_without_sandman_a_hook_no_one_sees_exits_0_and_keeps_the_telling(payload: str, empty_path: Path,
                                                                          tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = launch(["take", "--hook", "--detach"], payload, empty_path, data)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert json.loads(launch(["prompt", "--hook"], PROMPT, empty_path, data).stdout)["systemMessage"]


def test_sandman_installed_again_and_removed_is_told_again(empty_path: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert launch(["recall", "--hook"], START, empty_path, data).stdout
    fake = empty_path / "sandman"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    assert launch(["recall", "--hook"], START, empty_path, data).returncode == 0
    os.remove(fake)
    assert json.loads(launch(["recall", "--hook"], START, empty_path, data).stdout)["systemMessage"]


def test_without_a_plugin_data_folder_the_marker_goes_to_the_users_state(empty_path: Path, tmp_path: Path) -> None:
    env = {"PATH": f"{empty_path}:/usr/bin:/bin", "HOME": str(tmp_path)}
    run = lambda: subprocess.run(["sh", str(LAUNCHER), "recall", "--hook"], input=START.encode(),  # noqa: E731
                                 capture_output=True, env=env, timeout=60)
    assert run().stdout and run().stdout == b""
    assert (tmp_path / ".local" / "state" / "sandman-plugin" / "sandman-missing-told").is_dir()


def test_the_prompt_hook_runs_the_fast_launcher_with_sandmans_interpreter(empty_path: Path, tmp_path: Path) -> None:
    """issue 29: ``recall --prompt-hook`` runs ``<the sandman script's python> -I -S <sandman>/fasthook.py``;
    where fasthook.py is, asked once, is kept beside the marker; a sandman whose "#!" names no
    interpreter of sandman's still runs as itself."""
    import sys

    import sandman

    (empty_path / "sandman").symlink_to(Path(sys.executable).with_name("sandman"))
    data = tmp_path / "data"
    payload = json.dumps({"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
                          "prompt": "How are the releases tagged?"})
    for _ in range(2):  # the first asks where fasthook.py is, the second reads it
        done = launch(["recall", "--prompt-hook"], payload, empty_path, data)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    kept = (data / "fasthook").read_text().splitlines()
    assert kept == [str(empty_path / "sandman"), sys.executable.replace(sys.executable, kept[1]),
                    str(Path(sandman.__file__).with_name("fasthook.py"))]
    assert os.access(kept[1], os.X_OK)
    journal = "".join(path.read_text() for path in (tmp_path / ".sandman" / ".trace").glob("recall-*.log"))
    assert journal.count("reason=no-root") == 2  # the full hook answered the unusual case, twice
    (empty_path / "sandman").unlink()
    fake = empty_path / "sandman"
    fake.write_text('#!/bin/sh\necho "args: $*"\n')
    fake.chmod(0o755)
    done = launch(["recall", "--prompt-hook"], payload, empty_path, data)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"args: recall --prompt-hook\n", b"")


def test_the_session_start_recall_runs_the_fast_launcher_too(empty_path: Path, tmp_path: Path) -> None:
    """issue 29: ``recall --hook`` takes the same fast launcher as the prompt hook; with no root the full
    hook answers, as it always did (nothing printed, a journal line)."""
    import sys

    (empty_path / "sandman").symlink_to(Path(sys.executable).with_name("sandman"))
    data = tmp_path / "data"
    payload = json.dumps({"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart",
                          "source": "startup"})
    done = launch(["recall", "--hook"], payload, empty_path, data)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert (data / "fasthook").is_file()  # the launcher was looked up: the fast path ran
    journal = "".join(path.read_text() for path in (tmp_path / ".sandman" / ".trace").glob("recall-*.log"))
    assert "reason=no-root" in journal
