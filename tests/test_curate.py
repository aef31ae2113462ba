"""``sandman curate``: curators propose with evidence, a person reviews, apply commits one set
(docs/curate.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dream_helpers import model as dream_model
from dream_helpers import archive_session, proposal
from helpers import git
from sandman import config
from sandman.banks.commit import bank_transaction
from sandman.banks.index import memory_files
from sandman.banks.names import bank_name
from sandman.cli import app
from sandman.curators import retired
from sandman.curators.apply import apply
from sandman.curators.propose import curate
from sandman.curators.proposals import read_set
from sandman.errors import InputError, ProposalRefused
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout
from sandman.machine import trail
from sandman.machine.reconcile import reconcile
from sandman.verbs.dream import dream
from sandman.verbs.remember import remember

MODEL = config.model(config.MIND_CURATE)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def project(isolated: Path, layout: Layout) -> Path:
    project = isolated / "proj"
    remember(layout, "The deploy goes through staging, then production.", cwd=str(project), name="Deploy path")
    remember(layout, "The release is blocked on the security review.", cwd=str(project), name="Release blocked")
    remember(layout, "Builds use make.", cwd=str(project), name="Build tool")
    return project


def rot(files_modify: str = "project_release_blocked.md", **extra) -> list[dict]:
    return [
        {"action": "modify", "targets": [files_modify], "reasoning": "The review passed.",
         "evidence": ["session 2026-11-30: security review signed off"], "confidence": "high",
         "body": "The security review passed; the release is unblocked.", **extra},
        {"action": "archive", "targets": ["project_build_tool.md"], "reasoning": "The build moved to bazel.",
         "evidence": ["voyage log: switched to bazel"], "confidence": "high"},
        {"action": "flag", "targets": ["project_deploy_path.md"], "reasoning": "Unclear.",
         "evidence": ["no session mentions staging"], "confidence": "low"},
    ]


def answer(fake, proposals) -> None:
    fake.answer(MODEL, {"proposals": proposals} if isinstance(proposals, list) else proposals)


def test_a_rot_pass_writes_a_set_and_leaves_the_bank_byte_identical(layout, project, fake_claude) -> None:
    answer(fake_claude, rot())
    folder = layout.bank(bank_name(project))
    before = snapshot(folder)
    run = curate(layout, "rot")
    assert snapshot(folder) == before
    data = read_set(layout, run.set_id)
    assert [(p["id"], p["action"], p["confidence"]) for p in data["proposals"]] == [
        ("p1", "modify", "high"), ("p2", "archive", "high"), ("p3", "flag", "low")]
    report = (layout.proposal_set(run.set_id) / "REPORT.md").read_text()
    assert "## p1: modify project_release_blocked.md" in report and "security review signed off" in report
    assert git(layout.root, "status", "--porcelain") == ""
    assert f"Set: {run.set_id}" in git(layout.root, "log", "-1", "--format=%B")
    (call,) = fake_claude.calls()
    assert "The release is blocked on the security review." in call["prompt"]
    assert "**For each memory: does it still match" in call["prompt"]


def test_apply_with_one_accepted_and_one_rejected_changes_exactly_the_accepted_memory(
        layout, project, fake_claude) -> None:
    answer(fake_claude, rot())
    run = curate(layout, "rot")
    folder = layout.bank(bank_name(project))
    before = snapshot(folder)
    head = git(layout.root, "rev-parse", "HEAD").strip()
    result = apply(layout, run.set_id, reject=["p2"])
    assert (result.applied, result.rejected, result.noted) == (["p1"], ["p2", "p3"], [])
    after = snapshot(folder)
    changed = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    archived = [name for name in after if name.startswith(BANK_ARCHIVE + "/")]
    assert archived == [name for name in archived if name.endswith("_project_release_blocked.md")]
    assert changed - {BANK_INDEX} == {"project_release_blocked.md", *archived}  # the index changes with a description
    assert b"the release is unblocked" in after["project_release_blocked.md"]
    assert git(layout.root, "rev-list", "--count", f"{head}..HEAD").strip() == "1", "one commit for the set"
    assert read_set(layout, run.set_id)["decisions"]["p2"] == {"decision": "rejected"}
    # The set's one trail event rides in the apply's own commit.
    message = git(layout.root, "log", "-1", "--format=%B")
    assert f"Event: {result.event}" in message and "Kind: curate.apply" in message
    assert git(layout.root, "show", "--stat", "--format=", "HEAD").count("trail/") == 1
    (event,) = [e for e in trail.read(layout).events if e.kind == "curate.apply"]
    assert event.id == result.event and event.data["set"] == run.set_id and event.data["accepted"] == ["p1"]
    # A bad apply is one `trail revoke` + `reconcile` away: the accepted memory comes back as it was.
    runner = CliRunner()
    done = runner.invoke(app, ["trail", "revoke", result.event, "--why", "the review had not passed"])
    assert done.exit_code == 0, done.stderr
    done = runner.invoke(app, ["reconcile", result.event])
    assert done.exit_code == 0, done.stderr
    kept = {name: data for name, data in after.items() if name.startswith(BANK_ARCHIVE + "/")}
    assert snapshot(folder) == {**before, **kept}, "restored as it was; _archive/ keeps its copy"
    assert git(layout.root, "status", "--porcelain") == ""
    assert "Reconciles: " + result.event in git(layout.root, "log", "-1", "--format=%B", "HEAD~1")
    assert read_set(layout, run.set_id)["decisions"] == {}, "the set's decisions are reverted with it"


def test_reconcile_adds_the_memories_its_revert_removes_to_the_retired_ledger(layout, project, fake_claude) -> None:
    answer(fake_claude, [{"action": "merge", "targets": ["project_deploy_path.md", "project_build_tool.md"],
                          "reasoning": "One pipeline.", "evidence": ["both describe the pipeline"],
                          "confidence": "high", "type": "project", "name": "Pipeline",
                          "description": "How code is built and deployed", "body": "make, then staging."}])
    result = apply(layout, curate(layout, "merge").set_id)
    folder = layout.bank(bank_name(project))
    assert (folder / "project_pipeline.md").is_file()
    assert [line["by"] for line in retired.lines(layout)] == [f"curate {result.set_id}"]  # the absorbed member
    trail.revoke(layout, result.event, "one pipeline was wrong")
    assert not reconcile(layout, result.event).failed
    assert sorted(p.name for p in memory_files(folder)) == [
        "project_build_tool.md", "project_deploy_path.md", "project_release_blocked.md"]
    # The apply's own ledger line is reverted with it; the merged memory the revert removed is retired.
    lines = retired.lines(layout)
    assert [(line["file"], line["by"]) for line in lines] == [("project_pipeline.md", f"reconcile {result.event}")]
    assert git(layout.root, "status", "--porcelain") == ""


def test_a_set_is_applied_once_and_unknown_ids_are_refused(layout, project, fake_claude) -> None:
    answer(fake_claude, rot())
    run = curate(layout, "rot")
    with pytest.raises(InputError, match=rf"set {run.set_id} has no proposal 'p9' \(it has p1, p2, p3\)"):
        apply(layout, run.set_id, accept=["p9"])
    with pytest.raises(InputError, match="proposal p1 is both accepted and rejected; name it once"):
        apply(layout, run.set_id, accept=["p1"], reject=["p1,p2"])
    apply(layout, run.set_id)
    with pytest.raises(InputError, match=rf"set {run.set_id} was applied at .*; a set is applied once"):
        apply(layout, run.set_id)
    with pytest.raises(InputError, match=r"'\.\./etc' is not a proposal set id"):
        apply(layout, "../etc")
    with pytest.raises(InputError, match=r"no proposal set 20200101T000000Z-rot under"):
        apply(layout, "20200101T000000Z-rot")


def test_a_file_changed_since_the_run_skips_its_proposal_alone(layout, project, fake_claude) -> None:
    answer(fake_claude, rot())
    run = curate(layout, "rot")
    remember(layout, "Builds use make and ninja.", cwd=str(project), name="Build tool")  # a new file (_2)
    path = layout.bank(bank_name(project)) / "project_build_tool.md"
    with bank_transaction(layout, verb="test", subject="edit") as tx:
        tx.write_file(path, path.read_text().replace("make.", "make!"))
    result = apply(layout, run.set_id)
    assert (result.applied, result.conflicts) == (["p1"], ["p2"])


@pytest.mark.parametrize(("reply", "reason"), [
    ({"proposals": [{**rot()[1], "evidence": []}]},
     "proposal 1: evidence must be a list of 1 to 10 non-empty strings"),
    ({"proposals": [{**rot()[1], "action": "delete"}]},
     "proposal 1: unknown action 'delete' for the rot curator (one of modify, archive, flag)"),
    ({"proposals": [{**rot()[1], "targets": ["project_elsewhere.md"]}]},
     "proposal 1: target 'project_elsewhere.md' is not a live memory of bank "),
    ({"proposals": [{**rot()[1], "targets": ["../../etc/passwd"]}]},
     "proposal 1: target '../../etc/passwd' is not a live memory of bank "),
    ("I think the bank is fine.", "unparseable"),
    ({"proposals": [rot()[1], {**rot()[0], "confidence": "very"}]},
     "proposal 2: confidence 'very' is not one of high, medium, low"),
])
def test_a_bad_reply_is_refused_whole_with_the_reason(layout, project, fake_claude, reply, reason) -> None:
    answer(fake_claude, reply)
    before = snapshot(layout.root / "memories")
    with pytest.raises(ProposalRefused) as refused:
        curate(layout, "rot")
    assert f"curate rot: nothing proposed; {bank_name(project)}: reply refused: {reason}" in str(refused.value)
    assert snapshot(layout.root / "memories") == before
    assert not layout.curation.exists()


def test_merge_and_split_apply_through_commit_memory(layout, project, fake_claude) -> None:
    answer(fake_claude, [{"action": "merge", "targets": ["project_deploy_path.md", "project_build_tool.md"],
                          "reasoning": "One pipeline.", "evidence": ["both describe the pipeline"],
                          "confidence": "medium", "type": "project", "name": "Pipeline",
                          "description": "How code is built and deployed", "body": "make, then staging."}])
    run = curate(layout, "merge")
    assert apply(layout, run.set_id).applied == [], "medium confidence needs --accept"
    answer(fake_claude, [{"action": "merge", "targets": ["project_deploy_path.md", "project_build_tool.md"],
                          "reasoning": "One pipeline.", "evidence": ["both describe the pipeline"],
                          "confidence": "medium", "type": "project", "name": "Pipeline",
                          "description": "How code is built and deployed", "body": "make, then staging."}])
    run = curate(layout, "merge")
    assert apply(layout, run.set_id, accept=["p1"]).applied == ["p1"]
    folder = layout.bank(bank_name(project))
    assert sorted(p.name for p in memory_files(folder)) == ["project_pipeline.md", "project_release_blocked.md"]
    answer(fake_claude, [{"action": "split", "targets": ["project_pipeline.md"], "reasoning": "Two concerns.",
                          "evidence": ["build and deploy"], "confidence": "high",
                          "results": [{"type": "project", "name": "Build", "description": "Build with make",
                                       "body": "make."},
                                      {"type": "project", "name": "Deploy", "description": "Deploy via staging",
                                       "body": "staging."}]}])
    apply(layout, curate(layout, "split").set_id)
    assert sorted(p.name for p in memory_files(folder)) == ["project_build.md", "project_deploy.md",
                                                            "project_release_blocked.md"]


def test_lint_without_a_model_finds_duplicates_index_drift_and_half_finished_archives(layout, project) -> None:
    folder = layout.bank(bank_name(project))
    original = (folder / "project_build_tool.md").read_text()
    with bank_transaction(layout, verb="test", subject="a copy") as tx:
        tx.write_file(folder / "project_build_tool_copy.md", original.replace("name: Build tool", "name: Build tool copy"))
        tx.write_file(folder / BANK_ARCHIVE / "20261101T000000_project_deploy_path.md",
                      (folder / "project_deploy_path.md").read_bytes())
    index = (folder / BANK_INDEX).read_text()
    with bank_transaction(layout, verb="test", subject="a stale index, committed") as tx:
        tx.write_file(folder / BANK_INDEX, index.replace("- [Deploy path]", "- [Gone](project_gone.md) x\n- [Deploy path]"))
    before = snapshot(folder)
    run = curate(layout, "lint", model=False)
    assert snapshot(folder) == before
    found = {(p["check"], p["action"], tuple(p["targets"])) for p in read_set(layout, run.set_id)["proposals"]}
    assert found == {("index", "flag", (BANK_INDEX,)), ("duplicate", "archive", ("project_build_tool_copy.md",)),
                     ("archive", "flag", ("project_deploy_path.md",))}
    result = apply(layout, run.set_id)
    assert "project_gone.md" not in (folder / BANK_INDEX).read_text(), "applying the index flag regenerates it"
    assert not (folder / "project_build_tool_copy.md").exists() and len(result.applied) == 1


def test_a_memory_a_curator_retired_is_refused_when_a_dream_proposes_it_again(layout, project, fake_claude) -> None:
    answer(fake_claude, [rot()[1]])  # archive "Build tool"
    apply(layout, curate(layout, "rot").set_id)
    folder = layout.bank(bank_name(project))
    assert not (folder / "project_build_tool.md").exists()
    assert retired.lines(layout)[0]["by"].startswith("curate ")
    again = proposal(project, "Build tool", "Builds use make", body="Builds use make.")
    for mind in ("fable", "opus", "sonnet"):
        fake_claude.answer(dream_model(mind), {"memories": [again]})
    archive_session(layout, "5e550000-0000-4000-8000-0000000000a1", project, ended="2026-11-30T10:00:00Z")
    summary = dream(layout, now=True)
    assert summary.total("tripped") == 1 and summary.total("committed") == 0
    assert "1 refused as retired by a curator, upkeep or forget" in summary.text()
    assert not (folder / "project_build_tool.md").exists()
    # The owner re-adds it by hand: it is theirs again, and a dream may state it.
    remember(layout, "Builds use make.", cwd=str(project), name="Build tool")
    assert retired.retired(layout, bank_name(project), retired_memory(folder)) is None


def retired_memory(folder: Path):
    from sandman.banks.memory import read_memory

    return read_memory(folder / "project_build_tool.md")


def test_curate_cli_writes_reviews_applies_and_refuses_in_one_line(layout, project, fake_claude) -> None:
    answer(fake_claude, rot())
    runner = CliRunner()
    done = runner.invoke(app, ["curate", "rot", "--bank", str(project)])
    assert done.exit_code == 0, done.stderr
    set_id = done.stdout.split("set ", 1)[1].split(";", 1)[0]
    assert done.stdout.endswith(f"no memory changed. Review: sandman curate review {set_id}\n")
    done = runner.invoke(app, ["curate", "review"])
    assert done.stdout == f"{set_id}: rot, 3 proposal(s), open\n"
    done = runner.invoke(app, ["curate", "review", set_id])
    assert "p1 [accepted by default] modify project_release_blocked.md" in done.stdout
    assert "p3 [needs --accept] flag project_deploy_path.md" in done.stdout
    done = runner.invoke(app, ["curate", "apply", set_id, "--reject", "p2"])
    assert done.exit_code == 0 and done.stdout.startswith(f"curate apply {set_id}: 1 applied, 0 noted, 2 rejected\n")
    for args, message in ((["curate", "apply", "nope"], "sandman: 'nope' is not a proposal set id (like "
                                                         "20261201T220000Z-rot); `sandman curate review` lists them\n"),
                          (["curate", "rot", "--bank", "/no/such"], "sandman: no bank '/no/such' under "),
                          (["curate", "merge", "--bank", "/no/such"], "sandman: no bank '/no/such' under ")):
        done = runner.invoke(app, args)
        assert done.exit_code == 2 and done.stderr.startswith(message) and done.stderr.count("\n") == 1


def test_a_bank_in_order_writes_no_set(layout, project, fake_claude) -> None:
    answer(fake_claude, [])
    head = git(layout.root, "rev-parse", "HEAD")
    run = curate(layout, "rot")
    assert run.set_id is None and not layout.curation.exists()
    assert git(layout.root, "rev-parse", "HEAD") == head
    assert curate(layout, "lint", model=False).set_id is None


def test_rot_sees_how_often_each_memory_reached_a_session(layout, project, fake_claude) -> None:
    from sandman.recall import ledger

    folder = layout.bank(bank_name(project))
    used = sorted(path.name for path in folder.glob("project_*.md"))[0]
    ledger.append(layout, "s1", "recall", [f"{folder.name}/{used}"])
    ledger.append(layout, "s2", "prompt", [f"{folder.name}/{used}"])
    answer(fake_claude, rot())
    curate(layout, "rot")
    (call,) = fake_claude.calls()
    block = call["prompt"].split(f"### {used}\n", 1)[1].split("###", 1)[0]
    assert "reached: 2 sessions, last 20" in block
    assert call["prompt"].count("reached: never (no session on this machine was given it)") == len(
        list(folder.glob("project_*.md"))) - 1
