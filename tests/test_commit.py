"""commit_memory, the single format authority (docs/BANK-FORMAT.md, "Writing a bank")."""

from __future__ import annotations


import subprocess
import sys

import pytest

from helpers import git
from sandman.banks.commit import ConflictError, bank_transaction, commit_memory
from sandman.banks.index import memory_files, render_index
from sandman.banks.memory import Memory, fingerprint, read_memory
from sandman.banks.names import bank_name
from sandman.errors import InputError, RepositoryError, SecretRefused
from sandman.layout import Layout
from sandman.store.repo import ensure_root

PROJECT = "/home/user/proj"


def memory(name: str = "Build with make", body: str = "Run make, not cmake.", **extra) -> Memory:
    return Memory(name=name, description=f"{name}.", type=extra.pop("type", "project"), body=body + "\n", **extra)


def assert_consistent(layout: Layout) -> None:
    assert git(layout.root, "status", "--porcelain") == ""
    for folder in layout.memories.iterdir():
        if folder.name.startswith("."):
            continue
        assert (folder / "MEMORY.md").read_text() == render_index(folder)


def test_commit_writes_file_index_and_one_commit_with_trailers(layout: Layout) -> None:
    result = commit_memory(layout, memory(), directory=PROJECT, verb="remember", session="abc-123")
    assert result.path == layout.bank("-home-user-proj") / "project_build_with_make.md"
    written = read_memory(result.path)
    assert (written.name, written.type, written.body) == ("Build with make", "project", "Run make, not cmake.\n")
    assert written.created and written.updated == written.created
    message = git(layout.root, "log", "-1", "--format=%B")
    assert message.splitlines()[0] == "remember: Build with make"
    assert "Verb: remember" in message and "Session: abc-123" in message
    changed = git(layout.root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == [
        "memories/-home-user-proj/MEMORY.md", "memories/-home-user-proj/project_build_with_make.md",
    ]
    assert_consistent(layout)


def test_collision_gets_a_suffix(layout: Layout) -> None:
    first = commit_memory(layout, memory(), directory=PROJECT, verb="remember").path
    second = commit_memory(layout, memory(body="Another body."), directory=PROJECT, verb="remember").path
    assert (first.name, second.name) == ("project_build_with_make.md", "project_build_with_make_2.md")
    assert_consistent(layout)


def test_replaces_moves_old_file_into_archive_and_records_lineage(layout: Layout) -> None:
    old = commit_memory(layout, memory(), directory=PROJECT, verb="remember").path
    new = commit_memory(
        layout, memory(body="Run make -j4."), directory=PROJECT, verb="reflect", replaces=old.name
    ).path
    assert new.name == old.name  # the replaced file frees its own name
    assert read_memory(new).replaces == old.name
    archived = list((old.parent / "_archive").iterdir())
    assert len(archived) == 1 and archived[0].name.endswith("_" + old.name)
    assert read_memory(archived[0]).body == "Run make, not cmake.\n"
    assert_consistent(layout)


def test_secret_is_refused_before_anything_is_written(layout: Layout) -> None:
    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    head = git(layout.root, "rev-parse", "HEAD")
    with pytest.raises(SecretRefused, match="github-pat") as caught:
        commit_memory(
            layout, memory("Deploy token", "use 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"),
            directory=PROJECT, verb="remember",
        )
    assert "ghp_" not in str(caught.value)
    assert git(layout.root, "rev-parse", "HEAD") == head
    assert len(memory_files(layout.bank("-home-user-proj"))) == 1
    assert_consistent(layout)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"type": "opinion"}, "type 'opinion' is unknown"),
        ({"body": "   "}, "body is empty"),
        ({"body": "x" * 70_000}, "limit is 65,536"),
        ({"name": "\u202e\x07  "}, "name is empty"),
    ],
)


