"""The SessionStart hook served, not computed (sandman/recall/served.py, startreply.py; issue 29).

``<python> -I -S sandman/fasthook.py recall --hook`` must print exactly what the full
``sandman recall --hook`` prints (byte for byte, with the same journal and ledger lines),
from the reply the full hook kept, without importing recall's composing (nor json, re or
pathlib); after anything the reply was built from changes, it must hand the start to the
full hook, which answers the new recall and keeps it. The backstop spawns nothing when
nothing is missed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import sandman

import sandman as package

FASTHOOK = Path(package.__file__).with_name("fasthook.py")
HEAVY = {"json", "re", "pathlib", "datetime", "sandman.recall.compose", "sandman.hook"}
BODIES = ("Deploys go through make release; never push the tags by hand.",
          "src/billing/ledger.py keeps every amount as integer cents, never a float.",
          "Run the suite with pytest -rs so every skip prints its reason.\n\nThe slow tests are marked slow.\n" * 9)


@pytest.fixture
def project(isolated: Path, layout) -> Path:
    from sandman.verbs.init import init
    from sandman.verbs.remember import remember

    init(layout)
    project = isolated / "code" / "my_app-2" / "src"
    project.mkdir(parents=True)
    for body in BODIES:
        remember(layout, body, cwd=str(project))
    remember(layout, "The person prefers short commit messages.", cwd=str(project), memory_type="user")
    remember(layout, "Every service in code/ logs to stderr as JSON lines.", cwd=str(isolated / "code"))
    (layout.log / "2026-12-01.md").write_text("---\ntitle: A quiet night\n---\n\nNothing was learned.\n")
    return project


def _payload(cwd: Path, session: str, source: str = "startup") -> dict:
    return {"session_id": session, "transcript_path": "/nowhere.jsonl", "cwd": str(cwd),
            "hook_event_name": "SessionStart", "source": source}


def _served(payload: dict | bytes) -> tuple[bytes, set[str]]:
    """The launcher's stdout and the modules it imported."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    done = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", str(FASTHOOK), "recall", "--hook"],
                          input=raw, capture_output=True, env=os.environ.copy(), timeout=60)
    assert done.returncode == 0
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines()
             if line.startswith("import time:") and "|" in line}
    return done.stdout, names


def _full(payload: dict) -> bytes:
    done = sandman("recall", "--hook", stdin=json.dumps(payload).encode())
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout


def _traces(layout, session: str) -> tuple[list[str], list[str]]:
    """The session's ledger lines and recall journal lines, their times cut, its id as ``S``."""
    try:
        ledger = [line.split("\t", 1)[1] for line in layout.delivered_ledger(session).read_text().splitlines()]
    except FileNotFoundError:
        ledger = []
    journal = [line.split(" ", 1)[1].replace(f"session={session}", "session=S")
               for path in sorted(layout.trace.glob("recall-*.log")) for line in path.read_text().splitlines()
               if f"session={session} " in line]
    return ledger, journal


def _check_served(project: Path, layout, tag: str) -> bytes:
    """A full start keeps the reply; the launcher then serves the same bytes and traces."""
    full = _full(_payload(project, f"full-{tag}"))
    served, names = _served(_payload(project, f"served-{tag}"))
    assert served == full
    assert not names & HEAVY, names & HEAVY
    assert _traces(layout, f"served-{tag}") == _traces(layout, f"full-{tag}")
    assert _traces(layout, f"served-{tag}")[0]  # the ledger got the memories shown
    return served


def _falls_back(project: Path, tag: str) -> bytes:
    """The launcher hands the start to the full hook: the full hook's answer, composed anew."""
    served, names = _served(_payload(project, f"stale-{tag}"))
    assert "sandman.recall.compose" in names
    assert served == _full(_payload(project, f"full-stale-{tag}"))
    return served


