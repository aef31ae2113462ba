"""The status line (docs/statusline.md; issue 32, point 6): the live shift under Claude Code's prompt,
its fast path's imports, its install through ``hooks`` and the plugin's commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from test_shift import TUESDAY_NIGHT, wait_for_session, world  # noqa: F401 (world is a fixture)

from sandman.errors import ConfigError
from sandman.layout import Layout
from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails
from sandman.verbs import hooks

REPO = Path(__file__).resolve().parent.parent
FASTHOOK = REPO / "sandman" / "fasthook.py"
PAYLOAD = {  # the fields Claude Code 2.1.332 gives a statusLine command (docs/statusline.md)
    "session_id": "3f9a1c2b-0000-4000-8000-000000000000", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
    "model": {"id": "claude-opus-4", "display_name": "Opus"},
    "workspace": {"current_dir": "/tmp", "project_dir": "/tmp", "added_dirs": []}, "version": "2.1.332",
    "output_style": {"name": "default"}, "cost": {"total_cost_usd": 0.1, "total_duration_ms": 1000},
}


def status(root: Path, payload: dict | bytes = b"{}") -> subprocess.CompletedProcess:
    """The command ``hooks install --statusline`` writes, run as Claude Code runs it."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    env = {**os.environ, "SANDMAN_ROOT": str(root)}
    return subprocess.run([sys.executable, "-I", "-S", str(FASTHOOK), "statusline"], input=data, env=env,
                          capture_output=True)


def epoch(moment) -> float:
    return moment.timestamp()


@pytest.mark.calendar
def test_the_live_shift_shows_in_the_status_line(layout, world):
    started = tick.run(layout, now=TUESDAY_NIGHT)
    wait_for_session(layout)  # the session exited; the shift stays open until the next tick
    from sandman import statusline

    now = TUESDAY_NIGHT + timedelta(minutes=48)
    window = {"rate_limits": {"five_hour": {"used_percentage": 40, "resets_at": int(epoch(now)) + 7260}}}
    shown = statusline.line(str(layout.root), {**PAYLOAD, **window}, epoch(now))

    repo = Path(shifts.read_meta(layout, started.shift)["repo"]).name
    # The newest event of that UTC day is the shift's start (the fake session's own appends carry the real clock).
    assert shown == (f"sandman {started.shift} · Tuesday Refactor · {repo} · 4h12m left · window 2h01m · "
                     f"shift.start Refactor on {repo} (48m ago)")
    done = status(layout.root, {**PAYLOAD, **window})  # the real launcher: clock-free parts
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.decode().startswith(f"sandman {started.shift} · Tuesday Refactor · {repo} · ")


def test_no_shift_open_says_so_with_the_last_event_and_a_hostile_summary_cannot_reach_the_terminal(layout, world):
    from sandman import statusline

    event = trails.new_event("shift.commit", "edit \x1b[2J\x1b]0;pwned\x07 NOTES\u202e.md\nsecond line",
                             now=TUESDAY_NIGHT)
    trails.append_event(layout, event)

    shown = statusline.line(str(layout.root), PAYLOAD, epoch(TUESDAY_NIGHT) + 90)

    assert shown == "sandman no shift open · shift.commit edit [2J ]0;pwned NOTES .md second line (1m ago)"
    assert all(char.isprintable() for char in shown)


def test_the_payloads_window_is_recorded_for_the_shift_clock(layout, world):
    from sandman import statusline

    now = TUESDAY_NIGHT
    resets = int(epoch(now)) + 3 * 3600
    payload = {**PAYLOAD, "rate_limits": {"five_hour": {"used_percentage": 55.5, "resets_at": resets}}}

    statusline.line(str(layout.root), payload, epoch(now))
    recorded = json.loads(layout.shift_window.read_text())
    before = layout.shift_window.stat().st_mtime_ns
    statusline.line(str(layout.root), payload, epoch(now) + 60)  # the same window: not rewritten

    assert recorded["resets_at"] == shifts.journal.iso(now + timedelta(hours=3))
    assert recorded["used_percentage"] == 55.5 and recorded["source"] == "statusline"
    assert layout.shift_window.stat().st_mtime_ns == before
    clock = shifts.clock(layout, now)
    assert clock.minutes == 180 and clock.used_percentage == 55.5
    shown = statusline.line(str(layout.root), PAYLOAD, epoch(now) + 3600)  # no window in this payload
    assert "window 2h00m" in shown


