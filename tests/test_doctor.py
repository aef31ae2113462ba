"""doctor on a healthy root, then on a root with each problem (docs/doctor.md)."""

from __future__ import annotations

import json
import os
import re
import stat
from datetime import timedelta

import pytest
from helpers import sandman
from syncworld import add, bare_remote

from sandman import journal
from sandman.errors import SyncError
from sandman.layout import Layout
from sandman.pointers import write_pointer
from sandman.store import repo as store
from sandman.verbs.doctor import SCHEMA_VERSION, doctor
from sandman.verbs.init import init
from sandman.verbs.sync import setup, sync

NAMES = ["root", "repository", "clean", "hooks", "claude", "memory", "env", "queue", "pending", "take", "dream", "reflect",
         "worktrees", "schedule", "errors", "remote", "sync", "machine"]
SETTINGS = {"hooks": {
    "SessionEnd": [{"hooks": [{"type": "command", "command": "sandman take --hook", "timeout": 30}]}],
    "SessionStart": [{"matcher": "startup|resume", "hooks": [{"type": "command", "command": "/usr/bin/env",
                                                               "args": ["sandman", "recall", "--hook"]}]}],
}, "autoMemoryEnabled": False}


def write_settings(isolated, settings) -> None:
    path = isolated / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(settings if isinstance(settings, str) else json.dumps(settings))


@pytest.fixture
def healthy(tmp_path, isolated, layout, monkeypatch) -> Layout:
    """A root that is set up, synced, with hooks registered, a claude binary and recent activity."""
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("SANDMAN_CLAUDE_BIN", str(fake))
    write_settings(isolated, SETTINGS)
    init(layout)
    add(layout, "Healthy", "All good.")
    _, url = bare_remote(tmp_path)
    setup(layout, url)
    for verb, decision in (("take", "archived"), ("dream", "committed"), ("reflect", "committed")):
        journal.write(layout, verb, decision)
    return layout


def check(report, name):
    return next(c for c in report.checks if c.name == name)


def test_healthy_root_is_all_ok(healthy):
    report = doctor()
    assert [c.name for c in report.checks] == NAMES
    assert [(c.name, c.status) for c in report.checks if c.status != "ok"] == []
    assert report.verdict == "OK sandman is healthy"
    assert report.exit_code == 0
    assert "registered in" in check(report, "hooks").message
    assert check(report, "sync").message.startswith("last synced")
    assert report.lines()[-1] == "verdict: OK sandman is healthy"


def test_cli_doctor_lines_and_json(healthy):
    done = sandman("doctor")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) == len(NAMES) + 1
    assert all(line.startswith("OK  ") for line in lines[:-1])
    as_json = sandman("doctor", "--json")
    assert as_json.returncode == 0
    data = json.loads(as_json.stdout)
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert data["root"] == str(healthy.root)
    assert data["status"] == "ok"
    assert [c["name"] for c in data["checks"]] == NAMES
    assert all(set(c) == {"name", "status", "message", "details"} for c in data["checks"])
    assert {c["status"] for c in data["checks"]} <= {"ok", "warn", "fail"}