def test_the_served_start_is_the_full_hooks_reply_and_follows_every_change(project, layout, isolated):
    from sandman.pointers import write_pointer
    from sandman.verbs.forget_memory import forget_memory
    from sandman.verbs.remember import remember

    first = _check_served(project, layout, "0")
    assert b"Deploys go through make release" in first and b"A quiet night" in first

    remember(layout, "Releases are cut on Tuesdays only.", cwd=str(project))
    assert b"Tuesdays" in _falls_back(project, "remember")
    assert b"Tuesdays" in _check_served(project, layout, "1")

    forgotten = next(layout.memories.glob("*/project_releases_are_cut*"))
    forget_memory(layout, forgotten)
    assert b"Tuesdays" not in _falls_back(project, "forget")
    _check_served(project, layout, "2")

    ended = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
    write_pointer(layout, "6f1c2d3e-0000-4000-8000-000000000001",
                  {"session": "6f1c2d3e-0000-4000-8000-000000000001", "ended": ended, "title": "The port moved",
                   "cwd": str(project), "archived": ".archive/x.jsonl"})
    assert b"The port moved" in _falls_back(project, "pointer")
    _check_served(project, layout, "3")

    remember(layout, "The outer folder is shared by every service.", cwd=str(isolated / "code"))
    assert b"shared by every service" in _falls_back(project, "ancestor")
    _check_served(project, layout, "4")

    (layout.log / "2026-12-02.md").write_text("---\ntitle: Two memories kept\n---\n\nA dream ran.\n")
    assert b"Two memories kept" in _falls_back(project, "log")
    _check_served(project, layout, "5")

    body = next(layout.memories.glob("*/project_deploys_go*"))
    body.write_text(body.read_text().replace("make release", "make ship"))  # edited in place by a person
    assert b"make ship" in _falls_back(project, "edit")


def test_a_pointer_leaving_the_72_hour_window_expires_the_reply(project, layout, monkeypatch):
    from datetime import datetime, timedelta, timezone
    from types import SimpleNamespace

    from sandman.pointers import write_pointer
    from sandman.recall import served

    ended = (datetime.now(timezone.utc) - timedelta(hours=71)).replace(microsecond=0)
    write_pointer(layout, "6f1c2d3e-0000-4000-8000-000000000002",
                  {"session": "6f1c2d3e-0000-4000-8000-000000000002", "ended": ended.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "title": "Nearly forgotten", "cwd": str(project), "archived": ".archive/y.jsonl"})
    _full(_payload(project, "keep"))
    kept = json.loads(layout.start_reply(served.key(str(project))).read_text())
    assert kept["expires"] == (ended + timedelta(hours=72)).timestamp()
    payload = json.dumps(_payload(project, "late")).encode()
    assert served.serve(payload) is not None
    monkeypatch.setattr(served, "time", SimpleNamespace(time=lambda: kept["expires"]))
    assert served.serve(payload) is served.FALLBACK


@pytest.mark.parametrize("unusual", ["resume", "compact", "clear", "no-session", "relative-cwd", "bad-json",
                                     "other-event", "settings", "note", "old-handoff", "other-home", "dream-setting"])
def test_an_unusual_start_goes_to_the_full_hook(project, layout, unusual, monkeypatch):
    from sandman.recall import served

    _full(_payload(project, "keep"))
    payload = _payload(project, "odd")
    raw = None
    if unusual in ("resume", "compact", "clear"):
        payload["source"] = unusual
    elif unusual == "no-session":
        del payload["session_id"]
    elif unusual == "relative-cwd":
        payload["cwd"] = "code/my_app-2"
    elif unusual == "bad-json":
        raw = b'{"session_id": "odd", "cwd": '
    elif unusual == "other-event":
        payload["hook_event_name"] = "UserPromptSubmit"
    elif unusual == "settings":
        layout.settings_file.write_text("[recall]\nprompt_hook = true\n")
    elif unusual == "note":
        assert sandman("note", "Finish the billing refactor", cwd=project).returncode == 0
    elif unusual == "old-handoff":  # a note left where `sandman handoff` kept it before issue 33
        from sandman.banks.names import bank_name

        assert sandman("note", "Finish the billing refactor", cwd=project).returncode == 0
        new = layout.note(bank_name(str(project)))
        new.parent.with_name(".handoff").mkdir()
        new.rename(layout.old_handoff_note(bank_name(str(project))))
    elif unusual == "other-home":
        monkeypatch.setenv("SANDMAN_ROOT", os.environ["SANDMAN_ROOT"])
        monkeypatch.setenv("HOME", str(Path(os.environ["HOME"]) / "code"))
    elif unusual == "dream-setting":
        monkeypatch.setenv("SANDMAN_DREAM_DUE_POINTERS", "3")
    assert served.serve(raw if raw is not None else json.dumps(payload).encode()) is served.FALLBACK


