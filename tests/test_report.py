"""Reports (docs/report.md, docs/BANK-FORMAT.md § report): the listing, `report show`, the
SessionStart digest beside recall, read marks, and bad inputs (hostile reports, a malformed
meta.json, a corrupt .reports-read), with the real SessionStart payloads of the corpus."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import sandman
from test_shift import SHIFT_WORK, TUESDAY_NIGHT, wait_for_session, world  # noqa: F401 - world is a fixture

from sandman import config
from sandman.layout import Layout
from sandman.machine import report as reports
from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails
from sandman.verbs.init import init

# `shift handoff` refuses control characters (an escape); a bidi override is text it keeps. A report
# file holding an escape anyway (written by hand) is the next test's.
HOSTILE = ("<script>alert('x')</script> done; see [the notes](javascript:alert(1)) "
           "red ```` fence \u202eevil")
# What Claude Code documents a SessionStart reply may hold (code.claude.com/docs/en/hooks, "JSON output").
UNIVERSAL = {"continue", "stopReason", "suppressOutput", "systemMessage", "terminalSequence", "hookSpecificOutput"}
SESSION_START = {"hookEventName", "additionalContext", "initialUserMessage", "sessionTitle"}
DIGEST_STARTS = ("startup.live-2.1.332", "startup.doc", "startup.full", "clear", "minimal")
QUIET_STARTS = ("resume", "resume.live-2.1.332", "compact", "compact.live-2.1.332", "fork")


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def payload(corpus: Path, kind: str, **fields: object) -> bytes:
    """A corpus SessionStart payload with some fields replaced (the corpus itself is read-only)."""
    data = json.loads((corpus / "hooks" / f"session-start.{kind}.json").read_text())
    data.update(fields)
    return json.dumps(data).encode()


def hook(stdin: bytes) -> dict | None:
    """``sandman report --hook`` as Claude Code runs it: its reply parsed, None when it printed nothing."""
    done = sandman("report", "--hook", stdin=stdin)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return json.loads(done.stdout) if done.stdout else None


def assert_valid_session_start(reply: dict) -> None:
    assert set(reply) <= UNIVERSAL and isinstance(reply["systemMessage"], str)
    specific = reply["hookSpecificOutput"]
    assert set(specific) <= SESSION_START and specific["hookEventName"] == "SessionStart"
    assert isinstance(specific["additionalContext"], str)


def journal_text(layout: Layout) -> str:
    return "".join(path.read_text() for path in sorted(layout.trace.glob("report-*.log")))


def write_shift(layout: Layout, ident: str, *, outcome: str = "finished", commits: int = 1, resolves: bool = True,
                findings: int = 0, handoff: str = "Edited NOTES.md.", meta: str | None = None) -> Path:
    """A closed shift's folder as `shift handoff` leaves it (docs/BANK-FORMAT.md § shifts)."""
    folder = layout.shift_dir(ident)
    folder.mkdir(parents=True)
    data = {"schema": 1, "id": ident, "repo": "/home/u/code/app", "opened_at": "2026-12-01T23:00:00Z",
            "outcome": outcome, "closed_at": "2026-12-02T00:10:00Z",
            "commits": [{"commit": "a" * 40, "subject": "s", "events": [], "resolves": resolves}] * commits,
            "findings": [f"finding {i}" for i in range(findings)]}
    (folder / "meta.json").write_text(meta if meta is not None else json.dumps(data))
    (folder / "handoff.md").write_text(handoff + "\n")
    (folder / "report.md").write_text(f"# Shift {ident}: app\n\n{handoff}\n")
    return folder


@pytest.fixture
def root(layout: Layout) -> Layout:
    init(layout)
    return layout


def fill_recall(layout: Layout, directory: Path) -> None:
    """Banks for ``directory`` larger than recall's budget, so its surface fills the 9,000 units."""
    from sandman.banks.commit import bank_transaction
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name

    with bank_transaction(layout, verb="test", subject="many") as tx:
        for i in range(200):
            tx.write_memory(bank_name(directory), Memory(
                name=f"Fact {i} about the build", description=f"The module {i} keeps its conventions. " * 2,
                type="project", body=f"Body {i}: the module’s rule, told at some length. 🚀\n", source=["test"]),
                directory=str(directory))


