"""The breath store: sources, breaths, passes and weights (sandman/machine/breath.py, docs/breathe.md)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import git
from sandman.cli import app
from sandman.errors import InputError, PassRefused
from sandman.machine import breath, trail

T0 = datetime(2027, 1, 1, 9, 0, tzinfo=timezone.utc)
SCORES = {"bearing": 0.8, "novelty": 0.6, "provenance": 0.9}
AWS_KEY = "AKIA" + "UJZDE8GXD6NCF10E"  # split so this file is not itself a finding


@pytest.fixture
def world(layout, tmp_path):
    """A memory root whose machine.roots holds one repository folder, and the example sources."""
    code = tmp_path / "code"
    (code / "app").mkdir(parents=True)
    layout.root.mkdir(parents=True, exist_ok=True)
    layout.settings_file.write_text(f'[machine]\nroots = ["{code}"]\ntime_zone = "UTC"\n')
    breath.init(layout, now=T0)
    return code / "app"


def doc(where: Path, **changes) -> dict:
    base = {"title": "Use the new hook matcher", "address": "https://example.org/notes/1",
            "source": "claude-code-changelog", "repo": str(where), "scores": dict(SCORES),
            "body": "Claude Code now matches hooks by tool; the recall hook could skip Bash."}
    base.update(changes)
    return base


def snapshot(layout) -> tuple[str, dict]:
    """HEAD and every file under breath/ and trail/: what a refused change must leave as it was."""
    files = {p.relative_to(layout.root).as_posix(): p.read_bytes()
             for folder in (layout.breath, layout.trail) if folder.exists()
             for p in sorted(folder.rglob("*")) if p.is_file()}
    return git(layout.root, "rev-parse", "HEAD"), files


def cli(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, list(args), input=stdin)


def kinds(layout) -> list[str]:
    return [event.kind for event in trail.read(layout).events]


# --- the whole loop (Must show) -------------------------------------------------------------


def test_init_to_pass_prompt_filed_breath_spike_in_brief_adoption_raises_its_source(world, layout):
    layout.breath_problems.write_text("- app: the recall hook is slow on Bash-heavy sessions\n")
    made = breath.compose_pass(layout, now=T0)
    prompt = (layout.breath_pass(made.id) / "prompt.md").read_text()
    record = json.loads((layout.breath_pass(made.id) / "pass.json").read_text())
    # due sources heaviest first, problems.md carried, the pass id in the filing instructions
    assert [s["name"] for s in record["sources"]] == ["claude-code-changelog", "python-insider", "arxiv-cs-se"]
    assert prompt.index("claude-code-changelog") < prompt.index("python-insider") < prompt.index("arxiv-cs-se")
    assert "recall hook is slow on Bash-heavy sessions" in prompt and record["problems"] is True
    assert f'"pass": "{made.id}"' in prompt and "{{" not in prompt
    breath.attach(layout, made.id, "0b9f5c2e-1111-4222-8333-444455556666", now=T0)
    filed = breath.file_breath(layout, doc(world, **{"pass": made.id}), now=T0 + timedelta(minutes=5))
    other = breath.file_breath(layout, doc(world, address="https://example.org/2", title="Second idea",
                                            scores={**SCORES, "bearing": 0.9}), now=T0)
    breath.close(layout, made.id, cost_usd=1.25, now=T0 + timedelta(minutes=30))
    assert json.loads((layout.breath_pass(made.id) / "pass.json").read_text())["cost_usd"] == 1.25
    breath.move(layout, filed.id, "spike", now=T0 + timedelta(hours=1))
    brief = breath.breaths_for(layout, world)
    assert [b.id for b in brief] == [filed.id, other.id]  # spiked first, then filed by bearing
    assert brief[0].state == "spiked"
    breath.move(layout, filed.id, "adopt", now=T0 + timedelta(days=3))
    assert [b.id for b in breath.breaths_for(layout, world)] == [other.id]
    moved = breath.reweight(layout, now=T0 + timedelta(days=4))
    assert moved == {"claude-code-changelog": (0.6, 0.7)}
    assert kinds(layout) == ["breath.init", "breath.pass", "breath.attach", "breath.file", "breath.file",
                             "breath.close", "breath.spike", "breath.adopt", "breath.reweight"]
    # each change is one commit carrying its event; nothing is left uncommitted
    assert git(layout.root, "status", "--porcelain") == ""
    assert "Verb: breathe" in git(layout.root, "log", "-1", "--format=%B")
    assert "Kind: breath.reweight" in git(layout.root, "log", "-1", "--format=%B")


def test_a_silent_source_loses_a_tenth_a_month_across_a_simulated_year(world, layout):
    breath.compose_pass(layout, now=T0)  # the first read of every source starts its silence
    weights = []
    for month in range(1, 13):
        breath.reweight(layout, now=breath.add_months(T0, month))
        weights.append(breath.sources(layout, now=T0)[0]["weight"])
    # claude-code-changelog starts at 0.6: six silent months take it to 0, and it stays there
    assert weights == [0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_silence_restarts_after_each_penalty_and_after_an_adoption(world, layout):
    breath.compose_pass(layout, now=T0)
    # two and a half months late: two penalties, the half month carries to the next run
    assert breath.reweight(layout, now=breath.add_months(T0, 2) + timedelta(days=15))[
        "claude-code-changelog"] == (0.6, 0.4)
    assert "claude-code-changelog" not in breath.reweight(layout, now=breath.add_months(T0, 2) + timedelta(days=20))
    assert breath.reweight(layout, now=breath.add_months(T0, 3))["claude-code-changelog"] == (0.4, 0.3)
    adopted_at = breath.add_months(T0, 3) + timedelta(days=10)
    found = breath.file_breath(layout, doc(world), now=adopted_at)
    breath.move(layout, found.id, "adopt", now=adopted_at)
    assert breath.reweight(layout, now=adopted_at + timedelta(days=1))["claude-code-changelog"] == (0.3, 0.4)
    # the next penalty is a month after the adoption, not after the last penalty
    assert "claude-code-changelog" not in breath.reweight(layout, now=breath.add_months(adopted_at, 1)
                                                          - timedelta(seconds=1))
    assert breath.reweight(layout, now=breath.add_months(adopted_at, 1))["claude-code-changelog"] == (0.4, 0.3)


def test_adoption_never_raises_a_source_above_one_and_reweight_remembers_its_last_run(world, layout):
    layout.breath_sources.write_text(layout.breath_sources.read_text().replace("weight = 0.6", "weight = 0.95"))
    for number in range(3):
        found = breath.file_breath(layout, doc(world, address=f"https://example.org/{number}"), now=T0)
        breath.move(layout, found.id, "adopt", now=T0)
    assert breath.reweight(layout, now=T0 + timedelta(hours=1))["claude-code-changelog"] == (0.95, 1.0)
    # the same adoptions are not counted twice
    assert breath.reweight(layout, now=T0 + timedelta(hours=2)) == {}
    assert json.loads(layout.breath_weights.read_text())["reweighted"] == "2027-01-01T11:00:00Z"
    with pytest.raises(InputError, match="before its last run"):
        breath.reweight(layout, now=T0)


def test_a_spike_reaches_the_brief_of_its_repository_only(world, layout, tmp_path):
    elsewhere = tmp_path / "code" / "lib"
    elsewhere.mkdir()
    found = breath.file_breath(layout, doc(world), now=T0)
    breath.move(layout, found.id, "spike", now=T0)
    assert [b.id for b in breath.breaths_for(layout, str(world) + "/")] == [found.id]
    assert breath.breaths_for(layout, elsewhere) == []


# --- pass refusals (Must show) --------------------------------------------------------------


@pytest.mark.calendar
def test_pass_refuses_when_nothing_is_due_and_names_the_next_due_source(world, layout):
    breath.compose_pass(layout, now=T0)
    before = snapshot(layout)
    with pytest.raises(PassRefused, match=r"no source is due; the next is claude-code-changelog at 2027-01-02T09:00:00Z"):
        breath.compose_pass(layout, now=T0 + timedelta(hours=23))
    assert snapshot(layout) == before
    later = breath.compose_pass(layout, now=T0 + timedelta(days=1))
    assert [s["name"] for s in later.sources] == ["claude-code-changelog"]  # the weekly ones are not due


@pytest.mark.calendar
def test_pass_refuses_when_the_days_budget_is_spent(world, layout):
    layout.settings_file.write_text(layout.settings_file.read_text() + "budget_usd_day = 2.0\n")
    first = breath.compose_pass(layout, now=T0)
    breath.close(layout, first.id, cost_usd=2.5, now=T0 + timedelta(hours=23))  # 08:00 on the 2nd
    before = snapshot(layout)
    with pytest.raises(PassRefused, match=r"budget is spent: \$2.50 of machine.budget_usd_day \$2.00 on 2027-01-02"):
        breath.compose_pass(layout, now=T0 + timedelta(days=1))
    assert snapshot(layout) == before
    assert breath.compose_pass(layout, now=T0 + timedelta(days=2)).sources  # a new day, a new budget


@pytest.mark.calendar
def test_the_budget_day_is_the_machines_time_zone_day(world, layout):
    # 2.5 spent at 09:00 UTC on 1 January; in Tokyo the 2nd begins at 15:00 UTC on the 1st
    layout.settings_file.write_text(layout.settings_file.read_text().replace('"UTC"', '"Asia/Tokyo"')
                                    + "budget_usd_day = 2.0\n")
    first = breath.compose_pass(layout, now=T0)
    breath.close(layout, first.id, cost_usd=2.5, now=T0)
    layout.breath_weights.unlink()  # every source due again
    git(layout.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "test: reset weights")
    assert breath.compose_pass(layout, now=T0 + timedelta(hours=6)).sources  # 00:00 in Tokyo on the 2nd


@pytest.mark.calendar
def test_cli_pass_refusal_is_one_line_and_exit_3(world, layout):
    assert cli("breathe", "pass").exit_code == 0
    result = cli("breathe", "pass")
    assert result.exit_code == 3
    assert result.output.count("\n") == 1 and result.output.startswith("sandman: no source is due")


# --- bad input (Must show): one clear line each, the store unchanged ------------------------


BAD_DOCUMENTS = {
    "scores missing": ({"scores": {"bearing": 0.5, "novelty": 0.5}}, "missing \\['provenance'\\]"),
    "no scores at all": ({"scores": None}, "scores must be an object"),
    "score above 1": ({"scores": {**SCORES, "novelty": 1.5}}, "novelty 1.5 must be a number from 0 to 1"),
    "score below 0": ({"scores": {**SCORES, "bearing": -0.1}}, "bearing -0.1 must be"),
    "score a word": ({"scores": {**SCORES, "provenance": "high"}}, "provenance 'high' must be"),
    "score a boolean": ({"scores": {**SCORES, "provenance": True}}, "provenance True must be"),
    "repo outside the roots": ({"repo": "/etc"}, "not under the machine's roots"),
    "repo relative": ({"repo": "code/app"}, "not an absolute path"),
    "repo escaping by ..": ({"repo": "{root}/../../etc"}, "not under the machine's roots"),
    "unknown source": ({"source": "nowhere"}, "source 'nowhere' is not in sources.toml"),
    "empty title": ({"title": " "}, "title must be one line"),
    "body too long": ({"body": "x" * 4001}, "body must be text of 1 to 4,000"),
    "address not an address": ({"address": "not a url"}, "is not an address"),
    "a secret in the body": ({"body": f"set AWS_ACCESS_KEY_ID={AWS_KEY} then run it"}, "breath refused: it contains a secret"),
    "unknown key": ({"colour": "red"}, "unknown \\['colour'\\]"),
}


@pytest.mark.parametrize("case", sorted(BAD_DOCUMENTS))
def test_a_bad_breath_is_refused_with_one_line_and_the_store_unchanged(world, layout, case):
    changes, message = BAD_DOCUMENTS[case]
    if changes.get("repo", "").startswith("{root}"):
        changes = {"repo": changes["repo"].format(root=world)}
    document = doc(world, **changes)
    if case == "scores missing":
        document["scores"] = changes["scores"]
    before = snapshot(layout)
    with pytest.raises(InputError, match=message) as raised:
        breath.file_breath(layout, document, now=T0)
    assert "\n" not in str(raised.value)
    assert AWS_KEY not in str(raised.value)
    assert snapshot(layout) == before


def test_a_duplicate_address_is_refused_even_spelled_differently(world, layout):
    first = breath.file_breath(layout, doc(world, address="https://Example.org/notes/1/"), now=T0)
    before = snapshot(layout)
    for spelling in ("https://example.org/notes/1", "HTTPS://EXAMPLE.ORG/notes/1"):
        with pytest.raises(InputError, match=f"already filed as {first.id} \\(filed\\)"):
            breath.file_breath(layout, doc(world, address=spelling, title="again"), now=T0)
    assert snapshot(layout) == before


def test_a_fragment_names_another_entry_of_the_same_page(world, layout):
    # a changelog's entries share a page: #2.1 and #2.2 are two ideas, not a duplicate
    first = breath.file_breath(layout, doc(world, address="https://example.org/CHANGELOG.md#2.1"), now=T0)
    second = breath.file_breath(layout, doc(world, address="https://example.org/CHANGELOG.md#2.2"), now=T0)
    assert first.id != second.id


def test_filing_without_machine_roots_says_so(world, layout):
    layout.settings_file.write_text("")
    with pytest.raises(InputError, match="machine.roots is not set"):
        breath.file_breath(layout, doc(world), now=T0)


@pytest.mark.parametrize("text, message", [
    ("[[source]\nname = 1", "is not valid TOML"),
    ('[[source]]\nname = "a"\naddress = "https://a.example"\nkind = "feed"\ncadence = "daily"\nweight = 2\n',
     "weight 2 must be a number from 0 to 1"),
    ('[[source]]\nname = "a"\naddress = "https://a.example"\nkind = "feed"\ncadence = "daily"\nweight = "high"\n',
     "weight 'high' must be a number from 0 to 1"),
    ('[[source]]\nname = "a"\naddress = "https://a.example"\nkind = "feed"\ncadence = "often"\nweight = 1\n',
     "cadence 'often' must be one of"),
    ('[[source]]\nname = "a"\naddress = "https://a.example"\nkind = "feed"\ncadence = "daily"\n',
     "missing \\['weight'\\]"),
    ('[[source]]\nname = "a"\naddress = "https://a.example"\nkind = "feed"\ncadence = "daily"\nweight = 1\n' * 2,
     "is named twice"),
    ('name = "x"\n', "unknown key"),
], ids=["not toml", "weight 2", "weight high", "cadence", "missing weight", "twice", "stray key"])
def test_a_bad_sources_file_is_one_clear_line_from_every_command_and_nothing_changes(world, layout, text, message):
    layout.breath_sources.write_text(text)
    git(layout.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "test: hand edit")
    before = snapshot(layout)
    for call in (lambda: breath.sources(layout), lambda: breath.compose_pass(layout, now=T0),
                 lambda: breath.file_breath(layout, doc(world), now=T0), lambda: breath.reweight(layout, now=T0)):
        with pytest.raises(InputError, match=message) as raised:
            call()
        assert "\n" not in str(raised.value) and str(layout.breath_sources) in str(raised.value)
    assert snapshot(layout) == before
    result = cli("breathe", "sources")
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "Traceback" not in result.output


def test_init_refuses_to_overwrite_the_owners_sources(world, layout):
    layout.breath_sources.write_text("# mine\n")
    with pytest.raises(InputError, match="already exists"):
        breath.init(layout)
    assert layout.breath_sources.read_text() == "# mine\n"


def test_the_example_sources_are_valid_and_carry_no_personal_feed(world, layout):
    names = [source.name for source in breath.load_sources(layout)]
    assert names == ["claude-code-changelog", "python-insider", "arxiv-cs-se"]
    assert "jgeschwendt" not in breath.EXAMPLE_SOURCES and "/Users/" not in breath.EXAMPLE_SOURCES


def test_moves_follow_the_states_and_refuse_the_rest(world, layout):
    found = breath.file_breath(layout, doc(world), now=T0)
    breath.move(layout, found.id, "drop", why="not for this repo", now=T0)
    before = snapshot(layout)
    for action in ("spike", "adopt", "drop"):
        with pytest.raises(InputError, match=f"is dropped; {action} needs it"):
            breath.move(layout, found.id, action, now=T0)
    for bad in ("b-20270101-0000000000", "../etc/passwd", "b-x"):
        with pytest.raises(InputError):
            breath.move(layout, bad, "spike", now=T0)
    assert snapshot(layout) == before
    (event,) = [e for e in trail.read(layout).events if e.kind == "breath.drop"]
    assert event.repo == str(world) and event.summary.endswith("— not for this repo")
    assert event.data["from"] == "filed" and event.data["to"] == "dropped"


def test_regression_breath_ids_needed_the_full_id_where_proposal_ids_take_a_suffix(world, layout):
    """Issue 33: `breathe spike|adopt|drop` take a unique id suffix of at least 4 characters, as
    `report approve|decline` do (one resolver, machine.refs)."""
    first = breath.file_breath(layout, doc(world), now=T0)
    other = breath.file_breath(layout, doc(world, address="https://example.org/notes/2"), now=T0)
    suffix = next(first.id[-n:] for n in range(4, len(first.id)) if not other.id.endswith(first.id[-n:]))
    moved = cli("breathe", "spike", suffix, "--why", "try it")
    assert moved.exit_code == 0, moved.output
    assert moved.output == f"{first.id} spiked\n"
    before = snapshot(layout)
    for ref, words in ((first.id[-3:], "at least 4"), ("ffffffffff", "no breath ffffffffff"),
                       ("../../etc", "is not an id")):
        refused = cli("breathe", "adopt", ref)
        assert refused.exit_code == 2 and refused.output.count("\n") == 1 and words in refused.output, refused.output
    assert snapshot(layout) == before


def test_one_suffix_ending_two_ids_is_ambiguous_and_names_them():
    from sandman.machine import refs

    with pytest.raises(InputError, match=r"breath 0abc is ambiguous: it ends 2 breaths \(b-1-10abc, b-2-20abc\)"):
        refs.resolve("0abc", ["b-2-20abc", "b-1-10abc", "b-3-zzzz"], what="breath", listing="`sandman breathe list`")
    assert refs.resolve("b-3-zzzz", ["b-3-zzzz", "b-13-zzzz"], what="breath", listing="x") == "b-3-zzzz"


def test_attach_and_close_refuse_bad_ids_a_second_session_and_a_second_close(world, layout):
    made = breath.compose_pass(layout, now=T0)
    breath.attach(layout, made.id, "session-1", now=T0)
    with pytest.raises(InputError, match="already attached to session session-1"):
        breath.attach(layout, made.id, "session-2", now=T0)
    with pytest.raises(InputError):
        breath.attach(layout, made.id, "../x", now=T0)
    with pytest.raises(InputError, match="is not p-"):
        breath.close(layout, "p-../../x", now=T0)
    with pytest.raises(InputError, match="does not exist"):
        breath.close(layout, "p-20270101T000000Z-abcd", now=T0)
    with pytest.raises(InputError, match="cost"):
        breath.close(layout, made.id, cost_usd=-1, now=T0)
    breath.close(layout, made.id, now=T0)
    with pytest.raises(InputError, match="already closed"):
        breath.close(layout, made.id, now=T0)
    with pytest.raises(InputError, match="is closed"):
        breath.attach(layout, made.id, "session-1", now=T0)


# --- the command line -----------------------------------------------------------------------


def test_cli_files_from_stdin_and_from_flags_and_lists_with_filters(world, layout):
    filed = cli("breathe", "file", stdin=json.dumps(doc(world)))
    assert filed.exit_code == 0, filed.output
    breath_id = filed.output.strip()
    flags = cli("breathe", "file", "--title", "Flag idea", "--address", "https://example.org/f",
                "--source", "python-insider", "--repo", str(world), "--bearing", "0.4", "--novelty", "0.5",
                "--provenance", "1", "--body", "tried by flags")
    assert flags.exit_code == 0, flags.output
    assert cli("breathe", "spike", breath_id).output.strip() == f"{breath_id} spiked"
    listed = cli("breathe", "list", "--state", "spiked", "--json")
    assert [json.loads(row)["id"] for row in listed.output.splitlines()] == [breath_id]
    assert len(cli("breathe", "list", "--source", "python-insider").output.splitlines()) == 1
    assert len(cli("breathe", "list", "--repo", str(world)).output.splitlines()) == 2
    bad = cli("breathe", "list", "--state", "maybe")
    assert bad.exit_code == 2 and "state 'maybe'" in bad.output


@pytest.mark.parametrize("args, stdin, message", [
    ((), "", "no breath given"),
    ((), "{not json", "is not JSON"),
    ((), "[1, 2]", "is a JSON object"),
    (("--title", "x"), None, "breath: missing"),
    (("--bearing", "2", "--title", "t", "--address", "https://a.example", "--source", "arxiv-cs-se",
      "--novelty", "0", "--provenance", "0", "--body", "b", "--repo", "{repo}"), None, "bearing 2.0 must be"),
], ids=["empty stdin", "not json", "not an object", "flags missing", "score 2"])
def test_cli_bad_breath_is_one_line_exit_2(world, layout, args, stdin, message):
    args = tuple(arg.format(repo=world) for arg in args)
    before = snapshot(layout)
    result = cli("breathe", "file", *args, stdin=stdin)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and message in result.output and "Traceback" not in result.output
    assert snapshot(layout) == before


@pytest.mark.calendar
def test_cli_reweight_takes_the_time_it_acts_as_of(layout, tmp_path):
    (tmp_path / "code" / "app").mkdir(parents=True)
    layout.root.mkdir(parents=True, exist_ok=True)
    layout.settings_file.write_text(f'[machine]\nroots = ["{tmp_path / "code"}"]\ntime_zone = "UTC"\n')
    breath.init(layout, now=datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc))  # --at can only look back
    assert cli("breathe", "pass", "--at", "2026-01-01T09:00:00Z").exit_code == 0
    result = cli("breathe", "reweight", "--at", "2026-03-01T09:00:00Z")
    assert result.exit_code == 0 and "claude-code-changelog 0.60 -> 0.40" in result.output
    for bad in ("yesterday", "2027-03-01T09:00:00"):
        refused = cli("breathe", "reweight", "--at", bad)
        assert refused.exit_code == 2 and refused.output.startswith("sandman: --at")


@pytest.mark.calendar
@pytest.mark.parametrize("verb", ["reweight", "pass"])
def test_breathe_at_in_the_future_is_refused_and_writes_nothing(world, layout, verb):
    before = snapshot(layout)
    future = (datetime.now(timezone.utc) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    result = cli("breathe", verb, "--at", future)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "in the future" in result.output and "Traceback" not in result.output
    assert snapshot(layout) == before
    slack = (datetime.now(timezone.utc) + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "in the future" not in cli("breathe", verb, "--at", slack).output  # a small clock skew is allowed


@pytest.mark.calendar
def test_cli_sources_lists_weights_and_due(world, layout):
    result = cli("breathe", "sources")
    assert result.exit_code == 0
    assert result.output.splitlines()[0].startswith("claude-code-changelog weight 0.60 (start 0.60) daily due")


def test_bad_machine_settings_are_one_line(world, layout):
    layout.settings_file.write_text('[machine]\nroots = []\ntime_zone = "Mars/Olympus"\nbudget_usd_day = 1\n')
    with pytest.raises(Exception, match="Mars/Olympus"):
        breath.compose_pass(layout, now=T0)
    layout.settings_file.write_text('[machine]\nbudget_usd_day = "lots"\n')
    result = cli("breathe", "pass")
    assert result.exit_code == 2 and "budget_usd_day" in result.output


def test_reconcile_of_a_breath_adopted_later_fails_saying_which_event_changed_it_and_what_to_do(world, layout):
    """Revoking a breath's filing after its adoption always failed with a bare `conflicts in
    breath/breaths/<id>.json` and no hint; it still fails with nothing changed, and says what to do."""
    from helpers import sandman

    filed = breath.file_breath(layout, doc(world), now=T0)
    breath.move(layout, filed.id, "adopt", now=T0 + timedelta(days=1))
    (filing,) = [e for e in trail.read(layout).events if e.kind == "breath.file"]
    (adoption,) = [e for e in trail.read(layout).events if e.kind == "breath.adopt"]
    assert sandman("trail", "revoke", filing.id, "--why", "a bad source").returncode == 0
    before = snapshot(layout)

    done = sandman("reconcile", filing.id)

    assert done.returncode == 1
    (failed,) = [line for line in done.stdout.decode().splitlines() if line.startswith("FAILED memory root")]
    # Each failure is also one line on stderr (issue 34).
    assert f"sandman: reconcile {filing.id} failed in {layout.root}: {failed.split(': ', 1)[1]}" \
        in done.stderr.decode().splitlines()
    assert f"conflicts in breath/breaths/{filed.id}.json: event {adoption.id} changed it later: " in failed
    assert f"revoke and reconcile {adoption.id} first, then run this again, or revert by hand" in failed
    assert snapshot(layout) == before and git(layout.root, "status", "--porcelain") == ""
    # what the line says works: the later event reconciled first, the first reconcile runs again
    assert sandman("trail", "revoke", adoption.id, "--why", "follows the filing").returncode == 0
    assert b"FAILED memory root" not in sandman("reconcile", adoption.id).stdout
    assert b"FAILED memory root" not in sandman("reconcile", filing.id).stdout
    assert not layout.breath_record(filed.id).exists()


def test_breathe_list_with_a_relative_repo_is_one_line_exit_2_not_an_empty_answer(world, layout):
    result = cli("breathe", "list", "--repo", "relative/path")
    assert result.exit_code == 2, result.output
    assert result.output == "sandman: repo 'relative/path' is not an absolute path to a repository\n"


@pytest.mark.parametrize("field", ["title", "body", "address"])
def test_breathe_file_refuses_an_escape_instead_of_keeping_it_raw(world, layout, field):
    value = {"title": "an \x1b]52;c;aGk=\x07 idea", "body": "line one\n\x1b[2J cleared",
             "address": "https://example.org/\x1b[2J"}[field]
    before = snapshot(layout)
    result = cli("breathe", "file", stdin=json.dumps(doc(world, **{field: value})))
    assert result.exit_code == 2, result.output
    assert result.output == f"sandman: the breath's {field} holds a NUL or control character; write plain text\n"
    assert snapshot(layout) == before
