"""forget: every copy destroyed, no journal line, memories listed or deleted."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from helpers import git, sandman
from sandman.banks.commit import commit_memory
from sandman.banks.memory import Memory
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.verbs.forget import forget
from sandman.verbs.take import take

SID = "9b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6e"
OTHER = "11111111-2222-4333-8444-555555555555"


def _live(home: Path, session: str) -> Path:
    path = home / ".claude" / "projects" / "-home-user-proj" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "user", "sessionId": session, "cwd": "/home/user/proj",
                                "timestamp": "2026-11-30T10:00:00Z",
                                "message": {"role": "user", "content": f"work of {session}"}}) + "\n")
    companion = path.with_suffix("") / "subagents"
    companion.mkdir(parents=True, exist_ok=True)
    (companion / "agent-a1.jsonl").write_text(f'{{"sessionId": "{session}", "isSidechain": true}}\n')
    os.utime(path, (time.time() - 600,) * 2)
    return path


def _memory(layout: Layout, name: str, source: list[str]) -> Path:
    memory = Memory(name=name, description=f"{name}.", type="project", body=f"{name} body.\n", source=source)
    return commit_memory(layout, memory, directory="/home/user/proj", verb="dream").path


@pytest.fixture
def held(isolated: Path, layout: Layout) -> dict[str, Path]:
    """A session held everywhere sandman and Claude Code keep one, beside another session."""
    _live(isolated, SID), _live(isolated, OTHER)
    take(layout, SID)
    take(layout, OTHER)  # not forgotten: must survive
    paths = {"archived": layout.root / json.loads(layout.pointer(SID).read_text())["archived"]}
    paths["live"] = _live(isolated, SID)  # resumed after the take: Claude Code wrote it again
    claude = isolated / ".claude"
    for rel in (f"file-history/{SID}/backup-1", f"todos/{SID}-agent-{SID}.json", f"debug/{SID}.txt",
                f"session-env/{SID}/env"):
        (claude / rel).parent.mkdir(parents=True, exist_ok=True)
        (claude / rel).write_text("x")
    (claude / "todos" / f"{OTHER}-agent-{OTHER}.json").write_text("kept")
    layout.pending_takes.mkdir(parents=True, exist_ok=True)
    layout.pending_take(SID).write_text(json.dumps({"session": SID, "job": "j", "declined": "x"}))
    minds = layout.dream_dir / "-home-user-proj"
    minds.mkdir(parents=True)
    (minds / "mind-a.jsonl").write_text(f'{{"prompt": "dream .archive/claude/.../{SID}.jsonl"}}\n')
    (minds / "mind-b.jsonl").write_text('{"prompt": "a mind that names no id"}\n')
    (minds / "mind-other.jsonl").write_text(f'{{"prompt": "{OTHER}"}}\n')
    layout.dream_manifest(SID).parent.mkdir(parents=True)
    layout.dream_manifest(SID).write_text(json.dumps(
        {"session": SID, "transcripts": [".dream/-home-user-proj/mind-b.jsonl", "../outside.txt"]}))
    paths["only"] = _memory(layout, "Uploads go through S3", [SID])
    paths["shared"] = _memory(layout, "Tests run with pytest", [SID, OTHER])
    paths["unrelated"] = _memory(layout, "Deploys happen on Fridays", [OTHER])
    return paths


def _everything(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if ".git" not in p.parts)


def test_forget_destroys_every_copy_and_leaves_no_trace(isolated: Path, layout: Layout, held: dict[str, Path]):
    # Regression: the kept SessionStart replies (which list recent sessions) and .started/<id>.json
    # outlived forget, with the session's id and title (its first prompt).
    from sandman.archive.backstop import record_start
    from sandman.recall.startreply import recall_and_keep

    record_start(layout, SID, 4242)  # what the SessionStart hook records for a session started here
    pointer = json.loads(layout.pointer(SID).read_text())
    pointer["ended"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # a recent session
    layout.pointer(SID).write_text(json.dumps(pointer))
    title = pointer["title"]
    for cwd in ("/home/user/proj", "/home/user"):
        recall_and_keep(layout, cwd, "22222222-3333-4444-8555-666666666666")  # a later startup, kept
    assert layout.started_record(SID).is_file()
    assert [title in path.read_text() for path in sorted(layout.start_replies.glob("*.json"))] == [True, True]
    result = forget(layout, SID)
    remaining = _everything(isolated)
    assert not [p for p in remaining if SID in p], "a copy named by the session survived"
    for path in map(Path, remaining):
        if path.is_file() and ".git" not in path.parts and not path.is_relative_to(held["only"].parent):
            assert SID.encode() not in path.read_bytes() and title.encode() not in path.read_bytes(), path
    for path in layout.dream_dir.rglob("*"):
        assert path.name in ("-home-user-proj", "by-session", "mind-other.jsonl"), path
    for path in layout.trace.glob("*.log"):
        assert SID not in path.read_text()
    assert any(OTHER in p for p in remaining if p.endswith(".jsonl") and ".archive" in p)
    assert (isolated / ".claude" / "todos" / f"{OTHER}-agent-{OTHER}.json").exists()
    assert layout.pointer(OTHER).exists()
    folder = held["archived"].parent  # shared with OTHER's copy when both were taken in one second
    assert not folder.exists() or all(p.name.startswith(OTHER) for p in folder.iterdir())
    assert held["only"].exists() and held["shared"].exists()
    assert (result.memories, result.shared, result.deleted) == ([held["only"]], [held["shared"]], False)
    assert {held["live"], held["archived"], layout.pointer(SID), layout.pending_take(SID)} <= set(result.destroyed)


def test_forget_writes_no_journal_line(layout: Layout, held: dict[str, Path]):
    before = {p.name: [line for line in p.read_text().splitlines() if SID not in line]
              for p in layout.trace.glob("*.log")}
    forget(layout, SID)
    after = {p.name: p.read_text().splitlines() for p in layout.trace.glob("*.log")}
    assert after == before


def test_forget_memories_deletes_the_sole_source_ones_in_one_commit(layout: Layout, held: dict[str, Path]):
    head = git(layout.root, "rev-parse", "HEAD").strip()
    result = forget(layout, SID, memories=True)
    assert result.deleted and result.commit
    assert not held["only"].exists() and held["shared"].exists() and held["unrelated"].exists()
    log = git(layout.root, "log", "--format=%B", f"{head}..HEAD")
    assert log.strip() == "forget: delete 1 memory of a forgotten session\n\nVerb: forget"
    assert SID not in log
    assert git(layout.root, "status", "--porcelain") == ""
    index = (held["only"].parent / "MEMORY.md").read_text()
    assert "Uploads go through S3" not in index and "Tests run with pytest" in index


def test_forgetting_an_unknown_session_finds_nothing(layout: Layout):
    result = forget(layout, "never-seen")
    assert (result.destroyed, result.memories, result.shared, result.scrubbed) == ([], [], [], [])
    assert not layout.root.exists()


@pytest.mark.parametrize("bad", ["../x", "a/b", "x\0y", "", "s" * 129])
def test_forget_refuses_unsafe_ids(layout: Layout, bad: str):
    with pytest.raises(InputError):
        forget(layout, bad)


def test_forget_finds_an_archived_copy_whose_pointer_was_swept(isolated: Path, layout: Layout):
    loose = isolated / "exports" / "notes.jsonl"  # taken by path: its archived name holds no id
    loose.parent.mkdir()
    loose.write_text(json.dumps({"type": "user", "sessionId": SID, "message": {"role": "user", "content": "x"}}) + "\n")
    archived = take(layout, SID, force=True, transcript=loose).archived
    layout.pointer(SID).unlink()  # reflect swept it
    assert archived in forget(layout, SID).destroyed
    assert not archived.exists()
    assert not (layout.archive / "claude").exists(), "an emptied archive folder was left behind"


def test_forget_on_the_command_line(layout: Layout, held: dict[str, Path]):
    done = sandman("forget", SID)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    assert f"destroyed: {held['live']}" in out
    assert f"cites only this session: {held['only']}" in out and "pass --memories" in out
    assert f"kept (cites other sessions too): {held['shared']}" in out
    assert "docs/forget.md" in out
    done = sandman("forget", SID, "--memories")
    assert f"deleted: {held['only']}" in done.stdout.decode() and not held["only"].exists()
    nothing = sandman("forget", "never-seen")
    assert nothing.returncode == 0 and b"nothing held for session never-seen" in nothing.stdout
    assert sandman("forget", "../x").returncode == 2


def test_forget_without_memories_does_not_say_the_site_lost_them(layout: Layout, held: dict[str, Path]):
    """Issue 20, fault 6: forget without --memories said 'site re-rendered without them' though no
    memory was removed."""
    from sandman.site.render import render_site

    render_site(layout)
    out = sandman("forget", SID).stdout.decode()
    assert "without them" not in out and held["only"].exists()
    assert f"site re-rendered without the session (no memory was removed): {layout.site}" in out


def _site_text(layout: Layout) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace")
                     for path in layout.site.rglob("*") if path.is_file())


def test_forget_memories_leaves_no_copy_in_the_rendered_site(isolated: Path, layout: Layout):
    from sandman.site.render import render_site

    _live(isolated, SID)
    take(layout, SID)
    only = _memory(layout, "Forgotten fact", [SID])
    _memory(layout, "Kept fact", [OTHER])
    render_site(layout)
    site = _site_text(layout)
    assert "Forgotten fact body." in site and f"work of {SID}" in site  # the page and the queue's title
    result = forget(layout, SID, memories=True)
    assert result.site == "re-rendered"
    site = _site_text(layout)
    assert "Forgotten fact body." not in site
    assert f"work of {SID}" not in site and SID not in site
    assert not (layout.site / "banks" / only.parent.name / f"{only.stem}.html").exists()
    assert "Kept fact body." in site


def test_forget_removes_the_site_when_it_cannot_be_rendered(isolated: Path, layout: Layout, monkeypatch):
    from sandman.errors import RepositoryError
    from sandman.site import render

    _live(isolated, SID)
    take(layout, SID)
    _memory(layout, "Forgotten fact", [SID])
    render.render_site(layout)

    def broken(layout):
        raise RepositoryError("the repository cannot be read")

    monkeypatch.setattr(render, "render_site", broken)
    result = forget(layout, SID, memories=True)
    assert result.site == "removed"
    assert not layout.site.exists()


def test_forget_renders_no_site_that_was_never_rendered(isolated: Path, layout: Layout):
    _live(isolated, SID)
    take(layout, SID)
    assert forget(layout, SID).site is None
    assert not layout.site.exists()


# -- an id that is not a UUID matches exact names and fields only (second tester's findings) --


def test_forgetting_a_short_or_word_like_id_destroys_nothing_else(layout: Layout, isolated: Path):
    """`sandman forget 2026` deleted the whole archive; `forget dream` every dream journal line."""
    from sandman.journal import write

    archived = layout.archive_path("claude", datetime(2026, 11, 30, 16, 1, 12, tzinfo=timezone.utc),
                                   f"-home-user-proj/{SID}.jsonl")
    archived.parent.mkdir(parents=True)
    archived.write_text('{"type":"user"}\n')
    write(layout, "dream", "routed", session=SID, committed=1)
    write(layout, "take", "archived", session=SID, archived=archived.relative_to(layout.root).as_posix())
    kept = commit_memory(layout, Memory(name="By hand", description="d", type="project", body="b\n",
                                        source=["remember"]), directory="/home/user/proj", verb="remember").path
    before = sorted(p for p in layout.root.rglob("*") if ".git" not in p.parts and p.name != ".commit.lock")
    journals = {p: p.read_bytes() for p in layout.trace.glob("*.log")}
    for word in ("2026", "11", "30", "claude", "dream", "take", "routed", "proj"):
        forget(layout, word, memories=True)
    after = sorted(p for p in layout.root.rglob("*") if ".git" not in p.parts and p.name != ".commit.lock")
    assert after == before and kept.exists() and archived.exists()
    assert {p: p.read_bytes() for p in layout.trace.glob("*.log")} == journals


def test_remember_is_not_a_session_id_for_forget(layout: Layout):
    with pytest.raises(InputError, match="marks memories remembered by hand"):
        forget(layout, "remember", memories=True)


def test_a_memory_a_session_remembered_is_forgotten_with_it(layout: Layout, tmp_path: Path):
    from sandman.verbs.remember import remember

    path = remember(layout, "Said in the session.", cwd=str(tmp_path), session=SID).path
    other = remember(layout, "Said by hand.", cwd=str(tmp_path)).path
    result = forget(layout, SID, memories=True)
    assert result.memories == [path] and not path.exists() and other.exists()


# -- an id matches only as a whole token (third tester's finding 1: a prefix or a model name
# destroyed another session's mind transcripts, manifest and journal lines) --


def _dreamt(layout: Layout, isolated: Path, fake_claude) -> dict[Path, bytes]:
    """SID archived and dreamt (one mind abstains, so a line carries its model); return `.dream/`
    and `.trace/` as bytes. The kept mind transcripts get a line as real Claude Code writes it,
    with the mind's model as a whole JSON value."""
    from dream_helpers import archive_session, model
    from sandman.verbs.dream import dream

    cwd = isolated / "proj"
    cwd.mkdir()
    archive_session(layout, SID, cwd, ended="2026-11-30T10:00:00Z", project="-home-user-proj")
    fake_claude.mode(model("fable"), "fail")
    dream(layout, now=True)
    kept = json.loads(layout.dream_manifest(SID).read_text())["transcripts"]
    assert len(kept) == 3
    for relative in kept:
        with open(layout.root / relative, "a") as stream:
            stream.write(json.dumps({"type": "assistant", "message": {"model": model("fable")},
                                     "note": f"dreaming .archive/claude/2026/11/30/160112-x/{SID}.jsonl"}) + "\n")
    assert any(f"model={model('fable')}" in line for line in
               (line for log in layout.trace.glob("dream-*.log") for line in log.read_text().splitlines()))
    return {p: p.read_bytes() for folder in (layout.dream_dir, layout.trace) for p in folder.rglob("*")
            if p.is_file()}


