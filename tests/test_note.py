"""``sandman note``: the note the next session in a directory reads first (docs/note.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import sandman
from sandman import note as notes
from sandman.banks.names import bank_name
from sandman.cli import app
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.verbs.note import leave
from sandman.verbs.recall import recall
from sandman.verbs.remember import remember

NOTE = "Next: finish the parser split; tests in tests/test_parse.py still fail."


@pytest.fixture
def project(isolated: Path, layout: Layout) -> Path:
    project = isolated / "proj"
    remember(layout, "The build runs with make.", cwd=str(project))
    return project


def hook(project: Path, source: str = "startup", session: str = "5e550000-0000-4000-8000-000000000001") -> str:
    payload = {"session_id": session, "cwd": str(project), "hook_event_name": "SessionStart", "source": source}
    done = sandman("recall", "--hook", stdin=json.dumps(payload).encode())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout else ""


def test_recall_shows_the_note_first_until_replaced_and_says_how_often_it_was_delivered(
        layout: Layout, project: Path) -> None:
    leave(layout, NOTE, cwd=str(project))
    first = hook(project)
    assert first.startswith(f"## Note from the last session (")
    assert first.splitlines()[1] == NOTE
    assert "The build runs with make." in first
    second = hook(project, session="5e550000-0000-4000-8000-000000000002")
    assert second.splitlines()[1].startswith("(already delivered once since ")
    record = notes.read(layout, str(project)).data
    assert record["delivered"] == 2
    assert record["sessions"] == ["5e550000-0000-4000-8000-000000000001", "5e550000-0000-4000-8000-000000000002"]
    resumed = hook(project, source="resume", session="5e550000-0000-4000-8000-000000000002")
    assert NOTE not in resumed and "this session continues" in resumed, "a resume gets the short note"
    assert notes.read(layout, str(project)).data["delivered"] == 2, "a resume is not counted"
    leave(layout, "Next: release 1.2.", cwd=str(project))
    third = hook(project)
    assert third.splitlines()[1] == "Next: release 1.2." and NOTE not in third
    assert notes.read(layout, str(project)).data["delivered"] == 1


def test_a_once_note_is_shown_to_one_session_and_a_compaction_shows_it_uncounted(
        layout: Layout, project: Path) -> None:
    leave(layout, NOTE, cwd=str(project), once=True)
    assert NOTE in hook(project, source="compact")
    assert notes.read(layout, str(project)).data["delivered"] == 0
    assert NOTE in hook(project)
    assert NOTE not in hook(project, session="5e550000-0000-4000-8000-000000000003")


def test_recall_by_hand_shows_the_note_without_counting_it(layout: Layout, project: Path) -> None:
    leave(layout, NOTE, cwd=str(project))
    assert NOTE in recall(layout, str(project)).text
    assert notes.read(layout, str(project)).data["delivered"] == 0


def test_the_note_stays_within_the_recall_budget(layout: Layout, project: Path) -> None:
    leave(layout, "Next steps:\n" + "\n".join(f"- step {i} of the long plan" for i in range(60)), cwd=str(project))
    for budget in (9_000, 600, 200, 40):
        text = recall(layout, str(project), budget).text
        assert len(text) <= budget, budget
    assert "[note cut at 600 UTF-16 units]" in recall(layout, str(project), 600).text


def test_a_note_of_emoji_stays_within_the_budget_in_utf16_units(layout: Layout, project: Path) -> None:
    """Regression: the note was measured in characters while the budget counts UTF-16 units."""
    leave(layout, "Next:\n" + "\n".join(f"- \U0001f680 step {i} \U0001f9ea\U0001f9ea" for i in range(60)),
          cwd=str(project))
    for budget in (9_000, 600, 201, 41):
        text = recall(layout, str(project), budget).text
        assert len(text.encode("utf-16-le")) // 2 <= budget, budget


def test_only_the_same_directory_gets_the_note(layout: Layout, project: Path) -> None:
    leave(layout, NOTE, cwd=str(project))
    assert NOTE not in recall(layout, str(project / "sub")).text


@pytest.mark.parametrize(("note", "message"), [
    ("   ", "note is empty; say what the next session should do"),
    ("x" * 2_001, "note is 2,001 characters; keep it under 2,000 (it is read inside the recall budget)"),
    ("a\0b", "note holds a NUL character; remove it"),
    ("<private>only this</private>", "note is empty; say what the next session should do"),
    ("deploy with AKIAUJZDE8GXD6NCF10E", "note refused: it contains a secret (aws-access-key-id); "
                                         "remove the credential"),
])
def test_a_bad_note_is_refused_and_nothing_is_written(layout: Layout, project: Path, note: str,
                                                      message: str) -> None:
    with pytest.raises(InputError) as raised:
        leave(layout, note, cwd=str(project))
    assert str(raised.value) == message
    assert not layout.note(bank_name(project)).exists()


def test_note_cli_writes_and_refuses_in_one_line(layout: Layout, project: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["note", NOTE, "--cwd", str(project)])
    assert done.exit_code == 0, done.stderr
    assert done.stdout == f"note for {project}: {layout.note(bank_name(project))} (shown until replaced)\n"
    assert done.stderr == ""
    done = runner.invoke(app, ["note", "x", "--cwd", "relative"])
    assert done.exit_code == 2 and done.stderr.count("\n") == 1 and done.stderr.startswith("sandman: ")


def test_a_broken_record_never_stops_recall(layout: Layout, project: Path) -> None:
    path = layout.note(bank_name(project))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff{not json")
    assert "The build runs with make." in hook(project)


DEPRECATION = ("sandman: `sandman handoff` is now `sandman note` (a handoff is a shift's); "
               "the old name goes in the next release\n")


def test_regression_handoff_named_two_things_the_old_verb_still_writes_a_note_and_says_so(
        layout: Layout, project: Path) -> None:
    """Issue 33: "handoff" was both this note and a shift's handoff.md. The note is `sandman note`
    now; `sandman handoff` does the same for one release, with one line on stderr, and stays out
    of --help."""
    done = sandman("handoff", "--cwd", str(project), "--", NOTE)
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode() == DEPRECATION
    assert done.stdout.decode() == f"note for {project}: {layout.note(bank_name(project))} (shown until replaced)\n"
    assert hook(project).startswith("## Note from the last session (")
    listing = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}).stdout
    assert "  note " in listing and "handoff" not in listing
    refused = CliRunner().invoke(app, ["handoff", "   ", "--cwd", str(project)])
    assert refused.exit_code == 2
    assert refused.stderr == DEPRECATION + "sandman: note is empty; say what the next session should do\n"


def test_a_note_left_in_the_old_handoff_folder_is_delivered_until_a_new_note_replaces_it(
        layout: Layout, project: Path) -> None:
    leave(layout, NOTE, cwd=str(project))
    new, old = layout.note(bank_name(project)), layout.old_handoff_note(bank_name(project))
    old.parent.mkdir(parents=True)
    new.rename(old)  # a record as `sandman handoff` left it before the rename
    assert hook(project).splitlines()[1] == NOTE
    assert json.loads(old.read_text())["delivered"] == 1 and not new.exists()
    leave(layout, "Next: release 1.2.", cwd=str(project))
    assert not old.exists() and json.loads(new.read_text())["note"] == "Next: release 1.2."
    assert hook(project).splitlines()[1] == "Next: release 1.2."


@pytest.mark.parametrize(("stdin", "message"), [
    (b"x" * 3_000_000, "note is over 8,000 characters"),
    ("\N{GRINNING FACE}".encode() * 2_001, "note is over 2,000 characters"),
])
def test_regression_a_long_note_on_stdin_was_said_to_be_8001_characters(
        layout: Layout, project: Path, stdin: bytes, message: str) -> None:
    done = sandman("note", "-", "--cwd", str(project), stdin=stdin)
    assert done.returncode == 2
    assert done.stderr.decode() == (f"sandman: {message}; keep it under 2,000 "
                                    "(it is read inside the recall budget)\n")
    assert not layout.note(bank_name(project)).exists()


def test_a_note_on_stdin_of_2000_four_byte_characters_is_kept_whole(layout: Layout, project: Path) -> None:
    done = sandman("note", "-", "--cwd", str(project), stdin="\N{GRINNING FACE}".encode() * 2_000)
    assert done.returncode == 0, done.stderr
    assert notes.read(layout, str(project)).data["note"] == "\N{GRINNING FACE}" * 2_000