def test_a_note_is_delivered_by_the_full_hook_and_no_reply_is_kept(project, layout):
    from sandman.recall import served

    assert sandman("note", "Finish the billing refactor", cwd=project).returncode == 0
    first, names = _served(_payload(project, "h1"))
    assert b"Finish the billing refactor" in first and "sandman.recall.compose" in names
    assert not layout.start_reply(served.key(str(project))).exists()
    second, names = _served(_payload(project, "h2"))
    assert "sandman.recall.compose" in names and b"delivered" in second.lower()


def test_a_linked_worktree_is_composed_every_time(project, layout, isolated):
    from sandman.recall import served

    (project / ".git").write_text("gitdir: /nowhere/.git/worktrees/x\n")
    _full(_payload(project, "wt"))
    assert not layout.start_reply(served.key(str(project))).exists()


def test_a_served_start_spawns_no_backstop_when_nothing_is_missed(project, layout):
    _full(_payload(project, "keep"))
    layout.backstop_stamp.unlink(missing_ok=True)  # due: no backstop started in the last minute
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-code"
    projects.mkdir(parents=True)
    young = projects / "6f1c2d3e-0000-4000-8000-00000000000a.jsonl"
    young.write_text("{}\n")  # written just now: live, not missed
    _, names = _served({**_payload(project, "quiet"), "session_id": "quiet"})
    assert "sandman.recall.compose" not in names
    assert layout.backstop_stamp.exists()  # checked: not asked again within the minute
    assert "missed-spawned" not in "".join(p.read_text() for p in layout.trace.glob("take-*.log"))

    old = time.time() - 600
    os.utime(young, (old, old))  # ten minutes idle, never taken: missed
    _, names = _served(_payload(project, "within-the-minute"))
    assert "sandman.recall.compose" not in names
    layout.backstop_stamp.unlink()
    _, names = _served(_payload(project, "missed"))
    assert "sandman.recall.compose" in names  # the full hook starts the backstop
    assert "missed-spawned" in "".join(p.read_text() for p in layout.trace.glob("take-*.log"))


def test_the_served_start_records_the_starting_session_as_the_full_hook_does(project, layout, monkeypatch):
    _full(_payload(project, "keep"))
    monkeypatch.setenv("CLAUDE_PID", str(os.getpid()))
    _, names = _served(_payload(project, "pid-served"))
    assert "sandman.recall.compose" not in names
    record = json.loads(layout.started_record("pid-served").read_text())
    assert record["pid"] == os.getpid() and set(record) == {"pid", "at"}
    assert not list(layout.started.glob(".*"))  # no temp file left


def test_the_served_paths_copies_equal_their_sources():
    from sandman import config, fastjson, hookpayload, plainhook
    from sandman.archive import missed
    from sandman.banks import names
    from sandman.recall import ledger, served

    assert (served.HOOK_PAYLOAD_MAX_BYTES, served.BACKSTOP_EVERY_S) == (config.HOOK_PAYLOAD_MAX_BYTES,
                                                                       config.BACKSTOP_EVERY_S)
    assert (missed.TAKE_LIVE_WINDOW_S, missed.BACKSTOP_LOOKBACK_S) == (config.TAKE_LIVE_WINDOW_S,
                                                                        config.BACKSTOP_LOOKBACK_S)
    assert plainhook.PATH_MAX_BYTES == config.PATH_MAX_BYTES
    for directory in ("/home/a-b/c_d/é ü", "/x" * 100):
        assert served.key(directory) == names.bank_name(directory)
    assert served.key("/x" * 101) is None  # bank_name would cut it and add a hash: no reply kept
    assert served.key("/") == "-" and served.key("/a/") == "-a-"  # the cwd as spelt: one file per spelling
    for session in ("ok-1", "a" * 128, "a" * 129, "-x", "a..b", "a/b", "", "é", "x:y.z_w"):
        assert plainhook.session_ok(session) == ledger.usable_session(session)
    for text in ('{"a": 1}', ' \n{"a": [1, 2.5, "\\u00e9", null, true]} \t', "[1]", "{", "", '{"a": 1} x'):
        try:
            expected = json.loads(text)
        except ValueError:
            expected = None
        assert fastjson.loads(text.encode()) == expected, text
        parsed = hookpayload.parse(text.encode())
        assert fastjson.parse(text.encode()) == (parsed if isinstance(parsed, dict) else None), text
    assert served.reply_of("a\u2028é\"\n") == json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "a\u2028é\"\n"}},
        ensure_ascii=False) + "\n"


