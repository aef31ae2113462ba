"""``sandman import claude-memory``: Claude Code's native auto memory into the banks (issue 17)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dream_helpers import transcript_lines
from helpers import git, sandman
from sandman import journal
from sandman.banks.listing import bank_folders
from sandman.banks.memory import read_memory
from sandman.banks.names import bank_name
from sandman.layout import Layout
from sandman.verbs.import_memory import import_claude_memory, project_folder_name
from sandman.verbs.recall import recall
from sandman.verbs.remember import remember

# Written as Claude Code's auto memory documents its files: frontmatter with name, description
# and type (or type under metadata), then the body; MEMORY.md is the index.
FEEDBACK = """---
name: terse-answers
description: Réponses courtes — pas de résumé à la fin
type: feedback
originSessionId: 0b7c5d1e-aaaa-4bbb-8ccc-123456789abc
---

Keep answers short; the user reads the diff.
Never end with a summary of what was done.
"""
DEPLOY = """---
name: deploy-target
description: staging deploys go to the demo-staging app
metadata:
  type: project
---
Staging deploys go to the app demo-staging; production is demo-prod.

  Indented line kept as is.
"""
ROLE = """---
name: user-role
description: the user is a data scientist
type: user
---

A data scientist, new to this repository's frontend.
"""
SECRET = """---
name: aws-key
description: the key for the bucket
type: reference
---

AKIAUJZDE8GXD6NCF10E with secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
"""
INDEX = "- [terse-answers](feedback_terse.md) — short answers\n"


def _body(text: str) -> str:
    return text.split("---\n", 2)[2].removeprefix("\n")


@pytest.fixture
def project(isolated: Path) -> Path:
    folder = isolated / "code" / "my_app"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def native(isolated: Path, project: Path) -> Path:
    """Claude Code's auto memory folder of ``project``."""
    folder = isolated / ".claude" / "projects" / project_folder_name(project) / "memory"
    folder.mkdir(parents=True)
    for name, text in (("MEMORY.md", INDEX), ("feedback_terse.md", FEEDBACK), ("project_deploy.md", DEPLOY),
                       ("user_role.md", ROLE)):
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def root(layout: Layout, isolated: Path) -> Layout:
    remember(layout, "Unrelated fact.", cwd=str(isolated / "elsewhere"))
    return layout


def _commits(layout: Layout) -> int:
    return int(git(layout.root, "rev-list", "--count", "HEAD"))


def _by_name(layout: Layout) -> dict[str, Path]:
    found = {}
    for folder in bank_folders(layout):
        for path in folder.glob("*.md"):
            if path.name != "MEMORY.md":
                found[read_memory(path).name] = path
    return found


def test_the_import_lands_one_memory_per_file_byte_for_byte_and_a_second_run_commits_nothing(root, native, project):
    before = _commits(root)
    result = import_claude_memory(root, project=str(project))
    assert result.count("import") == 3 and result.commit is not None
    assert _commits(root) == before + 1
    memories = _by_name(root)
    terse, deploy, role = memories["terse-answers"], memories["deploy-target"], memories["user-role"]
    assert terse.parent == root.bank(bank_name(project)) == deploy.parent
    assert role.parent == root.bank(bank_name(None))
    for path, text in ((terse, FEEDBACK), (deploy, DEPLOY), (role, ROLE)):
        assert read_memory(path).body == _body(text)
    memory = read_memory(terse)
    assert memory.description == "Réponses courtes — pas de résumé à la fin" and memory.type == "feedback"
    assert memory.source == ["claude-memory"]
    front = memory.front.to_dict()
    assert front["originSessionId"] == "0b7c5d1e-aaaa-4bbb-8ccc-123456789abc"
    assert front["imported_from"] == f"{project_folder_name(project)}/memory/feedback_terse.md"
    assert read_memory(deploy).type == "project" and read_memory(deploy).front.to_dict()["metadata"] == {"type": "project"}
    assert git(root.root, "log", "-1", "--format=%s%n%b").startswith("import: 3 memory file(s)")

    again = import_claude_memory(root, project=str(project))
    assert again.count("unchanged") == 3 and again.commit is None
    assert _commits(root) == before + 1

    text = recall(root, str(project)).text
    assert text.count("terse-answers") == 1 and text.count("deploy-target") == 1 and text.count("user-role") == 1