# --- must show: two shifts through the real verbs, the digest once, under the cap beside recall --------


def test_two_real_shifts_give_one_digest_beside_a_full_recall_and_nothing_the_second_time(
        layout, world, fake_claude, corpus, isolated):
    for day in range(7):  # a week of trail events before the night
        moment = TUESDAY_NIGHT - timedelta(days=7 - day)
        trails.append_event(layout, trails.new_event("dream.commit", f"day {day}'s memories", now=moment))
    first = tick.run(layout, now=TUESDAY_NIGHT)
    assert first.decision == "started", first.reason
    wait_for_session(layout)
    fake_claude.rules("default", {"program": [str(SHIFT_WORK), "--untrailered", "--handoff", HOSTILE]})
    second = tick.run(layout, now=TUESDAY_NIGHT + timedelta(days=1))  # closes the first, starts the second
    assert second.closed == first.shift and second.decision == "started", second.reason
    wait_for_session(layout)
    assert shifts.read_meta(layout, first.shift)["outcome"] == "finished"
    assert shifts.read_meta(layout, second.shift)["outcome"] == "handed-off"
    assert reports.unread(layout) == [first.shift, second.shift]

    listing = sandman("report")
    lines = listing.stdout.decode().splitlines()
    assert listing.returncode == 0 and lines[0].startswith(f"new {second.shift} · ")  # newest first
    assert lines[1].startswith(f"new {first.shift} · ") and "1 commit · 0 findings" in lines[1]

    project = isolated / "work" / "app"
    fill_recall(layout, project)
    start = payload(corpus, "startup.live-2.1.332", cwd=str(project))
    recalled = json.loads(sandman("recall", "--hook", stdin=start).stdout)["hookSpecificOutput"]["additionalContext"]
    assert units(recalled) > config.RECALL_BUDGET_UTF16 - 200  # recall fills its budget

    reply = hook(start)

    assert_valid_session_start(reply)
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert units(recalled) <= config.RECALL_BUDGET_UTF16 and units(context) <= config.REPORT_DIGEST_UTF16
    # worst first: the second shift has a finding (a commit without Event:), the first none
    assert context.index(second.shift) < context.index(first.shift)
    assert "<script>alert('x')</script>" in context and "javascript:alert(1)" in context  # as text
    assert "sandman report show <shift>" in context
    message = reply["systemMessage"]
    assert message.index(second.shift) < message.index(first.shift) and "sandman report show" in message
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202e]", context + message)
    assert reports.unread(layout) == []
    assert hook(start) is None  # the next session start prints nothing
    assert sandman("report").stdout.decode().splitlines()[0].startswith(f"    {second.shift}")


# --- the hook on the corpus payloads ------------------------------------------------------------------


@pytest.mark.parametrize("kind", DIGEST_STARTS)
def test_a_new_session_gets_the_digest_on_every_real_payload(root, corpus, kind):
    write_shift(root, "s-20261201T2300Z")
    reply = hook(payload(corpus, kind))
    assert_valid_session_start(reply)
    assert "s-20261201T2300Z" in reply["hookSpecificOutput"]["additionalContext"]
    assert hook(payload(corpus, kind)) is None


@pytest.mark.parametrize("kind", QUIET_STARTS)
def test_a_resumed_forked_or_compacted_session_gets_nothing_and_marks_nothing(root, corpus, kind):
    write_shift(root, "s-20261201T2300Z")
    assert hook(payload(corpus, kind)) is None
    assert reports.unread(root) == ["s-20261201T2300Z"]