def test_the_journal_line_of_the_served_path_is_the_journals(layout):
    from sandman import journal, plainhook

    facts = {"hook": True, "session": "s", "source": "startup", "cwd": "/a b/é", "chars": 3, "units": 4,
             "trimmed": None}
    plainhook.journal(str(layout.root), "recall", "recalled", **facts)
    journal.write(layout, "recall", "recalled", **facts)
    first, second = [line.split(" ", 1)[1] for line in next(layout.trace.glob("recall-*.log")).read_text().splitlines()]
    assert first == second


def test_a_writer_composes_stale_replies_again_so_the_next_start_is_served(project, layout):
    from sandman.recall import served, startreply
    from sandman.verbs.remember import remember

    _full(_payload(project, "keep"))
    remember(layout, "Releases are cut on Tuesdays only.", cwd=str(project))
    payload = json.dumps(_payload(project, "after")).encode()
    assert served.serve(payload) is served.FALLBACK
    assert startreply.refresh(layout) == [str(project)]
    assert startreply.refresh(layout) == []  # fresh now: nothing composed
    reply = served.serve(payload)
    assert reply is not None and "Tuesdays" in reply
    assert reply.encode() == _full(_payload(project, "full-after"))
    broken = layout.start_reply("-broken")
    broken.write_text("{")
    startreply.refresh(layout)
    assert not broken.exists()  # an unreadable reply is removed, with a journal line


def test_every_session_start_payload_of_the_corpus_gets_the_full_hooks_reply(project, layout, corpus, monkeypatch):
    """Claude Code's real SessionStart payloads (startup, clear, compact, resume, fork; the live 2.1.332
    ones with its hook environment): the launcher answers each exactly as the full hook does."""
    environment = json.loads((corpus / "hooks" / "hook-environment.session-start.live-2.1.332.json").read_text())
    monkeypatch.setenv("CLAUDE_PID", environment["CLAUDE_PID"])
    _full(_payload(project, "keep"))
    payloads = sorted((corpus / "hooks").glob("session-start.*.json"))
    payloads = [path for path in payloads if ".output." not in path.name]
    assert len(payloads) >= 8
    served_any = False
    for path in payloads:
        data = json.loads(path.read_text())
        data["cwd"] = str(project)
        served, names = _served(data)
        assert served == _full(data), path.name
        served_any |= "sandman.recall.compose" not in names
        assert ("sandman.recall.compose" not in names) == (data.get("source") == "startup"
                                                             and "session_id" in data), path.name
    assert served_any


