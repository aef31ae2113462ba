"""kill -9 at random moments in dream's commit and in reflect's upkeep (issue 8, "Hardening": crashes).

Each trial forks a real dream or reflect process (tests/hardening_runner.py:
sandman is imported once, so a trial costs a fork), waits until its minds
have answered (each mind writes a line to a FIFO as it answers, after a
random delay of its own), waits a further random delay spread over what the
rest of the run takes, and kills it with SIGKILL: before, inside or after
the commits. Then:

- what the kill left is honest: a pointer is stamped dreamed only when every
  memory its minds agreed on is committed, and every other pointer is still
  queued; an upkeep either applied its plan whole or not at all;
- the next run completes, and afterwards every claim is committed exactly
  once, every pointer is routed, and the root is consistent (committed,
  ``git fsck --strict`` clean, every index what its folder gives, no temp
  file of a killed writer left in a bank or the log).
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from dream_helpers import archive_session
from hardening import (
    agreeing_minds, assert_consistent, held, journal_lines, quick_minds, reflect_minds, remember_at,
)
from hardening_minds import claim, loner
from hardening_minds import upkeep as upkeep_plan
from helpers import git
from sandman import journal
from sandman.banks.commit import bank_transaction
from sandman.banks.index import memory_files
from sandman.banks.memory import Memory, parse_memory, read_memory
from sandman.banks.names import bank_name
from sandman.layout import BANK_ARCHIVE, BANK_REFLECT, Layout
from sandman.pointers import list_pointers, read_pointer
from sandman.verbs.reflect import reflect

TRIALS = 50
UPKEEP_OPS = 5  # under the six that keep a bank due: a bank tended once is idle afterwards
RUNNER = Path(__file__).resolve().parent / "hardening_runner.py"


class Signals:
    """A FIFO the minds write a line to as they answer; reading it blocks until they have."""

    def __init__(self, path: Path):
        self.path = path
        os.mkfifo(path)
        self.read_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.keep_fd = os.open(path, os.O_WRONLY)  # a writer always open: no end of file between minds
        self.buffer = b""

    def wait(self, count: int, timeout: float = 60) -> list[str]:
        """Block until ``count`` lines have arrived; return them."""
        give_up = time.monotonic() + timeout
        while self.buffer.count(b"\n") < count:
            left = give_up - time.monotonic()
            assert left > 0 and select.select([self.read_fd], [], [], left)[0], "the minds never answered"
            self.buffer += os.read(self.read_fd, 4096)
        lines = [line.decode() for line in self.buffer.split(b"\n")]
        self.buffer = "\n".join(lines[count:]).encode()
        assert not any(line.startswith("exit") for line in lines[:count]), f"the run ended first: {lines}"
        return lines[:count]

    def close(self) -> None:
        os.close(self.read_fd)
        os.close(self.keep_fd)


class Runner:
    """tests/hardening_runner.py as a subprocess: fork a dream or reflect, kill it, wait for it."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.log = folder / "runs.log"
        self.process: subprocess.Popen | None = None
        self.trial = 0

    def start(self, verb: str, **extra: str) -> tuple[int, Signals]:
        if self.process is None:  # started at first use, with the environment the test has set by then
            self.process = subprocess.Popen([sys.executable, str(RUNNER)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, env=os.environ.copy(), text=True, bufsize=1)
        self.trial += 1
        signals = Signals(self.folder / f"signal-{self.trial}")
        command = {"verb": verb, "log": str(self.log), "signal": str(signals.path), **extra}
        self.process.stdin.write(json.dumps(command) + "\n")
        started = self.process.stdout.readline().split()
        assert started[0] == "started", started
        return int(started[1]), signals

    def ended(self) -> int:
        self.process.stdin.write("reap\n")
        line = self.process.stdout.readline().split()
        assert line and line[0] == "ended", line
        return int(line[1])

    def run(self, verb: str, **extra: str) -> None:
        """One run to its end; it must succeed."""
        _, signals = self.start(verb, **extra)
        code = self.ended()
        signals.close()
        assert code == 0, self.log.read_text()[-3000:]

    def calibrate(self, verb: str, answers: int, **extra: str) -> float:
        """Seconds from the ``answers``-th mind answering to the end of an unkilled run."""
        _, signals = self.start(verb, **extra)
        signals.wait(answers)
        began = time.monotonic()
        code = self.ended()
        signals.close()
        assert code == 0, self.log.read_text()[-3000:]
        return time.monotonic() - began

    def killed(self, verb: str, answers: int, delay: float, **extra: str) -> int:
        """Start a run, wait for ``answers`` minds, then ``delay`` seconds more, then kill -9 it."""
        pid, signals = self.start(verb, **extra)
        signals.wait(answers)
        time.sleep(delay)  # fault injection: where the kill lands, not synchronisation
        os.kill(pid, signal.SIGKILL)  # unreaped until ended(): the pid is still the run's, maybe a zombie
        code = self.ended()
        signals.close()
        return code

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait(timeout=60)


@pytest.fixture
def runner(tmp_path: Path, layout: Layout, fake_claude, monkeypatch):
    quick_minds(monkeypatch)
    runs = Runner(tmp_path)
    yield runs
    runs.close()


def _dirty(layout: Layout) -> set[str]:
    lines = git(layout.root, "status", "--porcelain", "--untracked-files=all").splitlines()
    return {line[3:] for line in lines}


def _claims(sid: str, cwd: str) -> list[dict]:
    return [claim(sid, cwd, k) for k in range(3)]


def _count(outcomes: dict[str, int], landed: str) -> None:
    outcomes[landed] = outcomes.get(landed, 0) + 1


def test_kill_9_in_dreams_commit_leaves_pointers_queued_and_the_rerun_commits_each_claim_once(
        layout: Layout, fake_claude, runner: Runner, tmp_path: Path) -> None:
    rng = random.Random(1705)
    project = tmp_path / "proj"
    folder = layout.bank(bank_name(project))
    agreeing_minds(fake_claude, claims=3, jitter=0.02)
    ended = journal.iso(journal.now_utc() - timedelta(hours=1))

    def queue_one() -> str:
        sid = str(uuid.uuid4())
        archive_session(layout, sid, project, ended=ended, text=f"Session {sid} settled the build.")
        return sid

    queue_one()
    window = runner.calibrate("dream", 3)  # after the three answers: three commits, the stamp, the journal
    outcomes: dict[str, int] = {}
    for _ in range(TRIALS):
        sid = queue_one()
        runner.killed("dream", 3, rng.uniform(0, window))

        # What the kill left: stamped only with every claim committed, else still queued.
        dirty = _dirty(layout)
        pointer = read_pointer(layout.pointer(sid))
        assert pointer is not None, sid
        _count(outcomes, "stamped" if pointer.dreamed else "mid-commit" if dirty else "queued")
        if pointer.dreamed:
            for agreed in _claims(sid, str(project)):
                path = held(folder, agreed["name"], agreed["body"])
                assert path is not None and path.relative_to(layout.root).as_posix() not in dirty, sid

        runner.run("dream")
        assert_consistent(layout)
        subjects = git(layout.root, "log", "--format=%s").splitlines()
        assert read_pointer(layout.pointer(sid)).dreamed, sid
        for agreed in _claims(sid, str(project)):
            copies = [path for path in [*memory_files(folder), *(folder / BANK_ARCHIVE).glob("*.md")]
                      if read_memory(path).name == agreed["name"]]
            assert len(copies) == 1, (sid, copies)
            assert subjects.count(f"dream: {agreed['name']}") == 1, sid
        lonely = loner(sid, str(project))
        assert held(folder, lonely["name"], lonely["body"]) is None
    print(f"dream: kill window {window:.3f} s; where the kills left it: {outcomes}")
    assert all(pointer.dreamed for pointer in list_pointers(layout))


def _plan_outcome(names: dict[str, str]) -> set[str]:
    """The live names one whole upkeep plan leaves of a bank: ``names`` maps its files to their names."""
    files = sorted(names)
    plan = upkeep_plan("".join(f"- file: {file}\n" for file in files), limit=UPKEEP_OPS)["operations"]
    touched = {file for op in plan for file in op.get("files", [op.get("file")])}
    return {names[file] for file in files if file not in touched} | {op["name"] for op in plan if op["op"] != "prune"}


def _due_bank(layout: Layout, directory: str, label: str) -> tuple[Path, dict[str, bytes]]:
    """A bank of eight memories, due on sight (its last pass spent all six operations): one commit."""
    name = bank_name(directory)
    with bank_transaction(layout, verb="remember", subject=f"bank {label}") as tx:
        paths = [tx.write_memory(name, Memory(name=f"Fact {n} of bank {label}", description=f"Fact {n}.",
                                              type="project", body=f"Fact {n} of bank {label}.\n"),
                                 directory=directory) for n in range(8)]
        tx.write_file(layout.bank(name) / BANK_REFLECT, json.dumps(
            {"at": journal.iso(journal.now_utc()), "count": 0, "last_ops": 6}) + "\n")
    return layout.bank(name), {path.name: path.read_bytes() for path in paths}


def _names(originals: dict[str, bytes]) -> dict[str, str]:
    return {file: parse_memory(data.decode()).name for file, data in originals.items()}


def _assert_upkept_whole(folder: Path, originals: dict[str, bytes], *why: object) -> None:
    """The bank is what one pass of the plan over its eight memories makes of it, and nothing is lost."""
    live = {read_memory(path).name for path in memory_files(folder)}
    assert live == _plan_outcome(_names(originals)), (*why, sorted(live))
    kept = [path.read_bytes() for path in [*memory_files(folder), *(folder / BANK_ARCHIVE).glob("*.md")]]
    for name, data in originals.items():
        assert data in kept, (*why, name)
    assert json.loads((folder / BANK_REFLECT).read_text())["last_ops"] == UPKEEP_OPS


def test_kill_9_in_reflects_upkeep_applies_a_plan_whole_or_not_at_all(
        layout: Layout, fake_claude, runner: Runner, tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(1706)
    reflect_minds(fake_claude, monkeypatch, max_ops=UPKEEP_OPS, jitter=0.02)
    # The pass runs as if days from now: the day it writes an entry for is quiet (no model call).
    later = journal.iso(journal.now_utc() + timedelta(days=3))
    _due_bank(layout, str(tmp_path / "proj-0"), "0")
    window = runner.calibrate("reflect", 3, now=later)  # after the plan and two merge bodies
    outcomes: dict[str, int] = {}
    for trial in range(1, TRIALS + 1):
        folder, originals = _due_bank(layout, str(tmp_path / f"proj-{trial}"), str(trial))
        runner.killed("reflect", 3, rng.uniform(0, window), now=later)
        applied = json.loads((folder / BANK_REFLECT).read_text())["last_ops"] < 6
        _count(outcomes, "mid-commit" if _dirty(layout) else "applied" if applied else "not applied")

        runner.run("reflect", now=later)
        assert_consistent(layout)
        _assert_upkept_whole(folder, originals, trial)
    print(f"upkeep: kill window {window:.3f} s; where the kills left it: {outcomes}")


# --- the same crashes, placed exactly: regression tests of the undo log --------------------------

KILLED_MERGE = textwrap.dedent(
    """
    import os, signal, sys
    from unittest import mock
    from sandman import config
    from sandman.banks.commit import bank_transaction
    from sandman.banks.memory import Memory
    from sandman.layout import Layout

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    layout = Layout(config.root())
    bank, where = sys.argv[1], sys.argv[2]
    # Where it dies: among its operations; with the commit staged (the author is asked for just
    # before the commit is made); or once committed, before its undo log is removed.
    patches = {"staged": "sandman.store.repo.signature", "committed": "sandman.banks.undo.UndoLog.close"}
    if where in patches:
        mock.patch(patches[where], die).start()
    merged = Memory(name="Merged facts", description="Two facts in one.", type="project", body="Both.")
    with bank_transaction(layout, verb="reflect", subject="upkeep") as tx:
        tx.archive(bank, "project_fact_0_of_bank_k.md")
        tx.write_memory(bank, merged, replaces="project_fact_1_of_bank_k.md")
        if where == "operations":
            die()
    """
)


@pytest.mark.parametrize("where", ["operations", "staged"])
def test_a_transaction_killed_before_its_commit_is_rolled_back_not_committed_half(
        layout: Layout, tmp_path: Path, where: str) -> None:
    folder, originals = _due_bank(layout, str(tmp_path / "proj"), "k")
    head = git(layout.root, "rev-parse", "HEAD")
    killed = subprocess.run([sys.executable, "-c", KILLED_MERGE, folder.name, where], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert layout.commit_undo.exists() and _dirty(layout)

    remember_at(layout, journal.now_utc(), "After the crash", str(tmp_path / "proj"))
    # The half merge is gone, not committed: both members live again, byte for byte.
    for name, data in originals.items():
        assert (folder / name).read_bytes() == data
    assert not (folder / "project_merged_facts.md").exists()
    assert git(layout.root, "log", "--format=%s", f"{head.strip()}..HEAD").splitlines() == ["remember: After the crash"]
    assert not layout.commit_undo.exists()
    assert [d for d, _ in journal_lines(layout, "recover")] == ["rolled-back"]
    assert_consistent(layout)


def test_a_transaction_killed_after_its_commit_keeps_it(layout: Layout, tmp_path: Path) -> None:
    folder, _ = _due_bank(layout, str(tmp_path / "proj"), "k")
    killed = subprocess.run([sys.executable, "-c", KILLED_MERGE, folder.name, "committed"], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert layout.commit_undo.exists() and not _dirty(layout)

    remember_at(layout, journal.now_utc(), "After the crash", str(tmp_path / "proj"))
    assert (folder / "project_merged_facts.md").exists() and not (folder / "project_fact_0_of_bank_k.md").exists()
    assert git(layout.root, "log", "--format=%s", "-2").splitlines() == ["remember: After the crash", "reflect: upkeep"]
    assert [d for d, _ in journal_lines(layout, "recover")] == ["dropped"]
    assert_consistent(layout)


def test_reflect_plans_upkeep_over_the_bank_as_it_was_before_a_killed_transaction(
        layout: Layout, fake_claude, tmp_path: Path, monkeypatch) -> None:
    reflect_minds(fake_claude, monkeypatch, max_ops=UPKEEP_OPS)
    folder, originals = _due_bank(layout, str(tmp_path / "proj"), "k")
    killed = subprocess.run([sys.executable, "-c", KILLED_MERGE, folder.name, "operations"], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()

    # The pass's first transaction would roll the crash back only after the plan was drawn over what it left.
    summary = reflect(layout, now=journal.now_utc() + timedelta(days=3))
    assert summary.errors == []
    _assert_upkept_whole(folder, originals)
    assert_consistent(layout)


KILLED_FIRST_MEMORY = textwrap.dedent(
    """
    import os, signal, sys
    from sandman import config
    from sandman.banks.commit import commit_memory
    from sandman.banks.memory import Memory
    from sandman.layout import Layout

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    import sandman.store.repo
    sandman.store.repo.commit_paths = die  # every file written, nothing committed
    commit_memory(Layout(config.root()), Memory(name="First", description="The first.", type="project",
                  body="First."), directory=sys.argv[1], verb="dream")
    """
)


def test_a_killed_first_memory_of_a_bank_leaves_no_bank_behind(layout: Layout, fake_claude, tmp_path: Path,
                                                               monkeypatch) -> None:
    remember_at(layout, journal.now_utc(), "Elsewhere", str(tmp_path / "other"))
    new = tmp_path / "new"
    killed = subprocess.run([sys.executable, "-c", KILLED_FIRST_MEMORY, str(new)], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert layout.bank(bank_name(new)).is_dir()

    reflect_minds(fake_claude, monkeypatch)
    summary = reflect(layout, now=journal.now_utc() + timedelta(days=3))
    assert summary.errors == []
    # Rolled back whole: no folder left for upkeep to take for a bank and seed.
    assert not layout.bank(bank_name(new)).exists()
    assert [outcome.bank for outcome in summary.upkeep] == [bank_name(tmp_path / "other")]
    assert_consistent(layout)
