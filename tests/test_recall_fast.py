"""The prompt hook's fast path (sandman/fasthook.py, sandman/recall/fast.py; issue 29).

``<python> -I -S sandman/fasthook.py recall --prompt-hook`` must answer exactly what
``sandman recall --prompt-hook`` answers (the reply byte for byte, the same ledger and
journal lines), without importing json, re, pathlib or sqlite3's package in the usual case,
and hand every unusual case to the full hook, which then answers as it always did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import sandman

import sandman as package

FASTHOOK = Path(package.__file__).with_name("fasthook.py")
HEAVY = {"json", "re", "pathlib", "sqlite3", "datetime", "typer", "pydantic"}
BODIES = ("Deploys go through make release; never push the tags by hand.",
          "src/billing/ledger.py keeps every amount as integer cents, never a float.",
          "Run the suite with pytest -rs so every skip prints its reason.\n\nThe slow tests are marked slow.\n" * 9,
          "The release notes are written in docs/changes.md before the tag is pushed.")
PROMPTS = ("How do I push a release tag?", "Why is the weather so grey over the harbour?", "release",
           'Where do "integer cents" live in the billing ledger?', "pytest skip reason slow tests marked",
           "deploying the release with make: what are the steps and the tags?")


@pytest.fixture
def project(isolated: Path, layout) -> Path:
    from sandman.banks import search
    from sandman.verbs.init import init
    from sandman.verbs.remember import remember

    init(layout)
    project = isolated / "code" / "my_app-2"
    project.mkdir(parents=True)
    for body in BODIES:
        remember(layout, body, cwd=str(project))
    remember(layout, "The person prefers short commit messages about releases.", cwd=str(project),
             memory_type="user")
    search.open_index(layout).close()
    return project


def _fast(payload: dict) -> tuple[bytes, set[str]]:
    """The fast launcher's stdout and the modules it imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", str(FASTHOOK), "recall", "--prompt-hook"],
                          input=json.dumps(payload).encode(), capture_output=True, env=os.environ.copy(), timeout=60)
    assert done.returncode == 0
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines()
             if line.startswith("import time:") and "|" in line}
    return done.stdout, names


def _full(payload: dict) -> bytes:
    done = sandman("recall", "--prompt-hook", stdin=json.dumps(payload).encode())
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout


def _payload(project: Path, prompt: str, session: str) -> dict:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": prompt,
            "transcript_path": "/nowhere.jsonl", "permission_mode": "default"}


def _traces(layout, session: str) -> tuple[list[str], list[str]]:
    """The session's ledger lines and journal lines, their times cut, its id as ``S``."""
    try:
        ledger = [line.split("\t", 1)[1] for line in layout.delivered_ledger(session).read_text().splitlines()]
    except FileNotFoundError:
        ledger = []
    journal = [line.split(" ", 1)[1].replace(f"session={session}", "session=S")
               for path in sorted(layout.trace.glob("recall-*.log")) for line in path.read_text().splitlines()
               if f"session={session} " in line or line.endswith(f"session={session}")]
    return ledger, journal


def test_the_fast_path_answers_what_the_full_hook_answers_without_heavy_imports(project, layout):
    for n, prompt in enumerate(PROMPTS):
        for repeat in range(2):  # the second time the session holds what the first added
            fast, names = _fast(_payload(project, prompt, f"fast-{n}"))
            full = _full(_payload(project, prompt, f"full-{n}"))
            assert fast == full, (prompt, repeat)
            assert not names & HEAVY, (prompt, names & HEAVY)
        assert _traces(layout, f"fast-{n}") == _traces(layout, f"full-{n}")
    assert b"sandman: memories that match this prompt" in _fast(_payload(project, PROMPTS[0], "again"))[0]


def test_the_fast_path_reads_a_subfolder_and_the_user_bank(project, layout):
    below = project / "src" / "billing"
    below.mkdir(parents=True)
    prompt = "Does the person prefer short commit messages?"
    fast, names = _fast(_payload(below, prompt, "fast-sub"))
    assert fast == _full(_payload(below, prompt, "full-sub")) and b"user-wide" in fast
    assert not names & HEAVY