def test_an_edited_native_file_replaces_its_earlier_import(root, native, project):
    import_claude_memory(root, project=str(project))
    old = _by_name(root)["terse-answers"]
    edited = FEEDBACK.replace("Keep answers short", "Keep answers very short")
    (native / "feedback_terse.md").write_text(edited, encoding="utf-8")
    result = import_claude_memory(root, project=str(project))
    assert (result.count("replace"), result.count("unchanged")) == (1, 2)
    now = _by_name(root)["terse-answers"]
    assert read_memory(now).body == _body(edited)
    assert read_memory(now).replaces == old.name
    assert [p.name.endswith(old.name) for p in (old.parent / "_archive").iterdir()] == [True]
    assert sum(1 for path in old.parent.glob("feedback_*.md")) == 1


def test_a_file_holding_a_credential_is_skipped_and_the_rest_land(root, native, project):
    (native / "reference_aws.md").write_text(SECRET, encoding="utf-8")
    result = import_claude_memory(root, project=str(project))
    skipped = [item for item in result.items if item.action == "skip"]
    assert [(item.path.name, item.reason) for item in skipped] == [("reference_aws.md", "secret")]
    assert result.count("import") == 3
    assert "aws-key" not in _by_name(root)
    assert "AKIA" not in git(root.root, "log", "-p")


def test_without_project_the_directory_comes_from_a_session_of_that_folder(root, native, project, isolated):
    transcripts = native.parent
    sid = "1a2b3c4d-0000-4000-8000-000000000000"
    (transcripts / f"{sid}.jsonl").write_text(transcript_lines(sid, project / "src", "2026-11-01T10:00:00Z", "hi"))
    orphan = isolated / ".claude" / "projects" / "-nowhere-known" / "memory"
    orphan.mkdir(parents=True)
    (orphan / "feedback_x.md").write_text(FEEDBACK, encoding="utf-8")
    result = import_claude_memory(root)
    reasons = {item.relpath: item.action if item.reason is None else item.reason for item in result.items}
    assert reasons["-nowhere-known/memory/feedback_x.md"] == "unknown-directory"
    assert result.count("import") == 3
    assert _by_name(root)["deploy-target"].parent == root.bank(bank_name(project))


def test_a_dry_run_writes_nothing(root, native, project):
    before = _commits(root)
    done = sandman("import", "claude-memory", "--project", str(project), "--dry-run")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "would import" in out and out.rstrip().endswith("(dry run: nothing written)")
    assert _commits(root) == before and "terse-answers" not in _by_name(root)
    assert not list(root.trace.glob("import-*.log"))