def test_a_prefix_suffix_or_model_name_leaves_a_dreamt_session_whole(layout: Layout, isolated: Path, fake_claude):
    from dream_helpers import model

    before = _dreamt(layout, isolated, fake_claude)
    for word in (SID[:20], SID[:18], SID[:-1], SID[-27:], model("fable")):
        result = forget(layout, word)
        assert (result.destroyed, result.scrubbed) == ([], []), word
    after = {p: p.read_bytes() for p in before if p.exists()}
    assert after == before
    assert layout.pointer(SID).exists()


def test_the_full_id_still_forgets_a_dreamt_sessions_traces(layout: Layout, isolated: Path, fake_claude):
    before = _dreamt(layout, isolated, fake_claude)
    kept = [layout.root / rel for rel in json.loads(layout.dream_manifest(SID).read_text())["transcripts"]]
    forget(layout, SID)
    assert not any(path.exists() for path in kept) and not layout.dream_manifest(SID).exists()
    for log in layout.trace.glob("*.log"):
        assert SID not in log.read_text()
    assert [p for p in before if p.exists() and SID.encode() in p.read_bytes()] == []


def test_a_session_named_only_inside_a_path_or_a_json_session_field_is_found(layout: Layout):
    from sandman.journal import write

    minds = layout.dream_dir / "-home-user-proj"
    minds.mkdir(parents=True)
    quoted = {"by-field": json.dumps({"sessionId": SID}), "in-path": f"read /x/{SID}.jsonl\n",
              "codex": f"read rollout-2026-11-30T10-00-00-{SID}.jsonl\n", "mind-model": json.dumps({"model": SID})}
    for name, text in quoted.items():
        (minds / name).write_text(text)
    write(layout, "take", "intent-kept", intent=f"{SID}.4242.json", reason="in-flight")
    write(layout, "dream", "orphaned", **{"from": f"/x/{SID}/agent.jsonl"})
    write(layout, "dream", "abstained", session=OTHER, mind="fable", model=SID)
    result = forget(layout, SID)
    assert sorted(p.name for p in result.destroyed) == ["by-field", "codex", "in-path"]
    lines = [line for log in layout.trace.glob("*.log") for line in log.read_text().splitlines()]
    assert len(lines) == 1 and f"session={OTHER}" in lines[0]