@pytest.mark.parametrize("unusual", ["settings", "stale", "edited-in-place", "worktree", "no-cwd", "other-event", "bad-json",
                                     "control", "pipeline"])
def test_an_unusual_case_goes_to_the_full_hook(project, layout, unusual, monkeypatch):
    payload = _payload(project, PROMPTS[0], "fast-u")
    twin = _payload(project, PROMPTS[0], "full-u")
    raw = None
    if unusual == "settings":
        layout.settings_file.write_text("[recall]\nprompt_hook = false\n")
    elif unusual == "stale":
        (layout.memories / "_user" / "stray.txt").write_text("changed\n")
        # A refresh started within the last 30 s: neither hook starts one, so the index stays stale
        # for both (a refresh finishing between the two calls made them differ).
        layout.search_refresh_stamp.touch()
    elif unusual == "edited-in-place":  # regression: the fast path showed the old text
        path = next(layout.memories.rglob("project_deploys_go_through*.md"))
        path.write_text(path.read_text().replace("by hand", "by the bot"))
        layout.search_refresh_stamp.touch()
    elif unusual == "worktree":
        (project / ".git").write_text("gitdir: /nowhere/.git/worktrees/x\n")
    elif unusual == "no-cwd":
        del payload["cwd"], twin["cwd"]
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    elif unusual == "other-event":
        payload["hook_event_name"] = twin["hook_event_name"] = "SessionStart"
    elif unusual == "bad-json":
        raw = b'{"session_id": "fast-u", "prompt": '
    elif unusual == "control":
        from sandman.verbs.remember import remember

        remember(layout, "A release is tagged by\u202e hand, then pushed.", cwd=str(project))
    elif unusual == "pipeline":
        monkeypatch.setenv("CLAUDE_MEMORY_PIPELINE", "1")
    if raw is not None:
        done = subprocess.run([sys.executable, "-I", "-S", str(FASTHOOK), "recall", "--prompt-hook"], input=raw,
                              capture_output=True, env=os.environ.copy(), timeout=60)
        assert (done.returncode, done.stdout) == (0, b"")
        assert "unreadable-payload" in "".join(path.read_text() for path in layout.trace.glob("recall-*.log"))
        return
    fast, _ = _fast(payload)
    assert fast == _full(twin)
    assert _traces(layout, "fast-u")[0] == _traces(layout, "full-u")[0]
    if unusual == "edited-in-place":
        assert fast == b"" and "reason=index-stale" in _traces(layout, "fast-u")[1][-1]


def test_the_fast_paths_copies_equal_their_sources():
    from sandman import config
    from sandman.banks import names
    from sandman.recall import fast, index

    for name in ("PIPELINE_ENV", "HOOK_PAYLOAD_MAX_BYTES", "PROMPT_BUDGET_UTF16", "MOMENT_MAX_MEMORIES",
                 "PROMPT_CANDIDATES", "PROMPT_MAX_TERMS", "PROMPT_RANK_MAX_MATCHES", "PROMPT_MIN_SHARED",
                 "PROMPT_MIN_COVERAGE", "PROMPT_MIN_RARITY"):
        assert getattr(fast, name) == getattr(config, name), name
    assert (fast.WEIGHTS, fast.BUSY_TIMEOUT_S, fast.RANK_WINDOW) == (index.WEIGHTS, index.BUSY_TIMEOUT_S,
                                                                      index.RANK_WINDOW)
    assert (fast.USER_BANK, fast.ROOT_BANK) == (names.USER_BANK, names.ROOT_BANK)
    for directory in ("/", "/home/a-b/c_d/é ü", "/x" * 99):
        assert fast.bank_name(directory) == (names.bank_name(directory) if len(names.bank_name(directory)) <= 200
                                             else None)


@pytest.mark.parametrize("session", ["ok-1", "a" * 128, "a" * 129, "-x", "a..b", "a/b", "", "é", "x:y.z_w"])
def test_the_fast_paths_session_rule_is_the_ledgers(session):
    from sandman import plainhook
    from sandman.recall import ledger

    assert plainhook.session_ok(session) == ledger.usable_session(session)


