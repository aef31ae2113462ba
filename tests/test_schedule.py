"""``sandman schedule``: the nightly reflect and report serve for the user's scheduler (issue 17)."""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import stat
from pathlib import Path

import pytest

from helpers import sandman
from sandman.layout import Layout
from sandman.schedule import jobs as schedule
from sandman.verbs.doctor import doctor
from sandman.verbs.remember import remember


@pytest.fixture
def root(layout: Layout, isolated: Path) -> Layout:
    remember(layout, "Anything.", cwd=str(isolated / "proj"))
    return layout


@pytest.fixture
def fake_schedulers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``systemctl`` and ``launchctl`` on PATH that only record how they were called."""
    folder = tmp_path / "bin"
    folder.mkdir()
    calls = tmp_path / "calls.log"
    for name in ("systemctl", "launchctl"):
        script = folder / name
        script.write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\n')
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return calls


def _out(done) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def test_the_current_platform_units_are_written_listed_and_removed(root, isolated):
    kind = schedule.detect()
    out = _out(sandman("schedule", "install", "--no-enable"))
    paths = [unit.path for unit in schedule.units(root, kind)]
    for path in paths:
        assert f"written: {path}" in out and path.is_file()
        assert path.is_relative_to(isolated)
    shown = _out(sandman("schedule", "show"))
    assert all(f"installed: {path}" in shown for path in paths)
    removed = _out(sandman("schedule", "uninstall", "--no-enable"))
    assert all(f"removed: {path}" in removed for path in paths) and not any(p.exists() for p in paths)
    assert all(f"not installed: {path}" in _out(sandman("schedule", "show")) for path in paths)


def test_systemd_units_run_this_sandman_nightly_and_install_is_idempotent(root, isolated):
    folder = isolated / ".config" / "systemd" / "user"
    folder.mkdir(parents=True)
    (folder / "theirs.service").write_text("[Service]\nExecStart=/bin/true\n")
    change = schedule.install(root, kind="systemd", at="04:15", enable=False)
    assert sorted(p.name for p in change.written) == ["sandman-reflect.service", "sandman-reflect.timer",
                                                      "sandman-serve.service"]
    service = (folder / "sandman-reflect.service").read_text()
    from sandman.verbs.hooks import executable

    assert f"ExecStart={executable()[0]} reflect" in service and "Type=oneshot" in service
    assert f"Environment=SANDMAN_ROOT={root.root}" in service
    assert "OnCalendar=*-*-* 04:15:00\nPersistent=true" in (folder / "sandman-reflect.timer").read_text()
    assert "ExecStart=" in (folder / "sandman-serve.service").read_text()
    assert "report serve" in (folder / "sandman-serve.service").read_text()
    again = schedule.install(root, kind="systemd", at="04:15", enable=False)
    assert again.written == [] and len(again.unchanged) == 3
    schedule.uninstall(root, kind="systemd", enable=False)
    assert sorted(p.name for p in folder.iterdir()) == ["theirs.service"]


def test_systemd_is_asked_to_load_and_unload_them(root, fake_schedulers):
    schedule.install(root, kind="systemd")
    schedule.uninstall(root, kind="systemd")
    assert fake_schedulers.read_text().splitlines() == [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now sandman-reflect.timer sandman-serve.service",
        "systemctl --user disable --now sandman-reflect.timer sandman-serve.service",
        "systemctl --user daemon-reload",
    ]


def test_launchd_agents_are_valid_plists_in_the_users_launch_agents(root, isolated, fake_schedulers):
    change = schedule.install(root, kind="launchd", at="03:30")
    folder = isolated / "Library" / "LaunchAgents"
    assert sorted(p.name for p in change.written) == ["org.sandman.reflect.plist", "org.sandman.serve.plist"]
    reflect = plistlib.loads((folder / "org.sandman.reflect.plist").read_bytes())
    assert reflect["Label"] == "org.sandman.reflect" and reflect["ProgramArguments"][-1] == "reflect"
    assert reflect["StartCalendarInterval"] == {"Hour": 3, "Minute": 30}
    assert reflect["EnvironmentVariables"] == {"SANDMAN_ROOT": str(root.root)}
    serve = plistlib.loads((folder / "org.sandman.serve.plist").read_bytes())
    assert serve["ProgramArguments"][-2:] == ["report", "serve"] and serve["KeepAlive"] is True
    assert any(line.startswith("launchctl bootstrap gui/") for line in fake_schedulers.read_text().splitlines())
    schedule.uninstall(root, kind="launchd")
    assert list(folder.iterdir()) == []


def test_cron_writes_nothing_and_prints_the_line(root, isolated):
    out = _out(sandman("schedule", "install", "--kind", "cron", "--at", "02:05"))
    assert f"5 2 * * * SANDMAN_ROOT={root.root} " in out and out.count("reflect") >= 1
    assert not (isolated / ".config" / "systemd").exists() and not (isolated / "Library").exists()


@pytest.mark.parametrize("args, message", [
    (["--at", "25:00"], "sandman: --at '25:00' is not a time of day: give HH:MM, such as 03:30\n"),
    (["--kind", "upstart"], "sandman: --kind 'upstart' is unknown; use one of systemd, launchd, cron\n"),
])
def test_bad_options_are_one_line_errors(root, args, message):
    done = sandman("schedule", "install", "--no-enable", *args)
    assert done.returncode != 0 and done.stderr.decode() == message


def test_doctor_reports_the_schedule_and_the_last_reflect(root, monkeypatch, fake_claude):
    monkeypatch.setattr(schedule, "detect", lambda: "systemd")
    found = next(c for c in doctor().checks if c.name == "schedule")
    assert found.message.startswith("not installed for systemd") and found.message.endswith("reflect has not run")
    schedule.install(root, kind="systemd", enable=False)
    found = next(c for c in doctor().checks if c.name == "schedule")
    assert found.status == "ok" and found.message.startswith("installed for systemd (3 files)")
    (schedule.units(root, "systemd")[1].path).unlink()
    assert next(c for c in doctor().checks if c.name == "schedule").status == "warn"


def _environment(path: Path) -> dict[str, str]:
    """The variables a systemd unit's ``Environment=`` lines set."""
    return dict(word.split("=", 1) for line in path.read_text().splitlines() if line.startswith("Environment=")
                for word in shlex.split(line.removeprefix("Environment=")))


