"""Bank upkeep (sandman/reflect/upkeep.py): the due gate, the plan, conflicts, merges, with the fake claude."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from helpers import git
from reflect_helpers import (
    BANK, MERGE_MATCH, NOW, PROJECT, UPKEEP_MODEL, commits, head, journal_lines, minds, remember_on, snapshot,
)
from sandman.banks.commit import bank_transaction
from sandman.banks.index import memory_files
from sandman.banks.memory import read_memory
from sandman.layout import BANK_ARCHIVE, BANK_REFLECT, Layout
from sandman.reflect import upkeep as upkeep_module
from sandman.verbs.reflect import reflect
from sandman.reflect.upkeep import due, upkeep

assert minds  # a fixture, used by name below

MERGED_BODY = "Build with `make -j8`, never cmake: the build is parallel-safe.\n"


def run(layout: Layout, now=NOW):
    return upkeep(layout, now=now, timeout=30, cap=None)


def merge_op(**changes) -> dict:
    op = {"op": "merge", "files": ["project_build_with_make.md", "project_make_builds_it.md"], "type": "project",
          "name": "Build with make -j8", "description": "Build with make -j8, never cmake.", "reason": "one fact"}
    op.update(changes)
    return op


PRUNE = {"op": "prune", "file": "project_old_deploy_note.md", "reason": "obsolete"}
RETITLE = {"op": "retitle", "file": "project_stuff.md", "name": "Uploads retry three times",
           "description": "Uploads retry three times with exponential backoff."}


def answer_plan(fake, operations: list | object, merge_body: object = None) -> None:
    plan = {"operations": operations} if isinstance(operations, list) else operations
    fake.rules(UPKEEP_MODEL, [{"match": MERGE_MATCH, "result": merge_body or {"body": MERGED_BODY}},
                              {"result": plan}])


def set_baseline(layout: Layout, at_: str, count: int, last_ops: int = 0) -> None:
    with bank_transaction(layout, verb="reflect", subject="a baseline") as tx:
        tx.write_file(layout.bank(BANK) / BANK_REFLECT,
                      json.dumps({"at": at_, "count": count, "last_ops": last_ops}) + "\n")


@pytest.fixture
def bank(layout: Layout):
    """Five memories in the proj bank, a baseline of none a day and a half old: upkeep is due at NOW."""
    remember_on(layout, "2026-11-20T10:00", "Build with make", "Run `make -j8`.\nLine two.\nLine three.\nLine four, past the head.\n",
                description="Run make -j8 to build.")
    remember_on(layout, "2026-11-10T10:00", "Make builds it", "Build with make, not cmake.\n")
    remember_on(layout, "2026-11-12T10:00", "Old deploy note", "Deploy with scp.\n")
    remember_on(layout, "2026-11-14T10:00", "Stuff", "Uploads retry three times with backoff.\n")
    remember_on(layout, "2026-11-16T10:00", "Short commits", "Commit subjects under 60 characters.\n", type_="feedback")
    set_baseline(layout, "2026-11-28T15:00:00Z", 0)
    return layout.bank(BANK)


def live(folder) -> list[str]:
    return [path.name for path in memory_files(folder)]


def baseline(folder) -> dict:
    return json.loads((folder / BANK_REFLECT).read_text())


# --- the gate -------------------------------------------------------------------------


@pytest.mark.parametrize("grown, hours, last_ops, expected", [
    (5, 20, 0, True), (9, 48, 1, True), (4, 48, 0, False), (10, 19.9, 0, False),
    (0, 0.1, 6, True), (-3, 0.1, 6, True), (0, 100, 5, False),
])
def test_due_needs_five_files_and_twenty_hours_or_a_spent_backlog(grown, hours, last_ops, expected):
    line = {"at": NOW - timedelta(hours=hours), "count": 10, "last_ops": last_ops}
    assert due(line, 10 + grown, NOW) is expected


def test_first_sight_seeds_the_baseline_with_no_upkeep(layout, minds):
    remember_on(layout, "2026-11-20T10:00", "Build with make")
    remember_on(layout, "2026-11-20T11:00", "Prefers short answers", type_="user")
    before = commits(layout)
    outcomes = run(layout)
    assert sorted((o.bank, o.decision) for o in outcomes) == [(BANK, "seeded"), ("_user", "seeded")]
    assert baseline(layout.bank(BANK)) == {"at": "2026-11-30T03:30:00Z", "count": 1, "last_ops": 0}
    assert minds.calls() == [] and commits(layout) == before + 1
    message = git(layout.root, "log", "-1", "--format=%B")
    assert message.startswith("reflect: upkeep baseline of 2 bank(s)") and "Verb: reflect" in message


def test_a_bank_not_due_is_left_alone(layout, minds, bank):
    set_baseline(layout, "2026-11-29T15:00:00Z", 0)  # grown by 5, but only 12.5 h ago
    tip = head(layout)
    assert [o.decision for o in run(layout)] == ["idle"]
    assert minds.calls() == [] and head(layout) == tip


def test_an_unreadable_baseline_is_seeded_again(layout, minds, bank):
    (bank / BANK_REFLECT).write_text("{not json")
    assert [o.decision for o in run(layout)] == ["seeded"]
    assert baseline(bank)["count"] == 5 and minds.calls() == []
    assert journal_lines(layout, "reseeded")[0]["bank"] == BANK


# --- a plan applied -------------------------------------------------------------------


def test_a_due_bank_gets_its_plan_applied_in_one_commit(layout, minds, bank):
    answer_plan(minds, [merge_op(), PRUNE, RETITLE])
    before = commits(layout)
    (outcome,) = run(layout)
    assert (outcome.decision, outcome.planned, outcome.applied, outcome.conflicts) == ("upkept", 3, 3, [])
    assert live(bank) == ["feedback_short_commits.md", "project_build_with_make_j8.md",
                          "project_uploads_retry_three_times.md"]
    merged = read_memory(bank / "project_build_with_make_j8.md")
    # replaces names the member first created, and the claim keeps that day.
    assert merged.replaces == "project_make_builds_it.md" and merged.created == "2026-11-10T10:00:00Z"
    assert merged.body == MERGED_BODY and merged.name == "Build with make -j8" and merged.source == ["s1"]
    retitled = read_memory(bank / "project_uploads_retry_three_times.md")
    assert (retitled.name, retitled.replaces, retitled.created) == (
        "Uploads retry three times", "project_stuff.md", "2026-11-14T10:00:00Z")
    assert retitled.body == "Uploads retry three times with backoff.\n"
    archived = sorted(path.name.split("_", 1)[1] for path in (bank / BANK_ARCHIVE).iterdir())
    assert archived == ["project_build_with_make.md", "project_make_builds_it.md", "project_old_deploy_note.md",
                        "project_stuff.md"]
    assert baseline(bank) == {"at": "2026-11-30T03:30:00Z", "count": 3, "last_ops": 3}
    assert commits(layout) == before + 1 and git(layout.root, "status", "--porcelain") == ""
    message = git(layout.root, "log", "-1", "--format=%B")
    assert message.startswith(f"reflect: upkeep of {PROJECT}\n") and "Verb: reflect" in message
    assert "Kind: upkeep.apply" in message
    # One event for the plan, one child for its merge, both named by the commit and on the trail.
    from sandman.machine import trail

    apply_event, merge_event = trail.read(layout).events[-2:]
    assert (apply_event.kind, merge_event.kind, merge_event.parent) == ("upkeep.apply", "upkeep.merge", apply_event.id)
    assert f"Event: {apply_event.id}\nEvent: {merge_event.id}\n" in message
    assert merge_event.data["into"] == "project_build_with_make_j8.md" and apply_event.model == UPKEEP_MODEL
    plan_call, merge_call = minds.calls()
    for call in (plan_call, merge_call):
        assert call["model"] == UPKEEP_MODEL and "--no-session-persistence" in call["argv"]
    # The plan sees three lines of each body; the merge sees its members whole.
    assert "Line three." in plan_call["prompt"] and "Line four, past the head." not in plan_call["prompt"]
    assert "Line four, past the head." in merge_call["prompt"] and "Build with make, not cmake." in merge_call["prompt"]
    assert "Deploy with scp." not in merge_call["prompt"]
    upkept = journal_lines(layout, "upkept")[0]
    assert (upkept["applied"], upkept["conflicts"]) == ("3", "0")
    assert journal_lines(layout, "planned")[0]["cost_upkeep"] == "0.0123"
    assert journal_lines(layout, "drafted")[0]["cost_merge"] == "0.0123"
    assert [line["op"] for line in journal_lines(layout, "applied")] == ["merge", "prune", "retitle"]


def test_an_empty_plan_resets_the_baseline(layout, minds, bank):
    answer_plan(minds, [])
    (outcome,) = run(layout)
    assert (outcome.decision, outcome.applied) == ("upkept", 0)
    assert baseline(bank) == {"at": "2026-11-30T03:30:00Z", "count": 5, "last_ops": 0}
    assert len(live(bank)) == 5


def test_a_pass_that_spent_every_operation_is_due_again_on_sight(layout, minds, bank):
    set_baseline(layout, "2026-11-30T03:00:00Z", 5, last_ops=6)
    answer_plan(minds, [PRUNE])
    (outcome,) = run(layout)
    assert outcome.applied == 1 and baseline(bank)["last_ops"] == 1


def test_upkeep_runs_inside_the_reflect_pass(layout, minds, bank):
    answer_plan(minds, [PRUNE])
    summary = reflect(layout, now=NOW)
    assert [o.decision for o in summary.upkeep] == ["upkept"] and len(summary.commits) == 1
    assert "project_old_deploy_note.md" not in live(bank)


# --- a plan rejected whole -------------------------------------------------------------


@pytest.mark.parametrize("plan, reason", [
    ([{"op": "prune", "file": f"project_{n}.md"} for n in range(7)], "too many operations"),
    ([PRUNE, {"op": "retitle", "file": "project_old_deploy_note.md", "name": "n", "description": "d"}],
     "operation 2: project_old_deploy_note.md is in another operation"),
    ([merge_op(), {"op": "prune", "file": "project_make_builds_it.md"}],
     "operation 2: project_make_builds_it.md is in another operation"),
    ([PRUNE, {"op": "delete", "file": "project_stuff.md"}], "operation 2: unknown op 'delete'"),
    ([{"op": "add", "file": "project_new.md"}], "operation 1: unknown op 'add'"),
    ([merge_op(files=["project_build_with_make.md"])], "operation 1: a merge needs a files list of two or more"),
    ([merge_op(files=["project_build_with_make.md", "project_build_with_make.md"])],
     "operation 1: a merge names a file twice"),
    ([{"op": "prune", "file": "../_user/user_prefers_short_answers.md"}],
     "operation 1: file '../_user/user_prefers_short_answers.md' is not a memory file name"),
    ([{"op": "prune", "file": "MEMORY.md"}], "operation 1: file 'MEMORY.md' is not a memory file name"),
    ([{"op": "prune"}], "operation 1: file 'None' is not a memory file name"),
    ([merge_op(type="user")], "operation 1: type 'user' is not allowed in this bank"),
    ([merge_op(name="n" * 121)], "operation 1: name over 120 characters"),
    ([dict(RETITLE, description="")], "operation 1: description missing or not a string"),
    ([dict(RETITLE, name="Stuff", description="Stuff.")], "operation 1: a retitle that changes nothing"),
    ([dict(RETITLE, name="key AKIAUJZDE8GXD6NCF10E")], "operation 1: secret (aws-access-key-id)"),
    ([PRUNE, "prune everything"], "operation 2: not an object"),
    ({"ops": [PRUNE]}, "no operations list"),
    ("Prune the old deploy note.", "unparseable"),
])
def test_an_invalid_plan_changes_nothing(layout, minds, bank, plan, reason):
    answer_plan(minds, plan)
    tip, disk = head(layout), snapshot(layout.root)
    (outcome,) = run(layout)
    assert (outcome.decision, outcome.reason) == ("rejected", reason)
    assert head(layout) == tip and snapshot(layout.root) == disk
    assert len(minds.calls()) == 1  # no merge was drafted
    (line,) = journal_lines(layout, "rejected")
    assert line["reason"] == reason and line["cost_upkeep"] == "0.0123"


@pytest.mark.parametrize("rule, reason", [({"mode": "hang"}, "timeout"), ({"mode": "garbage"}, "unparseable output"),
                                          ({"mode": "echo"}, "echo")])
def test_a_planning_mind_that_abstains_changes_nothing(layout, minds, bank, monkeypatch, rule, reason):
    minds.rules(UPKEEP_MODEL, rule)
    tip, disk = head(layout), snapshot(layout.root)
    # Only the hung mind needs the short timeout; under load a 1 s limit would time out the others too.
    (outcome,) = upkeep(layout, now=NOW, timeout=1 if rule["mode"] == "hang" else 60, cap=None)
    assert (outcome.decision, outcome.reason) == ("abstained", reason)
    assert head(layout) == tip and snapshot(layout.root) == disk


def test_a_spent_budget_defers_upkeep_without_a_call(layout, minds, bank):
    from sandman import journal

    journal.write(layout, "dream", "routed", cost_fable=1.5)
    tip = head(layout)
    (outcome,) = upkeep(layout, now=NOW, timeout=30, cap=1.0)
    assert (outcome.decision, outcome.reason) == ("deferred", "budget")
    assert minds.calls() == [] and head(layout) == tip


# --- conflicts: the plan is only applied to the bank it was drawn against ---------------


def edit_after_planning(monkeypatch, change) -> None:
    """Run ``change()`` right after the planning mind answers, before the plan is applied."""
    real = upkeep_module.run_mind

    def planned_then_changed(prompt, **kwargs):
        result = real(prompt, **kwargs)
        if kwargs["mind"] == "upkeep":
            change()
        return result

    monkeypatch.setattr(upkeep_module, "run_mind", planned_then_changed)


@pytest.mark.parametrize("how", ["edited", "gone"])
def test_a_file_changed_after_the_listing_skips_only_its_own_operation(layout, minds, bank, monkeypatch, how):
    target = bank / "project_old_deploy_note.md"
    edited = target.read_text() + "A hand edit: deploys now go through CI.\n"
    edit_after_planning(monkeypatch, lambda: target.write_text(edited) if how == "edited" else target.unlink())
    answer_plan(minds, [merge_op(), PRUNE, RETITLE])
    (outcome,) = run(layout)
    assert (outcome.applied, outcome.conflicted_ops, outcome.conflicts) == (2, 1, ["project_old_deploy_note.md"])
    if how == "edited":
        assert target.read_text() == edited  # the edit survives, live
    else:
        assert not target.exists()
    assert "project_build_with_make_j8.md" in live(bank) and "project_uploads_retry_three_times.md" in live(bank)
    assert baseline(bank)["last_ops"] == 2
    upkept = journal_lines(layout, "upkept")[0]
    assert (upkept["conflicts"], upkept["files"]) == ("1", "project_old_deploy_note.md")
    assert journal_lines(layout, "conflict")[0]["op"] == "prune"
    assert git(layout.root, "status", "--porcelain") == ""


def test_a_merge_member_edited_after_its_body_was_drafted_skips_the_merge(layout, minds, bank, monkeypatch):
    member = bank / "project_make_builds_it.md"
    real = upkeep_module.run_mind

    def drafted_then_edited(prompt, **kwargs):
        result = real(prompt, **kwargs)
        if kwargs["mind"] == "merge":
            member.write_text(member.read_text() + "Edited by hand.\n")
        return result

    monkeypatch.setattr(upkeep_module, "run_mind", drafted_then_edited)
    answer_plan(minds, [merge_op(), PRUNE])
    (outcome,) = run(layout)
    assert (outcome.applied, outcome.conflicts) == (1, ["project_make_builds_it.md"])
    assert "project_build_with_make.md" in live(bank) and "project_make_builds_it.md" in live(bank)
    assert not (bank / "project_build_with_make_j8.md").exists()


def test_a_file_never_listed_skips_only_its_own_operation(layout, minds, bank):
    answer_plan(minds, [PRUNE, {"op": "prune", "file": "project_never_was.md"},
                        merge_op(files=["project_stuff.md", "project_imagined.md"])])
    (outcome,) = run(layout)
    assert outcome.applied == 1 and outcome.conflicted_ops == 2
    assert outcome.conflicts == ["project_never_was.md", "project_imagined.md"]
    assert "project_stuff.md" in live(bank) and len(minds.calls()) == 1  # no merge drafted for it


# --- merges -----------------------------------------------------------------------------


@pytest.mark.parametrize("merge_rule", [
    {"mode": "garbage"}, {"result": {"text": "no body key"}}, {"result": {"body": "   "}},
    {"result": {"body": "Use AKIAUJZDE8GXD6NCF10E."}},
])
def test_a_merge_whose_second_call_abstains_is_skipped_alone(layout, minds, bank, merge_rule):
    minds.rules(UPKEEP_MODEL, [dict(merge_rule, match=MERGE_MATCH), {"result": {"operations": [merge_op(), PRUNE]}}])
    (outcome,) = run(layout)
    assert (outcome.applied, outcome.conflicts) == (1, [])
    assert outcome.skipped == ["project_build_with_make.md", "project_make_builds_it.md"]
    assert "project_build_with_make.md" in live(bank) and "project_make_builds_it.md" in live(bank)
    assert "project_old_deploy_note.md" not in live(bank)
    assert journal_lines(layout, "abstained")[0]["mind"] == "merge"


def test_upkeep_never_grows_a_bank(layout, minds, bank):
    answer_plan(minds, [merge_op(), RETITLE])
    before = len(live(bank))
    run(layout)
    assert len(live(bank)) == before - 1


def test_the_user_bank_merges_only_into_a_user_memory(layout, minds):
    remember_on(layout, "2026-11-20T10:00", "Prefers short answers", type_="user")
    remember_on(layout, "2026-11-21T10:00", "Likes brief replies", type_="user")
    with bank_transaction(layout, verb="reflect", subject="a baseline") as tx:
        tx.write_file(layout.bank("_user") / BANK_REFLECT, json.dumps({"at": "2026-11-20T00:00:00Z", "count": 0,
                                                                       "last_ops": 6}) + "\n")
    files = ["user_prefers_short_answers.md", "user_likes_brief_replies.md"]
    answer_plan(minds, [merge_op(files=files, type="project")])
    (outcome,) = run(layout)
    assert outcome.reason == "operation 1: type 'project' is not allowed in this bank"
    answer_plan(minds, [merge_op(files=files, type="user", name="Prefers short answers")])
    (outcome,) = run(layout)
    assert outcome.applied == 1
    merged = read_memory(layout.bank("_user") / "user_prefers_short_answers.md")
    assert merged.replaces == "user_prefers_short_answers.md" and merged.created == "2026-11-20T10:00:00Z"


def test_a_failure_while_applying_undoes_the_whole_bank_and_fails_the_pass(layout, minds, bank, monkeypatch):
    from sandman.banks.commit import BankTransaction

    real_archive = BankTransaction.archive

    def full_disk(self, bank_name, filename):
        if filename != PRUNE["file"]:
            return real_archive(self, bank_name, filename)
        raise OSError(28, "No space left on device", filename)

    answer_plan(minds, [RETITLE, PRUNE])
    monkeypatch.setattr(BankTransaction, "archive", full_disk)
    tip, disk = head(layout), snapshot(layout.root)
    summary = reflect(layout, now=NOW)
    (outcome,) = summary.upkeep
    assert outcome.decision == "failed" and "No space left on device" in outcome.reason
    # The retitle had already run when the prune failed: it was undone with it.
    assert head(layout) == tip and snapshot(layout.root) == disk
    assert summary.errors == [f"reflect upkeep of {BANK}: {outcome.reason}"]


def test_banks_seeded_together_count_as_one_commit(layout, minds):
    remember_on(layout, "2026-11-20T10:00", "Build with make")
    remember_on(layout, "2026-11-20T11:00", "Prefers short answers", type_="user")
    summary = reflect(layout, now=NOW)
    assert [o.decision for o in summary.upkeep] == ["seeded", "seeded"] and len(summary.commits) == 1


# --- the review gate (issue 19) -----------------------------------------------------------


def test_the_review_gate_turns_a_plan_into_a_proposal_set_and_changes_no_memory(layout, minds, bank):
    from sandman.curators.apply import apply
    from sandman.curators.proposals import read_set

    layout.settings_file.write_text("[upkeep]\nreview = true\n")
    answer_plan(minds, [merge_op(), PRUNE, RETITLE])
    before = snapshot(bank)
    (outcome,) = run(layout)
    assert outcome.decision == "proposed"
    after = snapshot(bank)
    assert after.pop(BANK_REFLECT) != before.pop(BANK_REFLECT), "the baseline moves: the bank is not due again"
    assert after == before, "no memory changed"
    set_id = outcome.reason.removeprefix("set ")
    data = read_set(layout, set_id)
    assert [(p["action"], p["targets"]) for p in data["proposals"]] == [
        ("merge", ["project_build_with_make.md", "project_make_builds_it.md"]),
        ("archive", ["project_old_deploy_note.md"]), ("modify", ["project_stuff.md"])]
    result = apply(layout, set_id, reject=["p1"])
    assert (result.applied, result.rejected) == (["p2", "p3"], ["p1"])
    assert live(bank) == ["feedback_short_commits.md", "project_build_with_make.md", "project_make_builds_it.md",
                          "project_uploads_retry_three_times.md"]


def test_a_bad_review_setting_fails_the_bank_with_the_reason(layout, minds, bank):
    layout.settings_file.write_text("[upkeep]\nreview = 'yes'\n")
    answer_plan(minds, [PRUNE])
    (outcome,) = run(layout)
    assert outcome.decision == "failed"
    assert outcome.reason == f"{layout.settings_file}: upkeep.review must be true or false, not 'yes'"
    assert "project_old_deploy_note.md" in live(bank)
