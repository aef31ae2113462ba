"""The backstop check's kept scan (issue 29): a due start stats only what could have changed.

``anything_missed(..., kept=<path>)`` (what both start hooks run) keeps, per project folder,
the folder's ``(mtime_ns, inode)``, when it was last listed whole, the transcripts to look at
again and the names of the quiet ones (docs/BANK-FORMAT.md, "Started sessions"). Each test
pins one way the kept scan could hide a missed transcript: a folder that changed, a transcript
aging into the window, a quiet one written again or replaced (found within the rescan period),
a kept scan too old, from the future, corrupt or another folder's, a folder changed within the
clock's tick.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandman import config
from sandman.archive import missed

MINUTE = 60
LONG_AGO = time.time() - 3600  # a folder's mtime an hour back: outside the racy margin


def _sid(n: int) -> str:
    return f"c0ffee{n:02d}-0000-4000-8000-000000000000"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(root, projects folder, one project folder in it); ``_settle`` ages the folders' mtimes."""
    root = tmp_path / "root"
    root.mkdir()
    folder = tmp_path / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    return root, folder.parent, folder


def _transcript(folder: Path, sid: str, age: float, taken_in: Path | None = None) -> Path:
    """A transcript of ``sid`` last written ``age`` seconds ago; linked into ``taken_in`` (a take) after."""
    path = folder / f"{sid}.jsonl"
    path.write_text('{"type":"user"}\n')
    moment = time.time() - age
    os.utime(path, (moment, moment))
    if taken_in is not None:
        taken_in.mkdir(parents=True, exist_ok=True)
        os.link(path, taken_in / path.name)
    return path


def _settle(*folders: Path, at: float = LONG_AGO) -> None:
    """Give each folder an mtime an hour back (or ``at``), as a folder nobody touched lately has."""
    for folder in folders:
        os.utime(folder, (at, at))


def _check(root: Path, projects: Path, now: float | None = None, starting: str | None = None) -> bool:
    return missed.anything_missed(str(root), str(projects), starting, time.time() if now is None else now,
                                  str(root / ".backstop.kept"))


def _kept(root: Path) -> dict:
    return json.loads((root / ".backstop.kept").read_text())


def test_the_kept_scan_says_what_the_whole_check_says(places):
    root, projects, folder = places
    archive = root / ".archive"
    for n in range(5):
        _transcript(folder, _sid(n), age=10 * MINUTE, taken_in=archive)
    _transcript(folder, _sid(8), age=config.BACKSTOP_LOOKBACK_S + 60)  # take --all's
    _transcript(folder, _sid(9), age=30)  # live
    _settle(folder, projects)
    assert not _check(root, projects)
    kept = _kept(root)
    assert kept["format"] == 2 and kept["projects"] == str(projects)
    assert kept["folders"][folder.name][3] == [f"{_sid(9)}.jsonl"]  # only the live one is looked at again
    assert not _check(root, projects)  # from the kept scan
    assert not missed.anything_missed(str(root), str(projects), None, time.time())


def test_a_transcript_made_in_a_kept_folder_is_looked_at(places):
    root, projects, folder = places
    _transcript(folder, _sid(1), age=10 * MINUTE, taken_in=root / ".archive")
    _settle(folder, projects)
    assert not _check(root, projects)
    _transcript(folder, _sid(2), age=10 * MINUTE)  # a session whose ending was missed: its folder changed
    assert _check(root, projects)


def test_a_transcript_replaced_under_its_name_is_found_at_the_next_check(places):
    """Issue 29 item 6: a quiet name was not looked at again until its folder's hourly whole listing;
    its inode, kept beside it, tells the file replaced under it (take --missed found it at once)."""
    root, projects, folder = places
    taken = _transcript(folder, _sid(1), age=10 * MINUTE, taken_in=root / ".archive")
    _settle(folder, projects)
    now = time.time()
    assert not _check(root, projects, now)
    other = _transcript(folder, "copy", age=3 * MINUTE)
    other.write_text(taken.read_text() + '{"type":"user"}\n')
    moment = now - 3 * MINUTE
    os.utime(other, (moment, moment))
    other.replace(taken)  # another file under the taken one's name: never taken
    _settle(folder, at=LONG_AGO - 60)
    assert missed.anything_missed(str(root), str(projects), None, now + MINUTE)  # the whole check's answer
    assert _check(root, projects, now + MINUTE)