def test_bad_fields_are_refused_with_nothing_written(layout: Layout, fields: dict, message: str) -> None:
    body = fields.pop("body", "fine")
    name = fields.pop("name", "A name")
    with pytest.raises(InputError, match=message):
        commit_memory(layout, memory(name, body, **fields), directory=PROJECT, verb="remember")
    assert not layout.bank("-home-user-proj").exists()


def test_failed_transaction_is_undone(layout: Layout) -> None:
    first = commit_memory(layout, memory(), directory=PROJECT, verb="remember").path
    with pytest.raises(RuntimeError):
        with bank_transaction(layout, verb="reflect", subject="merge") as tx:
            tx.write_memory(bank_name(PROJECT), memory("Merged"), replaces=first.name)
            raise RuntimeError("the merge body call failed")
    assert first.exists() and not (first.parent / "_archive").exists()
    assert [p.name for p in memory_files(first.parent)] == [first.name]
    assert_consistent(layout)


def test_conflict_check_refuses_a_changed_file(layout: Layout) -> None:
    path = commit_memory(layout, memory(), directory=PROJECT, verb="remember").path
    seen = fingerprint(path)
    path.write_text(path.read_text() + "edited by hand\n")
    with pytest.raises(ConflictError):
        with bank_transaction(layout, verb="reflect", subject="prune") as tx:
            tx.check(path, seen)
            tx.archive(bank_name(PROJECT), path.name)
    assert path.exists()


def test_recovery_commits_leftovers_separately(layout: Layout) -> None:
    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    bank = layout.bank(bank_name(PROJECT))
    leftover = memory("Left by a killed process").text()
    (bank / "project_left_by_a_killed_process.md").write_text(leftover)
    commit_memory(layout, memory("Next"), directory=PROJECT, verb="remember")
    subjects = git(layout.root, "log", "--format=%s").splitlines()
    assert subjects[:2] == ["remember: Next", "recover: commit changes left in the working tree"]
    assert_consistent(layout)


def test_user_wide_bank(layout: Layout) -> None:
    path = commit_memory(layout, memory(type="user"), directory=None, verb="remember").path
    assert path.parent.name == "_user"
    assert "directory:" not in (path.parent / "MEMORY.md").read_text()


def test_unknown_keys_survive_replacement(layout: Layout) -> None:
    path = commit_memory(layout, memory(), directory=PROJECT, verb="remember").path
    text = path.read_text().replace("type: project\n", "type: project\nx-origin: hand\n")
    path.write_text(text)
    commit_memory(layout, memory("Other"), directory=PROJECT, verb="remember")  # recovers the edit
    again = read_memory(path)
    again.body = "New body.\n"
    replaced = commit_memory(layout, again, directory=PROJECT, verb="reflect", replaces=path.name).path
    assert "x-origin: hand\n" in replaced.read_text()


def test_init_adopts_an_existing_folder(layout: Layout) -> None:
    layout.root.mkdir(parents=True)
    (layout.root / "notes.md").write_text("mine\n")
    (layout.root / ".secret-cache").write_text("raw\n")
    assert ensure_root(layout) is True
    assert (layout.root / "notes.md").read_text() == "mine\n"
    assert "notes.md" in git(layout.root, "ls-files").split()
    assert ".secret-cache" not in git(layout.root, "ls-files")
    assert ensure_root(layout) is False  # idempotent
    assert git(layout.root, "rev-list", "--count", "HEAD").strip() == "1"


def test_gitignore_keeps_the_dotted_tier_and_pending_takes_out(layout: Layout) -> None:
    ensure_root(layout)
    for relative in (".archive/claude/x.jsonl", ".trace/take-x.log", "memories/.recent/s.json",
                     "pending-takes/s.json", ".site/index.html", ".dream/p/s.jsonl"):
        path = layout.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    assert git(layout.root, "status", "--porcelain") == ""