def test_a_prefix_or_suffix_leaves_another_sessions_host_files(layout: Layout, isolated: Path):
    codex = isolated / ".codex" / "sessions" / "2026" / "11" / "30" / f"rollout-2026-11-30T10-00-00-{OTHER}.jsonl"
    codex.parent.mkdir(parents=True)
    codex.write_text('{"type":"session_meta"}\n')
    todo = isolated / ".claude" / "todos" / f"{OTHER}-agent-{OTHER}.json"
    todo.parent.mkdir(parents=True)
    todo.write_text("[]")
    for word in (OTHER[:18], OTHER[-17:], OTHER[-27:]):
        assert forget(layout, word).destroyed == [], word
    assert codex.exists() and todo.exists()
    assert set(forget(layout, OTHER).destroyed) == {codex, todo}


@pytest.mark.parametrize("chunk", [7, 16, 37, 1 << 20])
def test_whole_token_matching_holds_across_read_chunks(tmp_path: Path, monkeypatch, chunk: int):
    from sandman.forget import session as module

    monkeypatch.setattr(module, "_READ_CHUNK", chunk)
    cases = {f"{'x' * 50} {SID}6 {SID[1:]}": False, f'{"y" * 40}{{"model": "{SID}"}}': False,
             f"{'z' * 45}/{SID}.jsonl": True, f'{{"a": 1, "session": "{SID}"}}': True, SID: True}
    for number, (text, named) in enumerate(cases.items()):
        path = tmp_path / f"case-{number}"
        path.write_text(text)
        assert module._mentions(path, SID) is named, text