def test_regression_a_shift_session_start_would_have_read_the_owners_reports(root, corpus):
    write_shift(root, "s-20261201T2300Z")
    done = sandman("report", "--hook", stdin=payload(corpus, "startup.full"), env={"SANDMAN_SHIFT": "s-20261202T2300Z"})
    assert done.returncode == 0 and done.stdout == b""
    assert reports.unread(root) == ["s-20261201T2300Z"]
    assert "report declined hook=true reason=shift-session" in journal_text(root)


def test_nothing_unread_prints_nothing(root, corpus):
    assert hook(payload(corpus, "startup.full")) is None
    write_shift(root, "s-20261201T2300Z")
    reports.mark_read(root, ["s-20261201T2300Z"])
    assert hook(payload(corpus, "startup.full")) is None


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'{"hook_event_name": "SessionEnd"}', b"\xff\xfe"])
def test_a_bad_payload_is_a_journal_line_and_exit_0(root, stdin):
    write_shift(root, "s-20261201T2300Z")
    assert hook(stdin) is None
    assert "report skipped hook=true reason=" in journal_text(root)
    assert reports.unread(root) == ["s-20261201T2300Z"]


def test_the_digest_keeps_to_its_cap_and_what_the_person_was_not_shown_stays_unread(root, corpus):
    for i in range(150):  # their report lines alone pass the cap
        write_shift(root, f"s-2026{7 + i // 30:02d}{i % 30 + 1:02d}T2300Z", findings=i % 3,
                    handoff="🚀 a long handoff line " * 20)
    reply = hook(payload(corpus, "startup.full"))
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert units(context) <= config.REPORT_DIGEST_UTF16 == config.HOOK_CONTEXT_MAX_UTF16 == 10_000
    assert "more not shown here: `sandman report` lists them." in context
    assert "… and 130 more: sandman report" in reply["systemMessage"]
    assert len(reports.unread(root)) == 130
    assert "130 unread shift reports" in hook(payload(corpus, "startup.full"))["systemMessage"]


def test_worst_news_comes_first(root, corpus):
    write_shift(root, "s-20261125T2300Z", outcome="abandoned", commits=0)
    write_shift(root, "s-20261126T2300Z", findings=1)
    write_shift(root, "s-20261127T2300Z", resolves=False)
    write_shift(root, "s-20261128T2300Z")
    message = hook(payload(corpus, "startup.full"))["systemMessage"]
    order = [message.index(f"s-202611{day}T2300Z") for day in (25, 27, 26, 28)]
    assert order == sorted(order)  # abandoned; then findings or unresolved, newest first; then the rest
    assert "ABANDONED" in message and "1 commit (1 not resolving)" in message


def test_a_mark_that_cannot_be_written_still_prints_the_digest_and_exits_0(root, corpus):
    write_shift(root, "s-20261201T2300Z")
    root.reports_read.mkdir()
    reply = hook(payload(corpus, "startup.full"))
    assert "s-20261201T2300Z" in reply["systemMessage"]
    assert "report mark-failed hook=true" in journal_text(root)


# --- bad input: hostile text, a malformed meta.json, a corrupt .reports-read ---------------------------


def test_a_hostile_report_is_fenced_as_data_and_shown_as_text(root, corpus):
    write_shift(root, "s-20261201T2300Z", handoff="```` <script>x</script> [a](javascript:alert(1)) \x1b[31mred")
    context = hook(payload(corpus, "startup.full"))["hookSpecificOutput"]["additionalContext"]
    assert "\x1b" not in context
    lines = context.splitlines()
    label = lines.index(reports.DIGEST_LABEL)
    fence = lines[label + 1]
    assert re.fullmatch(r"`{5,}text", fence)  # longer than the four-backtick run inside
    closing = lines.index(fence[: -len("text")], label + 2)
    inside = "\n".join(lines[label + 2: closing])
    assert "<script>x</script>" in inside and "javascript:alert(1)" in inside