def test_a_taken_transcript_written_again_is_found_at_its_folders_next_whole_listing(places):
    root, projects, folder = places
    taken = _transcript(folder, _sid(1), age=10 * MINUTE, taken_in=root / ".archive")
    _settle(folder, projects)
    now = time.time()
    assert not _check(root, projects, now)  # the whole listing
    with taken.open("a") as stream:  # resumed after its take, and its ending missed
        stream.write("{}\n")
    _transcript(folder, _sid(2), age=10 * MINUTE, taken_in=root / ".archive")  # a session since: the folder changed
    _settle(folder, at=LONG_AGO - 60)
    assert not _check(root, projects, now + 10 * MINUTE)  # only the new name is looked at
    assert not _check(root, projects, now + config.BACKSTOP_RESCAN_S - MINUTE)
    assert _check(root, projects, now + config.BACKSTOP_RESCAN_S + MINUTE)  # an hour after the whole listing


def test_a_project_folder_made_since_is_listed(places):
    root, projects, folder = places
    _settle(folder, projects)
    assert not _check(root, projects)
    other = projects / "-home-user-other"
    other.mkdir()
    _transcript(other, _sid(3), age=10 * MINUTE)
    _settle(other)  # its own mtime old: only the projects folder's says it is new
    assert _check(root, projects)


def test_a_live_transcript_aging_into_the_window_is_found_without_its_folder_changing(places):
    root, projects, folder = places
    young = _transcript(folder, _sid(1), age=30)
    _settle(folder, projects)
    assert not _check(root, projects)
    old = time.time() - 10 * MINUTE
    os.utime(young, (old, old))  # ten minutes idle, never taken: missed; the folder is as kept
    assert _check(root, projects)


def test_the_starting_session_is_looked_at_again_at_the_next_start(places):
    root, projects, folder = places
    _transcript(folder, _sid(1), age=10 * MINUTE)
    _settle(folder, projects)
    assert not _check(root, projects, starting=_sid(1))
    assert _check(root, projects, starting=_sid(2))


def test_a_kept_folder_is_listed_again_after_the_rescan_period(places):
    root, projects, folder = places
    taken = _transcript(folder, _sid(1), age=10 * MINUTE, taken_in=root / ".archive")
    _settle(folder, projects)
    now = time.time()
    assert not _check(root, projects, now)
    with taken.open("a") as stream:  # resumed after its take, and its ending missed
        stream.write("{}\n")
    assert missed.anything_missed(str(root), str(projects), None, now + 10 * MINUTE)  # the whole check: at once
    assert not _check(root, projects, now + 10 * MINUTE)  # the kept scan: not before its folder's next listing
    assert _check(root, projects, now + config.BACKSTOP_RESCAN_S + MINUTE)


def test_a_kept_scan_from_the_future_is_not_trusted(places):
    root, projects, folder = places
    taken = _transcript(folder, _sid(1), age=10 * MINUTE, taken_in=root / ".archive")
    _settle(folder, projects)
    now = time.time()
    assert not _check(root, projects, now + 10 * MINUTE)  # listed "ten minutes from now": the clock went back
    with taken.open("a") as stream:
        stream.write("{}\n")
    assert _check(root, projects, now + 5 * MINUTE)