def test_forget_removes_the_sessions_deliveries_ledger_and_keeps_the_others(layout: Layout, held: dict[str, Path]):
    from sandman.recall import ledger

    ledger.append(layout, SID, "prompt", ["_user/user_a.md"])
    ledger.append(layout, OTHER, "prompt", ["_user/user_a.md"])
    result = forget(layout, SID)
    assert layout.delivered_ledger(SID) in result.destroyed and not layout.delivered_ledger(SID).exists()
    assert ledger.usage(layout)["_user/user_a.md"].sessions == 1


def _prompt_hook(layout: Layout, session: str, prompt: str) -> str:
    payload = {"session_id": session, "cwd": "/home/user/proj", "hook_event_name": "UserPromptSubmit",
               "prompt": prompt}
    done = sandman("recall", "--prompt-hook", stdin=json.dumps(payload).encode())
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout.decode()


def test_regression_forget_deleted_the_search_index_so_the_next_prompt_got_nothing(layout: Layout,
                                                                                   held: dict[str, Path]):
    from sandman.banks import search

    search.open_index(layout).close()
    result = forget(layout, SID, memories=True)
    assert result.deleted and layout.search_index.is_file()
    assert "Deploys happen on Fridays" in _prompt_hook(layout, "s-after", "which day do deploys happen on?")
    assert "Uploads go through S3" not in _prompt_hook(layout, "s-after2", "where do uploads go, S3?")
    words = b"".join(path.read_bytes() for path in layout.root.glob(".search.sqlite*"))
    assert b"uploads" not in words.lower() and b"upload" not in words.lower()


