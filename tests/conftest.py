"""Test isolation: every test gets its own HOME, memory root and Claude config dir.

The autouse fixture clears every ``SANDMAN_*``, ``CLAUDE_*``, ``CODEX_*`` and
``GIT_*`` variable, points HOME, SANDMAN_ROOT, CLAUDE_CONFIG_DIR,
XDG_CONFIG_HOME and CODEX_HOME into the test's tmp_path, and sets a known git
identity. A session-level guard fails the run if the suite touched the real
home's ``.sandman`` or Claude settings.
"""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta, timezone
from pathlib import Path

import pytest

# Imported here, before the autouse fixture clears SANDMAN_*: it reads $SANDMAN_TEST_CLAUDE_CODE.
from live_claude import FakeApi, claude_code
from sandman.layout import Layout

REAL_HOME = Path.home()
REPO = Path(__file__).resolve().parent.parent
# ../shared/corpus from /work/main; a worktree (/work/wt/<name>) finds it one level further up.
CORPUS = next(
    (base / "shared" / "corpus" for base in REPO.parents if (base / "shared" / "corpus").is_dir()),
    REPO.parent / "shared" / "corpus",
)
FAKES = Path(__file__).resolve().parent / "fakes"
# Not ~/.claude/projects: a developer's own live Claude Code session writes there.
_WATCHED = (REAL_HOME / ".sandman", REAL_HOME / ".claude" / "settings.json", REAL_HOME / ".codex")


def _snapshot() -> dict[str, object]:
    state: dict[str, object] = {}
    for path in _WATCHED:
        if path.is_file():
            state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            state[str(path)] = sorted(str(p) for p in path.rglob("*"))[:10_000]
        else:
            state[str(path)] = None
    return state


@pytest.fixture(scope="session", autouse=True)
def real_home_untouched():
    """Fail the run if any test wrote into the real home."""
    before = _snapshot()
    yield
    assert _snapshot() == before, "the test suite touched the real home directory"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Isolate the environment; return the fake home."""
    for name in list(os.environ):
        if name.startswith(("SANDMAN_", "CLAUDE_", "CODEX_", "GIT_")) or name == "CLAUDECODE":
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("SANDMAN_ROOT", str(home / ".sandman"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("SANDMAN_GIT_NAME", "Sandman Test")
    monkeypatch.setenv("SANDMAN_GIT_EMAIL", "test@sandman.invalid")
    return home


@pytest.fixture
def layout(isolated: Path) -> Layout:
    """The Layout of the test's memory root (not yet created)."""
    return Layout(Path(os.environ["SANDMAN_ROOT"]))


@pytest.fixture
def corpus() -> Path:
    """The real transcripts and payloads in ../shared/corpus; skipped with a reason when absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    return CORPUS


# --- the fake claude (issue 4: dream) ----------------------------------------


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A FakeClaude (tests/fake_claude.py) on ``$SANDMAN_CLAUDE_BIN`` for this test."""
    from fake_claude import FakeClaude

    fake = FakeClaude(tmp_path / "fake-claude")
    for name, value in fake.env().items():
        monkeypatch.setenv(name, value)
    yield fake
    fake.kill_leftovers()


# --- the real Claude Code against a fake Messages API (issue 28: tests/live_claude.py) ----


@pytest.fixture
def fake_api():
    """A started FakeApi (tests/live_claude.py); skips the test when the pinned Claude Code is absent."""
    claude_code()
    with FakeApi() as api:
        yield api


# The modules that bind ``from sandman.journal import now_utc``: imported before a clock is pinned,
# so none binds the pinned clock and keeps it after the test.
_CLOCK_READERS = ("sandman.doctor.checks", "sandman.banks.commit", "sandman.note", "sandman.curators.apply",
                  "sandman.curators.retired", "sandman.curators.propose")


@pytest.fixture
def pinned_clock():
    """``pin(moment)``: sandman's in-process clock (``journal.now_utc`` and every module that imported
    it) starts at ``moment`` (aware) and runs on with the monotonic clock, so a test that acts "now"
    acts in a week and on a day it chose, whatever the real calendar (issue 35). Subprocesses keep
    the real clock: a test that needs the pinned one runs the verb in-process."""
    import importlib
    import sys
    import time

    from sandman import journal

    real = journal.now_utc
    for name in _CLOCK_READERS:
        importlib.import_module(name)

    patch = pytest.MonkeyPatch()

    def pin(moment):
        started = time.monotonic()

        def now_utc():
            return (moment + timedelta(seconds=time.monotonic() - started)).astimezone(timezone.utc).replace(
                microsecond=0)

        for name, module in list(sys.modules.items()):
            if (name == "sandman" or name.startswith("sandman.")) and getattr(module, "now_utc", None) is real:
                patch.setattr(module, "now_utc", now_utc)
        return now_utc

    yield pin
    patch.undo()
    leaked = [name for name, module in list(sys.modules.items()) if name.startswith("sandman.")
              and callable(getattr(module, "now_utc", None)) and getattr(module, "now_utc") is not real
              and getattr(module, "now_utc").__qualname__.endswith("pin.<locals>.now_utc")]
    assert not leaked, f"modules imported while the clock was pinned kept it: {leaked}; add them to _CLOCK_READERS"
