"""Memory at each prompt and at each file: recall --prompt-hook and --file-hook (docs/recall.md).

The hooks run as real subprocesses, as Claude Code runs them; their decisions are read from
the deliveries ledger (.delivered/) and the journal.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import sandman

SID = "5b1d0c3e-0000-4000-8000-00000000abcd"
DEPLOY = "Deploys go through make release; never push the tags by hand."
PYTEST = "Run the suite with pytest -rs so every skip prints its reason."
LEDGER = "src/billing/ledger.py keeps every amount as integer cents, never a float."
FOLDER = "Everything under src/billing/ is reviewed by the finance team before merging."


@pytest.fixture
def project(isolated: Path, layout) -> Path:
    """A project with four memories in its bank and a current search index."""
    from sandman.banks import search
    from sandman.verbs.init import init
    from sandman.verbs.remember import remember

    init(layout)
    project = isolated / "app"
    for body in (DEPLOY, LEDGER, FOLDER):
        remember(layout, body, cwd=str(project))
    remember(layout, PYTEST, cwd=str(project), name="How the suite runs", description="How the suite runs.")
    search.open_index(layout).close()
    return project


def _prompt(project: Path, prompt: object, session: str = SID, **extra) -> dict | None:
    payload = {"session_id": session, "cwd": str(project), "hook_event_name": "UserPromptSubmit",
               "prompt": prompt, **extra}
    done = sandman("recall", "--prompt-hook", stdin=json.dumps(payload).encode())
    assert (done.returncode, done.stderr) == (0, b"")
    return json.loads(done.stdout) if done.stdout else None


def _read(project: Path, file: str, tool: str = "Read", session: str = SID) -> dict | None:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    payload = {"session_id": session, "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": tool,
               "tool_input": {key: file}, "tool_response": {}}
    done = sandman("recall", "--file-hook", stdin=json.dumps(payload).encode())
    assert (done.returncode, done.stderr) == (0, b"")
    return json.loads(done.stdout) if done.stdout else None


def _context(reply: dict | None, event: str) -> str:
    assert reply is not None and reply["hookSpecificOutput"]["hookEventName"] == event
    return reply["hookSpecificOutput"]["additionalContext"]


def _journal(layout) -> list[str]:
    return [line for path in layout.trace.glob("recall-*.log") for line in path.read_text().splitlines()]


def test_a_prompt_gets_the_memory_sharing_its_words_once_per_session(project, layout):
    from sandman.recall import ledger
    from sandman.verbs.recall import utf16_units

    text = _context(_prompt(project, "How do I push a release tag?"), "UserPromptSubmit")
    assert DEPLOY in text and PYTEST not in text and LEDGER not in text
    assert utf16_units(text) <= 1_500
    assert _prompt(project, "How do I push a release tag?") is None  # the session holds it now
    [held] = ledger.held(layout, SID)
    assert "/project_deploys_go_through_make_release" in held
    assert _context(_prompt(project, "push the release tag", session="other-session"), "UserPromptSubmit")
    added = [line for line in _journal(layout) if " prompt-added " in line]
    assert len(added) == 2 and "How do I" not in "".join(_journal(layout))  # decisions, never the prompt


def test_a_prompt_sharing_too_few_words_gets_nothing(project, layout):
    assert _prompt(project, "the weather in the mountains has been lovely this release week") is None
    assert _prompt(project, "what?") is None  # no meaningful word
    assert _prompt(project, "skip") is None  # one word, found only in a body: not enough
    assert PYTEST in _context(_prompt(project, "suite"), "UserPromptSubmit")  # ...in a name, enough
    reasons = [line.split("reason=")[1].split()[0] for line in _journal(layout) if " nothing " in line]
    assert reasons == ["below-floor", "no-words", "below-floor"]


def test_regression_a_misspelled_prompt_gets_its_memory(project, layout):
    # Issue 27: the floor counted only words a memory holds, so a misspelled prompt got nothing.
    assert DEPLOY in _context(_prompt(project, "relase taggs?"), "UserPromptSubmit")


def test_regression_a_prompt_sharing_only_common_words_with_a_memory_gets_nothing(project, layout):
    # It shares "make", "push" and "tags" with DEPLOY: three words of eight cleared the old floor
    # (two words and a quarter), but what it is about (photos, a gallery) no memory holds.
    assert _prompt(project, "make the photo gallery thumbnails smaller, then push the new tags") is None
    assert _prompt(project, "it isn't flowing at all - no movement") is None  # a real prompt, other project


def test_what_the_start_recall_gave_is_not_given_again_until_a_compaction(project, layout):
    def start(source: str) -> None:
        payload = {"session_id": SID, "cwd": str(project), "hook_event_name": "SessionStart", "source": source}
        assert sandman("recall", "--hook", stdin=json.dumps(payload).encode()).returncode == 0

    start("startup")
    assert _prompt(project, "How do I push a release tag?") is None  # its body is in the start surface
    assert _read(project, str(project / "src" / "billing" / "ledger.py")) is None
    start("compact")  # the surface comes back whole after the compaction, so it is held again
    assert _prompt(project, "How do I push a release tag?") is None
    lines = layout.delivered_ledger(SID).read_text().splitlines()
    assert [line.split("\t")[1] for line in lines].count("compact") == 1
    assert sum(line.split("\t")[1] == "recall" for line in lines) == 8


def test_a_compaction_lets_the_hooks_give_again_what_they_gave_before_it(project, layout):
    from sandman.recall import ledger

    assert _prompt(project, "How do I push a release tag?") is not None
    ledger.append(layout, SID, ledger.COMPACT, [])  # what SessionStart source=compact writes first
    assert DEPLOY in _context(_prompt(project, "How do I push a release tag?"), "UserPromptSubmit")


def test_a_read_gets_the_memories_naming_the_file_or_its_folder_once(project, layout):
    target = str(project / "src" / "billing" / "ledger.py")
    text = _context(_read(project, target), "PostToolUse")
    assert LEDGER in text and FOLDER in text and DEPLOY not in text
    assert _read(project, target, tool="Edit") is None
    other = _context(_read(project, str(project / "src" / "billing" / "invoice.py"), session="s2"), "PostToolUse")
    assert FOLDER in other and LEDGER not in other  # the folder's memory, not the other file's
    assert _read(project, str(project / "lib" / "ledger.py"), session="s3") is None  # another ledger.py


@pytest.mark.parametrize("text, named", [
    ("see src/billing/ledger.py", True),
    ("ledger.py, mostly", True),
    ("/abs/app/src/billing/ledger.py", True),
    ("./billing/ledger.py", True),
    ("lib/ledger.py", False),
    ("ledger.pyc and old_ledger.py", False),
    ("the billing/ folder", True),
    ("src/billing is the place", True),
    ("billing alone is a word", False),
    ("other/billing/ is elsewhere", False),
])
def test_what_names_a_file(text: str, named: bool):
    from sandman.recall.moments import names

    assert names(text, "/abs/app/src/billing/ledger.py") is named


def test_the_settings_turn_each_hook_off(project, layout):
    layout.settings_file.write_text("[recall]\nprompt_hook = false\nfile_hook = false\n")
    assert _prompt(project, "How do I push a release tag?") is None
    assert _read(project, str(project / "src" / "billing" / "ledger.py")) is None
    assert sum(" reason=off " in line for line in _journal(layout)) == 2
    layout.settings_file.write_text("[recall]\nprompt_hook = 'no'\n")
    assert _prompt(project, "How do I push a release tag?") is not None  # a bad file leaves the default, on


def test_a_missing_index_adds_nothing_and_starts_a_refresh(project, layout):
    layout.search_index.unlink()
    assert _prompt(project, "How do I push a release tag?") is None
    [line] = [line for line in _journal(layout) if "reason=index-missing" in line]
    assert int(line.split("refresh=")[1].split()[0]) > 0  # the detached child's pid
    assert layout.search_refresh_stamp.is_file()


def test_a_stale_index_adds_nothing_and_a_recent_refresh_is_not_started_again(project, layout):
    import os

    layout.search_refresh_stamp.touch()  # a hook started a refresh a moment ago
    bank = next(p for p in layout.memories.iterdir() if p.name.startswith("-"))
    os.utime(bank, ns=(1, 1))  # the bank folder changed since the index scanned it
    assert _prompt(project, "How do I push a release tag?") is None
    [line] = [line for line in _journal(layout) if "reason=index-stale" in line]
    assert "refresh=-" in line


@pytest.mark.parametrize("flag, payload, reason", [
    ("--prompt-hook", b"not json", "unreadable-payload"),
    ("--prompt-hook", b'{"hook_event_name": "SessionStart", "session_id": "s"}', "other-event"),
    ("--prompt-hook", b'{"hook_event_name": "UserPromptSubmit", "session_id": "../x", "cwd": "/a"}', "no-session"),
    ("--prompt-hook", b'{"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "rel"}', "no-cwd"),
    ("--file-hook", b'{"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/a", "tool_name": "Bash",'
                    b' "tool_input": {"command": "ls"}}', "no-file"),
    ("--file-hook", b'{"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/a", "tool_name": "Read",'
                    b' "tool_input": {"file_path": "relative.py"}}', "no-file"),
])
def test_bad_payloads_print_nothing_and_say_why(project, layout, flag, payload, reason):
    done = sandman("recall", flag, stdin=payload)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert f"reason={reason}" in _journal(layout)[-1]


def test_a_prompt_hook_and_a_recall_hook_entry_are_told_apart():
    from sandman.verbs.hooks import is_sandman_hook

    prompt = {"type": "command", "command": "/v/bin/sandman recall --prompt-hook"}
    assert is_sandman_hook(prompt, "recall", "--prompt-hook") and not is_sandman_hook(prompt, "recall")


def test_recall_takes_one_hook_flag_and_no_cwd_with_it():
    done = sandman("recall", "--prompt-hook", "--file-hook", stdin=b"{}")
    assert (done.returncode, done.stderr) == (
        2, b"sandman: recall takes one of --hook, --prompt-hook and --file-hook, not --prompt-hook and --file-hook\n")
    done = sandman("recall", "--file-hook", "--cwd", "/tmp", stdin=b"{}")
    assert (done.returncode, done.stderr) == (
        2, b"sandman: recall --file-hook reads its cwd from stdin; it takes no --cwd or --budget\n")


def test_the_refresh_a_hook_starts_brings_the_index_up_to_date_for_the_next_prompt(project, layout):
    import subprocess
    import sys

    layout.search_index.unlink()
    assert _prompt(project, "How do I push a release tag?") is None
    done = subprocess.run([sys.executable, "-m", "sandman.recall.index"], capture_output=True)  # the child's work
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert any(" recall index-refreshed" in line for line in _journal(layout))
    assert DEPLOY in _context(_prompt(project, "How do I push a release tag?"), "UserPromptSubmit")


def test_a_repeated_prompt_or_read_whose_memory_is_held_is_journaled_held_not_below_floor(project, layout):
    assert _prompt(project, "How do I push a release tag?") is not None
    assert _prompt(project, "How do I push a release tag?") is None
    target = str(project / "src" / "billing" / "ledger.py")
    assert _read(project, target) is not None
    assert _read(project, target) is None
    reasons = [line.split("reason=")[1].split()[0] for line in _journal(layout) if " nothing " in line]
    assert reasons == ["held", "held"]


def test_hooks_racing_for_one_session_never_give_the_same_memory_twice(project, layout, monkeypatch):
    """A second hook of the session runs while the first is between its check (held) and its record."""
    import fcntl
    import threading

    from sandman.recall import ledger, moments

    payload = json.dumps({"session_id": SID, "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                          "prompt": "How do I push a release tag?"}).encode()
    real_held, real_flock = ledger.held, fcntl.flock
    second_ran_or_waits = threading.Event()
    replies: dict = {}

    def second() -> None:
        replies["second"] = moments.prompt_hook(layout, payload)
        second_ran_or_waits.set()

    def flock(fd, operation):
        if threading.current_thread().name == "second":
            second_ran_or_waits.set()  # about to wait for the first hook's lock
        return real_flock(fd, operation)

    def held(layout_, session):
        found = real_held(layout_, session)
        if threading.current_thread() is threading.main_thread() and "thread" not in replies:
            replies["thread"] = threading.Thread(target=second, name="second")
            replies["thread"].start()
            second_ran_or_waits.wait()
        return found

    monkeypatch.setattr(ledger, "held", held)
    monkeypatch.setattr(fcntl, "flock", flock)
    replies["first"] = moments.prompt_hook(layout, payload)
    replies["thread"].join()
    assert sum(DEPLOY in (replies[which] or "") for which in ("first", "second")) == 1
    rows = layout.delivered_ledger(SID).read_text().splitlines()
    assert len([row for row in rows if "project_deploys" in row]) == 1


LONG = "/a" * 40_000  # 80,000 characters: the start hook walked its 40,000 folders for 25 s and more


@pytest.mark.parametrize("entry", ["fast-prompt", "served-start", "prompt", "file", "start", "report"])
def test_regression_a_path_longer_than_path_max_is_declined_before_any_bank_chain_walk(project, layout, monkeypatch,
                                                                                         entry):
    """A cwd (or a file tool's path) of 80,000 characters took the hooks 25 s and more (their bank
    chain's walk is quadratic in its length), past Claude Code's hook timeouts. Longer than
    PATH_MAX (4096 bytes) it names no file: every hook entry declines it at once, a journal line,
    no output, exit 0. Nothing may walk a chain: each walker is made to fail."""
    from sandman import hook
    from sandman.recall import compose, fast, moments, served, surfaces
    from sandman.verbs import recall

    def walked(*_args):
        raise AssertionError("a bank chain was walked")

    for module, name in ((fast, "chain"), (served, "_kept"), (moments, "bank_chain"), (compose, "bank_chain"),
                         (surfaces, "bank_chain"), (recall, "bank_chain")):
        monkeypatch.setattr(module, name, walked)
    start = {"session_id": SID, "cwd": LONG, "hook_event_name": "SessionStart", "source": "startup"}
    prompt = {"session_id": SID, "cwd": LONG, "hook_event_name": "UserPromptSubmit", "prompt": DEPLOY}
    read = {"session_id": SID, "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Read",
            "tool_input": {"file_path": LONG + "/x.py"}}
    run = {"fast-prompt": lambda: fast.prompt_hook(json.dumps(prompt).encode()),
           "served-start": lambda: served.serve(json.dumps(start).encode()),
           "prompt": lambda: hook.main(["recall", "--prompt-hook"], json.dumps(prompt).encode()),
           "file": lambda: hook.main(["recall", "--file-hook"], json.dumps(read).encode()),
           "start": lambda: hook.main(["recall", "--hook"], json.dumps(start).encode()),
           "report": lambda: hook.main(["report", "--hook"], json.dumps(start).encode())}[entry]

    assert run() in ("", 0)  # no reply (the fast paths), exit 0 (the full hooks)

    last = [line for path in layout.trace.glob("*.log") for line in path.read_text().splitlines()][-1]
    assert " declined hook=true " in last and "reason=path-too-long" in last and f"session={SID}" in last
    assert not (layout.root / ".delivered" / f"{SID}.tsv").exists()


def test_regression_the_launcher_declines_a_session_start_in_an_80000_character_cwd(project, layout):
    """The real SessionStart command (sandman/fasthook.py under ``python -I -S``), as Claude Code runs it."""
    from sandman import fasthook

    payload = {"session_id": SID, "cwd": LONG, "hook_event_name": "SessionStart", "source": "startup"}
    done = subprocess.run([sys.executable, "-I", "-S", fasthook.__file__, "recall", "--hook"],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=120)

    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "recall declined hook=true reason=path-too-long session=" in _journal(layout)[-1]
    assert "chars=80000" in _journal(layout)[-1]


@pytest.mark.parametrize("prompt", [
    "<private>How do I push a release tag?</private> thanks",
    "thanks <PRIVATE>How do I push a <private>release</private> tag?</Private>",
    "thanks <private>How do I push a release tag?",  # never closed: hides the rest
])
def test_regression_a_private_spans_words_never_choose_a_memory(project, layout, prompt):
    # The hook searched the whole prompt: the span's words chose DEPLOY and the ledger recorded it.
    assert _prompt(project, prompt) is None
    assert not layout.delivered_ledger(SID).is_file() or not layout.delivered_ledger(SID).read_text()
    assert _journal(layout)[-1].split("reason=")[1].split()[0] in ("no-words", "below-floor")
    assert DEPLOY in _context(_prompt(project, prompt.replace("<", "[")), "UserPromptSubmit")  # no span: found


def test_regression_a_file_path_holding_a_private_span_is_not_searched(project, layout):
    target = str(project / "src" / "<private>billing</private>" / "ledger.py")
    assert _read(project, target) is None
    assert "reason=private" in _journal(layout)[-1] and "billing" not in _journal(layout)[-1]


def test_regression_a_memory_edited_in_place_is_never_shown_as_it_was(project, layout):
    # The hook trusted the bank folder's mtime, which an in-place rewrite leaves alone: it showed
    # the old text, and went on showing it.
    from helpers import sandman as run

    path = next(layout.memories.rglob("project_deploys_go_through_make_release*.md"))
    path.write_text(path.read_text().replace("never push the tags by hand", "the tags are pushed by the bot"))
    layout.search_refresh_stamp.touch()  # a refresh started a moment ago: none is started now
    assert _prompt(project, "How do I push a release tag?") is None
    assert "reason=index-stale" in _journal(layout)[-1]
    assert run("search", "release").returncode == 0  # a search brings the index up to date
    text = _context(_prompt(project, "How do I push a release tag?"), "UserPromptSubmit")
    assert "pushed by the bot" in text and "by hand" not in text