def test_regression_the_first_commit_of_memories_left_no_index_so_the_prompt_hook_got_nothing(layout: Layout,
                                                                                              isolated: Path):
    from sandman.verbs.init import init

    init(layout)
    assert not layout.search_index.exists()
    _memory(layout, "Deploys happen on Fridays", [OTHER])  # a first dream's commit
    assert layout.search_index.is_file()
    # In a bank of one memory each shared word weighs little beside a word no memory holds (the
    # prompt hook's floor, docs/recall.md): the prompt shares three words of four.
    assert "Deploys happen on Fridays" in _prompt_hook(layout, "s-first", "which day do deploys happen, Fridays?")


def test_a_journal_line_naming_the_session_in_a_starting_or_sessions_field_is_removed(layout: Layout):
    # Found by a tester: take --missed writes `starting=<id>` (the session whose start ran the
    # backstop) and `sessions=<id>` when it took one; forget kept them, as if the whole value
    # were another field's.
    from sandman.journal import write

    write(layout, "take", "missed-spawned", hook=True, pid=4242, starting=SID)
    write(layout, "take", "missed", taken=1, skipped=0, sessions=SID, starting=OTHER)
    write(layout, "take", "missed", taken=2, skipped=0, sessions=f"{OTHER},{SID}", starting=OTHER)
    write(layout, "dream", "abstained", session=OTHER, mind="fable", model="claude-fable-5-1")
    assert forget(layout, SID).scrubbed
    lines = [line for log in layout.trace.glob("*.log") for line in log.read_text().splitlines()]
    assert len(lines) == 1 and f"session={OTHER}" in lines[0]