def test_scheduled_jobs_carry_the_claude_the_install_found_not_only_sandman_root(root, isolated, fake_claude):
    """The units carried only SANDMAN_ROOT: under the scheduler's bare PATH `shift run` said
    `skipped: claude not found`, exit 0, while doctor said OK claude and OK schedule."""
    _machine_on(root, isolated / "code")
    claude = os.path.abspath(shutil.which(os.environ["SANDMAN_CLAUDE_BIN"]))
    _out(sandman("schedule", "install", "--kind", "systemd", "--no-enable"))
    folder = isolated / ".config" / "systemd" / "user"
    for job in ("reflect", "shift", "skim", "deep"):
        assert _environment(folder / f"sandman-{job}.service") == {"SANDMAN_ROOT": str(root.root),
                                                                  "SANDMAN_CLAUDE_BIN": claude}
    cron = _out(sandman("schedule", "install", "--kind", "cron"))
    lines = [line for line in cron.splitlines() if "* * *" in line]
    assert len(lines) == 4 and all(f"SANDMAN_CLAUDE_BIN={shlex.quote(claude)} " in line for line in lines)
    schedule.install(root, kind="launchd", enable=False)
    agent = plistlib.loads((isolated / "Library" / "LaunchAgents" / "org.sandman.shift.plist").read_bytes())
    assert agent["EnvironmentVariables"] == {"SANDMAN_ROOT": str(root.root), "SANDMAN_CLAUDE_BIN": claude}


def test_doctor_warns_when_an_installed_job_would_not_find_claude(root, isolated, monkeypatch, tmp_path):
    monkeypatch.setattr(schedule, "detect", lambda: "systemd")
    monkeypatch.setattr(schedule, "SCHEDULER_PATH", {**schedule.SCHEDULER_PATH, "systemd": str(tmp_path / "none")})
    monkeypatch.setenv("SANDMAN_CLAUDE_BIN", str(tmp_path / "nowhere" / "claude"))
    schedule.install(root, kind="systemd", enable=False)  # no claude found: none written in
    found = next(c for c in doctor().checks if c.name == "schedule")
    assert found.status == "warn" and "sets no SANDMAN_CLAUDE_BIN" in found.message, found.message

    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text("#!/bin/sh\nexit 0\n")
    claude.chmod(0o755)
    monkeypatch.setenv("SANDMAN_CLAUDE_BIN", str(claude))
    schedule.install(root, kind="systemd", enable=False)
    assert next(c for c in doctor().checks if c.name == "schedule").status == "ok"
    claude.unlink()  # the claude the jobs name is gone
    found = next(c for c in doctor().checks if c.name == "schedule")
    assert found.status == "warn" and f"runs claude {claude}, which is not an executable file" in found.message


def _machine_on(layout: Layout, roots: Path) -> None:
    roots.mkdir(parents=True, exist_ok=True)
    layout.settings_file.write_text(f'[machine]\nroots = ["{roots}"]\n', encoding="utf-8")


