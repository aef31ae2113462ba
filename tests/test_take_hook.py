"""take --hook as Claude Code runs it: a real subprocess fed SessionEnd payloads on stdin."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from corpus_table import CASES, place
from helpers import sandman
from sandman import journal
from sandman.layout import Layout

SID = "00893aaf-19fa-41d2-8238-13269b9b3ca0"
SHORT = next(c for c in CASES if c.file.endswith("spotter/short.jsonl"))



def _linked(live: Path) -> bool:
    """Taken: the live transcript stays for `claude --resume`, a second name of the archived file."""
    return live.exists() and live.stat().st_nlink == 2

def _journal(layout: Layout) -> list[tuple[str, dict]]:
    return [journal.parse_line(line)[2:] for log in sorted(layout.trace.glob("take-*.log"))
            for line in log.read_text().splitlines()]


def _transcript(corpus: Path, home: Path, session: str = SID) -> Path:
    """The corpus's short session as session ``session`` (its lines say so), placed where the
    payloads say Claude Code keeps it: a take refuses a transcript naming another session."""
    path = home / ".claude" / "projects" / "-home-user-my-project" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (corpus / "transcripts" / SHORT.file).read_bytes()
    path.write_bytes(data.replace(SHORT.session.encode(), session.encode()))
    return path


def _payload(corpus: Path, name: str, home: Path) -> bytes:
    """A corpus payload with its transcript path moved into the test's config dir."""
    text = (corpus / "hooks" / name).read_text()
    return text.replace("/home/user/.claude", str(home / ".claude")).encode()


def _hook(stdin: bytes, **env: str) -> subprocess.CompletedProcess:
    return sandman("take", "--hook", stdin=stdin, env=env)


@pytest.mark.parametrize("name", ["session-end.clear.json", "session-end.logout.json",
                                  "session-end.prompt_input_exit.json",
                                  "session-end.bypass_permissions_disabled.json"])
def test_an_ending_payload_archives_the_session(corpus: Path, isolated: Path, layout: Layout, name: str):
    live = _transcript(corpus, isolated)
    digest = hashlib.sha256(live.read_bytes()).hexdigest()
    done = _hook(_payload(corpus, name, isolated))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert _linked(live)
    pointer = json.loads(layout.pointer(SID).read_text())
    archived = layout.root / pointer["archived"]
    assert hashlib.sha256(archived.read_bytes()).hexdigest() == digest
    assert (pointer["cwd"], pointer["ended"], pointer["title"]) == (SHORT.cwd, SHORT.ended, SHORT.title)
    verdict, facts = _journal(layout)[-1]
    assert verdict == "archived" and facts["hook"] == "true" and facts["forced"] == "true"