@pytest.mark.parametrize("used", ["NaN", "Infinity", "-Infinity", "-5", "1e308", "true"])
def test_a_non_finite_or_out_of_range_used_percentage_leaves_the_window_file_valid_json(layout, world, used):
    resets = int(epoch(TUESDAY_NIGHT)) + 3 * 3600
    payload = ('{"rate_limits": {"five_hour": {"used_percentage": %s, "resets_at": %d}}}' % (used, resets)).encode()
    from sandman import statusline

    shown = statusline.main(payload, epoch(TUESDAY_NIGHT))

    recorded = json.loads(layout.shift_window.read_text(), parse_constant=lambda name: pytest.fail(name))
    assert recorded["used_percentage"] is None and "window 3h00m" in shown
    clock = shifts.clock(layout, TUESDAY_NIGHT)  # the shift clock reads it
    assert clock.minutes == 180 and clock.used_percentage is None


@pytest.mark.parametrize("resets", ["1e300", "1e999", "-99999999999999999", "99999999999999999999999",
                                    "253402300800", '"10000-01-01T00:00:00Z"', "0", "NaN"])
def test_an_out_of_range_resets_at_leaves_only_the_window_out(layout, world, resets):
    from sandman import statusline

    trails.append_event(layout, trails.new_event("shift.commit", "edit NOTES.md", now=TUESDAY_NIGHT))
    payload = ('{"rate_limits": {"five_hour": {"used_percentage": 40, "resets_at": %s}}}' % resets).encode()

    shown = statusline.main(payload, epoch(TUESDAY_NIGHT) + 90)

    assert shown == "sandman no shift open · shift.commit edit NOTES.md (1m ago)\n"
    assert not layout.shift_window.exists()
    layout.shifts.mkdir(exist_ok=True)  # nor is one a file holds shown
    layout.shift_window.write_text('{"resets_at": %s, "used_percentage": 40}' % resets)
    assert statusline.main(b"{}", epoch(TUESDAY_NIGHT) + 90) == shown


@pytest.mark.parametrize("payload", [b"", b"not json", b"[1]", json.dumps({"rate_limits": {"five_hour": "x"}}).encode(),
                                     json.dumps({"rate_limits": {"five_hour": {"resets_at": "soon"}}}).encode()])
def test_a_bad_payload_still_prints_the_line_and_exits_0(layout, world, payload):
    done = status(layout.root, payload)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"sandman no shift open\n", b"")


def test_broken_files_leave_their_part_out_and_no_root_prints_nothing(layout, world, tmp_path):
    layout.shifts.mkdir(exist_ok=True)
    layout.shift_current.write_text("{not json")
    trail_day = layout.trail_day("2026-12-01")
    trail_day.parent.mkdir(parents=True, exist_ok=True)
    trail_day.write_text("garbage\n")
    assert status(layout.root).stdout == b"sandman no shift open\n"
    layout.shift_current.write_text(json.dumps({"shift": "s-20261201T2300Z", "state": "open"}))  # no meta.json
    assert status(layout.root).stdout == b"sandman s-20261201T2300Z\n"
    nowhere = status(tmp_path / "no-root")
    assert (nowhere.returncode, nowhere.stdout) == (0, b"")


