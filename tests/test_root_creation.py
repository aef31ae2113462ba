"""kill -9 during the first write of a new root (issue 22, fault 4; docs/BANK-FORMAT.md, "The data root").

The first ``remember`` on a root that does not exist creates it: the folder,
``.commit.lock``, the repository, ``.gitignore`` and the first commit. Each
trial starts a process that has imported everything ``remember`` needs, lets
it begin, and kills it with SIGKILL 0 to 20 ms later, inside that creation.
Then the next verb must work on the root as it was left, with no hand repair,
and leave it consistent: committed, ``git fsck`` clean, no ``.git`` without
``HEAD``, no half-built repository or temp file at the root's top level.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

from helpers import git
from sandman.layout import Layout
from sandman.store import repo as store
from sandman.store.atomic import TEMP_NAME
from sandman.verbs.remember import remember

TRIALS = 40
WINDOW_S = 0.020

CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from sandman.layout import Layout
    from sandman.verbs.remember import remember
    import pygit2, filelock  # noqa: F401 - loaded before the go, as in a running sandman
    print("ready", flush=True)
    sys.stdin.readline()
    remember(Layout(Path(sys.argv[1])), "Deploys go through the release script.", cwd=sys.argv[2])
""")


def _left(root: Path) -> str:
    """Name what the kill left, for the spread of kill points the test prints."""
    if not root.exists():
        return "no root"
    git_dir = root / ".git"
    if any(entry.name.startswith(".git.") for entry in root.iterdir()):
        return "repository being built"
    if not git_dir.exists():
        return "root without .git"
    if not (git_dir / "HEAD").exists():
        return ".git without HEAD"
    try:
        git(root, "rev-parse", "--verify", "HEAD")
    except (subprocess.CalledProcessError, AssertionError):
        return "repository without commit"
    return "committed"


def _assert_usable(root: Path) -> None:
    assert (root / ".git" / "HEAD").is_file()
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    fsck = subprocess.run(["git", "-C", str(root), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    leftovers = [entry.name for entry in root.iterdir()
                 if entry.name.startswith(".git.") and not entry.name.startswith(".git.broken-")
                 or TEMP_NAME.fullmatch(entry.name)]
    assert leftovers == []


def test_a_kill_in_the_first_write_of_a_new_root_never_breaks_it(tmp_path: Path, isolated: Path) -> None:
    directory = isolated / "project"
    directory.mkdir()
    rng = random.Random(22)
    seen: Counter[str] = Counter()
    for trial in range(TRIALS):
        root = tmp_path / f"root-{trial}"
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(directory)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, env=os.environ.copy())
        assert child.stdout.readline() == b"ready\n"
        child.stdin.write(b"go\n")
        child.stdin.flush()
        delay = rng.uniform(0, WINDOW_S)
        time.sleep(delay)  # the kill point is the trial's design, not a wait for anything
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        seen[_left(root)] += 1

        # The next verb, as a person would run it: no repair first.
        remember(Layout(root), f"Trial {trial}: the release script reads its version from pyproject.",
                 cwd=str(directory))
        _assert_usable(root)
    print(f"\nwhat {TRIALS} kills left: {dict(seen)}")
    assert sum(seen.values()) == TRIALS


def test_a_git_folder_without_head_is_set_aside_and_rebuilt(layout: Layout, tmp_path: Path) -> None:
    # What a creation killed before this fix left: every verb then said "not a git repository".
    (layout.root / ".git" / "objects").mkdir(parents=True)
    (layout.root / ".git" / "config").write_text("[core]\n")
    assert not store.is_repository(layout)
    remember(layout, "Deploys go through the release script.", cwd=str(tmp_path))
    _assert_usable(layout.root)
    (aside,) = [entry for entry in layout.root.iterdir() if entry.name.startswith(".git.broken-")]
    assert (aside / "config").read_text() == "[core]\n"  # set aside, never deleted


def test_orphaned_temp_files_at_the_roots_top_level_are_swept(layout: Layout, tmp_path: Path) -> None:
    remember(layout, "Deploys go through the release script.", cwd=str(tmp_path))
    building = layout.root / f".git.{'a' * 32}.tmp"
    (building / ".git").mkdir(parents=True)
    stale = layout.root / f".gitignore.{'b' * 32}.tmp"
    stale.write_text(".*\n")
    os.utime(stale, (0, 0))
    young = layout.root / f".gitignore.{'c' * 32}.tmp"
    young.write_text(".*\n")  # may be a running write's: left alone
    (layout.root / ".gitignore").write_text(".*\n")  # incomplete: the next verb takes the lock to finish it
    remember(layout, "Releases are tagged from main.", cwd=str(tmp_path))
    assert not building.exists() and not stale.exists() and young.exists()


def test_a_linked_worktree_git_file_is_a_repository(layout: Layout) -> None:
    layout.root.mkdir(parents=True)
    (layout.root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
    assert store.is_repository(layout)