def test_a_resume_payload_is_declined_quietly(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    done = _hook(_payload(corpus, "session-end.resume.json", isolated))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert live.exists() and not layout.pointer(SID).exists()
    assert _journal(layout) == [("declined", {"reason": "resume", "session": SID})]


def test_the_documented_example_payload_names_no_transcript_here(corpus: Path, layout: Layout):
    done = _hook(_payload(corpus, "session-end.other.doc.json", Path("/nowhere")))
    assert (done.returncode, done.stdout) == (0, b"")
    assert _journal(layout)[-1] == ("declined", {"reason": "no-transcript", "session": "abc123", "hook": "true"})


def test_a_codex_payload_without_transcript_path_finds_the_rollout(corpus: Path, isolated: Path, layout: Layout):
    case = next(c for c in CASES if c.file.endswith("crud.jsonl"))
    live = place(case, corpus, isolated / ".claude", isolated / ".codex")
    done = _hook(_payload(corpus, "session-end.codex-null-transcript.json", isolated))
    assert (done.returncode, done.stdout) == (0, b"")
    assert _linked(live)
    pointer = json.loads(layout.pointer(case.session).read_text())
    assert pointer["host"] == "codex" and pointer["archived"].startswith(".archive/codex/")


def _blocked_stdin(env: dict[str, str]) -> int:
    """Run take --hook with a stdin that never ends: only a hook that does not read it exits."""
    proc = subprocess.Popen([sys.executable, "-m", "sandman", "take", "--hook"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env})
    try:
        code = proc.wait(timeout=60)
        assert proc.stdout.read() == b"" and proc.stderr.read() == b""
        return code
    finally:
        proc.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
        proc.wait()


def test_no_take_declines_before_reading_stdin(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    assert _blocked_stdin({"SANDMAN_NO_TAKE": "1"}) == 0
    assert live.exists() and not layout.pointer(SID).exists()
    assert _journal(layout) == [("declined", {"hook": "true", "reason": "no-take"})]


def test_a_mind_session_is_never_taken(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    assert _blocked_stdin({"CLAUDE_MEMORY_PIPELINE": "1"}) == 0
    done = _hook(_payload(corpus, "session-end.prompt_input_exit.json", isolated), CLAUDE_MEMORY_PIPELINE="1")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert live.exists()
    assert not layout.root.exists(), "a mind's session end must write nothing at all"


@pytest.mark.parametrize("stdin, message", [
    (b"not json", "SessionEnd payload is not JSON"),
    (b"[1, 2]", "SessionEnd payload is not a JSON object"),
    (b"\xff\xfe", "SessionEnd payload is not JSON"),
    (json.dumps({"session_id": "../../etc", "reason": "other"}).encode(), "holds characters a file name cannot carry"),
    (json.dumps({"session_id": "a/b", "reason": "other"}).encode(), "holds characters a file name cannot carry"),
    (json.dumps({"session_id": "a\u0000b", "reason": "other"}).encode(), "holds characters a file name cannot carry"),
    (json.dumps({"session_id": "s" * 129, "reason": "other"}).encode(), "the limit is 128"),
    (json.dumps({"session_id": 42}).encode(), "is missing or not a string"),
    (json.dumps({"session_id": SID, "transcript_path": "relative/x.jsonl"}).encode(), "is not absolute"),
    (json.dumps({"session_id": SID, "transcript_path": "/"}).encode(), "is not a regular file"),
    (b"{" + b" " * (1 << 20) + b"}", "payload is over"),
])
def test_bad_payloads_are_journalled_and_exit_zero(corpus: Path, isolated: Path, layout: Layout,
                                                   stdin: bytes, message: str):
    live = _transcript(corpus, isolated)
    done = _hook(stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    verdict, facts = _journal(layout)[-1]
    assert verdict == "failed" and message in facts["error"]
    assert live.exists() and not layout.pointer(SID).exists()


@pytest.mark.parametrize("wrong", [7, ["/x.jsonl"], {"path": "/x"}, True])
def test_take_hook_reads_a_wrong_typed_transcript_path_as_absent(corpus: Path, isolated: Path, layout: Layout,
                                                                 wrong: object):
    live = _transcript(corpus, isolated)
    done = _hook(json.dumps({"session_id": SID, "transcript_path": wrong, "reason": "other",
                             "hook_event_name": "SessionEnd"}).encode())
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert layout.pointer(SID).exists(), _journal(layout)
    assert live.stat().st_nlink == 2  # taken by link: Claude Code's name stays for --resume


def test_a_transcript_path_through_dotdot_is_refused_not_archived_as_a_dotdot_folder(
        corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    detour = live.parent.parent / ".." / "projects" / live.parent.name / live.name
    done = _hook(json.dumps({"session_id": SID, "transcript_path": str(detour), "reason": "other"}).encode())
    assert (done.returncode, done.stderr) == (0, b"")
    verdict, facts = _journal(layout)[-1]
    assert verdict == "failed" and "contains '..'" in facts["error"]
    assert live.exists() and not layout.pointer(SID).exists()


def _job(home: Path, job: str, state: object) -> None:
    folder = home / ".claude" / "jobs" / job
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps(state))


def test_a_session_a_live_job_would_resume_is_declined_into_the_ledger(corpus: Path, isolated: Path,
                                                                       layout: Layout):
    live = _transcript(corpus, isolated)
    _job(isolated, "3f219846", {"state": "done", "sessionId": SID})
    done = _hook(_payload(corpus, "session-end.prompt_input_exit.json", isolated))
    assert (done.returncode, done.stdout) == (0, b"")
    assert live.exists() and not layout.pointer(SID).exists()
    entry = json.loads(layout.pending_take(SID).read_text())
    assert entry["job"] == "3f219846" and entry["session"] == SID and entry["declined"].endswith("Z")
    assert entry["transcript"] == str(live)
    assert ("declined", {"reason": "live-job", "session": SID, "job": "3f219846", "hook": "true"}) in _journal(layout)
    # The job is deleted (claude rm): the next take that reaches an ending drains the debt.
    (isolated / ".claude" / "jobs" / "3f219846" / "state.json").unlink()
    (isolated / ".claude" / "jobs" / "3f219846").rmdir()
    os.utime(live, (0, 0))  # long idle: outside the live window
    other = _transcript(corpus, isolated, "another-session-0001")
    payload = json.dumps({"session_id": "another-session-0001", "transcript_path": str(other), "reason": "logout"})
    assert _hook(payload.encode()).returncode == 0
    assert _linked(live) and not layout.pending_take(SID).exists() and layout.pointer(SID).exists()
    assert [verdict for verdict, facts in _journal(layout) if facts.get("session") == SID][-1] == "reclaimed"


def test_clear_reaches_past_a_live_job(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    _job(isolated, "3f219846", {"sessionId": SID})
    assert _hook(_payload(corpus, "session-end.clear.json", isolated)).returncode == 0
    assert _linked(live) and not layout.pending_take(SID).exists()


@pytest.mark.parametrize("state, declined", [
    ({"sessionId": "someone-else", "resumeSessionId": SID}, True),
    ({"sessionId": SID, "resumeSessionId": "the-next-one"}, False),
    ({"sessionId": SID, "resumeSessionId": 7}, False),
    ({"sessionId": [SID]}, False),
    ("not an object", False),
])
def test_a_job_speaks_for_the_session_it_would_resume_next(corpus: Path, isolated: Path, layout: Layout,
                                                          state: object, declined: bool):
    live = _transcript(corpus, isolated)
    _job(isolated, "job1", state)
    assert _hook(_payload(corpus, "session-end.logout.json", isolated)).returncode == 0
    assert _linked(live) is not declined and layout.pending_take(SID).exists() is declined


def test_an_unreadable_job_state_reads_as_no_job(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    folder = isolated / ".claude" / "jobs" / "job1"
    folder.mkdir(parents=True)
    (folder / "state.json").write_bytes(b"{broken")
    assert _hook(_payload(corpus, "session-end.logout.json", isolated)).returncode == 0
    assert _linked(live)


HEAVY = ("typer", "click", "pygit2", "yaml", "jinja2", "markdown_it", "rich", "mcp", "filelock", "betterleaks")


def test_the_hook_path_imports_nothing_heavy(corpus: Path, isolated: Path, layout: Layout):
    # On a set-up root: the very first take also makes the root a repository,
    # after the rename and the pointer, and pays for pygit2 that once.
    from sandman.verbs.init import init

    init(layout)
    _transcript(corpus, isolated)
    from helpers import imported

    loaded = imported("take", "--hook", stdin=_payload(corpus, "session-end.logout.json", isolated))
    assert "sandman.verbs.take" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []
    assert layout.pointer(SID).exists()


def test_a_hook_that_loses_the_race_declines_as_already_gone(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    moment = journal.now_utc()
    for delta in range(30):  # whichever second the hook lands in, the other take got there first
        winner = layout.archive_path("claude", moment + timedelta(seconds=delta), f"-home-user-my-project/{SID}.jsonl")
        winner.parent.mkdir(parents=True, exist_ok=True)
        os.link(live, winner)
    done = _hook(_payload(corpus, "session-end.logout.json", isolated))
    assert (done.returncode, done.stdout) == (0, b"")
    assert _journal(layout)[-1] == ("declined", {"reason": "already-gone", "session": SID, "hook": "true"})


@pytest.mark.parametrize("name", [
    "session-start.startup.doc.json", "session-start.startup.full.json", "session-start.resume.json",
    "session-start.clear.json", "session-start.compact.json", "session-start.fork.json",
    "session-start.minimal.json", "session-start.output.additional-context.doc.json",
    "session-start.output.minimal.json", "settings.hooks.example.json",
])
def test_a_payload_of_any_other_event_never_takes(corpus: Path, isolated: Path, layout: Layout, name: str):
    live = _transcript(corpus, isolated)
    done = _hook(_payload(corpus, name, isolated))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert live.exists() and not layout.pointer(SID).exists()


# --- a payload is not trusted further than the transcript it names -------------

OTHER = "00893aaf-19fa-41d2-8238-000000000002"


def _end_payload(session: str, transcript: Path, cwd: str = "/home/user/my-project") -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": cwd,
                       "hook_event_name": "SessionEnd", "reason": "logout"}).encode()


def test_hook_refuses_a_transcript_of_another_session_than_the_payload(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)  # its lines say session SID
    done = _hook(_end_payload(OTHER, live))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert live.exists()
    assert not layout.pointer(OTHER).exists() and not layout.pointer(SID).exists()
    assert not layout.archive.exists() or not any(p.is_file() for p in layout.archive.rglob("*"))
    verdict, facts = _journal(layout)[-1]
    assert verdict == "failed" and facts["hook"] == "true"
    assert facts["error"] == f"transcript {live} belongs to session {SID}, not {OTHER}"


def test_hook_refuses_a_transcript_inside_the_memory_root(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    assert _hook(_end_payload(SID, live)).returncode == 0
    pointer = json.loads(layout.pointer(SID).read_text())
    archived = layout.root / pointer["archived"]
    before = layout.pointer(SID).read_bytes()
    done = _hook(_end_payload(SID, archived))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert archived.is_file(), "the archived transcript stays where the pointer says"
    assert layout.pointer(SID).read_bytes() == before
    verdict, facts = _journal(layout)[-1]
    assert verdict == "failed"
    assert facts["error"] == (f"transcript {archived} is inside the memory root {layout.root}; "
                              "sandman takes only transcripts its hosts write")


def test_hand_take_refuses_a_transcript_inside_the_memory_root(corpus: Path, isolated: Path, layout: Layout):
    live = _transcript(corpus, isolated)
    assert sandman("take", SID, "--force").returncode == 0
    archived = layout.root / json.loads(layout.pointer(SID).read_text())["archived"]
    done = sandman("take", SID, "--force", "--transcript", str(archived))
    assert done.returncode == 2
    assert done.stderr.decode() == (f"sandman: transcript {archived} is inside the memory root {layout.root}; "
                                    "sandman takes only transcripts its hosts write\n")
    assert archived.is_file() and os.path.samefile(archived, live)


def test_hook_takes_a_forked_transcript_whose_first_lines_name_its_parent(corpus: Path, isolated: Path,
                                                                          layout: Layout):
    fork = _transcript(corpus, isolated, OTHER)  # named OTHER.jsonl ...
    fork.write_bytes(fork.read_bytes().replace(OTHER.encode(), SID.encode()))  # ... its copied lines say SID
    done = _hook(_end_payload(OTHER, fork))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert _linked(fork) and layout.pointer(OTHER).exists()


# --- standard streams closed or gone (found by a tester) -----------------------


def _run_with(args: list[str], shell_redirect: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m sandman <args>`` with a descriptor closed by the shell (``>&-``, ``2>&-``, ``<&-``)."""
    command = f'exec "$0" -m sandman "$@" {shell_redirect}'
    return subprocess.run(["sh", "-c", command, sys.executable, *args], input=stdin,
                          capture_output=True, env=os.environ.copy(), timeout=60)


@pytest.mark.parametrize("args", [["take", "--hook"], ["take", "--hook", "--detach"], ["recall", "--hook"],
                                  ["report", "--hook"]])
def test_a_hook_with_stderr_closed_exits_0(args, isolated) -> None:
    done = _run_with(args, "2>&-", stdin=b"{}")
    assert done.returncode == 0, done


def test_take_hook_detach_with_stdin_closed_exits_0_without_a_traceback(isolated, layout) -> None:
    done = _run_with(["take", "--hook", "--detach"], "<&-")
    assert (done.returncode, done.stderr) == (0, b"")


def test_recall_hook_whose_reader_is_gone_exits_0_and_journals_it(isolated, layout, tmp_path) -> None:
    from sandman.verbs.init import init

    init(layout)
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path), "source": "startup",
                          "hook_event_name": "SessionStart"}).encode()
    read_end, write_end = os.pipe()
    os.close(read_end)  # Claude Code gone: every write to the pipe fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "sandman", "recall", "--hook"], input=payload,
                              stdout=write_end, stderr=subprocess.PIPE, env=os.environ.copy(), timeout=60)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, b"")
    journal = "".join(path.read_text() for path in layout.trace.glob("recall-*.log"))
    assert "cannot write the hook's output" in journal
    done = _run_with(["recall", "--hook"], ">&-", stdin=payload)
    assert (done.returncode, done.stderr) == (0, b"")