def test_forget_removes_the_intent_and_temp_files_a_killed_take_left(layout: Layout):
    # Found by a tester: a take killed mid-write leaves write_atomic's temp files
    # (`.taking/.<id>.<pid>.json.<hex>.tmp`, `memories/.recent/.<id>.json.<hex>.tmp`) and its
    # intent record `.taking/<id>.<pid>.json`, each naming the session and holding its paths.
    hexed = "0123456789abcdef0123456789abcdef"
    intent = json.dumps({"session": SID, "source": f"/home/user/.claude/projects/p/{SID}.jsonl"})
    left = {layout.taking / f".{SID}.4242.json.{hexed}.tmp": intent, layout.taking / f"{SID}.4242.json": intent,
            layout.recent / f".{SID}.json.{hexed}.tmp": '{"title": "the first prompt"}',
            layout.recent / f".{SID}.json.sweeping": '{"title": "the first prompt"}',
            layout.take_record(SID).with_name(f".{SID}.json.{hexed}.tmp"): "{}",
            layout.pending_take(SID).with_name(f".{SID}.json.{hexed}.tmp"): "{}",
            layout.take_lock(SID): ""}  # the session's take lock, left by a take killed holding it
    other = json.dumps({"session": OTHER})
    kept = {layout.taking / f".{OTHER}.4242.json.{hexed}.tmp": other, layout.taking / f"{OTHER}.4242.json": other,
            layout.take_lock(OTHER): "",
            layout.recent / f".{OTHER}.json.{hexed}.tmp": "{}"}
    for path, text in {**left, **kept}.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    result = forget(layout, SID)
    assert sorted(result.destroyed) == sorted(left)
    assert not any(path.exists() for path in left) and all(path.exists() for path in kept)


def test_a_dreamt_sessions_first_prompt_is_not_left_in_the_trail(layout: Layout, isolated: Path, fake_claude):
    # Found by a tester: the dream.commit event's summary was "dream of session <id>: <title>",
    # and a session's title is its first prompt: forget could not remove it from the versioned,
    # synced trail/<yyyy>/<mm>/<dd>.jsonl.
    from dream_helpers import archive_session, model, proposal
    from sandman.machine import trail
    from sandman.verbs.dream import dream

    cwd = isolated / "proj"
    cwd.mkdir()
    prompt = "rename the payroll export for Dana Whitcombe before Friday"
    archive_session(layout, SID, cwd, ended="2026-11-30T10:00:00Z", text=prompt, title=prompt)
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.answer(model(mind), {"memories": [proposal(cwd, "Build tool", "Builds use make")]})
    dream(layout, now=True)
    (event,) = [e for e in trail.read(layout).events if e.kind == "dream.commit"]
    assert event.summary == f"dream of session {SID}" and event.data["session"] == SID
    forget(layout, SID)
    versioned = git(layout.root, "log", "-p", "--all")
    assert "Dana" not in versioned and "payroll" not in versioned
    assert not [p for p in layout.root.rglob("*") if p.is_file() and ".git" not in p.parts
                and "Dana" in p.read_text("utf-8", "replace")]