@pytest.mark.parametrize("text", ['{"a": 1}', ' \n{"a": [1, 2.5, "\\u00e9\\ud800", null, true]} \t', "[1]", "{", "",
                                  '{"a": 1} x', '{"a": NaN}', "\ufeff{}", '{"a": "\x01"}'])
def test_the_fast_paths_payload_reader_is_hookpayloads(text):
    from sandman import hookpayload
    from sandman.recall import fast

    assert repr(fast.parse(text.encode("utf-8", "surrogatepass"))) == repr(hookpayload.parse(
        text.encode("utf-8", "surrogatepass")))


def test_the_launcher_runs_a_whole_take_without_site(tmp_path, layout):
    """The plugin runs ``take --hook --detach`` through the launcher under ``-I -S`` (issue 29): the
    take's path imports the standard library alone, so it archives the session without ``site``."""
    from hardening import transcript

    assert sandman("init").returncode == 0
    sid = "6f1c2d3e-0000-4000-8000-000000000029"
    live = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-tmp-p" / f"{sid}.jsonl"
    live.parent.mkdir(parents=True)
    live.write_bytes(transcript(sid, str(tmp_path), "2026-11-30T10:00:00Z", "keep the port at 7000"))
    payload = {"session_id": sid, "transcript_path": str(live), "cwd": str(tmp_path), "reason": "clear",
               "hook_event_name": "SessionEnd"}
    done = subprocess.run([sys.executable, "-I", "-S", str(FASTHOOK), "take", "--hook"],
                          input=json.dumps(payload).encode(), capture_output=True, env=os.environ.copy(), timeout=60)
    assert (done.returncode, done.stderr) == (0, b"")
    assert layout.pointer(sid).is_file() and layout.take_record(sid).is_file()
    assert "crashed" not in "".join(path.read_text() for path in layout.trace.glob("*.log"))


@pytest.mark.parametrize("prompt", ["<private>How do I push a release tag?</private> thanks",
                                    "thanks <PRİVATE>How do I push a release tag?</private>",
                                    "thanks <prıvate>How do I push a release tag?"])
def test_regression_the_fast_path_never_searches_a_private_span(project, layout, prompt):
    # The fast path searched the whole prompt: the span's words added the release memory.
    fast, _ = _fast(_payload(project, prompt, "fast-p"))
    assert fast == b"" and _traces(layout, "fast-p")[0] == []
    assert b"make release" in _fast(_payload(project, "How do I push a release tag?", "fast-p"))[0]


def test_the_fast_paths_private_test_finds_every_opener_the_grammar_reads():
    from sandman.private import TAG
    from sandman.recall.fast import may_hide

    for code in range(0x110000):
        if 0xD800 <= code < 0xE000:
            continue
        for at in range(len("private")):
            opener = "<" + "private"[:at] + chr(code) + "private"[at + 1:] + ">"
            if TAG.fullmatch(opener):
                assert may_hide(f"a {opener} b"), opener
    assert not may_hide("a </private> b") and not may_hide("a <priv> b")


@pytest.mark.parametrize("kind", ("fifo", "devzero", "folder"))
def test_a_special_file_as_the_ledger_hangs_neither_prompt_hook(project, layout, kind):
    """Issue 29 item 5: the prompt hooks opened the session's ledger for appending (waits on a FIFO)
    and read it whole (a link to /dev/zero never ends); now it is read as empty and never written."""
    ledger = {name: layout.delivered_ledger(name) for name in ("fast-special", "full-special")}
    for path in ledger.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "devzero":
            path.symlink_to("/dev/zero")
        else:
            path.mkdir()
    fast, _ = _fast(_payload(project, PROMPTS[0], "fast-special"))  # the timeout is the guard
    full = sandman("recall", "--prompt-hook", stdin=json.dumps(_payload(project, PROMPTS[0], "full-special")).encode(),
                   timeout=60)
    assert (full.returncode, full.stderr) == (0, b"")
    assert fast == full.stdout and b"sandman: memories that match this prompt" in fast
    assert all(path.is_symlink() if kind == "devzero" else not path.is_file() for path in ledger.values())