def _killed_sandman_leaving(layout: Layout, *locks: str) -> None:
    """Run a sandman commit in a process killed inside create_commit, after it made ``locks`` (paths
    in .git): what a kill -9 there leaves, its .git/sandman-writing naming a process that is gone."""
    code = (
        "import os, pygit2\n"
        "from pathlib import Path\n"
        "def killed(*args, **kwargs):\n"
        f"    for lock in {list(locks)!r}:\n"
        f"        Path({str(layout.root / '.git')!r}, lock).write_text('')\n"
        "    os._exit(9)\n"
        "pygit2.Repository.create_commit = killed\n"
        "from sandman.layout import Layout\n"
        "from sandman import config\n"
        "from sandman.banks.commit import commit_memory\n"
        "from sandman.banks.memory import Memory\n"
        "commit_memory(Layout(config.root()), Memory(name='Killed', description='d.', type='project', body='x'),\n"
        f"              directory={PROJECT!r}, verb='remember')\n"
    )
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert killed.returncode == 9, killed.stderr
    assert all((layout.root / ".git" / lock).exists() for lock in locks)


def test_stale_git_index_lock_from_a_killed_commit_is_cleared(layout: Layout) -> None:
    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    _killed_sandman_leaving(layout, "index.lock")
    commit_memory(layout, memory("After the crash"), directory=PROJECT, verb="remember")
    assert_consistent(layout)


def test_adopting_a_folder_of_memories_indexes_every_bank(layout: Layout) -> None:
    """Memory files brought in without MEMORY.md (a copy from elsewhere) must not be invisible to recall."""
    from sandman.verbs.init import init

    bank = layout.bank(bank_name(PROJECT))
    bank.mkdir(parents=True)
    (bank / "project_build_with_make.md").write_text(memory().text())
    assert init(layout) is True
    assert (bank / "MEMORY.md").read_text() == render_index(bank)
    assert_consistent(layout)
    assert init(layout) is False


def test_a_first_remember_into_an_adopted_folder_indexes_the_other_banks_too(layout: Layout) -> None:
    other = layout.bank(bank_name("/home/user/other"))
    other.mkdir(parents=True)
    (other / "project_kept.md").write_text(memory("Kept").text())
    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    assert (other / "MEMORY.md").read_text() == render_index(other)
    assert_consistent(layout)


def test_stale_branch_lock_from_a_commit_killed_moving_the_branch_is_cleared(layout: Layout) -> None:
    # Found by the kill -9 trials: a dream killed inside create_commit left refs/heads/main.lock,
    # and every commit after it failed with "failed to lock file ... main.lock".
    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    _killed_sandman_leaving(layout, "refs/heads/main.lock", "HEAD.lock")
    commit_memory(layout, memory("After the crash"), directory=PROJECT, verb="remember")
    assert_consistent(layout)
    assert git(layout.root, "log", "--format=%s", "-1").strip() == "remember: After the crash"


def test_a_commit_that_fails_leaves_nothing_staged(layout: Layout, monkeypatch) -> None:
    commit_memory(layout, memory(), directory=PROJECT, verb="remember")

    def refuse(*args, **kwargs):
        raise RepositoryError("the disk is full")

    monkeypatch.setattr("sandman.store.repo.signature", refuse)  # after the index is written
    with pytest.raises(RepositoryError):
        commit_memory(layout, memory("Never committed"), directory=PROJECT, verb="remember")
    assert git(layout.root, "status", "--porcelain", "--untracked-files=all") == ""


# The secrets ban read a memory's name, description and body only: a credential in the session id,
# a source, a trailer or the bank's directory was committed (remember --session / --cwd).
TOKEN = "ghp_" + "k3Xq9ZrT2vLm8NpB4wYc7HdF1sGj6aEu0oQi"
KEY_ID = "AKIA" + "UJZDE8GXD6NCF10E"


