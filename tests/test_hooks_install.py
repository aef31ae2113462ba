"""hooks install/uninstall edit Claude Code's settings.json safely; the plugin manifest matches."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from helpers import sandman
from sandman import config
from sandman.errors import ConfigError
from sandman.verbs import hooks
from sandman.verbs.hooks import executable, hook_command, install, is_sandman_hook, uninstall

REPO = Path(__file__).resolve().parent.parent

THEIRS = {
    "model": "opus",
    "env": {"FOO": "bar"},
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}],
    },
}


def _settings(isolated: Path, data: object | None = THEIRS) -> Path:
    path = config.claude_settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    if data is not None:
        path.write_text(json.dumps(data, indent=4))
    return path


def _ours(data: dict) -> dict[str, list[dict]]:
    return {event: [h for g in groups for h in g["hooks"] if "-hook" in h.get("command", "")]
            for event, groups in data.get("hooks", {}).items()}


def test_install_registers_the_five_hooks_with_timeouts_and_an_absolute_command(isolated: Path):
    path = _settings(isolated, None)
    change = install()
    assert change.written and len(change.added) == 5
    data = json.loads(path.read_text())
    assert _ours(data) == {
        "SessionEnd": [{"type": "command", "command": hook_command("take"), "timeout": config.HOOK_TIMEOUT_TAKE_S}],
        "SessionStart": [{"type": "command", "command": hook_command("recall"),
                          "timeout": config.HOOK_TIMEOUT_RECALL_S},
                         {"type": "command", "command": hook_command("report"),
                          "timeout": config.HOOK_TIMEOUT_REPORT_S}],
        "UserPromptSubmit": [{"type": "command", "command": hook_command("recall", "--prompt-hook"),
                              "timeout": config.HOOK_TIMEOUT_PROMPT_S}],
        "PostToolUse": [{"type": "command", "command": hook_command("recall", "--file-hook"),
                         "timeout": config.HOOK_TIMEOUT_FILE_S}],
    }
    assert len(data["hooks"]["SessionStart"]) == 2  # report in a group of its own, next to recall's
    assert data["hooks"]["PostToolUse"][0]["matcher"] == "Read|Edit|Write|MultiEdit|NotebookEdit"
    assert Path(executable()[0]).is_absolute()
    assert hook_command("take").endswith(" take --hook")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_install_is_idempotent_and_keeps_every_other_key_and_hook(isolated: Path):
    path = _settings(isolated)
    install()
    first = path.read_bytes()
    change = install()
    assert not change.written and path.read_bytes() == first
    data = json.loads(first)
    assert {k: v for k, v in data.items() if k != "hooks"} == {k: v for k, v in THEIRS.items() if k != "hooks"}
    assert data["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    assert data["hooks"]["SessionStart"][0] == THEIRS["hooks"]["SessionStart"][0]


def test_an_install_from_before_the_report_hook_gains_it_on_reinstall(isolated: Path):
    before = {"hooks": {
        "SessionEnd": [{"hooks": [{"type": "command", "command": hook_command("take"),
                                   "timeout": config.HOOK_TIMEOUT_TAKE_S}]}],
        "SessionStart": [{"hooks": [{"type": "command", "command": hook_command("recall"),
                                     "timeout": config.HOOK_TIMEOUT_RECALL_S}]}],
    }}
    path = _settings(isolated, before)
    change = install()
    assert change.written and change.added[0] == f"SessionStart: {hook_command('report')}" and not change.updated
    starts = json.loads(path.read_text())["hooks"]["SessionStart"]
    assert starts[0] == before["hooks"]["SessionStart"][0]
    assert starts[1] == {"hooks": [{"type": "command", "command": hook_command("report"),
                                    "timeout": config.HOOK_TIMEOUT_REPORT_S}]}


def test_install_updates_a_stale_path_in_place_and_removes_duplicates(isolated: Path):
    stale = {"hooks": {"SessionEnd": [
        {"hooks": [{"type": "command", "command": "/old/venv/bin/sandman take --hook", "timeout": 5}]},
        {"hooks": [{"type": "command", "command": "python3 -m sandman take --hook"},
                   {"type": "command", "command": "notify-send bye"}]},
    ]}}
    path = _settings(isolated, stale)
    change = install()
    assert len(change.updated) == 1 and len(change.removed) == 1
    groups = json.loads(path.read_text())["hooks"]["SessionEnd"]
    assert groups == [
        {"hooks": [{"type": "command", "command": hook_command("take"), "timeout": config.HOOK_TIMEOUT_TAKE_S}]},
        {"hooks": [{"type": "command", "command": "notify-send bye"}]},
    ]


def test_uninstall_removes_only_ours(isolated: Path):
    path = _settings(isolated)
    install()
    change = uninstall()
    assert change.written and len(change.removed) == 5
    assert json.loads(path.read_text()) == THEIRS
    assert not uninstall().written


def test_uninstall_drops_the_hooks_key_it_emptied(isolated: Path):
    path = _settings(isolated, {"model": "opus"})
    install()
    uninstall()
    assert json.loads(path.read_text()) == {"model": "opus"}
    path.unlink()
    assert not uninstall().written and not path.exists()


@pytest.mark.parametrize("content, message", [
    (b"{not json", "is not valid JSON (line 1, column 2"),
    (b"[1, 2]", "is not a JSON object"),
    (b'{"hooks": []}', '"hooks" in'),
    (b'{"hooks": {"SessionEnd": {}}}', '"hooks.SessionEnd" in'),
    (b"\xff\xfe{}", "is not UTF-8"),
])
def test_settings_that_are_not_a_json_object_are_refused_untouched(isolated: Path, content: bytes, message: str):
    path = _settings(isolated, None)
    path.write_bytes(content)
    for verb in (install, uninstall):
        with pytest.raises(ConfigError, match=re.escape(message)):
            verb()
        assert path.read_bytes() == content


def test_a_symlinked_settings_file_stays_a_link_and_keeps_its_mode(isolated: Path, tmp_path: Path):
    target = tmp_path / "dotfiles" / "settings.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"model": "opus"}))
    target.chmod(0o640)
    link = _settings(isolated, None)
    link.symlink_to(target)
    install()
    assert link.is_symlink() and "SessionEnd" in json.loads(target.read_text())["hooks"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_settings_file_changed_meanwhile_is_not_overwritten(isolated: Path, monkeypatch: pytest.MonkeyPatch):
    path = _settings(isolated)
    real = hooks._load

    def load_then_edit(settings: Path):
        loaded = real(settings)
        settings.write_text(json.dumps({"edited": "by Claude Code"}))
        return loaded

    monkeypatch.setattr(hooks, "_load", load_then_edit)
    with pytest.raises(ConfigError, match="changed while sandman was editing it"):
        install()
    assert json.loads(path.read_text()) == {"edited": "by Claude Code"}


@pytest.mark.parametrize("entry, verb, ours", [
    ({"type": "command", "command": "'/a b/bin/sandman' take --hook"}, "take", True),
    ({"type": "command", "command": "sandman recall --hook"}, "recall", True),
    ({"type": "command", "command": "sandman recall --hook"}, "take", False),
    ({"type": "command", "command": "sandman take"}, "take", False),
    ({"type": "command", "command": "python3", "args": ["-m", "sandman", "take", "--hook"]}, "take", True),
    ({"type": "command", "command": "echo 'unbalanced"}, "take", False),
    ("not a dict", "take", False),
])
def test_which_hook_entries_are_sandman_s(entry: object, verb: str, ours: bool):
    assert is_sandman_hook(entry, verb) is ours


def test_executable_prefers_the_script_beside_this_interpreter(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    script = Path(sys.executable).with_name("sandman")
    if script.exists():
        assert executable() == [str(script)]
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    monkeypatch.setattr(sys, "argv", ["-c"])
    monkeypatch.setenv("PATH", str(tmp_path))
    assert executable() == [str(tmp_path / "python3"), "-m", "sandman"]


def test_hooks_on_the_command_line(isolated: Path, tmp_path: Path):
    settings = tmp_path / "settings.json"
    done = sandman("hooks", "install", "--settings", str(settings))
    assert done.returncode == 0, done.stderr
    assert b"added: SessionEnd: " in done.stdout and f"written: {settings}".encode() in done.stdout
    again = sandman("hooks", "install", "--settings", str(settings))
    assert f"unchanged: {settings}".encode() in again.stdout
    assert sandman("hooks", "uninstall", "--settings", str(settings)).returncode == 0
    settings.write_text("{oops")
    bad = sandman("hooks", "install", "--settings", str(settings))
    assert bad.returncode == 2 and b"is not valid JSON" in bad.stderr and settings.read_text() == "{oops"
    assert not (isolated / ".claude" / "settings.json").exists()


def test_the_plugin_manifest_declares_the_same_hooks():
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "sandman"
    plugin = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    for event, verb, flag, timeout, matcher in hooks.HOOKS:
        [(group, entry)] = [(group, entry) for group in plugin[event] for entry in group["hooks"]
                            if is_sandman_hook(entry, verb, flag)]
        assert entry["timeout"] == timeout and entry["type"] == "command"
        assert group.get("matcher") == matcher
    assert {event: len(groups) for event, groups in plugin.items()} == {
        "SessionEnd": 1, "SessionStart": 2, "UserPromptSubmit": 1, "PostToolUse": 1}


def test_the_real_settings_are_never_touched_by_default_paths(isolated: Path):
    assert config.claude_settings_file() == isolated / ".claude" / "settings.json"
    assert os.environ["CLAUDE_CONFIG_DIR"] == str(isolated / ".claude")


@pytest.mark.parametrize("verb", ["install", "uninstall"])
def test_a_read_only_settings_file_is_refused_not_replaced(isolated: Path, verb: str):
    path = _settings(isolated)
    if verb == "uninstall":
        install()
    before = path.read_bytes()
    path.chmod(0o444)
    with pytest.raises(ConfigError) as caught:
        (install if verb == "install" else uninstall)()
    assert str(caught.value) == (f"Claude Code settings {path} is read-only; nothing was changed "
                                 f"(make it writable, chmod u+w {path}, to let sandman edit it)")
    assert path.read_bytes() == before and stat.S_IMODE(path.stat().st_mode) == 0o444
    done = sandman("hooks", verb)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode() == f"sandman: {caught.value}\n"


# -- Claude Code's native auto memory: offered, never forced (issue 17) ---------------------


def test_install_offers_to_turn_native_auto_memory_off_and_never_does_it_unasked(isolated: Path):
    path = _settings(isolated)
    done = sandman("hooks", "install")
    assert done.returncode == 0, done.stderr
    assert "Claude Code's native auto memory is also on (Claude Code's default)" in done.stdout.decode()
    assert "`sandman hooks install --auto-memory off`" in done.stdout.decode()
    assert "autoMemoryEnabled" not in json.loads(path.read_text())


def test_auto_memory_off_then_on_is_reversible_and_keeps_every_other_key(isolated: Path):
    path = _settings(isolated)
    done = sandman("hooks", "install", "--auto-memory", "off")
    assert done.returncode == 0, done.stderr
    data = json.loads(path.read_text())
    assert data["autoMemoryEnabled"] is False and data["env"] == THEIRS["env"]
    assert "also on" not in done.stdout.decode()
    assert hooks.auto_memory() == (False, f"autoMemoryEnabled: false in {path}")
    again = sandman("hooks", "install", "--auto-memory", "off")
    assert "off (autoMemoryEnabled: false), already so" in again.stdout.decode()
    sandman("hooks", "install", "--auto-memory", "on")
    assert "autoMemoryEnabled" not in json.loads(path.read_text())
    assert hooks.auto_memory() == (True, "Claude Code's default")


def test_a_bad_auto_memory_word_is_refused(isolated: Path):
    done = sandman("hooks", "install", "--auto-memory", "maybe")
    assert done.returncode == 2
    assert done.stderr.decode() == "sandman: --auto-memory 'maybe': give on or off\n"


def test_the_prompt_hook_is_installed_as_its_fast_launcher_and_runs(isolated: Path):
    """issue 29: UserPromptSubmit runs ``<python> -I -S <sandman>/fasthook.py recall --prompt-hook``; a
    settings file holding the older ``<sandman> recall --prompt-hook`` is updated in place."""
    import shlex
    import subprocess

    command = hook_command("recall", "--prompt-hook")
    words = shlex.split(command)
    assert words[:3] == [sys.executable, "-I", "-S"] and words[3].endswith("/sandman/fasthook.py")
    assert is_sandman_hook({"type": "command", "command": command}, "recall", "--prompt-hook")
    assert not is_sandman_hook({"type": "command", "command": command}, "recall", "--file-hook")
    settings = config.claude_settings_file()
    settings.parent.mkdir(parents=True, exist_ok=True)
    older = shlex.join([*executable(), "recall", "--prompt-hook"])
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": older, "timeout": config.HOOK_TIMEOUT_PROMPT_S}]}]}}))
    install(settings)
    [group] = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    assert [hook["command"] for hook in group["hooks"]] == [command]
    assert hooks.missing_executables(group["hooks"][0]) == []
    payload = json.dumps({"session_id": "s-1", "cwd": str(isolated), "hook_event_name": "UserPromptSubmit",
                          "prompt": "How are releases tagged?"}).encode()
    done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")  # no root yet: nothing, journaled


def _plugin_installed(isolated: Path, enabled: bool = True) -> Path:
    """The files `claude plugin marketplace add <repo>` + `claude plugin install sandman@sandman` wrote
    (Claude Code 2.1.332, user scope): enabledPlugins in settings.json and plugins/installed_plugins.json."""
    path = _settings(isolated, {**THEIRS, "extraKnownMarketplaces": {"sandman": {"source": {
        "source": "directory", "path": str(REPO)}}}, "enabledPlugins": {"sandman@sandman": enabled}})
    record = config.claude_config_dir() / "plugins" / "installed_plugins.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"version": 2, "plugins": {"sandman@sandman": [{
        "scope": "user", "installPath": str(REPO), "version": "0.1.0", "installedAt": "2026-12-05T09:00:03.104Z",
        "lastUpdated": "2026-12-05T09:00:03.104Z"}]}}))
    return path


def test_regression_hooks_install_beside_the_enabled_plugin_registered_every_hook_twice(isolated: Path):
    path = _plugin_installed(isolated)
    before = path.read_bytes()
    with pytest.raises(ConfigError) as raised:
        install()
    assert path.read_bytes() == before
    assert "plugin sandman@sandman is enabled" in str(raised.value)
    assert "claude plugin disable sandman@sandman" in str(raised.value) and "--force" in str(raised.value)
    done = sandman("hooks", "install")
    assert done.returncode != 0 and done.stdout == b"" and len(done.stderr.decode().splitlines()) == 1
    assert b"Traceback" not in done.stderr and path.read_bytes() == before


def test_hooks_install_beside_a_disabled_plugin_or_with_force_registers_them(isolated: Path):
    _plugin_installed(isolated, enabled=False)
    assert install().written
    path = _plugin_installed(isolated)
    done = sandman("hooks", "install", "--force")
    assert done.returncode == 0, done.stderr
    assert len(_ours(json.loads(path.read_text()))["SessionEnd"]) == 1


def test_the_session_start_recall_is_installed_as_its_fast_launcher_and_runs(isolated: Path):
    """issue 29: SessionStart runs ``<python> -I -S <sandman>/fasthook.py recall --hook`` (the reply the
    full hook kept is served from there); an older ``<sandman> recall --hook`` is updated in place."""
    import shlex
    import subprocess

    command = hook_command("recall", "--hook")
    words = shlex.split(command)
    assert words[:3] == [sys.executable, "-I", "-S"] and words[3:] == [str(hooks.FASTHOOK), "recall", "--hook"]
    assert is_sandman_hook({"type": "command", "command": command}, "recall")
    assert shlex.split(hook_command("report", "--hook"))[-2:] == ["report", "--hook"]
    assert hooks.FASTHOOK.name not in hook_command("report", "--hook")
    settings = config.claude_settings_file()
    settings.parent.mkdir(parents=True, exist_ok=True)
    older = shlex.join([*executable(), "recall", "--hook"])
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": older, "timeout": config.HOOK_TIMEOUT_RECALL_S}]}]}}))
    install(settings)
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert [hook["command"] for group in groups for hook in group["hooks"]].count(command) == 1
    assert older not in settings.read_text()
    assert sandman("init").returncode == 0
    payload = json.dumps({"session_id": "s-1", "cwd": str(isolated), "hook_event_name": "SessionStart",
                          "source": "startup"}).encode()
    runs = [subprocess.run(["sh", "-c", command], input=payload, capture_output=True, timeout=60) for _ in range(2)]
    assert [(done.returncode, done.stderr) for done in runs] == [(0, b""), (0, b"")]
    assert runs[0].stdout == runs[1].stdout and b'"hookEventName": "SessionStart"' in runs[0].stdout


@pytest.mark.parametrize("verb", [("install",), ("uninstall",), ("statusline",)])
@pytest.mark.parametrize("existing", [False, True])
def test_regression_a_settings_path_ending_in_a_slash_wrote_a_file_where_a_folder_was_meant(
        isolated: Path, tmp_path: Path, verb: tuple[str, ...], existing: bool):
    folder = tmp_path / "somedir"
    if existing:
        folder.mkdir()
    given = f"{folder}/"
    done = sandman("hooks", *verb, "--settings", given)
    assert done.returncode == 2
    assert done.stderr.decode() == (f"sandman: --settings {given}: names a directory; give the settings file's "
                                    f"path (such as {given}settings.json)\n")
    assert folder.is_dir() if existing else not folder.exists()
    if existing:
        assert not any(folder.iterdir())
        named = sandman("hooks", *verb, "--settings", str(folder))
        assert named.returncode == 2 and f"--settings {folder}: names a directory".encode() in named.stderr
