"""sandman reflect (sandman/verbs/reflect.py): the pass, the voyage entry, the sweep, --day, with the fake claude."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

import pytest

from helpers import git, sandman
from reflect_helpers import (
    BANK, DAY, LOG_MODEL, NOW, at, commits, entry_reply, head, journal_lines, minds, remember_on, snapshot,
)
from sandman import voyage
from sandman.errors import InputError, LockBusy
from sandman.layout import BANK_REFLECT, Layout
from sandman.pointers import write_pointer
from sandman.store.runlock import RunLock
from sandman.verbs import reflect as reflect_module
from sandman.verbs.reflect import reflect

assert minds  # a fixture, used by name below

SID = "9b0c1d2e-8f7a-4b6c-9d0e-1f2a3b4c5d6e"


@pytest.fixture
def day_memories(layout: Layout) -> list:
    """Two memories landed on DAY and one the day before (not a source of DAY)."""
    return [
        remember_on(layout, "2026-11-28T12:00", "Deploy by tag"),
        remember_on(layout, f"{DAY}T09:00", "Build with make", "Run `make -j8`.\n"),
        remember_on(layout, f"{DAY}T23:59", "Prefers short answers", type_="user"),
    ]


def log_calls(fake) -> list[dict]:
    return [call for call in fake.calls() if call["model"] == LOG_MODEL]


# --- the entry --------------------------------------------------------------------


def test_an_entry_is_written_with_its_stamps_and_the_index_in_one_reflect_commit(layout, minds, day_memories):
    minds.answer(LOG_MODEL, entry_reply())
    before = commits(layout)
    summary = reflect(layout, day=DAY, now=NOW)
    assert summary.entry.decision == "written" and summary.entry.sources == 2
    entry = voyage.read_entry(layout.log_entry(DAY))
    assert (entry.day, entry.position, entry.kind, entry.title, entry.next) == (
        DAY, 1, "passage", "The proj bank learned its build", "Watch the build.")
    assert entry.body == "I learned that the build runs with make.\n"
    assert entry.sources == [f"{BANK}/project_build_with_make.md", "_user/user_prefers_short_answers.md"]
    assert entry.fingerprint == voyage.fingerprint(
        [("Build with make", "Run `make -j8`.\n"), ("Prefers short answers", "Prefers short answers, in the body.\n")])
    assert layout.log_index.read_text() == voyage.render_log_index(layout)
    assert "began: 2026-11-29" in layout.log_index.read_text()
    assert commits(layout) == before + 1
    message = git(layout.root, "log", "-1", "--format=%B")
    assert message.startswith(f"reflect: voyage {DAY}: The proj bank learned its build\n")
    assert "Verb: reflect" in message and "Kind: reflect.entry" in message
    files = sorted(git(layout.root, "show", "--name-only", "--format=", "HEAD").split())
    assert files[:2] == ["log/2026-11-29.md", "log/INDEX.md"] and files[2].startswith("trail/") and len(files) == 3
    from sandman.machine import trail

    (event,) = trail.read(layout).events  # the entry's event, in the entry's commit
    assert f"Event: {event.id}" in message and event.kind == "reflect.entry" and event.data["day"] == DAY
    assert git(layout.root, "status", "--porcelain") == ""
    (call,) = minds.calls()
    assert "--no-session-persistence" in call["argv"] and call["prompt_via"] == "stdin"
    assert call["env"]["CLAUDE_MEMORY_PIPELINE"] == "1"
    # The sources reach the mind whole, fenced as data; the memory of the day before does not.
    assert "Run `make -j8`." in call["prompt"] and "Deploy by tag" not in call["prompt"]
    assert '<data-' in call["prompt"] and 'label="memories"' in call["prompt"]
    (written,) = journal_lines(layout, "written")
    assert written["day"] == DAY and written["sources"] == "2" and written["cost_log"] == "0.0123"


@pytest.mark.calendar
def test_a_second_reflect_on_the_same_day_makes_no_commit_and_no_model_call(layout, minds, day_memories):
    minds.answer(LOG_MODEL, entry_reply())
    reflect(layout, now=NOW)  # the whole pass: entry written, banks seeded
    calls, tip, disk = len(minds.calls()), head(layout), snapshot(layout.root)
    again = reflect(layout, now=NOW + timedelta(hours=2))
    assert again.entry.decision == "kept" and again.commits == []
    assert len(minds.calls()) == calls and head(layout) == tip and snapshot(layout.root) == disk
    assert journal_lines(layout, "kept")[-1]["day"] == DAY


def test_a_changed_source_asks_again_and_keeps_the_entry_unknown_keys(layout, minds, day_memories):
    minds.answer(LOG_MODEL, entry_reply())
    reflect(layout, day=DAY, now=NOW)
    path = layout.log_entry(DAY)
    text = path.read_text().replace("kind: passage\n", "kind: passage\nmood: calm\n")
    path.write_text(text)  # a hand edit; the next commit's recovery commits it first
    remember_on(layout, f"{DAY}T12:00", "Tests run with pytest -rs")
    minds.answer(LOG_MODEL, entry_reply(kind="squall", title="A correction about the tests"))
    summary = reflect(layout, day=DAY, now=NOW)
    assert summary.entry.decision == "written" and len(log_calls(minds)) == 2
    entry = voyage.read_entry(path)
    assert entry.title == "A correction about the tests" and entry.front.get("mood") == "calm"
    assert len(entry.sources) == 3


def test_a_quiet_day_writes_no_file_and_asks_no_mind(layout, minds):
    remember_on(layout, "2026-11-27T10:00", "Deploy by tag")
    summary = reflect(layout, now=NOW)
    assert summary.entry.decision == "quiet"
    assert not layout.log.exists() and minds.calls() == []
    assert journal_lines(layout, "quiet") == [{"decision": "quiet", "day": DAY, "existing": "false"}]


def test_an_updated_memory_is_a_source_of_the_day_it_was_updated(layout, minds):
    first = remember_on(layout, "2026-11-20T10:00", "Build with make", "Run make.\n")
    remember_on(layout, f"{DAY}T08:00", "Build with make", "Run make -j8.\n", replaces=first.name)
    minds.answer(LOG_MODEL, entry_reply())
    assert reflect(layout, day=DAY, now=NOW).entry.sources == 1


@pytest.mark.parametrize("rule, reason", [
    ({"mode": "hang"}, "timeout"),
    ({"result": entry_reply(title="t" * 61)}, "title over 60 characters"),
    ({"result": entry_reply(body="b" * 1001)}, "body over 1000 characters"),
    ({"mode": "garbage"}, "unparseable output"),
    ({"result": "The day went well, I think."}, "unparseable"),
    ({"result": entry_reply(kind="storm")}, "unknown kind"),
    ({"result": {"kind": "passage", "title": "t", "body": "b"}}, "next missing or not a string"),
    ({"result": ["not", "an", "object"]}, "not an object"),
    ({"mode": "echo"}, "echo"),
    ({"mode": "refusal"}, "refusal"),
    ({"mode": "is_error"}, "is_error: Not logged in"),
    ({"result": entry_reply(body="Keep AKIAUJZDE8GXD6NCF10E handy.")}, "secret (aws-access-key-id)"),
])
def test_an_abstention_leaves_the_disk_alone_and_the_next_pass_asks_again(layout, minds, day_memories,
                                                                         monkeypatch, rule, reason):
    # Only the hung mind needs the short timeout; under load a 1 s limit would time out the others too.
    monkeypatch.setenv("SANDMAN_MIND_TIMEOUT", "1" if rule.get("mode") == "hang" else "60")
    minds.rules(LOG_MODEL, rule)
    tip, disk = head(layout), snapshot(layout.root)
    summary = reflect(layout, day=DAY, now=NOW)
    assert summary.entry.decision == "abstained" and summary.entry.reason == reason
    assert head(layout) == tip and snapshot(layout.root) == disk and not layout.log.exists()
    (line,) = journal_lines(layout, "abstained")
    assert line["day"] == DAY and line["reason"] == reason and line["mind"] == "log" and "cost_log" in line
    minds.answer(LOG_MODEL, entry_reply())
    assert reflect(layout, day=DAY, now=NOW).entry.decision == "written"


def test_an_abstention_keeps_an_older_entry_whose_sources_changed(layout, minds, day_memories):
    minds.answer(LOG_MODEL, entry_reply())
    reflect(layout, day=DAY, now=NOW)
    remember_on(layout, f"{DAY}T12:00", "Tests run with pytest -rs")
    minds.answer(LOG_MODEL, entry_reply(title="x" * 61))
    tip, disk = head(layout), snapshot(layout.root)
    assert reflect(layout, day=DAY, now=NOW).entry.decision == "abstained"
    assert head(layout) == tip and snapshot(layout.root) == disk


def test_a_title_of_60_and_a_body_of_1000_characters_are_within_the_limits(layout, minds, day_memories):
    minds.answer(LOG_MODEL, entry_reply(title="t" * 60, body="b" * 1000))
    assert reflect(layout, day=DAY, now=NOW).entry.decision == "written"
    entry = voyage.read_entry(layout.log_entry(DAY))
    assert len(entry.title) == 60 and len(entry.body.rstrip()) == 1000


def test_the_reply_may_come_in_a_json_fence(layout, minds, day_memories):
    minds.answer(LOG_MODEL, entry_reply(), fence=True)
    assert reflect(layout, day=DAY, now=NOW).entry.decision == "written"


def test_began_stays_fixed_when_an_older_day_is_backfilled(layout, minds):
    remember_on(layout, "2026-11-27T10:00", "Deploy by tag")
    remember_on(layout, f"{DAY}T10:00", "Build with make")
    minds.answer(LOG_MODEL, entry_reply())
    reflect(layout, day=DAY, now=NOW)
    minds.answer(LOG_MODEL, entry_reply(kind="landfall", title="Earlier ground"))
    reflect(layout, day="2026-11-27", now=NOW)
    index = layout.log_index.read_text()
    assert "began: 2026-11-29" in index and "entries: 2" in index
    assert index.index("[2026-11-27]") < index.index("[2026-11-29]")  # ascending
    assert voyage.read_entry(layout.log_entry("2026-11-27")).position == -1
    remember_on(layout, "2026-11-30T10:00", "Tests run with pytest -rs")
    reflect(layout, now=NOW + timedelta(days=1))
    assert voyage.read_entry(layout.log_entry("2026-11-30")).position == 2
    assert "began: 2026-11-29" in layout.log_index.read_text()


def test_the_last_five_entries_before_the_day_are_behind_the_prompt_whole(layout, minds):
    for number in range(1, 8):
        day = f"2026-11-{20 + number:02d}"
        remember_on(layout, f"{day}T10:00", f"Memory number {number}")
        minds.answer(LOG_MODEL, entry_reply(title=f"Entry title {number}", body=f"Body of entry {number}.\n"))
        reflect(layout, day=day, now=NOW)
    remember_on(layout, f"{DAY}T10:00", "The newest memory")
    minds.answer(LOG_MODEL, entry_reply())
    reflect(layout, day=DAY, now=NOW)
    prompt = log_calls(minds)[-1]["prompt"]
    assert "Entry title 1" not in prompt and "Entry title 2" not in prompt
    for number in range(3, 8):
        assert f"title: Entry title {number}" in prompt and f"Body of entry {number}." in prompt
    assert "day 9 of the voyage" in prompt  # began 2026-11-21, DAY is 2026-11-29


@pytest.mark.calendar
def test_a_spent_budget_defers_the_entry_without_a_model_call(layout, minds, day_memories, monkeypatch):
    monkeypatch.setenv("SANDMAN_DAILY_BUDGET_USD", "0.01")
    from sandman import journal

    journal.write(layout, "dream", "routed", cost_fable=0.02)
    summary = reflect(layout, now=NOW)
    assert summary.entry.decision == "deferred" and minds.calls() == []
    assert not layout.log.exists()
    assert journal_lines(layout, "deferred")[0]["reason"] == "budget"


# --- the sweep ----------------------------------------------------------------------


def _pointer(layout: Layout, sid: str, ended: str | None, dreamed: bool) -> None:
    data = {"host": "claude", "cwd": "/home/user/proj", "ended": ended, "title": sid}
    if dreamed:
        data["dreamed"] = "2026-11-20T00:00:00Z"
    write_pointer(layout, sid, data)


@pytest.mark.calendar
def test_the_sweep_deletes_only_dreamed_pointers_ended_over_72_hours_ago(layout, minds):
    layout.root.mkdir(parents=True)
    old = (NOW - timedelta(hours=73)).strftime("%Y-%m-%dT%H:%M:%SZ")
    young = (NOW - timedelta(hours=71)).strftime("%Y-%m-%dT%H:%M:%SZ")
    _pointer(layout, "dreamed-old", old, True)
    _pointer(layout, "undreamed-old", "2026-01-01T00:00:00Z", False)
    _pointer(layout, "dreamed-young", young, True)
    _pointer(layout, "dreamed-no-end", None, True)
    summary = reflect(layout, now=NOW)
    assert summary.swept == ["dreamed-old"]
    assert sorted(path.stem for path in layout.recent.iterdir()) == ["dreamed-no-end", "dreamed-young", "undreamed-old"]
    assert journal_lines(layout, "swept") == [
        {"decision": "swept", "session": "dreamed-old", "ended": old, "dreamed": "2026-11-20T00:00:00Z"}]


def test_the_sweep_puts_back_a_pointer_rewritten_as_it_was_set_aside(layout, monkeypatch):
    layout.root.mkdir(parents=True)
    _pointer(layout, SID, "2026-11-01T00:00:00Z", True)
    from sandman.reflect import sweep as sweep_module

    real_move = sweep_module.move_no_replace

    def take_meanwhile(source, target):
        if target == layout.sweeping_pointer(SID):
            _pointer(layout, SID, "2026-11-01T00:00:00Z", False)  # take wrote it again, undreamed
        real_move(source, target)

    monkeypatch.setattr(sweep_module, "move_no_replace", take_meanwhile)
    assert sweep_module.sweep(layout, NOW) == []
    assert json.loads(layout.pointer(SID).read_text()).get("dreamed") is None
    assert not layout.sweeping_pointer(SID).exists()


# --- the order of the pass ------------------------------------------------------------


def test_the_pass_runs_drain_dream_entry_sweep_upkeep_then_the_site(layout, minds, day_memories, monkeypatch):
    from sandman.site import render
    from sandman.reflect import upkeep
    from sandman.verbs import take

    order = []

    def spy(name, real):
        def call(*args, **kwargs):
            order.append(name)
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(take, "drain", spy("drain", take.drain))
    monkeypatch.setattr(reflect_module, "dream_waiting", spy("dream", reflect_module.dream_waiting))
    monkeypatch.setattr(reflect_module, "voyage_entry", spy("entry", reflect_module.voyage_entry))
    monkeypatch.setattr(reflect_module, "sweep", spy("sweep", reflect_module.sweep))
    monkeypatch.setattr(upkeep, "upkeep", spy("upkeep", upkeep.upkeep))
    monkeypatch.setattr(render, "render_site", spy("site", render.render_site))
    minds.answer(LOG_MODEL, entry_reply())
    reflect(layout, now=NOW)
    assert order == ["drain", "dream", "entry", "sweep", "upkeep", "site"]


def test_the_drain_reclaims_a_pending_take_whose_job_is_gone(layout, minds, isolated):
    transcript = isolated / ".claude" / "projects" / "-home-user-proj" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(json.dumps({"type": "user", "sessionId": SID, "cwd": "/home/user/proj",
                                      "timestamp": "2026-11-29T10:00:00.000Z",
                                      "message": {"role": "user", "content": "Fix the upload test"}}) + "\n")
    # Older than the backstop's lookback: the drain, not reflect's backstop step, must take it.
    from sandman import config

    moment = time.time() - config.BACKSTOP_LOOKBACK_S - 600
    os.utime(transcript, (moment, moment))
    layout.pending_takes.mkdir(parents=True)
    layout.pending_take(SID).write_text(json.dumps(
        {"declined": "2026-11-29T10:00:00Z", "job": "gone1234", "session": SID, "transcript": str(transcript)}))
    summary = reflect(layout, now=NOW)
    assert summary.drained == [SID]
    assert layout.pointer(SID).exists() and not layout.pending_take(SID).exists()
    assert transcript.stat().st_nlink == 2  # taken: archived, and still resumable
    assert journal_lines(layout, "drained")[0]["reclaimed"] == "1"


def test_the_site_is_rendered_after_the_pass_with_the_new_entry(layout, minds, day_memories):
    minds.answer(LOG_MODEL, entry_reply(title="A <b>bold</b> day"))
    summary = reflect(layout, now=NOW)
    page = (layout.site / "log" / f"{DAY}.html").read_text()
    assert "A &lt;b&gt;bold&lt;/b&gt; day" in page and "I learned that the build runs with make." in page
    assert (layout.site / "index.html").is_file() and summary.site.pages > 0
    assert journal_lines(layout, "rendered")


def test_a_pass_that_commits_syncs_after_and_one_that_does_not_never_syncs(layout, minds, day_memories, monkeypatch):
    from sandman.verbs import sync

    synced = []
    monkeypatch.setattr(sync, "maybe_sync_after_commit", lambda root: synced.append(root))
    minds.answer(LOG_MODEL, entry_reply())
    reflect(layout, now=NOW)
    assert synced == [layout]
    reflect(layout, now=NOW)
    assert synced == [layout]


# --- --day and bad input ----------------------------------------------------------------


def test_day_renders_that_entry_and_nothing_else(layout, minds, day_memories):
    layout.pending_takes.mkdir(parents=True)
    layout.pending_take(SID).write_text(json.dumps({"declined": "2026-11-29T10:00:00Z", "job": "j", "session": SID}))
    _pointer(layout, "dreamed-old", "2026-11-01T00:00:00Z", True)
    minds.answer(LOG_MODEL, entry_reply())
    summary = reflect(layout, day=DAY, now=NOW + timedelta(days=5))
    assert summary.entry.decision == "written" and summary.drained == [] and summary.swept == []
    assert summary.upkeep == [] and not (layout.bank(BANK) / BANK_REFLECT).exists()
    assert layout.pending_take(SID).exists() and layout.pointer("dreamed-old").exists()
    assert journal_lines(layout, "drained") == [] and (layout.site / "log" / f"{DAY}.html").is_file()
    assert [call["model"] for call in minds.calls()] == [LOG_MODEL]


@pytest.mark.calendar
def test_the_cli_runs_the_day_and_prints_what_it_did(layout, minds, day_memories):
    minds.answer(LOG_MODEL, entry_reply())
    done = sandman("reflect", "--day", DAY)
    assert done.returncode == 0, done.stderr
    assert f"voyage {DAY}: written (2 source(s))" in done.stdout.decode()
    assert layout.log_entry(DAY).is_file()


@pytest.mark.parametrize("day, message", [
    ("2026-13-01", "--day '2026-13-01' is not a YYYY-MM-DD calendar date"),
    ("yesterday", "--day 'yesterday' is not a YYYY-MM-DD calendar date"),
    ("2026-11-29T00:00", "--day '2026-11-29T00:00' is not a YYYY-MM-DD calendar date"),
])
def test_a_bad_day_is_a_one_line_error_and_exit_2(layout, day, message):
    done = sandman("reflect", "--day", day)
    assert (done.returncode, done.stderr.decode()) == (2, f"sandman: {message}\n")
    assert not layout.root.exists()


@pytest.mark.calendar
def test_a_day_that_has_not_ended_is_refused(layout):
    layout.root.mkdir(parents=True)
    with pytest.raises(InputError, match="--day 2026-11-30 has not ended yet"):
        reflect(layout, day="2026-11-30", now=NOW)
    from sandman import journal

    # tomorrow (UTC): still to come if the run crosses midnight before the subprocess reads its clock
    tomorrow = (journal.now_utc() + timedelta(days=1)).date().isoformat()
    done = sandman("reflect", "--day", tomorrow)
    assert done.returncode == 2 and done.stderr.decode().startswith(f"sandman: --day {tomorrow} has not ended yet")


def test_no_root_is_created_by_the_first_reflect(layout):
    done = sandman("reflect")
    assert done.returncode == 0, done.stderr
    assert layout.memories.is_dir() and (layout.root / ".git").is_dir()


def test_a_second_reflect_while_one_runs_exits(layout):
    layout.root.mkdir(parents=True)
    lock = RunLock(layout.reflect_lock)
    assert lock.acquire()
    try:
        with pytest.raises(LockBusy, match="another reflect is running"):
            reflect(layout, now=NOW)
    finally:
        lock.release()


def test_a_failing_step_is_journaled_and_the_pass_goes_on(layout, minds, day_memories, monkeypatch):
    from sandman.errors import RepositoryError

    def broken(*args, **kwargs):
        raise RepositoryError("the repository is broken")

    monkeypatch.setattr(reflect_module, "voyage_entry", broken)
    summary = reflect(layout, now=NOW)
    assert summary.errors == ["reflect voyage: the repository is broken"]
    assert (layout.bank(BANK) / BANK_REFLECT).exists() and summary.site is not None  # upkeep and site still ran
    assert journal_lines(layout, "failed")[0]["step"] == "voyage"


@pytest.mark.calendar
def test_the_day_that_ended_is_the_utc_day_before_now(layout, minds):
    remember_on(layout, "2026-11-30T00:30", "Just after midnight")
    minds.answer(LOG_MODEL, entry_reply())
    assert reflect(layout, now=at("2026-11-30T23:59")).entry.decision == "quiet"
    assert reflect(layout, now=at("2026-12-01T00:01")).entry.day == "2026-11-30"


def test_reflect_has_its_help_line_a_docs_page_and_a_nav_line():
    from typer.testing import CliRunner

    from conftest import REPO
    from sandman.cli import app

    shown = CliRunner().invoke(app, ["reflect", "--help"])
    assert shown.exit_code == 0
    assert "The nightly pass: voyage log, sweep, upkeep, site." in shown.output
    assert "--day" in shown.output
    assert "      - reflect: reflect.md\n" in (REPO / "mkdocs.yml").read_text()
    page = (REPO / "docs" / "reflect.md").read_text()
    assert page.startswith("# reflect\n") and "sandman reflect [--day YYYY-MM-DD]" in page
    for section in ("## Log replies", "## Upkeep plans", "## Reflect journal", "## _reflect.json"):
        assert section in (REPO / "docs" / "BANK-FORMAT.md").read_text()