def test_relative_root_fails_and_the_rest_is_not_checked(isolated, monkeypatch):
    monkeypatch.setenv("SANDMAN_ROOT", "relative/root")
    report = doctor()
    assert check(report, "root").status == "fail"
    assert report.verdict.startswith("FAIL root: SANDMAN_ROOT='relative/root' is relative")
    assert check(report, "queue").message == "not checked: the root does not resolve"
    assert report.exit_code == 1
    done = sandman("doctor", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["root"] is None


def test_missing_root_warns_and_doctor_creates_nothing(healthy, tmp_path, monkeypatch):
    monkeypatch.setenv("SANDMAN_ROOT", str(tmp_path / "nowhere"))
    report = doctor()
    assert check(report, "repository").status == "warn"
    assert "any verb that writes creates it (`sandman init` creates it now)" in check(report, "repository").message
    assert report.verdict.startswith("WARN repository:")
    assert report.exit_code == 0
    assert not (tmp_path / "nowhere").exists()


def test_dirty_root_warns(healthy):
    (healthy.bank("_user")).mkdir(parents=True, exist_ok=True)
    (healthy.bank("_user") / "user_by_hand.md").write_text("---\nname: x\n---\n\nx\n")
    report = doctor()
    assert check(report, "clean").status == "warn"
    assert "1 uncommitted change(s), e.g. memories/_user/user_by_hand.md" in check(report, "clean").message
    assert report.verdict.startswith("WARN clean:")
    assert report.exit_code == 0


def test_a_leftover_change_holding_a_credential_fails_and_names_the_file(healthy):
    (healthy.bank("_user")).mkdir(parents=True, exist_ok=True)
    (healthy.bank("_user") / "notes.txt").write_text("token ghp_" + "k3Xq9ZrT2vLm8NpB4wYc7HdF1sGj6aEu0oQi\n")
    report = doctor()
    found = check(report, "clean")
    assert found.status == "fail" and found.message.startswith("memories/_user/notes.txt in ")
    assert "github-pat" in found.message and "ghp_" not in found.message
    assert report.exit_code == 1


@pytest.mark.parametrize("settings, status, text", [
    ({}, "fail", "neither hook is registered"),
    ({"hooks": {"SessionEnd": SETTINGS["hooks"]["SessionEnd"]}}, "warn", "SessionStart (sandman recall --hook) not registered"),
    ("{not json", "fail", "is not readable JSON"),
    ([1, 2], "fail", "is not a JSON object"),
    ({"enabledPlugins": {"sandman@local": True}}, "ok", "plugin sandman@local"),
    ({"enabledPlugins": {"sandman@local": False}}, "fail", "neither hook is registered"),
])


def test_hooks(healthy, isolated, settings, status, text):
    write_settings(isolated, settings)
    result = check(doctor(), "hooks")
    assert (result.status, text in result.message) == (status, True), result.message


def test_plugin_hooks_are_read_from_its_install(healthy, isolated, tmp_path):
    install = tmp_path / "plugin"
    (install / "hooks").mkdir(parents=True)
    (install / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"SessionEnd": SETTINGS["hooks"]["SessionEnd"]}}))
    plugins = isolated / ".claude" / "plugins" / "installed_plugins.json"
    plugins.parent.mkdir(parents=True)
    plugins.write_text(json.dumps({"version": 2, "plugins": {"sandman@mine": [{"installPath": str(install)}]}}))
    write_settings(isolated, {"enabledPlugins": {"sandman@mine": True}})
    result = check(doctor(), "hooks")
    assert result.status == "warn"
    assert result.details["registered"]["SessionEnd"] == ["plugin sandman@mine"]
    assert result.details["registered"]["SessionStart"] == []


def test_regression_doctor_said_ok_while_the_plugin_and_hooks_install_both_registered_the_hooks(healthy, isolated):
    from conftest import REPO

    plugins = isolated / ".claude" / "plugins" / "installed_plugins.json"
    plugins.parent.mkdir(parents=True)
    plugins.write_text(json.dumps({"version": 2, "plugins": {"sandman@sandman": [
        {"scope": "user", "installPath": str(REPO), "version": "0.1.0"}]}}))
    write_settings(isolated, {**SETTINGS, "enabledPlugins": {"sandman@sandman": True}})
    result = check(doctor(), "hooks")
    assert result.status == "warn", result.message
    assert "registered twice" in result.message and "sandman hooks uninstall" in result.message
    assert "claude plugin disable sandman@sandman" in result.message


def test_missing_claude_binary_fails(healthy, monkeypatch):
    monkeypatch.setenv("SANDMAN_CLAUDE_BIN", "no-such-claude-binary")
    report = doctor()
    assert check(report, "claude").status == "fail"
    assert report.verdict == ("FAIL claude: claude binary 'no-such-claude-binary' not found: dream cannot run "
                              "its minds; install Claude Code or set SANDMAN_CLAUDE_BIN")
    assert report.exit_code == 1


def test_old_undreamed_pointer_warns(healthy):
    ended = journal.now_utc() - timedelta(hours=80)
    write_pointer(healthy, "s-old", {"ended": journal.iso(ended)})
    write_pointer(healthy, "s-done", {"ended": journal.iso(ended - timedelta(hours=1)), "dreamed": "x"})
    result = check(doctor(), "queue")
    assert result.status == "warn"
    assert result.message.startswith("1 pointer(s) queued for dream; the oldest ended 3 d ago")
    assert result.details["depth"] == 1