@pytest.mark.parametrize("meta", ["{not json", "[1]", '{"commits": 3}', "\xff"])
def test_a_malformed_meta_json_is_listed_as_unreadable_never_a_traceback(root, corpus, meta):
    write_shift(root, "s-20261130T2300Z")
    write_shift(root, "s-20261201T2300Z", meta=meta)
    listing = sandman("report")
    assert listing.returncode == 0 and listing.stderr == b""
    assert "new s-20261201T2300Z · unreadable: meta.json" in listing.stdout.decode()
    listed = json.loads(sandman("report", "--json").stdout)
    assert [item["outcome"] for item in listed] == ["unreadable", "finished"]
    message = hook(payload(corpus, "startup.full"))["systemMessage"]
    assert message.index("s-20261201T2300Z · unreadable") < message.index("s-20261130T2300Z")


@pytest.mark.parametrize("content", [b"{not json", b'{"schema": 2, "read": {}}', b'{"schema": 1, "read": []}', b"\xff"])
def test_a_corrupt_reports_read_is_rebuilt_with_a_journal_line(root, corpus, content):
    write_shift(root, "s-20261201T2300Z")
    root.reports_read.write_bytes(content)
    listing = sandman("report")
    assert listing.returncode == 0 and listing.stderr == b"" and "new s-20261201T2300Z" in listing.stdout.decode()
    assert "report read-marks-corrupt" in journal_text(root) and "action=rebuilt" in journal_text(root)
    assert json.loads(root.reports_read.read_text()) == {"schema": 1, "read": {}}
    assert hook(payload(corpus, "startup.full")) is not None
    assert list(json.loads(root.reports_read.read_text())["read"]) == ["s-20261201T2300Z"]


def test_reports_read_is_runtime_never_versioned(root):
    from helpers import git

    write_shift(root, "s-20261201T2300Z")
    reports.mark_read(root, ["s-20261201T2300Z"])
    assert git(root.root, "status", "--porcelain", "--ignored", ".reports-read").startswith("!! .reports-read")


# --- report show, the listing -------------------------------------------------------------------------


def test_report_show_prints_the_report_inert_and_marks_it_read(root):
    folder = write_shift(root, "s-20261201T2300Z", handoff="a line \x1b[2J with an escape")
    done = sandman("report", "show", "s-20261201T2300Z")
    assert done.returncode == 0 and done.stdout.decode().startswith("# Shift s-20261201T2300Z: app\n")
    assert b"\x1b" not in done.stdout and "escape" in done.stdout.decode()
    assert reports.unread(root) == []
    assert json.loads(root.reports_read.read_text())["read"]["s-20261201T2300Z"].endswith("Z")
    assert (folder / "report.md").exists()


@pytest.mark.parametrize("shift, words", [
    ("s-20261201T2300Z", "shift s-20261201T2300Z has no report"),
    ("banana", "'banana' is not a shift id"),
    ("../../etc", "is not a shift id"),
])
def test_report_show_of_an_unknown_or_malformed_shift_is_one_line(root, shift, words):
    done = sandman("report", "show", shift)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().count("\n") == 1 and words in done.stderr.decode()


def test_the_listing_is_unread_first_then_newest_first_and_json_gives_the_same(root):
    for ident in ("s-20261128T2300Z", "s-20261129T2300Z", "s-20261130T2300Z", "s-20261130T230015Z"):
        write_shift(root, ident)
    reports.mark_read(root, ["s-20261130T2300Z"])
    order = ["s-20261130T230015Z", "s-20261129T2300Z", "s-20261128T2300Z", "s-20261130T2300Z"]
    assert [info.shift for info in reports.reports(root)] == order
    listed = json.loads(sandman("report", "--json").stdout)
    assert [item["shift"] for item in listed] == order
    assert [item["read"] for item in listed] == [False, False, False, True]
    assert set(listed[0]) == {"shift", "repo", "outcome", "opened_at", "closed_at", "path", "read", "commits",
                              "unresolved", "findings", "handoff", "problem", "proposals", "revoked"}
    text = sandman("report").stdout.decode()
    assert text.splitlines()[-1] == "4 reports, 3 unread; read one: sandman report show <shift>"


