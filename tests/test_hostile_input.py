"""Hostile input stays bounded (issue 34): JSON nested too deeply for Python's reader is a
one-line error on every entry, never a RecursionError traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import sandman
from sandman.layout import Layout
from sandman.minds.runner import parse_output

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def root(layout: Layout) -> Layout:
    assert sandman("init").returncode == 0
    return layout


def test_deep_json_on_the_stdin_of_breathe_file_is_a_one_line_error(root: Layout) -> None:
    done = sandman("breathe", "file", stdin=DEEP.encode())
    assert done.returncode == 2
    assert done.stderr.decode() == ("sandman: the breath on stdin is JSON nested too deeply to read; "
                                    "a breath is one flat object (docs/breathe.md)\n")


def test_deep_json_in_trail_append_data_is_a_one_line_error(root: Layout) -> None:
    deep = "[" * 30_000 + "]" * 30_000  # within the argument size a command line allows
    done = sandman("trail", "append", "shift.commit", "a decision", "--data", deep)
    assert done.returncode == 2
    assert done.stderr.decode() == ("sandman: --data is JSON nested too deeply to read; give an object such as "
                                    "'{\"pr\": 12}'\n")


def test_deep_json_in_claude_settings_is_a_one_line_error(root: Layout, isolated: Path) -> None:
    settings = isolated / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(DEEP)
    done = sandman("hooks", "install", "--settings", str(settings))
    assert done.returncode != 0 and b"Traceback" not in done.stderr
    assert done.stderr.decode() == (f"sandman: Claude Code settings {settings} is JSON nested too deeply to read; "
                                    "fix it by hand, nothing was changed\n")
    assert settings.read_text() == DEEP


def test_deep_json_from_a_mind_is_an_abstention(tmp_path: Path) -> None:
    assert parse_output(DEEP.encode()) is None
    assert parse_output(json.dumps({"type": "result", "result": "x"}).encode()) == {"type": "result", "result": "x"}


def test_deep_json_as_a_hook_payload_exits_0(root: Layout) -> None:
    for args in (("take", "--hook"), ("recall", "--hook")):
        done = sandman(*args, stdin=DEEP.encode())
        assert done.returncode == 0 and b"Traceback" not in done.stderr, args


def test_search_index_that_is_a_folder_is_named_not_its_temp_file(root: Layout, isolated: Path) -> None:
    assert sandman("remember", "The build uses make", "--cwd", str(isolated)).returncode == 0
    root.search_index.unlink(missing_ok=True)
    root.search_index.mkdir()
    for args in (("search", "make"), ("search", "--reindex", "make")):
        done = sandman(*args)
        assert done.returncode == 1
        assert done.stderr.decode() == (f"sandman: search index {root.search_index} cannot be replaced (Is a "
                                        f"directory); it is derived: remove it (rm -r '{root.search_index}') "
                                        "and search again\n")
    assert not [path for path in root.root.iterdir() if path.name.endswith(".build")]
    root.search_index.rmdir()
    assert b"The build uses make" in sandman("search", "make").stdout


KILLED_REMEMBER = """
import os, signal, sys
from sandman.banks.commit import bank_transaction
from sandman.banks.memory import Memory
from sandman.banks.names import bank_name
from sandman.layout import Layout
from sandman import config

layout = Layout(config.root())
with bank_transaction(layout, verb="remember", subject="half") as tx:
    tx.write_memory(bank_name(sys.argv[1]), Memory(name="Half written fact", description="never committed",
                    type="project", body="A phantom.\\n"), directory=sys.argv[1])
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_recall_rolls_back_a_killed_transaction_instead_of_showing_its_half(root: Layout, isolated: Path) -> None:
    import signal
    import subprocess
    import sys

    from helpers import git

    proj = isolated / "proj"
    assert sandman("remember", "The build uses make", "--cwd", str(proj)).returncode == 0
    killed = subprocess.run([sys.executable, "-c", KILLED_REMEMBER, str(proj)], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert root.commit_undo.exists() and git(root.root, "status", "--porcelain")
    for args in (("recall", "--cwd", str(proj)), ("recall", "--cwd", str(proj))):
        done = sandman(*args)
        assert done.returncode == 0 and b"Half written fact" not in done.stdout and b"make" in done.stdout
    assert git(root.root, "status", "--porcelain") == "" and not root.commit_undo.exists()