def test_a_due_queue_with_no_recent_dream_warns(healthy):
    now = journal.now_utc()
    for i in range(10):
        write_pointer(healthy, f"s{i}", {"ended": journal.iso(now - timedelta(hours=1))})
    report = doctor(now=now + timedelta(hours=25))
    assert check(report, "dream").status == "warn"
    assert "10 pointers are due: run `sandman dream`" in check(report, "dream").message
    assert check(doctor(now=now), "dream").status == "ok"


def test_a_long_queue_warns(healthy):
    now = journal.now_utc()
    for i in range(20):
        write_pointer(healthy, f"s{i}", {"ended": journal.iso(now)})
    assert check(doctor(now=now), "queue").status == "warn"


def test_stale_pending_take_warns(healthy):
    healthy.pending_takes.mkdir()
    entry = healthy.pending_take("s-pending")
    entry.write_text(json.dumps({"session": "s-pending", "job": "j", "declined": "2026-11-30T16:03:40Z"}))
    assert check(doctor(), "pending").status == "ok"
    old = (journal.now_utc() - timedelta(hours=30)).timestamp()
    os.utime(entry, (old, old))
    result = check(doctor(), "pending")
    assert result.status == "warn"
    assert "1 waiting over 24 h (e.g. s-pending)" in result.message


def test_regression_an_mcp_call_refused_for_bad_input_counted_as_a_journal_error(healthy, isolated):
    """Passing MEMORY.md to forget_memory is the caller's mistake: a refusal, not an error of sandman."""
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    index = healthy.bank("_user") / "MEMORY.md"

    async def call() -> object:
        server = StdioServerParameters(command=sys.executable, args=["-m", "sandman", "mcp"], env=dict(os.environ))
        async with Client(server, read_timeout_seconds=60) as client:
            return await client.call_tool("forget_memory", {"file": str(index)})

    assert anyio.run(call).is_error
    [line] = [journal.parse_line(line) for path in healthy.trace.glob("mcp-*.log")
              for line in path.read_text().splitlines()]
    assert line[2] == "refused" and line[3]["tool"] == "forget_memory", line
    result = check(doctor(), "errors")
    assert (result.status, result.details["count"]) == ("ok", 0), result.message


def test_reflect_late_warns_only_once_takes_happen(healthy, tmp_path, monkeypatch):
    later = journal.now_utc() + timedelta(hours=49)
    assert check(doctor(now=later), "reflect").status == "warn"
    fresh = Layout(tmp_path / "fresh")
    monkeypatch.setenv("SANDMAN_ROOT", str(fresh.root))
    init(fresh)
    assert check(doctor(), "reflect").message == "reflect has never run"
    assert check(doctor(), "reflect").status == "ok"


def test_journal_errors_in_the_last_day_warn(healthy):
    journal.write(healthy, "take", "failed", hook=True, error="transcript missing")
    journal.write(healthy, "remember", "refused", reason="secret")
    report = doctor()
    result = check(report, "errors")
    assert result.status == "warn"
    assert result.details["count"] == 1
    assert result.message.startswith("1 journal error(s) in the last 24 h; latest: take failed")
    assert result.message.endswith(": transcript missing")
    assert check(doctor(now=journal.now_utc() + timedelta(hours=25)), "errors").status == "ok"


def test_no_remote_warns(isolated, layout, healthy):
    repo = store.open_repo(layout)
    repo.remotes.delete("origin")
    report = doctor()
    assert check(report, "remote").status == "warn"
    assert "set one up with `sandman sync --setup <url>`" in check(report, "remote").message
    assert check(report, "sync").message == "not set up"
    assert report.verdict.startswith("WARN remote:")


def test_failed_last_sync_warns(healthy, tmp_path):
    (tmp_path / "remote.git").rename(tmp_path / "gone.git")
    with pytest.raises(SyncError):
        sync(healthy)
    report = doctor()
    result = check(report, "sync")
    assert result.status == "warn"
    assert "the last sync failed" in result.message and "(unreachable)" in result.message
    assert report.verdict.startswith("WARN sync:")


def test_unpushed_commits_long_after_the_last_sync_warn(healthy):
    add(healthy, "Not yet pushed", "Waiting.")
    now = journal.now_utc()
    assert check(doctor(now=now), "sync").status == "ok"
    assert check(doctor(now=now), "remote").details["unpushed"] == 1
    late = check(doctor(now=now + timedelta(hours=25)), "sync")
    assert late.status == "warn"
    assert "1 commit(s) wait to be pushed" in late.message