def test_the_shift_tick_is_scheduled_only_with_the_machine_on(root, isolated, fake_schedulers):
    folder = isolated / ".config" / "systemd" / "user"
    off = schedule.install(root, kind="systemd", enable=False)
    assert not any("shift" in p.name for p in off.written)
    assert "shift run" not in _out(sandman("schedule", "show", "--kind", "cron"))
    _machine_on(root, isolated / "code")
    on = schedule.install(root, kind="systemd")
    assert sorted(p.name for p in on.written) == ["sandman-deep.service", "sandman-deep.timer", "sandman-shift.service",
                                                  "sandman-shift.timer", "sandman-skim.service", "sandman-skim.timer"]
    assert len(on.unchanged) == 3
    from sandman.verbs.hooks import executable

    assert f"ExecStart={executable()[0]} shift run" in (folder / "sandman-shift.service").read_text()
    assert "OnCalendar=*:0/5\nPersistent=false" in (folder / "sandman-shift.timer").read_text()
    assert ("systemctl --user enable --now sandman-reflect.timer sandman-serve.service sandman-shift.timer "
            "sandman-skim.timer sandman-deep.timer" in fake_schedulers.read_text().splitlines())
    shown = _out(sandman("schedule", "show", "--kind", "systemd"))
    assert f"installed: {folder / 'sandman-shift.timer'}" in shown
    assert "*/5 * * * * SANDMAN_ROOT=" in _out(sandman("schedule", "install", "--kind", "cron"))
    # Turned off after install: uninstall still removes the tick's files.
    root.settings_file.unlink()
    gone = schedule.uninstall(root, kind="systemd")
    assert {p.name for p in gone.removed} >= {"sandman-shift.service", "sandman-shift.timer"}
    assert not folder.exists() or list(folder.iterdir()) == []
    assert "sandman-shift.timer" in fake_schedulers.read_text().splitlines()[-2]


def test_the_research_runner_is_scheduled_with_the_machine_on_skim_hourly_deep_daily(root, isolated,
                                                                                      fake_schedulers):
    from sandman.verbs.hooks import executable

    folder = isolated / ".config" / "systemd" / "user"
    off = schedule.install(root, kind="systemd", enable=False)
    assert not any(name in p.name for p in off.written for name in ("skim", "deep"))
    _machine_on(root, isolated / "code")
    schedule.install(root, kind="systemd", enable=False)
    assert f"ExecStart={executable()[0]} breathe run skim" in (folder / "sandman-skim.service").read_text()
    assert "OnCalendar=*-*-* *:17:00\n" in (folder / "sandman-skim.timer").read_text()
    assert f"ExecStart={executable()[0]} breathe run deep" in (folder / "sandman-deep.service").read_text()
    assert "OnCalendar=*-*-* 13:07:00\n" in (folder / "sandman-deep.timer").read_text()
    cron = _out(sandman("schedule", "install", "--kind", "cron"))
    assert "17 * * * * SANDMAN_ROOT=" in cron and "breathe run skim" in cron
    assert "7 13 * * * SANDMAN_ROOT=" in cron and "breathe run deep" in cron
    schedule.install(root, kind="launchd", enable=False)
    agents = isolated / "Library" / "LaunchAgents"
    skim = plistlib.loads((agents / "org.sandman.skim.plist").read_bytes())
    assert skim["ProgramArguments"][-3:] == ["breathe", "run", "skim"]
    assert skim["StartCalendarInterval"] == {"Minute": 17}
    deep = plistlib.loads((agents / "org.sandman.deep.plist").read_bytes())
    assert deep["StartCalendarInterval"] == {"Hour": 13, "Minute": 7}
    gone = schedule.uninstall(root, kind="systemd", enable=False)
    assert {p.name for p in gone.removed} >= {"sandman-skim.timer", "sandman-deep.service"}


def test_launchd_shift_tick_agent_starts_every_five_minutes(root, isolated, fake_schedulers):
    _machine_on(root, isolated / "code")
    schedule.install(root, kind="launchd")
    tick = plistlib.loads((isolated / "Library" / "LaunchAgents" / "org.sandman.shift.plist").read_bytes())
    assert tick["Label"] == "org.sandman.shift" and tick["ProgramArguments"][-2:] == ["shift", "run"]
    assert tick["StartInterval"] == 300 and "StartCalendarInterval" not in tick


def test_doctor_lists_the_shift_tick_when_the_machine_is_on(root, isolated, monkeypatch, fake_claude):
    monkeypatch.setattr(schedule, "detect", lambda: "systemd")
    schedule.install(root, kind="systemd", enable=False)
    _machine_on(root, isolated / "code")
    found = next(c for c in doctor().checks if c.name == "schedule")
    assert found.status == "warn" and "sandman-shift" in found.message
    assert any(path.endswith("sandman-shift.timer") for path in found.details["files"])
    schedule.install(root, kind="systemd", enable=False)
    found = next(c for c in doctor().checks if c.name == "schedule")
    assert found.status == "ok" and found.message.startswith("installed for systemd (9 files)")


@pytest.fixture
def failing_systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``systemctl`` on PATH that fails as it does without a user bus."""
    folder = tmp_path / "failing-bin"
    folder.mkdir()
    script = folder / "systemctl"
    script.write_text('#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_install_and_uninstall_exit_1_and_say_so_when_systemctl_fails(root, isolated, failing_systemctl):
    done = sandman("schedule", "install", "--kind", "systemd")
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 1, out
    assert "written but not enabled" in out and "systemctl --user enable --now" in out
    assert "Failed to connect to bus" in out
    assert all(unit.path.is_file() for unit in schedule.units(root, "systemd"))
    done = sandman("schedule", "uninstall", "--kind", "systemd")
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 1, out
    assert "not disabled" in out and "systemctl --user disable --now" in out
    assert not any(unit.path.exists() for unit in schedule.units(root, "systemd"))
