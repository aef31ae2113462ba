"""The memory root as ``$SANDMAN_ROOT`` (else ``~/.sandman``) names it (sandman/config.py ``root``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import sandman


@pytest.mark.parametrize("args", [["init"], ["remember", "a body"], ["recall"], ["take", "9b0c1d2e"],
                                  ["dream", "--now"], ["reflect"]])
def test_sandman_root_naming_a_file_says_it_is_not_a_directory(tmp_path: Path, args: list[str]) -> None:
    blocker = tmp_path / "passwd"
    blocker.write_text("root:x:0:0::/root:/bin/sh\n")
    done = sandman(*args, env={"SANDMAN_ROOT": str(blocker)}, cwd=tmp_path)
    assert (done.returncode, done.stderr.decode()) == (
        2, f"sandman: SANDMAN_ROOT={blocker} is not a directory; point it at a folder\n")
    assert blocker.read_text() == "root:x:0:0::/root:/bin/sh\n"


def test_a_default_root_that_is_a_file_says_so(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SANDMAN_ROOT")
    (isolated / ".sandman").write_text("")
    done = sandman("remember", "a body")
    assert (done.returncode, done.stderr.decode()) == (
        2, f"sandman: the memory root {isolated / '.sandman'} is not a directory; move it aside or set "
           "SANDMAN_ROOT to a folder\n")


@pytest.mark.parametrize("verb", ["take", "recall"])
def test_a_hook_with_a_root_that_is_a_file_exits_0_with_one_line(tmp_path: Path, verb: str) -> None:
    blocker = tmp_path / "passwd"
    blocker.write_text("")
    done = sandman(verb, "--hook", stdin=b'{"session_id": "9b0c1d2e", "hook_event_name": "SessionEnd"}',
                   env={"SANDMAN_ROOT": str(blocker)})
    assert done.returncode == 0 and done.stdout == b""
    assert done.stderr.decode() == (
        f"sandman {verb} --hook: SANDMAN_ROOT={blocker} is not a directory; point it at a folder\n")


# --- a lock file that cannot be created (breaker3 problem 5) ----------------


@pytest.mark.parametrize("args", [["remember", "--cwd", "/tmp", "hello"], ["init"]])
def test_a_root_where_the_lock_cannot_be_created_fails_at_once(args: list[str]) -> None:
    """filelock would poll for ever when opening its file fails with ENOENT, as it does under /proc/self."""
    if not Path("/proc/self").is_dir():
        pytest.skip("needs /proc/self (Linux), where creating a file fails with ENOENT")
    done = sandman(*args, env={"SANDMAN_ROOT": "/proc/self"}, timeout=60)
    assert done.returncode == 1
    assert done.stderr.decode() == "sandman: No such file or directory (/proc/self/.commit.lock)\n"