def test_hooks_written_by_hooks_install_are_recognised(healthy, isolated):
    from sandman.verbs.hooks import install, uninstall

    write_settings(isolated, {})
    install()
    assert check(doctor(), "hooks").status == "ok"
    uninstall()
    assert check(doctor(), "hooks").status == "fail"


def test_the_shipped_plugin_manifest_registers_both_hooks(healthy, isolated):
    from conftest import REPO

    plugins = isolated / ".claude" / "plugins" / "installed_plugins.json"
    plugins.parent.mkdir(parents=True)
    plugins.write_text(json.dumps({"version": 2, "plugins": {"sandman@repo": [{"installPath": str(REPO)}]}}))
    write_settings(isolated, {"enabledPlugins": {"sandman@repo": True}})
    result = check(doctor(), "hooks")
    assert result.status == "ok"
    assert result.details["registered"] == {"SessionEnd": ["plugin sandman@repo"], "SessionStart": ["plugin sandman@repo"]}


def test_a_root_that_is_a_file_is_a_fail_line_not_a_traceback(tmp_path, monkeypatch):
    from helpers import sandman

    blocker = tmp_path / "file"
    blocker.write_text("")
    done = sandman("doctor", env={"SANDMAN_ROOT": str(blocker)})
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert "FAIL root" in done.stdout.decode() and "is not a directory" in done.stdout.decode()


@pytest.mark.parametrize("verb", ["take", "dream", "reflect"])


def test_a_failed_last_run_warns_instead_of_ok(healthy, verb):
    journal.write(healthy, verb, "failed", hook=True, error="transcript /x belongs to session a, not b")
    found = check(doctor(), verb)
    assert found.status == "warn"
    assert re.fullmatch(rf"last {verb} \d+ s ago failed: transcript /x belongs to session a, not b", found.message)
    journal.write(healthy, verb, "crashed", error="KeyError: 'x'")
    assert re.fullmatch(rf"last {verb} \d+ s ago crashed: KeyError: 'x'", check(doctor(), verb).message)
    journal.write(healthy, verb, "archived" if verb == "take" else "committed")
    assert check(doctor(), verb).status == "ok"


def test_doctor_warns_when_the_remote_is_a_relative_local_path(healthy):
    store.open_repo(healthy).remotes.set_url("origin", "../remote.git")
    report = doctor()
    remote = check(report, "remote")
    assert remote.status == "warn"
    assert remote.message == (
        "origin is the relative path '../remote.git': it names a folder only from where it was typed, so a sync "
        f"run from anywhere else fails; point it at the absolute path (git -C {healthy.root} remote set-url "
        "origin <absolute path>)")
    assert report.verdict.startswith("WARN remote:")


def _end_hook(entry: dict) -> dict:
    return {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "timeout": 30, **entry}]}],
                      "SessionStart": SETTINGS["hooks"]["SessionStart"]}}


@pytest.mark.parametrize("entry, path", [
    ({"command": "/nonexistent/venv/bin/sandman take --hook"}, "/nonexistent/venv/bin/sandman"),
    ({"command": "'/no such/venv/bin/sandman' take --hook"}, "/no such/venv/bin/sandman"),
    ({"command": "/nonexistent/venv/bin/python -m sandman take --hook"}, "/nonexistent/venv/bin/python"),
    ({"command": "/nonexistent/bin/env", "args": ["sandman", "take", "--hook"]}, "/nonexistent/bin/env"),
    ({"command": "/usr/bin/env", "args": ["/nonexistent/venv/bin/sandman", "take", "--hook"]},
     "/nonexistent/venv/bin/sandman"),
])
def test_doctor_fails_when_a_hook_runs_an_executable_that_does_not_exist(healthy, isolated, entry, path):
    write_settings(isolated, _end_hook(entry))
    report = doctor()
    hooks = check(report, "hooks")
    assert (hooks.status, hooks.message) == ("fail", (
        f"the SessionEnd hook runs {path}, which is not an executable file: every session end would archive "
        "nothing; run `sandman hooks install` again"))
    assert report.verdict.startswith("FAIL hooks:")