def test_the_cli_imports_and_journals_each_file(root, native, project):
    done = sandman("import", "claude-memory", "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert "import: 3 imported, 0 replaced, 0 unchanged, 0 skipped" in done.stdout.decode()
    log = root.trace_file("import", journal.now_utc().strftime("%Y-%m-%d")).read_text().splitlines()
    decisions = [journal.parse_line(line)[2] for line in log]
    assert decisions == ["imported", "imported", "imported", "finished"]


def test_a_project_that_is_not_a_directory_is_a_one_line_error(root, isolated):
    done = sandman("import", "claude-memory", "--project", str(isolated / "missing"))
    assert done.returncode != 0
    assert done.stderr.decode() == f"sandman: --project {isolated / 'missing'} is not a directory\n"


def test_a_broken_native_file_is_skipped_not_fatal(root, native, project):
    (native / "feedback_bad.md").write_bytes(b"---\nname: [unclosed\n---\nbody\n")
    (native / "feedback_latin1.md").write_bytes("---\nname: é\n---\n".encode("latin-1"))
    (native / "feedback_type.md").write_text("---\nname: a\ndescription: b\ntype: opinion\n---\n\nx\n")
    result = import_claude_memory(root, project=str(project))
    reasons = sorted(item.reason for item in result.items if item.action == "skip")
    assert reasons == ["bad-type", "unreadable", "unreadable"]
    assert result.count("import") == 3


def test_import_a_native_file_over_64_kib_is_skipped_named_and_the_dry_run_agrees(root, native, project):
    big = "---\nname: huge\ndescription: a very long note\ntype: reference\n---\n\n" + "word " * 14000
    (native / "reference_huge.md").write_text(big, encoding="utf-8")
    dry = sandman("import", "claude-memory", "--project", str(project), "--dry-run")
    real = sandman("import", "claude-memory", "--project", str(project))
    assert dry.returncode == 0 == real.returncode, real.stderr
    out = real.stdout.decode()
    skipped = ("skipped reference_huge.md: a bank cannot hold it as it is "
               "(memory body is 69,999 bytes; the limit is 65,536 (64 KiB))")
    assert [line for line in out.splitlines() if "reference_huge" in line] == [
        f"skipped {project_folder_name(project)}/memory/{skipped.removeprefix('skipped ')}"]
    assert "import: 3 imported, 0 replaced, 0 unchanged, 1 skipped" in out
    promised = dry.stdout.decode().replace(" (dry run: nothing written)", "").replace("would import", "imported")
    assert promised.splitlines() == [line for line in out.splitlines() if not line.startswith("commit: ")]
    assert "huge" not in _by_name(root) and "deploy-target" in _by_name(root)


# Dies in the middle of an import's transaction, as kill -9 would: some memories written into the
# bank, its .commit.undo left, nothing committed.
KILLED_IMPORT = """
import os, signal, sys
from unittest import mock
from sandman import config
from sandman.banks.commit import BankTransaction
from sandman.layout import Layout
from sandman.verbs.import_memory import import_claude_memory

write, written = BankTransaction.write_memory, []

def dying_write(self, *args, **kwargs):
    if len(written) == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    written.append(write(self, *args, **kwargs))
    return written[-1]

mock.patch.object(BankTransaction, "write_memory", dying_write).start()
import_claude_memory(Layout(config.root()), project=sys.argv[1])
"""


def test_an_import_after_a_killed_import_imports_the_files_the_kill_left_uncommitted(root, native, project):
    import signal
    import subprocess
    import sys

    for i in range(10):
        (native / f"project_fact_{i}.md").write_text(
            f"---\nname: fact-{i}\ndescription: fact number {i}\ntype: project\n---\n\nFact {i}.\n", encoding="utf-8")
    killed = subprocess.run([sys.executable, "-c", KILLED_IMPORT, str(project), "6"], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert root.commit_undo.exists() and git(root.root, "status", "--porcelain").strip()

    result = import_claude_memory(root, project=str(project))
    # The six the kill left are not "unchanged": the recovery rolls them back, so they are imported.
    assert (result.count("import"), result.count("unchanged")) == (13, 0)
    memories = _by_name(root)
    assert {f"fact-{i}" for i in range(10)} | {"terse-answers", "deploy-target", "user-role"} <= set(memories)
    assert git(root.root, "status", "--porcelain").strip() == ""
    tracked = set(git(root.root, "ls-files").splitlines())
    assert all(path.relative_to(root.root).as_posix() in tracked for path in memories.values())
    assert import_claude_memory(root, project=str(project)).count("unchanged") == 13


def test_a_memory_forgotten_after_its_import_is_not_imported_again(root, native, project):
    # Found by a tester: `forget --memory` retired the imported memory, but Claude Code's native
    # file was still there and the next import never consulted the retired ledger: it came back.
    import_claude_memory(root, project=str(project))
    deploy = _by_name(root)["deploy-target"]
    done = sandman("forget", "--memory", str(deploy))
    assert done.returncode == 0, done.stderr
    bank = deploy.parent.name
    dry = sandman("import", "claude-memory", "--project", str(project), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    skipped = (f"skipped {project_folder_name(project)}/memory/project_deploy.md: the retired ledger holds it "
               f"(retired {bank}/{deploy.name} by forget ev-")
    assert skipped in dry.stdout.decode(), dry.stdout.decode()
    before = _commits(root)
    done = sandman("import", "claude-memory", "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert skipped in done.stdout.decode() and "0 imported, 0 replaced, 2 unchanged, 1 skipped" in done.stdout.decode()
    assert "deploy-target" not in _by_name(root) and _commits(root) == before
    log = root.trace_file("import", journal.now_utc().strftime("%Y-%m-%d")).read_text()
    assert "reason=retired" in log


def test_a_reworded_native_copy_of_a_forgotten_memory_is_not_imported(root, native, project):
    import_claude_memory(root, project=str(project))
    assert sandman("forget", "--memory", str(_by_name(root)["deploy-target"])).returncode == 0
    reworded = DEPLOY.replace("name: deploy-target", "name: deploy target for staging").replace(
        "Staging deploys go to", "Deploys to staging land on")
    (native / "project_deploy.md").write_text(reworded, encoding="utf-8")
    result = import_claude_memory(root, project=str(project))
    assert [(item.path.name, item.reason) for item in result.items if item.action == "skip"] == [
        ("project_deploy.md", "retired")]
    assert not [name for name in _by_name(root) if "deploy" in name]
