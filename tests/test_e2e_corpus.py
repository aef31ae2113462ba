"""End to end on real input: the corpus as a Claude Code and Codex history, backfilled, dreamt, recalled.

Every step is a real subprocess, as a person (or Claude Code) would run it:
``remember`` one memory, ``take --all``, ``dream --now`` with the fake claude
answering each transcript from tests/e2e/fixtures/, ``recall --hook`` with a
SessionStart payload for every session's cwd, ``sandman site``, then the next
night's ``reflect``. tests/e2e/README.md says
what each transcript's memories are, which minds propose them, and which are
meant to commit; ``COMMITTED`` below is that list, asserted exactly.

The corpus bytes are never edited: the recorded cwds (``/home/user/...``,
``/Users/user/...``, ``/workspace/...``) do not exist here, and need not.
recall reads banks by path, so the SessionStart payload carries the recorded
cwd as it is; HOME is the test's throwaway home, outside which every recorded
cwd lies, so recall walks each cwd's ancestors up to ``/`` (docs/recall.md).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import shutil
import time
from pathlib import Path

from corpus_table import CASES, Case, project_slug
from helpers import git, sandman
from sandman import config, journal
from sandman.banks.memory import read_memory
from sandman.banks.names import ancestors, bank_directory
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout
from sandman.pointers import list_pointers
from sandman.store.runlock import RunLock
from sandman.voyage import read_entry

FIXTURES = Path(__file__).resolve().parent / "e2e" / "fixtures"
DAY = 86_400

SPOTTER = "/home/user/projects/spotter"
WORKTREES = "/home/USER/projects/spotter-worktrees"
DOV = f"{WORKTREES}/spotter-dov"
STUDIO = "/Users/user/dev/studio"
VIBE = "/Users/user/dev/vibeinsights"
AGENTLOGS = "/Users/user/dev/agentlogs"

# The memory remembered before the backfill: tool_heavy's dev-server claim dedupes against it.
REMEMBERED = ("Start the dev server with mix phx.server",
              "The spotter Phoenix dev server starts with mix phx.server from the repository root")

# (bank directory or None for the user-wide bank, type, name, witnesses, source session)
COMMITTED = {
    (SPOTTER, "project", REMEMBERED[0], (), "remember"),
    (SPOTTER, "project", "Work is tracked as beads with the bd CLI", ("fable", "opus", "sonnet"),
     "491e126e-1e71-469c-ade2-fcc8af567c74"),
    (SPOTTER, "project", "Credo, Dialyxir and mix_audit have no Igniter installers", ("fable", "opus"),
     "491e126e-1e71-469c-ade2-fcc8af567c74"),
    (None, "user", "Plans work as beads with /handgemacht:create-beads", ("fable", "sonnet"),
     "491e126e-1e71-469c-ade2-fcc8af567c74"),
    (SPOTTER, "reference", "The web terminal is xterm.js, set up in assets/js/app.js", ("fable", "sonnet"),
     "d6e0bada-1959-4eec-a9d2-0bfade768d8f"),
    (WORKTREES, "project", "Guards cannot call Access.get", ("fable", "opus", "sonnet"),
     "4d5611e5-241a-462a-8d15-5122611a9569"),
    (WORKTREES, "project", "Credo allows a function body nesting depth of 2", ("opus", "sonnet"),
     "4d5611e5-241a-462a-8d15-5122611a9569"),
    (DOV, "project", "Transcript views share TranscriptComputers and TranscriptComponents", ("fable", "opus"),
     "4d5611e5-241a-462a-8d15-5122611a9569"),
    (STUDIO, "project", "studio is Tailwind Studio, a React visual design tool", ("fable", "sonnet"),
     "609efeca-2f51-4118-b077-e91c9fe63f73"),
    (VIBE, "reference", "Chrome DevTools MCP tools drive a browser", ("fable", "opus"),
     "794b4c5f-6354-422a-9e6d-c9f18e89e427"),
    (AGENTLOGS, "project", "Recharts wraps Y-axis tick labels at spaces", ("fable", "sonnet"),
     "019c16bd-a0fc-7293-855d-2948ce5dc471"),
    (AGENTLOGS, "reference", "The /team dashboard is packages/web/src/routes/_app/app/team/index.tsx",
     ("fable", "opus"), "019c16bd-a0fc-7293-855d-2948ce5dc471"),
}

# What each routed session's journal line counts: proposed, claims, committed, deduped, forgotten, abstained.
COUNTS = {
    "55604662-cf2a-4331-851a-ec234028f8ca": (1, 1, 0, 0, 1, 0),
    "d6e0bada-1959-4eec-a9d2-0bfade768d8f": (5, 3, 1, 1, 1, 0),
    "491e126e-1e71-469c-ade2-fcc8af567c74": (9, 5, 3, 0, 2, 0),
    "4d5611e5-241a-462a-8d15-5122611a9569": (8, 4, 3, 0, 1, 0),
    "0e26ec2f-937e-482c-b889-bc126f996913": (0, 0, 0, 0, 0, 0),
    "609efeca-2f51-4118-b077-e91c9fe63f73": (2, 1, 1, 0, 0, 1),
    "794b4c5f-6354-422a-9e6d-c9f18e89e427": (2, 1, 1, 0, 0, 1),
    "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b": (0, 0, 0, 0, 0, 0),
    "019c16bd-a0fc-7293-855d-2948ce5dc471": (5, 3, 2, 0, 1, 0),
    "11111111-1111-4111-8111-111111111111": (0, 0, 0, 0, 0, 0),
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _is_orphan(case: Case) -> bool:
    """The corpus holds one subagent transcript without its parent session (258c7280)."""
    return "/subagents/" in case.file and case.companion is None


def _place(corpus: Path, claude_dir: Path, codex_home: Path) -> dict[str, Path]:
    """Copy every corpus transcript where its host keeps it; return {corpus file: its copy}.

    Claude Code: ``projects/<slug of cwd>/<session>.jsonl``, a companion folder
    beside its parent, the parentless subagent in ``<slug>/<session>/subagents/``.
    Codex: ``sessions/<yyyy>/<mm>/<dd>/rollout-<time>-<session>.jsonl``. Every
    copy is made three days old.
    """
    transcripts = corpus / "transcripts"
    companions = [case.companion for case in CASES if case.companion]
    found = sorted(str(p.relative_to(transcripts)) for p in transcripts.rglob("*.jsonl"))
    inside = [f for f in found if any(f.startswith(folder + "/") for folder in companions)]
    assert sorted(case.file for case in CASES) == sorted(set(found) - set(inside)), "a corpus file is not in CASES"
    copies: dict[str, Path] = {}
    for case in CASES:
        if case.host == "codex":
            name = Path(case.file).name
            if not name.startswith("rollout-"):
                name = f"rollout-{case.ended[:19].replace(':', '-')}-{case.session}.jsonl"
            target = codex_home / "sessions" / case.ended[:4] / case.ended[5:7] / case.ended[8:10] / name
        elif _is_orphan(case):
            target = claude_dir / "projects" / project_slug(case.cwd) / case.session / "subagents" / Path(case.file).name
        else:
            target = claude_dir / "projects" / project_slug(case.cwd) / f"{case.session}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(transcripts / case.file, target)
        copies[case.file] = target
        if case.companion:
            for file in inside:
                if file.startswith(case.companion + "/"):
                    copy = target.with_suffix("") / Path(file).relative_to(case.companion)
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(transcripts / file, copy)
                    copies[file] = copy
    old = time.time() - 3 * DAY
    for copy in copies.values():
        os.utime(copy, (old, old))
    return copies


def _committed(layout: Layout) -> set[tuple]:
    """Every live memory under memories/: (bank directory, type, name, witnesses, source)."""
    found = set()
    for bank in sorted(p for p in layout.memories.iterdir() if p.is_dir() and not p.name.startswith(".")):
        directory = bank_directory(bank.name)
        for path in sorted(bank.glob("*.md")):
            if path.name == BANK_INDEX:
                continue
            memory = read_memory(path)
            found.add((None if directory is None else str(directory), memory.type, memory.name,
                       tuple(memory.witnesses), ",".join(memory.source)))
        assert not (bank / BANK_ARCHIVE).exists() or not any((bank / BANK_ARCHIVE).iterdir())
    return found


def _journal(layout: Layout, verb: str) -> list[tuple[str, dict]]:
    path = layout.trace_file(verb, journal.now_utc().strftime("%Y-%m-%d"))
    return [journal.parse_line(line)[2:] for line in path.read_text().splitlines() if line.startswith("20")]


def _recall(cwd: str, session: str) -> str:
    payload = {"session_id": session, "transcript_path": None, "cwd": cwd,
               "hook_event_name": "SessionStart", "source": "startup"}
    done = sandman("recall", "--hook", stdin=json.dumps(payload).encode())
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    reply = json.loads(done.stdout)
    assert reply["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return reply["hookSpecificOutput"]["additionalContext"]


def test_the_corpus_goes_through_take_all_dream_recall_and_the_site(corpus: Path, isolated: Path, layout: Layout,
                                                             fake_claude, monkeypatch):
    started = time.monotonic()
    copies = _place(corpus, config.claude_config_dir(), config.codex_home())
    sources = {file: _sha(copy) for file, copy in copies.items()}

    remembered = sandman("remember", "The dev server starts with `mix phx.server` from the repository root.",
                         "--cwd", SPOTTER, "--name", REMEMBERED[0], "--description", REMEMBERED[1])
    assert remembered.returncode == 0, remembered.stderr

    # take --all. Ten sessions make dream due; a held lock stands in for a running dream, so the
    # backfill's one trigger is seen (dream-running) and this test runs the dream itself, below.
    lock = RunLock(layout.dream_lock)
    assert lock.acquire()
    try:
        taken = sandman("take", "--all")
    finally:
        lock.release()
    assert taken.returncode == 0, taken.stderr
    out = taken.stdout.decode()
    orphan = copies["claude/spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl"]
    assert f"skip orphan-folder  {orphan.parent.parent}" in out
    assert "│ taken " in out and "│       10 │" in out
    take_lines = _journal(layout, "take")
    assert [d for d, _ in take_lines].count("archived") == 10
    assert ("dream-running", {"queued": "10"}) in take_lines

    # Every archived byte is its source's: transcripts and the companion folder.
    pointers = {pointer.session: pointer.data for pointer in list_pointers(layout)}
    sessions = [case for case in CASES if not _is_orphan(case)]
    assert sorted(pointers) == sorted(case.session for case in sessions)
    for case in sessions:
        pointer = pointers[case.session]
        assert (pointer["cwd"], pointer["host"]) == (case.cwd, case.host)
        assert _sha(layout.root / pointer["archived"]) == sources[case.file]
        assert pointer["origin"] == str(copies[case.file])
        if case.companion:
            for file, digest in sources.items():
                if file.startswith(case.companion + "/"):
                    assert _sha(layout.root / pointer["companion"] / Path(file).relative_to(case.companion)) == digest
    assert _sha(orphan) == sources["claude/spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl"]
    # Every taken file stays where its host keeps it (for --resume), a second name of its archived
    # self; the orphan subagent alone was not taken.
    left = sorted(p for p in [*config.claude_projects_dir().rglob("*"), *config.codex_sessions_dir().rglob("*")]
                  if p.is_file())
    assert [p for p in left if p.stat().st_nlink != 2] == [orphan]

    # dream --now: the fake claude answers each transcript from tests/e2e/fixtures.
    dreamt = sandman("dream", "--now", env={"FAKE_CLAUDE_FIXTURES": str(FIXTURES)})
    assert dreamt.returncode == 0, dreamt.stderr
    assert "10 pointer(s) tried: 10 routed, 0 left queued" in dreamt.stdout.decode()
    calls = fake_claude.calls()
    assert len(calls) == 30
    for call in calls:  # each prompt names exactly one session: every fixture rule matched unambiguously
        assert sum(case.session in call["prompt"] for case in sessions) == 1

    assert _committed(layout) == COMMITTED
    dream_lines = _journal(layout, "dream")
    routed = {facts["session"]: facts for decision, facts in dream_lines if decision == "routed"}
    assert sorted(routed) == sorted(COUNTS)
    for session, counts in COUNTS.items():
        facts = routed[session]
        named = [] if facts["deduped"] == "-" else facts["deduped"].split(",")
        assert tuple(len(named) if key == "deduped" else int(facts[key])
                     for key in ("proposed", "claims", "committed", "deduped", "forgotten", "abstained")) == counts, session
    assert routed["609efeca-2f51-4118-b077-e91c9fe63f73"]["opus"] == "exit 1"
    assert routed["794b4c5f-6354-422a-9e6d-c9f18e89e427"]["sonnet"] == "unparseable output"
    deduped = [facts for decision, facts in dream_lines if decision == "deduped"]
    assert [(f["session"], Path(f["deduped"]).name) for f in deduped] == [
        ("d6e0bada-1959-4eec-a9d2-0bfade768d8f", "project_start_the_dev_server_with_mix_phx_server.md")]
    assert all(pointer.dreamed for pointer in list_pointers(layout))
    assert git(layout.root, "status", "--porcelain") == ""

    # The trail: one dream.commit per session that committed a memory, naming the session it read;
    # every dream commit carries its session's event.
    from sandman.machine import trail

    events = trail.log(layout, kind="dream.commit").events
    assert sorted(event.data["session"] for event in events) == sorted(s for s, c in COUNTS.items() if c[2])
    by_session = {event.data["session"]: event.id for event in events}
    dream_commits = git(layout.root, "log", "--format=%x01%B", "--grep=^Verb: dream").split("\x01")[1:]
    assert len(dream_commits) == sum(c[2] for c in COUNTS.values())
    for message in dream_commits:
        (session,) = [line[len("Session: "):] for line in message.splitlines() if line.startswith("Session: ")]
        assert f"Event: {by_session[session]}" in message and "Kind: dream.commit" in message
    assert trail.read(layout).skipped == []

    # recall --hook from every session's cwd: its bank and its ancestors' banks, and the user-wide bank.
    for case in sessions:
        text = _recall(case.cwd, case.session)
        chain = {str(path) for path in ancestors(case.cwd, None)}
        for directory, _, name, _, _ in COMMITTED:
            assert (f"[{name}](" in text) == (directory is None or directory in chain), (case.cwd, name)

    # The week's score from what the corpus left in the journals and on the trail (docs/score.md).
    scored = sandman("score", "--json")
    assert scored.returncode == 0, scored.stderr
    numbers = {n["key"]: n["value"] for n in json.loads(scored.stdout)["numbers"]}
    assert numbers == {"dream.quorum": 1.0, "abstain.fable": 0.0, "abstain.opus": 0.1, "abstain.sonnet": 0.1,
                       "memory.cost": None, "memory.committed": len(COMMITTED), "memory.deduped": 1 / len(COMMITTED),
                       "memory.secrets": 0.0, "recall.trims": 0.0, "trail.revoked": 0.0}  # the machine is off

    # The site: a page for every memory, its name on it.
    site = sandman("site")
    assert site.returncode == 0, site.stderr
    pages = 0
    for bank in (p for p in layout.memories.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in bank.glob("*.md"):
            if path.name == BANK_INDEX:
                continue
            page = layout.site / "banks" / bank.name / f"{path.stem}.html"
            assert html.escape(read_memory(path).name) in page.read_text(encoding="utf-8"), page
            pages += 1
    assert pages == len(COMMITTED)
    assert (layout.site / "index.html").is_file()

    # reflect, the next night: the voyage entry of the day the memories landed, the pointer sweep
    # (every session ended long ago and is dreamt), the banks seeded, the site rendered again.
    _reflect_next_night(layout, fake_claude, monkeypatch)
    today = journal.now_utc().strftime("%Y-%m-%d")
    entry = read_entry(layout.log_entry(today))
    assert len(entry.sources) == len(COMMITTED) and entry.title == "Eleven memories from ten sessions"
    assert f"- [{today}]({today}.md)" in layout.log_index.read_text(encoding="utf-8")
    assert list_pointers(layout) == []
    assert "Eleven memories from ten sessions" in (layout.site / "log" / f"{today}.html").read_text(encoding="utf-8")
    assert git(layout.root, "status", "--porcelain") == ""

    elapsed = time.monotonic() - started
    print(f"e2e: {len(sessions)} sessions taken, {len(COMMITTED) - 1} memories committed, {elapsed:.1f} s")


def _reflect_next_night(layout: Layout, fake_claude, monkeypatch) -> None:
    """Run reflect as the 03:30 UTC routine will tomorrow, the log mind answered by the fake claude.

    In process, because the pass must believe today has ended (``now``); the log
    mind gets a model id of its own so its fixture cannot collide with a dream mind's.
    """
    from datetime import timedelta

    from sandman.verbs.reflect import reflect

    reply = {"kind": "landfall", "title": "Eleven memories from ten sessions",
             "body": "The backfill brought ten sessions home; two minds agreed on eleven facts.", "next": ""}
    fake_claude.answer("claude-log-e2e", reply)
    monkeypatch.setenv("SANDMAN_MIND_LOG", "claude-log-e2e")
    monkeypatch.setenv("FAKE_CLAUDE_FIXTURES", str(fake_claude.fixtures))
    tomorrow = (journal.now_utc() + timedelta(days=1)).replace(hour=3, minute=30, second=0)
    summary = reflect(layout, now=tomorrow)
    assert summary.errors == [], summary.errors