def test_doctor_fails_when_a_hook_runs_a_file_that_is_not_executable(healthy, isolated, tmp_path):
    plain = tmp_path / "sandman"
    plain.write_text("#!/bin/sh\n")
    write_settings(isolated, _end_hook({"command": f"{plain} take --hook"}))
    hooks = check(doctor(), "hooks")
    assert hooks.status == "fail" and f"runs {plain}, which is not an executable file" in hooks.message


def test_a_broken_hook_beside_a_working_one_only_warns(healthy, isolated, tmp_path):
    good = tmp_path / "venv" / "bin" / "sandman"
    good.parent.mkdir(parents=True)
    good.write_text("#!/bin/sh\n")
    good.chmod(0o755)
    settings = _end_hook({"command": "/nonexistent/venv/bin/sandman take --hook"})
    settings["hooks"]["SessionEnd"][0]["hooks"].append({"type": "command", "command": f"{good} take --hook"})
    write_settings(isolated, settings)
    hooks = check(doctor(), "hooks")
    assert hooks.status == "warn"
    assert "the SessionEnd hook also runs /nonexistent/venv/bin/sandman, which is not an executable file" in hooks.message


def test_hooks_that_run_existing_executables_or_bare_names_are_ok(healthy, isolated, tmp_path):
    good = tmp_path / "venv" / "bin" / "sandman"
    good.parent.mkdir(parents=True)
    good.write_text("#!/bin/sh\n")
    good.chmod(0o755)
    write_settings(isolated, _end_hook({"command": f"{good} take --hook"}))
    assert check(doctor(), "hooks").status == "ok"
    # A bare name is found on the PATH Claude Code runs the hook with, which doctor cannot see.
    write_settings(isolated, _end_hook({"command": "sandman take --hook"}))
    assert check(doctor(), "hooks").status == "ok"


# -- a broken root, a killed transaction, a garbage ledger, a bad setting (third tester's report) --


def _doctor_cli(env: dict | None = None) -> tuple[list[str], dict]:
    """Run `sandman doctor` and `sandman doctor --json`: both must end in a verdict, without a traceback."""
    plain, as_json = sandman("doctor", env=env), sandman("doctor", "--json", env=env)
    for done in (plain, as_json):
        assert done.returncode == 1 and b"Traceback" not in done.stderr and done.stderr == b"", done.stderr
    lines = plain.stdout.decode().splitlines()
    assert len(lines) == len(NAMES) + 1 and lines[-1].startswith("verdict: FAIL")
    data = json.loads(as_json.stdout)
    assert [c["name"] for c in data["checks"]] == NAMES and data["status"] == "fail"
    return lines, data


def test_a_recent_folder_that_is_a_file_is_a_fail_line_naming_it(healthy):
    recent = healthy.recent
    if recent.exists():
        recent.rmdir()
    recent.write_text("x\n")
    lines, data = _doctor_cli()
    assert f"FAIL  queue       cannot be checked: Not a directory: {recent}" in lines
    queue = next(c for c in data["checks"] if c["name"] == "queue")
    assert queue["status"] == "fail" and str(recent) in queue["message"]
    assert data["verdict"] == f"FAIL queue: cannot be checked: Not a directory: {recent}"
    assert [c["name"] for c in data["checks"] if c["status"] != "ok"] == ["queue"]


