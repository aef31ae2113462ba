"""``sandman forget --memory <file>`` and the MCP ``forget_memory`` tool (issue 27, item 7)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from dream_helpers import archive_session, proposal
from dream_helpers import model as dream_model
from helpers import git, sandman
from sandman import journal
from sandman.banks.names import bank_name
from sandman.curators import retired
from sandman.layout import BANK_INDEX, Layout
from sandman.machine import trail
from sandman.machine.reconcile import reconcile
from sandman.verbs.dream import dream
from sandman.verbs.remember import remember


@pytest.fixture
def project(isolated: Path) -> Path:
    folder = isolated / "proj"
    folder.mkdir()
    return folder


def _remembered(layout: Layout, project: Path) -> Path:
    remember(layout, "Builds use make.", cwd=str(project), name="Build tool")
    return remember(layout, "Deploys go through make release.", cwd=str(project), name="Deploy path").path


def test_forget_memory_leaves_the_bank_in_one_commit_with_a_trail_event(layout: Layout, project: Path) -> None:
    path = _remembered(layout, project)
    done = sandman("forget", "--memory", str(path))
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.startswith(f"forgotten: {path.parent.name}/{path.name} (Deploy path), commit ")
    assert not path.exists() and "Deploy path" not in (path.parent / BANK_INDEX).read_text()
    assert "Build tool" in (path.parent / BANK_INDEX).read_text()
    (event,) = [e for e in trail.read(layout).events if e.kind == "forget.memory"]
    assert event.data == {"bank": path.parent.name, "file": path.name, "name": "Deploy path"}
    assert f"trail revoke {event.id}" in out
    message = git(layout.root, "log", "-1", "--format=%B")
    assert message.startswith(f"forget: retire {path.parent.name}/{path.name}: Deploy path")
    assert f"Event: {event.id}" in message and "Kind: forget.memory" in message
    changed = set(git(layout.root, "show", "--name-only", "--format=", "HEAD").split())
    assert f"memories/{path.parent.name}/{path.name}" in changed and "curation/retired.jsonl" in changed
    (line,) = retired.lines(layout)
    assert (line["bank"], line["file"], line["by"]) == (path.parent.name, path.name, f"forget {event.id}")


def test_a_forgotten_memory_is_never_learnt_again_by_a_dream(layout: Layout, project: Path, fake_claude) -> None:
    path = _remembered(layout, project)
    assert sandman("forget", "--memory", str(path)).returncode == 0
    again = proposal(project, "Deploy path", "Deploys go through make release", body="Deploys go through make release.")
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.answer(dream_model(mind), {"memories": [again]})
    archive_session(layout, "5e550000-0000-4000-8000-0000000000f1", project, ended="2026-11-30T10:00:00Z")
    summary = dream(layout, now=True)
    assert summary.total("tripped") == 1 and summary.total("committed") == 0
    assert "1 refused as retired by a curator, upkeep or forget" in summary.text()
    assert not path.exists()


def test_trail_revoke_and_reconcile_bring_a_forgotten_memory_back(layout: Layout, project: Path) -> None:
    path = _remembered(layout, project)
    body = path.read_bytes()
    assert sandman("forget", "--memory", str(path)).returncode == 0
    (event,) = [e for e in trail.read(layout).events if e.kind == "forget.memory"]
    trail.revoke(layout, event.id, "forgotten by mistake")
    reconcile(layout, event.id)
    assert path.read_bytes() == body and "Deploy path" in (path.parent / BANK_INDEX).read_text()
    assert retired.lines(layout) == []  # no longer retired: a dream may state it again


def test_forget_memory_accepts_the_path_search_prints(layout: Layout, project: Path) -> None:
    path = _remembered(layout, project)
    relative = path.relative_to(layout.root).as_posix()  # memories/<bank>/<file>, from any directory
    done = sandman("forget", "--memory", relative, cwd=project)
    assert done.returncode == 0, done.stderr
    assert not path.exists()


@pytest.mark.parametrize("case", ["missing", "outside", "index", "archived", "not-md", "not-a-memory", "pointer",
                                  "folder"])
def test_forget_memory_refuses_what_is_not_a_live_memory_in_one_line(layout: Layout, project: Path,
                                                                     tmp_path: Path, case: str) -> None:
    path = _remembered(layout, project)
    folder = path.parent
    head = git(layout.root, "rev-parse", "HEAD")
    target, expected = {
        "missing": (folder / "project_nope.md", r"memory .*project_nope\.md does not exist; pass the path of a memory file"),
        "outside": (tmp_path / "note.md", r"is not a memory of a bank under .*/memories; pass a file"),
        "index": (folder / BANK_INDEX, r"MEMORY\.md is the bank's index, not a memory; pass one memory file"),
        "archived": (folder / "_archive" / "20261101T000000_project_old.md", r"is in _archive/, archived already"),
        "not-md": (folder / "notes.txt", r"notes\.txt is not a memory \(memories are \.md files\)"),
        "not-a-memory": (folder / "project_broken.md", r"project_broken\.md is not a memory \("),
        "pointer": (layout.recent / "s1.json", r"is not a memory of a bank under"),
        "folder": (folder / "project_dir.md", r"project_dir\.md is not a regular file"),
    }[case]
    if case == "outside":
        target.write_text("---\nname: x\ndescription: x\ntype: project\n---\n\nx\n")
    elif case in ("archived", "not-md", "not-a-memory", "pointer"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("no frontmatter here\n" if case == "not-a-memory" else path.read_text())
    elif case == "folder":
        target.mkdir()
    done = sandman("forget", "--memory", str(target))
    err = done.stderr.decode()
    assert done.returncode == 2 and err.count("\n") == 1 and err.startswith("sandman: "), err
    assert re.search(expected, err), err
    assert git(layout.root, "rev-parse", "HEAD") == head and path.exists()


def test_forget_memory_takes_no_session(layout: Layout, project: Path) -> None:
    path = _remembered(layout, project)
    done = sandman("forget", "some-session", "--memory", str(path))
    assert (done.returncode, done.stderr.decode()) == (
        2, "sandman: --memory FILE forgets one memory; it takes no SESSION and no --memories\n")
    done = sandman("forget")
    assert (done.returncode, done.stderr.decode()) == (
        2, "sandman: forget needs a SESSION id, or --memory FILE for one memory\n")
    assert path.exists()


async def _mcp(file: str) -> tuple[list[str], object, object]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "sandman", "mcp"], env=dict(os.environ))
    async with Client(server, read_timeout_seconds=60) as client:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        done = await client.call_tool("forget_memory", {"file": file})
        bad = await client.call_tool("forget_memory", {"file": "/etc/passwd"})
    return tools, done, bad


def test_the_mcp_tool_forgets_one_memory(layout: Layout, project: Path) -> None:
    path = _remembered(layout, project)
    tools, done, bad = anyio.run(_mcp, path.relative_to(layout.root).as_posix())
    assert "forget_memory" in tools
    text = "\n".join(block.text for block in done.content)
    assert not done.is_error and text.startswith(f"forgotten: {bank_name(project)}/{path.name} (Deploy path)")
    assert not path.exists() and retired.lines(layout)[0]["file"] == path.name
    assert bad.is_error and "is not a memory of a bank under" in bad.content[0].text
    lines = layout.trace_file("mcp", journal.now_utc().strftime("%Y-%m-%d")).read_text()
    assert "tool=forget_memory" in lines  # journaled like every tool call


def test_a_forgotten_memory_reworded_by_the_next_dream_is_refused_as_retired(layout: Layout, fake_claude,
                                                                             corpus: Path) -> None:
    # Found by a tester: after forgetting spotter-dov's credo memory, a dream of the same
    # transcript with the three corpus replies rotated between the minds committed the same
    # claim under another mind's wording (project_spotter_s_credo_check_..._extract.md): the
    # ledger matched only the file key or the exact body, dedupe matches the claim.
    import json

    from dream_helpers import bank_memories

    cwd = Path("/home/USER/projects/spotter-worktrees/spotter-dov")
    replies = {mind: json.loads((corpus / "minds" / "spotter-dov" / f"{mind}.json").read_text())
               for mind in ("fable", "opus", "sonnet")}
    for mind, reply in replies.items():
        fake_claude.answer(dream_model(mind), reply)
    archive_session(layout, "5e550000-0000-4000-8000-0000000000d1", cwd, ended="2026-11-30T10:00:00Z")
    dream(layout, now=True)
    (credo,) = [m for m in bank_memories(layout, cwd.parent) if "credo" in m.name.lower()]
    assert sandman("forget", "--memory", str(layout.bank(bank_name(cwd.parent)) / credo.file)).returncode == 0
    for mind, other in (("fable", "opus"), ("opus", "sonnet"), ("sonnet", "fable")):
        fake_claude.answer(dream_model(mind), replies[other])
    archive_session(layout, "5e550000-0000-4000-8000-0000000000d2", cwd, ended="2026-11-30T11:00:00Z")
    summary = dream(layout, now=True)
    learnt = [m.name for m in bank_memories(layout, cwd.parent) + bank_memories(layout, cwd)]
    assert not [name for name in learnt if "credo" in name.lower()], learnt
    assert summary.total("tripped") == 1