def test_the_status_line_imports_built_ins_only():
    probe = ("import sys; sys.path[0] = sys.argv[1]; from sandman import statusline; statusline.main(b'{}'); "
             "print(sorted(m for m in ('json', 're', 'pathlib', 'datetime', 'typer', 'pygit2') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe, str(REPO)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_its_paths_are_layouts(tmp_path):
    from sandman import statusline

    layout = Layout(tmp_path)
    assert tmp_path / statusline.CURRENT == layout.shift_current
    assert tmp_path / statusline.WINDOW == layout.shift_window
    assert tmp_path / statusline.SHIFTS == layout.shifts
    assert layout.trail_day("2026-12-01") == tmp_path / statusline.TRAIL / "2026" / "12" / "01.jsonl"


def test_sandman_statusline_through_the_console_script_prints_the_same(layout, world):
    env = {**os.environ, "SANDMAN_ROOT": str(layout.root)}
    done = subprocess.run([sys.executable, "-m", "sandman", "statusline"], input=b"{}", env=env, capture_output=True)
    assert (done.returncode, done.stdout) == (0, b"sandman no shift open\n")


# --- installing it --------------------------------------------------------------------------------


def test_hooks_install_statusline_sets_it_once_and_uninstall_takes_it_away(isolated):
    settings = isolated / "settings.json"
    settings.write_text(json.dumps({"theme": "dark"}))

    added = hooks.install(settings, statusline=True)
    again = hooks.install(settings, statusline=True)

    data = json.loads(settings.read_text())
    assert data["statusLine"] == {"type": "command", "command": hooks.statusline_command(), "padding": 0}
    assert f"statusLine: {hooks.statusline_command()}" in added.added and not again.written
    assert data["theme"] == "dark" and "SessionStart" in data["hooks"]
    assert not hooks.install(settings).written  # an install without the flag keeps it
    assert json.loads(settings.read_text())["statusLine"] == data["statusLine"]
    removed = hooks.uninstall(settings)
    assert f"statusLine: {hooks.statusline_command()}" in removed.removed
    assert json.loads(settings.read_text()) == {"theme": "dark"}


def test_hooks_install_without_the_flag_adds_no_status_line(isolated):
    settings = isolated / "settings.json"
    hooks.install(settings)
    assert "statusLine" not in json.loads(settings.read_text())


def test_an_owners_own_status_line_is_never_replaced(isolated):
    settings = isolated / "settings.json"
    mine = {"statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}}
    settings.write_text(json.dumps(mine))

    with pytest.raises(ConfigError, match=r"already have a status line \('~/.claude/statusline.sh'\)"):
        hooks.install(settings, statusline=True)
    with pytest.raises(ConfigError, match="nothing was changed"):
        hooks.statusline(settings)
    assert not hooks.statusline(settings, remove=True).written
    hooks.uninstall(settings)
    assert json.loads(settings.read_text()) == mine


def test_hooks_statusline_alone_leaves_the_hooks_to_the_plugin(isolated):
    settings = isolated / "settings.json"
    changed = hooks.statusline(settings)
    assert changed.written and json.loads(settings.read_text()) == {
        "statusLine": {"type": "command", "command": hooks.statusline_command(), "padding": 0}}
    assert hooks.statusline(settings, remove=True).removed
    assert json.loads(settings.read_text()) == {}


def test_the_installed_command_runs_the_fast_path(isolated, layout, world):
    command = hooks.statusline_command()
    env = {**os.environ, "SANDMAN_ROOT": str(layout.root)}
    done = subprocess.run(command, shell=True, input=b"{}", env=env, capture_output=True)
    assert (done.returncode, done.stdout) == (0, b"sandman no shift open\n")
    assert hooks.is_sandman_statusline({"command": command})
    assert hooks.is_sandman_statusline({"command": "/usr/bin/python3 -m sandman statusline"})
    assert not hooks.is_sandman_statusline({"command": "~/.claude/statusline.sh"})


def test_the_plugin_commands_answer_from_sandman_at_once():
    for name, inline in (("shift", "!`sandman shift status`"), ("trail", "!`sandman trail today`")):
        text = (REPO / "commands" / f"{name}.md").read_text()
        assert inline in text and "run no tool" in text and "disable-model-invocation: true" in text
    assert "`sandman hooks statusline`" in (REPO / "commands" / "statusline.md").read_text()