def test_an_open_shift_without_a_report_is_not_listed(root):
    (root.shift_dir("s-20261201T2300Z")).mkdir(parents=True)
    (root.shift_dir("s-20261201T2300Z") / "meta.json").write_text("{}")
    assert reports.reports(root) == [] and reports.unread(root) == []
    assert sandman("report").stdout.decode().startswith("no reports yet")


def test_mark_read_refuses_what_is_not_a_shift_id(root):
    from sandman.errors import InputError

    with pytest.raises(InputError):
        reports.mark_read(root, ["../x"])
    assert not root.reports_read.exists()


def test_report_hook_takes_no_other_option(root):
    done = sandman("report", "--hook", "--json", stdin=b"{}")
    assert done.returncode == 2 and b"takes no --json" in done.stderr


def test_mark_read_keeps_the_first_time(root):
    write_shift(root, "s-20261201T2300Z")
    first = datetime(2026, 12, 2, 7, 0, tzinfo=timezone.utc)
    reports.mark_read(root, ["s-20261201T2300Z"], now=first)
    reports.mark_read(root, ["s-20261201T2300Z"], now=first + timedelta(days=1))
    assert json.loads(root.reports_read.read_text())["read"] == {"s-20261201T2300Z": "2026-12-02T07:00:00Z"}


def test_doctor_warns_a_machine_whose_report_hook_is_missing_until_hooks_install(root, tmp_path):
    from sandman.verbs.doctor import doctor
    from sandman.verbs.hooks import install

    code = tmp_path / "code"
    code.mkdir()
    root.settings_file.write_text(f'[machine]\nroots = ["{code}"]\nbudget_usd_day = 5.0\n')
    settings = Path(config.claude_settings_file())
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "sandman recall --hook"}]}]}}))
    [machine] = [check for check in doctor().checks if check.name == "machine"]
    assert machine.status == "warn" and "sandman report --hook" in machine.message
    install()
    [machine] = [check for check in doctor().checks if check.name == "machine"]
    assert "report --hook" not in machine.message


