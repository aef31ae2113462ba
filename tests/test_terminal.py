"""Third-party text never reaches the terminal as escape sequences (sandman/marks.py).

The tester's attack: a first prompt holding ``ESC ] 0 ; PWNED BEL ESC [ 2 J``
retitled and cleared the terminal of whoever ran ``take --all --dry-run``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dream_helpers import transcript_lines
from helpers import sandman
from sandman import journal
from sandman.cli import app
from sandman.layout import Layout
from sandman.marks import visible

EVIL = "\x1b]0;PWNED\x07\x1b[2J\u202eevil\x9b31m"
SHOWN = "‹U+001B›]0;PWNED‹U+0007›‹U+001B›[2J‹U+202E›evil‹U+009B›31m"
SID = "5e550001-0000-4000-8000-000000000000"


def assert_inert(output: bytes | str) -> None:
    text = output.decode("utf-8") if isinstance(output, bytes) else output
    for char in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert char not in text, repr(text)


@pytest.mark.parametrize("text, shown", [
    (EVIL, SHOWN),
    ("two\nlines\tand\rreturn", "two‹U+000A›lines‹U+0009›and‹U+000D›return"),
    ("café — 日本 🚀 [bold]", "café — 日本 🚀 [bold]"),
])
def test_printable_marks_controls_and_bidi(text: str, shown: str) -> None:
    assert visible(text, lines=False) == shown
    assert visible(visible(text, lines=False), lines=False) == shown


def test_printable_keeps_lines_and_tabs_of_whole_output() -> None:
    assert visible("a\tb\nc\r\x1b[2J") == "a\tb\nc‹U+000D›‹U+001B›[2J"


def _evil_transcript(home: Path, cwd: str = "/home/user/proj", folder: str = "-home-user-proj") -> Path:
    path = home / ".claude" / "projects" / folder / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(transcript_lines(SID, Path(cwd), "2026-11-01T10:00:00Z", f"{EVIL} please help"))
    moment = time.time() - 3 * 86_400
    os.utime(path, (moment, moment))
    return path


def test_take_all_dry_run_prints_no_terminal_escapes_from_a_first_prompt(isolated: Path) -> None:
    _evil_transcript(isolated, cwd=f"/home/user/{EVIL}")
    done = sandman("take", "--all", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    assert_inert(done.stderr)
    assert f"/home/user/{SHOWN}" in done.stdout.decode()
    assert f"{SHOWN} please help" in done.stdout.decode()


def test_take_and_forget_print_no_terminal_escapes_from_a_transcript_path(isolated: Path) -> None:
    _evil_transcript(isolated, folder=f"proj{EVIL}")
    taken = sandman("take", SID)
    assert taken.returncode == 0, taken.stderr
    assert_inert(taken.stdout)
    assert f"proj{SHOWN}" in taken.stdout.decode()
    forgotten = sandman("forget", SID)
    assert forgotten.returncode == 0, forgotten.stderr
    assert_inert(forgotten.stdout)
    assert "destroyed: " in forgotten.stdout.decode()


def test_doctor_prints_no_terminal_escapes_from_a_journal_error(layout: Layout) -> None:
    journal.write(layout, "take", "failed", error=f"cannot read {EVIL}")
    done = sandman("doctor")
    assert_inert(done.stdout)
    assert f"cannot read {SHOWN}" in done.stdout.decode()
    assert_inert(sandman("doctor", "--json").stdout)


def test_hooks_print_no_terminal_escapes_from_the_settings_file(isolated: Path) -> None:
    settings = isolated / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooks": {"SessionEnd": [
        {"hooks": [{"type": "command", "command": f"sandman take --hook {EVIL}"}]}]}}))
    done = sandman("hooks", "uninstall")
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)


def test_an_error_line_prints_no_terminal_escapes(isolated: Path) -> None:
    done = sandman("take", SID, "--transcript", f"/tmp/{EVIL}")
    assert done.returncode != 0
    assert_inert(done.stderr)
    assert f"/tmp/{SHOWN}" in done.stderr.decode()


def test_recall_by_hand_prints_no_terminal_escapes(isolated: Path) -> None:
    done = sandman("recall", "--cwd", f"/tmp/{EVIL}")
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    assert f"/tmp/{SHOWN}" in done.stdout.decode()


def test_sync_lines_print_no_terminal_escapes_from_a_remote_file_name(monkeypatch, layout: Layout) -> None:
    from sandman.banks.merge import Kept
    from sandman.verbs import sync as verb

    result = verb.SyncResult("origin", "main", "merged", "0" * 40, pushed=True,
                             kept=[Kept("both-changed", f"memories/b/project_{EVIL}.md", f"memories/b/x{EVIL}_2.md")])
    monkeypatch.setattr(verb, "sync", lambda *args, **kwargs: result)
    done = CliRunner().invoke(app, ["sync"])
    assert done.exit_code == 0, done.output
    assert_inert(done.output)
    assert f"project_{SHOWN}.md" in done.output
