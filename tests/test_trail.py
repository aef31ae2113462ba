"""The trail: events appended whole and committed, read back, revoked (sandman/machine/trail.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from helpers import git, sandman
from sandman.banks.commit import bank_transaction
from sandman.cli import app
from sandman.errors import InputError
from sandman.machine import trail


@pytest.mark.calendar
def test_append_writes_one_line_in_the_day_file_and_commits_it_with_its_trailers(layout):
    event = trail.append(layout, "shift.commit", "split  parser.py\nin two", repo="/home/u/app", model="m",
                         cost_usd=0.42, data={"pr": 3})
    path = layout.trail_day(event.day)
    (line,) = path.read_text().splitlines()
    assert json.loads(line) == {
        "id": event.id, "at": event.at, "kind": "shift.commit", "parent": None, "shift": None,
        "repo": "/home/u/app", "summary": "split parser.py in two", "model": "m", "cost_usd": 0.42,
        "data": {"pr": 3}}
    assert path.relative_to(layout.root).as_posix() == f"trail/{event.at[:4]}/{event.at[5:7]}/{event.at[8:10]}.jsonl"
    message = git(layout.root, "log", "-1", "--format=%B")
    assert message.startswith("trail: shift.commit: split parser.py in two\n")
    assert f"Event: {event.id}" in message and "Verb: trail" in message and "Kind: shift.commit" in message
    assert git(layout.root, "status", "--porcelain") == ""
    assert trail.find(layout, event.id) == event


def test_a_caller_making_a_commit_carries_its_event_line_in_that_same_commit(layout):
    event = trail.new_event("dream.commit", "dream of session s1", data={"session": "s1"})
    with bank_transaction(layout, verb="dream", subject="x", trailers=trail.trailers(event)) as tx:
        tx.write_file(layout.root / "memories" / "b" / "note.md", "hello\n")
        trail.write(tx, event)
    files = git(layout.root, "show", "--name-only", "--format=", "HEAD").split()
    assert any(f.startswith("trail/") for f in files) and "memories/b/note.md" in files
    assert f"Event: {event.id}" in git(layout.root, "log", "-1", "--format=%B")
    assert trail.read(layout).events == [event]


def test_parent_descendants_and_revocation_by_ancestor_and_by_shift(layout):
    first = trail.append(layout, "shift.start", "start", shift="s-20261201T0210Z")
    child = trail.append(layout, "shift.commit", "child", parent=first.id)
    grandchild = trail.append(layout, "shift.commit", "grandchild", parent=child.id)
    other = trail.append(layout, "breath.file", "unrelated")
    whole = trail.read(layout)
    assert [e.id for e in whole.descendants(first.id)] == [child.id, grandchild.id]
    assert whole.revoked_by(grandchild) is None
    revocation, appended = trail.revoke(layout, "s-20261201T0210Z", "bad night")
    assert appended
    whole = trail.read(layout)
    assert whole.revoked_by(grandchild) == revocation and whole.revoked_by(other) is None
    assert [e.id for e in whole.targets("s-20261201T0210Z")] == [first.id, child.id, grandchild.id]


def test_revoking_twice_appends_nothing_the_second_time(layout):
    event = trail.append(layout, "upkeep.apply", "x")
    first, appended = trail.revoke(layout, event.id, "wrong")
    again, appended_again = trail.revoke(layout, event.id, "still wrong")
    assert appended and not appended_again and again == first
    assert len(trail.read(layout).events) == 2


@pytest.mark.parametrize("target, message", [
    ("ev-20261201T000000Z-abcdef", "event ev-20261201T000000Z-abcdef is not on the trail"),
    ("ev-nope", "'ev-nope' is neither an event id"),
    ("s-20261201T0000Z", "shift s-20261201T0000Z has no events on the trail; nothing to revoke"),
])
def test_revoke_of_an_unknown_or_malformed_target_is_refused(layout, target, message):
    with pytest.raises(InputError, match=message):
        trail.revoke(layout, target, "why")
    assert not layout.trail.exists()


def test_a_revoke_of_a_revoke_is_refused_and_appends_nothing(layout):
    event = trail.append(layout, "upkeep.apply", "x")
    revocation, _ = trail.revoke(layout, event.id, "wrong")
    with pytest.raises(InputError, match="is a revoke event; a revocation or a reconcile cannot be revoked"):
        trail.revoke(layout, revocation.id, "undo")
    assert len(trail.read(layout).events) == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"kind": "Shift Commit"}, "is not <family>.<what>"),
    ({"summary": " \n "}, "an event needs a summary"),
    ({"parent": "nope"}, "parent 'nope' is not an event id"),
    ({"parent": "ev-20261201T000000Z-abcdef"}, "parent ev-20261201T000000Z-abcdef is not on the trail"),
    ({"shift": "tonight"}, "shift 'tonight' is not a shift id"),
    ({"repo": "code/app"}, "is not an absolute path"),
    ({"cost_usd": -1.0}, "not a non-negative number"),
    ({"cost_usd": float("nan")}, "not a non-negative number"),
    ({"data": {"x": "y" * 70_000}}, "the trail takes at most"),
    ({"data": {"x": object()}}, "not plain JSON"),
])
def test_bad_appends_are_refused_with_nothing_written(layout, kwargs, message):
    args = {"kind": "shift.commit", "summary": "ok", **kwargs}
    with pytest.raises(InputError, match=message):
        trail.append(layout, args.pop("kind"), args.pop("summary"), **args)
    assert not layout.trail.exists()


def test_truncated_and_non_json_lines_are_counted_and_skipped(layout):
    good = trail.append(layout, "shift.commit", "good")
    path = layout.trail_day(good.day)
    with path.open("ab") as handle:
        handle.write(b"not json\n[1, 2]\n\xff\xfe\n" + good.line().encode()[:40])  # a killed writer's half line
    whole = trail.read(layout)
    assert whole.events == [good] and len(whole.skipped) == 4
    later = trail.append(layout, "shift.commit", "after the broken line")
    whole = trail.read(layout)
    assert whole.events == [good, later] and len(whole.skipped) == 4


@pytest.mark.calendar
def test_log_filters_by_kind_family_repo_shift_and_since(layout):
    a = trail.append(layout, "dream.commit", "a", data={"session": "s1"})
    b = trail.append(layout, "shift.commit", "b", repo="/r/app", shift="s-20261201T0210Z")
    assert trail.log(layout, kind="dream").events == [a]
    assert trail.log(layout, kind="shift.commit").events == [b]
    assert trail.log(layout, repo="/r/app/").events == [b]
    assert trail.log(layout, shift="s-20261201T0210Z").events == [b]
    assert trail.log(layout, since="2999-01-01").events == []
    with pytest.raises(InputError, match="--since 'yesterday' is not a date"):
        trail.log(layout, since="yesterday")


def test_old_category_words_are_kinds_not_events():
    assert trail.event_ids(["voyage", "ev-20261201T031500Z-3f9a1c", "merge"]) == ["ev-20261201T031500Z-3f9a1c"]
    assert trail.commit_kind([("Verb", "reflect"), ("Event", "voyage")]) == "reflect.entry"
    assert trail.commit_kind([("Event", "ev-20261201T031500Z-3f9a1c"), ("Kind", "dream.commit")]) == "dream.commit"
    assert trail.commit_kind([("Verb", "remember")]) is None


def test_cli_append_defaults_the_shift_from_the_environment_and_prints_the_id(layout, monkeypatch):
    monkeypatch.setenv("SANDMAN_SHIFT", "s-20261201T0210Z")
    result = CliRunner().invoke(app, ["trail", "append", "shift.commit", "did it", "--data", '{"n": 1}'])
    assert result.exit_code == 0, result.output
    (event,) = trail.read(layout).events
    assert result.output.strip() == event.id and event.shift == "s-20261201T0210Z" and event.data == {"n": 1}
    result = CliRunner().invoke(app, ["trail", "trailers", event.id])
    assert result.output.splitlines() == [f"Event: {event.id}", "Kind: shift.commit", "Shift: s-20261201T0210Z"]


@pytest.mark.parametrize("args, message", [
    (["trail", "show", "ev-x"], "sandman: 'ev-x' is not an event id"),
    (["trail", "trailers", "ev-20261201T000000Z-abcdef"], "sandman: event ev-20261201T000000Z-abcdef is not on the trail"),
    (["trail", "append", "shift.commit", "x", "--data", "[1]"], "sandman: --data must be a JSON object"),
    (["trail", "append", "shift.commit", "x", "--data", "{"], "sandman: --data is not JSON"),
    (["trail", "revoke", "ev-20261201T000000Z-abcdef", "--why", "x"], "sandman: event ev-20261201T000000Z-abcdef is not on the trail"),
    (["trail", "append", "shift.commit", "s" * 301], "sandman: the summary is 301 characters; the limit is 300"),
    (["trail", "append", "shift.commit", "two\nlines"], "sandman: the summary holds a line break"),
])
def test_cli_bad_input_is_one_line_and_exit_2(layout, args, message):
    result = sandman(*args)
    assert result.returncode == 2
    assert result.stderr.decode().startswith(message) and result.stderr.decode().count("\n") == 1
    assert trail.read(layout).events == []


def test_cli_log_and_show_mark_revoked_events_and_list_carrying_commits(layout):
    first = trail.append(layout, "dream.commit", "dream of session s1", data={"session": "s1"})
    child = trail.append(layout, "upkeep.merge", "merge", parent=first.id)
    trail.revoke(layout, first.id, "learned something false")
    out = sandman("trail", "log", "--kind", "dream.commit").stdout.decode()
    assert f"{first.id} dream.commit session=s1" in out and "REVOKED by" in out
    shown = sandman("trail", "show", first.id).stdout.decode()
    assert f"descendant: {child.id} upkeep.merge" in shown and "revoked: by" in shown
    assert sum(line.startswith("commit: ") for line in shown.splitlines()) == 2  # the two trail commits carry the event and its child


def test_cli_log_reports_skipped_lines_on_stderr_and_still_lists(layout):
    good = trail.append(layout, "shift.commit", "good")
    with layout.trail_day(good.day).open("a") as handle:
        handle.write("{truncated\n")
    result = sandman("trail", "log")
    assert result.returncode == 0 and good.id in result.stdout.decode()
    assert "1 trail line(s) skipped, not events" in result.stderr.decode()


_APPENDER = """
import sys
from pathlib import Path
from sandman.layout import Layout
from sandman.machine import trail
layout = Layout(Path(sys.argv[1]))
for n in range(50):
    trail.append(layout, "shift.commit", f"writer {sys.argv[2]} event {n}", data={"w": int(sys.argv[2]), "n": n})