@pytest.mark.parametrize("damage", ["not-json", "format", "projects", "entry", "watch-name", "folder-name"])
def test_a_corrupt_or_foreign_kept_scan_is_the_whole_check(places, damage):
    root, projects, folder = places
    _transcript(folder, _sid(1), age=30)
    _settle(folder, projects)
    assert not _check(root, projects)
    kept = _kept(root)
    path = _transcript(folder, _sid(2), age=10 * MINUTE)  # missed, hidden from the kept scan below
    _settle(folder)
    kept["key"] = [projects.stat().st_mtime_ns, projects.stat().st_ino]
    kept["folders"][folder.name][:2] = [folder.stat().st_mtime_ns, folder.stat().st_ino]
    (root / ".backstop.kept").write_text(json.dumps(kept))
    assert not _check(root, projects)  # a kept scan that hides it, as one could be made to
    if damage == "not-json":
        text = "{not json"
    else:
        if damage == "format":
            kept["format"] = 99
        elif damage == "projects":
            kept["projects"] = "/elsewhere/projects"
        elif damage == "entry":
            kept["folders"][folder.name][2] = "yesterday"
        elif damage == "watch-name":
            kept["folders"][folder.name][3] = ["../x.jsonl"]
        else:
            kept["folders"]["a/b"] = kept["folders"][folder.name]
        text = json.dumps(kept)
    (root / ".backstop.kept").write_text(text)
    assert _check(root, projects)
    os.link(path, root / path.name)  # taken: nothing missed, and the kept scan is written anew
    assert not _check(root, projects)
    assert _kept(root)["format"] == 2 and _kept(root)["folders"][folder.name][3] == [f"{_sid(1)}.jsonl"]


def test_a_folder_changed_within_the_clocks_tick_is_listed_again(places):
    root, projects, folder = places
    _settle(projects)
    os.utime(folder, None)  # changed just now: a second change may come within the same tick
    moment = folder.stat().st_mtime_ns
    assert not _check(root, projects)
    assert _kept(root)["folders"][folder.name][0] is None
    _transcript(folder, _sid(1), age=10 * MINUTE)
    os.utime(folder, ns=(moment, moment))  # that second change, its mtime the same
    assert _check(root, projects)


def test_a_folder_of_whole_second_times_is_racy_for_longer():
    clock = 1_800_000_000 * 1_000_000_000
    assert missed._racy(clock - 2 * 1_000_000_000, clock)  # FAT: a tick of two seconds
    assert not missed._racy(clock - 2 * 1_000_000_000 + 1, clock)  # a fine clock: a tick of milliseconds
    assert not missed._racy(clock - 5 * 1_000_000_000, clock)


def test_a_name_that_is_not_utf8_reads_back_from_the_kept_scan(places):
    root, projects, folder = places
    odd = projects / os.fsdecode(b"-home-\xff")
    odd.mkdir()
    young = _transcript(odd, _sid(1), age=30)
    _settle(odd, folder, projects)
    assert not _check(root, projects)
    assert _kept(root)["folders"][odd.name][3] == [young.name]
    old = time.time() - 10 * MINUTE
    os.utime(young, (old, old))
    assert _check(root, projects)


def test_the_copy_of_the_rescan_period_is_configs():
    assert missed.BACKSTOP_RESCAN_S == config.BACKSTOP_RESCAN_S


def test_both_start_hooks_keep_the_scan_where_the_layout_names_it(layout, isolated):
    from sandman.verbs.remember import remember

    cwd = isolated / "proj"
    cwd.mkdir()
    remember(layout, "The project builds with make.", cwd=str(cwd))
    folder = isolated / ".claude" / "projects" / "-proj"
    folder.mkdir(parents=True)
    _transcript(folder, _sid(1), age=30)  # live: nothing to take

    def start(argv: list[str], session: str) -> set[str]:
        payload = {"session_id": session, "transcript_path": "/nowhere.jsonl", "cwd": str(cwd),
                   "hook_event_name": "SessionStart", "source": "startup"}
        done = subprocess.run([sys.executable, "-X", "importtime", *argv], input=json.dumps(payload).encode(),
                              capture_output=True, env=os.environ.copy(), timeout=60)
        assert done.returncode == 0 and done.stdout
        return {line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:") and "|" in line}

    assert "sandman.recall.compose" in start(["-m", "sandman", "recall", "--hook"], _sid(10))  # the full hook
    assert json.loads(layout.backstop_kept.read_text())["folders"]["-proj"][3] == [f"{_sid(1)}.jsonl"]
    layout.backstop_kept.unlink()
    layout.backstop_stamp.unlink()  # due again
    fasthook = Path(missed.__file__).parent.parent / "fasthook.py"
    assert "sandman.recall.compose" not in start(["-I", "-S", str(fasthook), "recall", "--hook"], _sid(11))
    assert json.loads(layout.backstop_kept.read_text())["folders"]["-proj"][3] == [f"{_sid(1)}.jsonl"]