def test_a_root_under_a_file_is_fail_lines_not_a_traceback(isolated, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    lines, data = _doctor_cli({"SANDMAN_ROOT": str(blocker / "sub")})
    repository = next(c for c in data["checks"] if c["name"] == "repository")
    assert repository["status"] == "fail" and f"lies under {blocker}, which is not a folder" in repository["message"]
    failed = {c["name"]: c["message"] for c in data["checks"] if c["status"] == "fail"}
    assert str(blocker / "sub" / "memories" / ".recent") in failed["queue"]
    assert str(blocker / "sub" / "pending-takes") in failed["pending"]
    assert not (blocker / "sub").exists()


KILLED_REMEMBER = """
import os, signal
from sandman import config
from sandman.banks.commit import bank_transaction
from sandman.banks.memory import Memory
from sandman.layout import Layout

layout = Layout(config.root())
with bank_transaction(layout, verb="remember", subject="killed") as tx:
    tx.write_memory("_user", Memory(name="Half done", description="d.", type="user", body="b.\\n"))
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_transaction_is_said_to_be_rolled_back_not_committed(healthy, tmp_path):
    import signal
    import subprocess
    import sys

    from sandman.verbs.remember import remember

    killed = subprocess.run([sys.executable, "-c", KILLED_REMEMBER], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert healthy.commit_undo.exists()
    clean = check(doctor(), "clean")
    assert clean.status == "warn" and "killed transaction" in clean.message
    assert "rolls that transaction back from .commit.undo" in clean.message
    assert "commits them as `recover`" not in clean.message
    written = sorted(healthy.bank("_user").glob("user_half_done*.md"))
    assert written
    remember(healthy, "After the crash.", cwd=str(tmp_path))  # the next write does what doctor said
    assert not any(path.exists() for path in written) and not healthy.commit_undo.exists()
    assert check(doctor(), "clean").status == "ok"


def test_pending_entries_that_are_not_records_warn_naming_one(healthy):
    from sandman.pointers import read_pending_take

    healthy.pending_takes.mkdir()
    good = healthy.pending_take("s-good")
    good.write_text(json.dumps({"session": "s-good", "job": "j", "declined": "2026-11-30T16:03:40Z"}))
    read_pending_take(good)  # the record doctor counts as readable is the one take's drain reads
    assert check(doctor(), "pending").status == "ok"
    healthy.pending_take("s-bad").write_text("{bad")
    healthy.pending_take("s-folder").mkdir()
    healthy.pending_take("s-binary").write_bytes(b"\xff\xfe{}")
    healthy.pending_take("s-unsafe").write_text(json.dumps({"session": "../up"}))
    found = check(doctor(), "pending")
    assert found.status == "warn"
    assert found.message.startswith("5 pending take(s), 4 not a readable pending-take record (e.g. ")
    assert str(healthy.pending_takes) in found.message
    assert sorted(found.details["unreadable"]) == sorted(
        str(healthy.pending_take(s)) for s in ("s-bad", "s-folder", "s-binary", "s-unsafe"))


@pytest.mark.parametrize("name, value, text", [
    ("SANDMAN_DAILY_BUDGET_USD", "abc", "SANDMAN_DAILY_BUDGET_USD='abc' is not a number"),
    ("SANDMAN_MIND_TIMEOUT", "x", "SANDMAN_MIND_TIMEOUT='x' is not a number"),
    ("SANDMAN_MIND_TIMEOUT", "0", "SANDMAN_MIND_TIMEOUT='0' must be a finite number greater than 0"),
    ("SANDMAN_DAILY_BUDGET_USD", "inf", "SANDMAN_DAILY_BUDGET_USD='inf' must be a finite number greater than 0"),
])
def test_a_setting_that_does_not_parse_fails_naming_it(healthy, monkeypatch, name, value, text):
    assert check(doctor(), "env").status == "ok"
    monkeypatch.setenv(name, value)
    report = doctor()
    env = check(report, "env")
    assert env.status == "fail" and env.message.startswith(text) and "dream and reflect fail" in env.message
    assert report.verdict.startswith(f"FAIL env: {text}") and report.exit_code == 1
    done = sandman("doctor")
    assert done.returncode == 1 and f"FAIL  env         {text}" in done.stdout.decode()


def test_settings_that_parse_are_ok(healthy, monkeypatch):
    monkeypatch.setenv("SANDMAN_DAILY_BUDGET_USD", "2.5")
    monkeypatch.setenv("SANDMAN_MIND_TIMEOUT", "60")
    env = check(doctor(), "env")
    assert env.status == "ok" and "SANDMAN_MIND_TIMEOUT=60, SANDMAN_DAILY_BUDGET_USD=2.5" in env.message


def test_the_old_spelling_of_the_days_budget_gets_a_note_and_yields_to_the_setting(healthy, monkeypatch):
    """Issue 33: $SANDMAN_DAILY_BUDGET_USD is the old spelling of [machine] budget_usd_day."""
    from sandman import config

    monkeypatch.setenv("SANDMAN_DAILY_BUDGET_USD", "2.5")
    env = check(doctor(), "env")
    assert env.status == "ok" and "SANDMAN_DAILY_BUDGET_USD is the old spelling of [machine] budget_usd_day" in env.message
    assert config.day_budget_usd(healthy) == 2.5
    healthy.settings_file.write_text("[machine]\nbudget_usd_day = 4\n")
    env = check(doctor(), "env")
    assert "SANDMAN_DAILY_BUDGET_USD is ignored: [machine] budget_usd_day is set" in env.message
    assert config.day_budget_usd(healthy) == config.machine(healthy).budget_usd_day == 4.0
    healthy.settings_file.write_text('[machine]\nbudget_usd_day = "lots"\n')
    with pytest.raises(config.ConfigError, match="machine.budget_usd_day must be a number"):
        config.day_budget_usd(healthy)


@pytest.mark.parametrize("scope, settings_file", [("project", "settings.json"), ("local", "settings.local.json")])
def test_regression_doctor_saw_only_user_scope_plugins(healthy, isolated, tmp_path, scope, settings_file):
    from conftest import REPO

    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / settings_file).write_text(json.dumps({"enabledPlugins": {"sandman@repo": True}}))
    plugins = isolated / ".claude" / "plugins" / "installed_plugins.json"
    plugins.parent.mkdir(parents=True)
    plugins.write_text(json.dumps({"version": 2, "plugins": {"sandman@repo": [
        {"scope": scope, "projectPath": str(project), "installPath": str(REPO)}]}}))
    write_settings(isolated, {})
    result = check(doctor(), "hooks")
    label = f"plugin sandman@repo ({scope} scope, {project})"
    assert result.status == "ok", result.message
    assert result.details["registered"] == {"SessionEnd": [label], "SessionStart": [label]}


def test_a_project_scope_plugin_not_enabled_there_is_not_counted(healthy, isolated, tmp_path):
    from conftest import REPO

    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"sandman@repo": False}}))
    plugins = isolated / ".claude" / "plugins" / "installed_plugins.json"
    plugins.parent.mkdir(parents=True)
    plugins.write_text(json.dumps({"version": 2, "plugins": {"sandman@repo": [
        {"scope": "project", "projectPath": str(project), "installPath": str(REPO)}]}}))
    write_settings(isolated, {})
    assert check(doctor(), "hooks").status == "fail"


# -- Claude Code's native auto memory beside sandman's recall (issue 17) --------------------


def test_native_auto_memory_on_beside_recall_is_a_warning_saying_how_to_choose(healthy, isolated):
    write_settings(isolated, {k: v for k, v in SETTINGS.items() if k != "autoMemoryEnabled"})
    found = check(doctor(), "memory")
    assert found.status == "warn"
    assert found.message == (
        "Claude Code's native auto memory is on (Claude Code's default) beside sandman's recall: every session "
        "starts with both. Keep sandman's: `sandman import claude-memory`, then `sandman hooks install "
        "--auto-memory off`; keep the native one: `sandman hooks uninstall`")


def test_doctor_with_auto_memory_on_gives_a_verdict_not_a_traceback(healthy, isolated):
    """A fresh user's `hooks install` leaves Claude Code's auto memory on: the memory check warns, and
    doctor crashed naming the worst check (memory was missing from its priority list)."""
    write_settings(isolated, {k: v for k, v in SETTINGS.items() if k != "autoMemoryEnabled"})
    result = sandman("doctor")
    out = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 0, out
    assert "WARN" in out and "memory" in out and "Traceback" not in out
    assert doctor().worst.name == "memory"


def test_every_check_has_a_place_in_the_priority_order(healthy):
    from sandman.verbs.doctor import PRIORITY

    assert {found.name for found in doctor().checks} <= set(PRIORITY)
    assert set(NAMES) <= set(PRIORITY)


@pytest.mark.parametrize("env, settings_env, status", [
    ("1", None, "ok"), ("true", None, "ok"), ("0", None, "warn"), (None, "1", "ok"), (None, "false", "warn"),
])
def test_the_environment_variable_decides_before_the_setting(healthy, isolated, monkeypatch, env, settings_env,
                                                             status):
    settings = {k: v for k, v in SETTINGS.items() if k != "autoMemoryEnabled"}
    if env == "0":
        settings["autoMemoryEnabled"] = False  # the variable switches it back on over the setting
    if settings_env is not None:
        settings["env"] = {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": settings_env}
    write_settings(isolated, settings)
    if env is not None:
        monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", env)
    assert check(doctor(), "memory").status == status


def test_native_auto_memory_without_sandman_recall_is_fine(healthy, isolated):
    write_settings(isolated, {})
    found = check(doctor(), "memory")
    assert found.status == "ok" and "sandman's recall is not registered" in found.message