"""


def test_eight_processes_appending_fifty_events_each_leave_400_whole_committed_lines(layout):
    trail.append(layout, "shift.start", "set up the root")  # the root exists before the race
    writers = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(layout.root), str(w)]) for w in range(8)]
    assert [writer.wait(timeout=600) for writer in writers] == [0] * 8
    whole = trail.read(layout)
    assert whole.skipped == [] and len(whole.events) == 401
    assert {(e.data["w"], e.data["n"]) for e in whole.events[1:]} == {(w, n) for w in range(8) for n in range(50)}
    assert git(layout.root, "status", "--porcelain") == ""
    committed = "".join(git(layout.root, "show", f"HEAD:{p.relative_to(layout.root).as_posix()}")
                        for p in layout.trail_days())
    assert committed == "".join(p.read_text() for p in layout.trail_days())
    assert git(layout.root, "log", "--format=%s", "--grep=^Verb: trail").count("\n") == 401


@pytest.mark.parametrize("ident", ["s-2026120\u0662T2200Z", "ev-2026120\u0662T000000Z-abcdef"])
def test_ids_in_non_ascii_digits_are_not_ids(ident):
    assert not trail.is_shift_id(ident) and not trail.is_event_id(ident)


@pytest.mark.parametrize("args, message", [
    (["--kind", "Bad Kind"], "sandman: kind 'Bad Kind' is not a family or <family>.<what> in lower case"),
    (["--repo", "relative/path"], "sandman: repo 'relative/path' is not an absolute path"),
    (["--shift", "s-x"], "sandman: shift 's-x' is not a shift id"),
])
def test_trail_log_with_a_bad_filter_is_one_line_exit_2_not_an_empty_answer(layout, args, message):
    trail.append(layout, "shift.commit", "an event a typo would hide")
    result = sandman("trail", "log", *args)
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode().startswith(message) and result.stderr.decode().count("\n") == 1


def test_trail_append_refuses_an_escape_instead_of_dropping_it_silently(layout):
    result = sandman("trail", "append", "shift.commit", "done \x1b[31m red")
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode() == "sandman: the summary holds a NUL or control character; write plain text\n"
    assert trail.read(layout).events == []


@pytest.mark.calendar
def test_regression_trail_today_counted_the_utc_day_not_the_machines(layout, pinned_clock):
    """Issue 33: `[machine] time_zone` sets the days, yet `trail today` listed the UTC day's events."""
    from datetime import datetime, timezone

    layout.settings_file.parent.mkdir(parents=True, exist_ok=True)
    layout.settings_file.write_text('[machine]\nroots = []\ntime_zone = "Asia/Tokyo"\n')
    # 1 January, 23:00 and 2 January, 01:00 in Tokyo: one UTC day, two Tokyo days
    yesterday = trail.new_event("shift.commit", "late on the 1st",
                                now=datetime(2027, 1, 1, 14, 0, tzinfo=timezone.utc))
    today = trail.new_event("shift.commit", "early on the 2nd", now=datetime(2027, 1, 1, 16, 0, tzinfo=timezone.utc))
    trail.append_event(layout, yesterday)
    trail.append_event(layout, today)
    pinned_clock(datetime(2027, 1, 1, 20, 0, tzinfo=timezone.utc))  # 05:00 on the 2nd in Tokyo
    result = CliRunner().invoke(app, ["trail", "today"], env={"SANDMAN_ROOT": str(layout.root)})
    assert result.exit_code == 0, result.output
    assert [line.split()[1] for line in result.output.splitlines()] == [today.id]