@pytest.mark.parametrize(
    "where",
    [
        {"session": TOKEN},
        {"trailers": {"Mind": TOKEN}},
        {"source": ["remember", TOKEN]},
        {"directory": "/tmp/" + KEY_ID},
    ],
    ids=["session", "trailer", "source", "directory"],
)
def test_a_secret_outside_the_memory_text_is_refused_by_commit_memory(layout: Layout, where: dict) -> None:
    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    head = git(layout.root, "rev-parse", "HEAD")
    where = dict(where)
    extra = {"source": where.pop("source")} if "source" in where else {}
    directory = where.pop("directory", PROJECT)
    with pytest.raises(SecretRefused) as caught:
        commit_memory(layout, memory("Harmless fact", **extra), directory=directory, verb="remember", **where)
    assert TOKEN not in str(caught.value) and KEY_ID not in str(caught.value)
    assert git(layout.root, "rev-parse", "HEAD") == head
    assert not any(KEY_ID in p.name for p in layout.memories.iterdir())
    assert_consistent(layout)


def test_a_secret_in_a_subject_or_trailer_added_inside_a_transaction_is_refused(layout: Layout) -> None:
    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    head = git(layout.root, "rev-parse", "HEAD")
    with pytest.raises(SecretRefused):
        with bank_transaction(layout, verb="dream", subject="x") as tx:
            tx.write_memory("-home-user-proj", memory("Other fact"), directory=PROJECT)
            tx.trailers["Replaces"] = [TOKEN]
    assert git(layout.root, "rev-parse", "HEAD") == head
    assert_consistent(layout)


def test_regression_recovery_committed_stray_files_of_no_sandman_format(layout: Layout) -> None:
    """Issue 31, case 7: a stray run log and a stray text file were committed by the next write (and
    would travel with sync). They are moved into .strays/, never committed, and doctor names them."""
    from sandman.verbs.doctor import doctor

    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    bank = layout.bank(bank_name(PROJECT))
    (layout.root / "log").mkdir(exist_ok=True)
    (layout.root / "log" / "run-2026-12-05.log").write_text("a run journal\n")
    (layout.memories / "stray.txt").write_text("stray\n")
    (bank / "notes.txt").write_text("notes\n")
    hand = bank / "project_left_by_hand.md"
    hand.write_text(memory("Left by hand").text())

    (before,) = [c for c in doctor().checks if c.name == "clean"]
    commit_memory(layout, memory("Next"), directory=PROJECT, verb="remember")

    assert "3 new file(s) of no sandman format" in before.message and "never commits them" in before.message
    tracked = git(layout.root, "ls-files").splitlines()
    assert not [path for path in tracked if path.endswith((".log", ".txt"))]
    assert f"memories/{bank.name}/project_left_by_hand.md" in tracked  # a memory written by hand is still one
    assert git(layout.root, "status", "--porcelain", "--untracked-files=all") == ""
    moved = sorted(p.relative_to(layout.strays).as_posix().split("/", 1)[1]
                   for p in layout.strays.rglob("*") if p.is_file())
    assert moved == ["log/run-2026-12-05.log", f"memories/{bank.name}/notes.txt", "memories/stray.txt"]
    (after,) = [c for c in doctor().checks if c.name == "clean"]
    assert after.status == "warn" and "3 file(s) of no sandman format were moved into .strays/" in after.message


def test_a_scoped_transaction_that_writes_outside_its_scope_commits_nothing(layout: Layout) -> None:
    """A scope (remember's: its bank and the retired ledger) is what its recovery looked at; a write
    elsewhere could carry a hand edit it never checked, so the transaction is refused and undone."""
    from sandman.errors import SandmanError

    commit_memory(layout, memory(), directory=PROJECT, verb="remember")
    head = git(layout.root, "rev-parse", "HEAD")
    with pytest.raises(SandmanError, match=r"is outside the transaction's scope"):
        with bank_transaction(layout, verb="remember", subject="stray", scope=[layout.bank(bank_name(PROJECT))]) as tx:
            tx.write_memory(bank_name("/home/user/other"), memory("Elsewhere"), directory="/home/user/other")
    assert git(layout.root, "rev-parse", "HEAD") == head
    assert_consistent(layout)