def test_regression_concurrent_session_starts_printed_the_digest_several_times(root, corpus, tmp_path):
    # 10 real `report --hook` processes at once: each imports the hook, says it is ready and blocks
    # reading a pipe; once all are ready the test writes 10 bytes and they run the hook together.
    # Before the fix, over 5 rounds the digest was printed 2, 1, 7, 10 and 6 times.
    import os
    import subprocess
    import sys

    start = (corpus / "hooks" / "session-start.startup.live-2.1.332.json").read_bytes()
    runner = ("import os, sys\nfrom sandman import hook\nfrom sandman.verbs import report, recall\n"
              "gate = int(sys.argv[1])\nprint('ready', file=sys.stderr, flush=True)\nos.read(gate, 1)\n"
              "sys.exit(hook.main(['report']))\n")
    for round_ in range(5):
        for n in range(5):
            write_shift(root, f"s-2026120{round_ + 1}T0{n}00Z")
        gate_read, gate_write = os.pipe()
        procs = [subprocess.Popen([sys.executable, "-c", runner, str(gate_read)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(gate_read,))
                 for _ in range(10)]
        os.close(gate_read)
        for proc in procs:
            proc.stdin.write(start)
            proc.stdin.close()
            assert proc.stderr.readline() == b"ready\n"
        os.write(gate_write, b"x" * 10)
        os.close(gate_write)
        outs = [(proc.stdout.read(), proc.stderr.read(), proc.wait(timeout=120)) for proc in procs]
        assert all(code == 0 and err == b"" for _, err, code in outs), outs
        assert sum(1 for out, _, _ in outs if out) == 1, [out[:60] for out, _, _ in outs]
        assert reports.unread(root) == []


def test_regression_a_hook_that_cannot_get_the_marks_lock_prints_nothing_and_says_why(root, corpus):
    write_shift(root, "s-20261201T2300Z")
    lock = reports.marks_lock(root)
    try:
        assert hook(payload(corpus, "startup.live-2.1.332")) is None
    finally:
        lock.release()
    assert "report skipped hook=true reason=marks-busy" in journal_text(root)
    assert reports.unread(root) == ["s-20261201T2300Z"]


@pytest.mark.parametrize("stdin", [b"{}", b'{"hook_event_name": null}', b'{"source": "startup"}', b'{"a": 1}'])
def test_regression_a_payload_without_hook_event_name_got_the_digest_and_marked_all_read(root, stdin):
    write_shift(root, "s-20261201T2300Z")
    assert hook(stdin) is None
    assert "report skipped hook=true reason=not-session-start" in journal_text(root)
    assert reports.unread(root) == ["s-20261201T2300Z"]
    done = sandman("recall", "--hook", stdin=stdin)  # recall --hook decides the same way
    assert (done.returncode, done.stdout) == (0, b"")


def test_regression_a_killed_marks_write_left_its_temp_file_forever(root, corpus):
    write_shift(root, "s-20261201T2300Z")
    orphan = root.root / f"..reports-read.{'ab' * 16}.tmp"
    orphan.write_text('{"schema": 1, "read": {}}')
    other = root.root / f".other.{'ab' * 16}.tmp"  # not .reports-read's: left alone
    other.write_text("x")
    assert hook(payload(corpus, "startup.live-2.1.332")) is not None
    assert not orphan.exists() and other.exists()
    assert reports.unread(root) == []


def test_regression_a_malformed_shift_id_message_hid_that_ids_may_carry_seconds(root):
    done = sandman("report", "show", "../../etc")
    assert done.returncode == 2
    assert "not a shift id (s-<yyyymmddTHHMM[SS]>Z)" in done.stderr.decode()
    write_shift(root, "s-20261202T013751Z")
    assert sandman("report", "show", "s-20261202T013751Z").returncode == 0


def test_a_symlinked_report_md_is_refused_and_never_followed_out_of_the_root(root, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET outside the root\n")
    folder = write_shift(root, "s-20261201T2300Z", handoff="the real handoff")
    (folder / "report.md").unlink()
    (folder / "report.md").symlink_to(outside)
    (folder / "handoff.md").unlink()
    (folder / "handoff.md").symlink_to(outside)
    done = sandman("report", "show", "s-20261201T2300Z")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().count("\n") == 1 and "is a symbolic link" in done.stderr.decode()
    assert reports.reports(root) == [] and reports.unread(root) == []
    (folder / "report.md").unlink()
    (folder / "report.md").write_text("# Shift s-20261201T2300Z: app\n")
    (listed,) = reports.reports(root)
    assert listed.handoff == "" and "SECRET" not in sandman("report").stdout.decode()
    linked = root.shift_dir("s-20261202T2300Z")
    linked.symlink_to(folder.parent / "elsewhere")
    (folder.parent / "elsewhere").mkdir()
    (folder.parent / "elsewhere" / "report.md").write_text("SECRET too\n")
    assert [info.shift for info in reports.reports(root)] == ["s-20261201T2300Z"]
    assert sandman("report", "show", "s-20261202T2300Z").returncode == 2


def test_one_report_is_counted_in_the_singular_not_1_reports(root):
    write_shift(root, "s-20261201T2300Z")
    assert sandman("report").stdout.decode().splitlines()[-1] == (
        "1 report, 1 unread; read one: sandman report show <shift>")


def test_regression_a_digest_of_900_units_dropped_every_handoff_line(root, corpus):
    # Claude Code caps each hook's context on its own (tests/test_live_claude_code.py): the digest
    # beside a full recall has the whole 10,000 units, room for every handoff line of a week.
    for day in range(1, 8):
        write_shift(root, f"s-202612{day:02d}T2300Z", findings=day % 2,
                    handoff=f"Night {day}: moved the 記録 parser to tomllib 🚀; the fuzz corpus grew by {day} cases.")
    context = hook(payload(corpus, "startup.full"))["hookSpecificOutput"]["additionalContext"]
    assert context.count("  handoff: Night ") == 7 and "more not shown here" not in context