@pytest.mark.parametrize("args, message", [
    (["trail", "append", "shift.commit", "x", "--cost", "1e308"],
     "sandman: cost 1e+308 is over the 1,000 US dollars one event may carry"),
    (["trail", "append", "shift.commit", "x", "--cost", "inf"], "sandman: cost inf is not a non-negative number"),
    (["trail", "append", "shift.commit", "x", "--cost", "nan"], "sandman: cost nan is not a non-negative number"),
    (["trail", "append", "nodot", "x"], "sandman: event kind 'nodot' is not <family>.<what>"),
])
def test_regression_trail_append_took_a_cost_of_1e308_and_a_kind_without_a_dot(layout, args, message):
    """`--cost 1e308` spent every later day's budget and filled `sandman score` with 300 digits; `nodot`
    is not `<family>.<what>` (docs/BANK-FORMAT.md § trail). Both are one-line errors, exit 2, nothing written."""
    result = sandman(*args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.decode().startswith(message) and result.stderr.decode().count("\n") == 1
    assert trail.read(layout).events == []


def test_regression_a_revoked_events_cost_still_spent_the_days_budget(layout):
    """A cost revoked with `trail revoke` (the event, or its shift) no longer counts against the day."""
    from datetime import datetime

    from sandman import config
    from sandman.machine import breath, tick, week

    costly = trail.append(layout, "shift.cost", "the session cost $900", shift="s-20261201T0210Z", cost_usd=900.0)
    kept = trail.append(layout, "breath.cost", "a pass cost $2", cost_usd=2.0)
    settings = config.machine(layout)
    moment = datetime.fromisoformat(costly.at.replace("Z", "+00:00"))
    day = week.day_of(settings, moment)
    assert tick.spent_today(layout, settings, day, trail.read(layout)) == pytest.approx(902.0)
    trail.revoke(layout, costly.id, "a mistyped cost")
    assert tick.spent_today(layout, settings, day, trail.read(layout)) == pytest.approx(2.0)
    assert breath.spent_on_day(layout, moment)[1] == pytest.approx(2.0)
    trail.revoke(layout, "s-20261201T0210Z", "the whole shift")  # revoked twice over: still counted once
    assert tick.spent_today(layout, settings, day, trail.read(layout)) == pytest.approx(kept.cost_usd)