def _special(path: Path, kind: str, cap: int) -> None:
    """Make ``path`` a ``kind`` of file no hook may read: a FIFO (a plain read never returns), a link to
    /dev/zero (a plain read fills the memory), a folder, or a regular file over ``cap`` bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        with path.open("wb") as stream:
            stream.truncate(cap + 1)


def _take_journal(layout) -> str:
    return "".join(path.read_text() for path in layout.trace.glob("take-*.log"))


SPECIAL = ("fifo", "devzero", "folder", "huge")


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_special_file_as_the_kept_scan_does_not_hang_the_start_hook(project, layout, kind):
    """Issue 29 item 5: a FIFO as .backstop.kept hung the start hook; a link to /dev/zero took gigabytes."""
    from sandman import plainhook

    _full(_payload(project, "keep"))
    folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-code"
    folder.mkdir(parents=True)
    (folder / "6f1c2d3e-0000-4000-8000-00000000000a.jsonl").write_text("{}\n")  # live: nothing to take
    layout.backstop_stamp.unlink(missing_ok=True)  # the check is due
    _special(layout.backstop_kept, kind, plainhook.KEPT_SCAN_MAX_BYTES)
    served, names = _served(_payload(project, "special"))  # the timeout is the guard
    assert "sandman.recall.compose" not in names  # the whole check found nothing: served
    assert served == _full(_payload(project, "full-special"))
    assert "step=backstop-kept" in _take_journal(layout)
    if kind != "folder":  # written anew, atomically, as the kept scan
        assert json.loads(layout.backstop_kept.read_text())["projects"] == str(folder.parent)


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_special_file_as_a_started_record_hangs_neither_the_start_hook_nor_take_missed(project, layout, kind):
    """Issue 29 item 5: a FIFO as .started/<sid>.json, the sid a transcript idle 3 minutes, hung both."""
    from sandman import plainhook

    _full(_payload(project, "keep"))
    sid = "6f1c2d3e-0000-4000-8000-00000000000b"
    folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-code"
    folder.mkdir(parents=True)
    transcript = folder / f"{sid}.jsonl"
    transcript.write_text('{"type": "user"}\n')
    moment = time.time() - 180
    os.utime(transcript, (moment, moment))
    layout.backstop_stamp.unlink(missing_ok=True)
    _special(layout.started_record(sid), kind, plainhook.STARTED_MAX_BYTES)
    served, names = _served(_payload(project, "special"))
    assert "sandman.recall.compose" in names  # the record names no process: the full hook starts the backstop
    assert b"additionalContext" in served
    assert "step=started-record" in _take_journal(layout)
    done = sandman("take", "--missed", "--dry-run", timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_special_file_as_the_kept_start_reply_goes_to_the_full_hook(project, layout, kind):
    """Issue 29 item 5: .start-replies/<key>.json read without blocking, a size cap, regular files only."""
    from sandman import plainhook
    from sandman.recall import served as served_module

    _full(_payload(project, "keep"))
    reply = layout.start_reply(served_module.key(str(project)))
    _special(reply, kind, plainhook.START_REPLY_MAX_BYTES)
    served, names = _served(_payload(project, "special"))
    assert "sandman.recall.compose" in names
    assert served == _full(_payload(project, "full-special"))
    journal = "".join(path.read_text() for path in layout.trace.glob("recall-*.log"))
    assert "step=start-reply" in journal
    if kind != "folder":  # the full hook kept the reply anew: the next start is served
        assert "sandman.recall.compose" not in _served(_payload(project, "after"))[1]


@pytest.mark.parametrize("kind", ("fifo", "devzero", "folder"))
def test_a_special_file_as_the_backstop_stamp_does_not_hang_the_start_hook(project, layout, kind):
    """Issue 29 item 5: the served start set the stamp by opening it for writing, which waits on a FIFO."""
    _full(_payload(project, "keep"))
    (Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects").mkdir(parents=True)
    _special(layout.backstop_stamp, kind, 0)
    served, names = _served(_payload(project, "special"))
    assert "sandman.recall.compose" not in names
    assert served == _full(_payload(project, "full-special"))
    assert "step=backstop-stamp" in _take_journal(layout)
    if kind != "folder":  # made a regular file anew
        assert layout.backstop_stamp.is_file() and not layout.backstop_stamp.is_symlink()


def test_a_hand_edit_keeping_size_inode_and_mtime_is_not_served_stale(project, layout):
    """Issue 29 item 7: the kept reply validated its inputs by [mtime, size, inode]; the ctime is the
    one stat field no user sets, so an edit in place with its mtime put back is seen."""
    _full(_payload(project, "keep"))
    memory = next(path for path in layout.memories.glob("*/*.md") if "make release" in path.read_text())
    before = os.stat(memory)
    memory.write_text(memory.read_text().replace("make release", "MAKE RELEASE"))
    os.utime(memory, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(memory)
    assert (after.st_size, after.st_ino, after.st_mtime_ns) == (before.st_size, before.st_ino, before.st_mtime_ns)
    served, _ = _served(_payload(project, "edited"))
    assert b"MAKE RELEASE" in served
