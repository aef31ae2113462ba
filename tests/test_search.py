"""``sandman search``: the FTS5 index over every live memory (docs/search.md)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandman.banks import search as index
from sandman.banks.names import bank_name
from sandman.cli import app
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.verbs.remember import remember
from sandman.verbs.search import search


@pytest.fixture
def project(isolated: Path, layout: Layout) -> Path:
    project = isolated / "proj"
    remember(layout, "The deploy goes through the staging cluster first.\nThen production.",
             cwd=str(project), name="Staging cluster", description="How a deploy runs")
    remember(layout, "Tests run with pytest and the fake claude.\nNever against a real model.",
             cwd=str(project), name="Deploy checklist", description="What to check before shipping")
    remember(layout, "Der Übersetzer heißt Grüße; café au lait is the build's codename.",
             cwd=str(project), name="Codename", description="Le nom de code", memory_type="reference")
    remember(layout, "Prefers tea to coffee.", cwd=str(project), memory_type="user", name="Tea")
    return project


def files(hits) -> list[str]:
    return [hit.file for hit in hits]


def test_search_finds_a_memory_by_a_word_in_its_body(layout: Layout, project: Path) -> None:
    hits = search(layout, "pytest")
    assert files(hits) == ["project_deploy_checklist.md"]
    assert (hits[0].line_number, hits[0].line) == (1, "Tests run with pytest and the fake claude.")


def test_the_index_is_written_in_wal_without_an_fsync_per_refresh(layout: Layout, project: Path) -> None:
    # docs/BANK-FORMAT.md, "The search index": derived, so a power cut may lose a refresh, never corrupt it.
    connection = index._connect(layout.search_index)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert connection.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    finally:
        connection.close()
    assert files(search(layout, "pytest")) == ["project_deploy_checklist.md"]


def test_search_ranks_a_name_match_above_a_body_match(layout: Layout, project: Path) -> None:
    # "deploy" is in the body of "Staging cluster" (twice, with its description) and in the name
    # of "Deploy checklist".
    assert files(search(layout, "deploy")) == ["project_deploy_checklist.md", "project_staging_cluster.md"]


def test_search_handles_non_ascii_and_diacritics(layout: Layout, project: Path) -> None:
    assert files(search(layout, "Grüße")) == ["reference_codename.md"]
    assert files(search(layout, "cafe")) == ["reference_codename.md"]
    assert files(search(layout, "übersetzer")) == ["reference_codename.md"]


def test_search_reads_quotes_as_phrases_never_as_syntax(layout: Layout, project: Path) -> None:
    assert files(search(layout, '"staging cluster"')) == ["project_staging_cluster.md"]
    assert files(search(layout, '"cluster staging"')) == []
    for query in ('"staging', 'staging"', "staging AND OR NOT", "deploy*", "name:tea", "NEAR(deploy"):
        search(layout, query)  # no FTS5 syntax error reaches the caller
    assert files(search(layout, "tea's")) == ["user_tea.md"]  # a word's possessive is the word


def test_search_refuses_a_query_without_words(layout: Layout, project: Path) -> None:
    for query in ('""', "...", "how do I?"):
        with pytest.raises(InputError) as refused:
            search(layout, query)
        assert str(refused.value) == (f"search query {query!r} has no word to search for (only common words"
                                      " such as 'how', 'the'); give a word the memory would hold")


def test_search_rebuilds_a_deleted_index_with_the_same_answers(layout: Layout, project: Path) -> None:
    before = search(layout, "deploy")
    layout.search_index.unlink()
    assert search(layout, "deploy") == before
    assert layout.search_index.is_file()


def test_search_rebuilds_a_corrupt_index(layout: Layout, project: Path) -> None:
    before = search(layout, "deploy")
    layout.search_index.write_bytes(b"not a database at all" * 100)
    for extra in ("-wal", "-shm"):
        Path(str(layout.search_index) + extra).unlink(missing_ok=True)
    assert search(layout, "deploy") == before


def test_commit_memory_keeps_the_index_current(layout: Layout, project: Path) -> None:
    assert search(layout, "kubernetes") == []
    remember(layout, "The cluster is kubernetes 1.31.", cwd=str(project), name="Cluster version")
    assert files(search(layout, "kubernetes")) == ["project_cluster_version.md"]
    assert index.refresh(layout, [bank_name(project)]) == 0, "the commit already refreshed its bank"


def test_search_finds_a_hand_edit_and_a_removed_file(layout: Layout, project: Path) -> None:
    search(layout, "deploy")
    folder = layout.bank(bank_name(project))
    path = folder / "project_staging_cluster.md"
    saved = folder / "edit.tmp"  # an editor's save: a new file renamed over the old
    saved.write_text(path.read_text().replace("production", "zeppelin"))
    os.replace(saved, path)
    assert files(search(layout, "zeppelin")) == ["project_staging_cluster.md"]
    path.write_text(path.read_text().replace("zeppelin", "dirigible"))  # in place: the folder is unchanged
    assert files(search(layout, "dirigible", reindex=True)) == ["project_staging_cluster.md"]
    (folder / "project_deploy_checklist.md").unlink()
    assert files(search(layout, "pytest")) == []


def test_regression_search_finds_a_hand_edit_written_in_place(layout: Layout, project: Path) -> None:
    # An in-place rewrite (cat new > file: same inode) leaves the folder's mtime alone, and the
    # index was trusted by the folder's: search returned the old text.
    search(layout, "deploy")
    path = layout.bank(bank_name(project)) / "project_staging_cluster.md"
    inode = path.stat().st_ino
    with open(path, "r+") as stream:
        text = stream.read().replace("production", "dirigible")
        stream.seek(0)
        stream.write(text)
        stream.truncate()
    assert path.stat().st_ino == inode
    assert search(layout, "production") == []  # its old text is not a hit
    assert files(search(layout, "dirigible")) == ["project_staging_cluster.md"]  # its bank was read again


def test_the_hooks_refresh_finds_a_hand_edit_written_in_place(layout: Layout, project: Path) -> None:
    search(layout, "deploy")
    path = layout.bank(bank_name(project)) / "project_staging_cluster.md"
    path.write_text(path.read_text().replace("production", "dirigible"))
    index.open_index(layout, every_file=True).close()  # what python -m sandman.recall.index runs
    assert files(search(layout, "dirigible")) == ["project_staging_cluster.md"]


def test_search_filters_by_bank_and_type(layout: Layout, project: Path) -> None:
    assert files(search(layout, "tea", bank="_user")) == ["user_tea.md"]
    assert files(search(layout, "tea", bank=str(project))) == []
    assert files(search(layout, "codename", memory_type="reference")) == ["reference_codename.md"]
    assert files(search(layout, "codename", memory_type="project")) == []
    with pytest.raises(InputError, match="unknown memory type 'nope'"):
        search(layout, "tea", memory_type="nope")
    with pytest.raises(InputError, match="no bank '/no/such' under"):
        search(layout, "tea", bank="/no/such")


def test_search_leaves_archived_memories_out(layout: Layout, project: Path) -> None:
    from sandman.banks.commit import bank_transaction

    assert files(search(layout, "pytest")) == ["project_deploy_checklist.md"]
    with bank_transaction(layout, verb="test", subject="archive") as tx:
        tx.archive(bank_name(project), "project_deploy_checklist.md")
    assert search(layout, "pytest") == []


def test_search_cli_prints_lines_json_and_one_line_errors(layout: Layout, project: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["search", "pytest"])
    assert done.exit_code == 0
    assert done.stdout.splitlines() == [
        f"Deploy checklist (project, {bank_name(project)})",
        f"  memories/{bank_name(project)}/project_deploy_checklist.md:1: Tests run with pytest and the fake claude.",
    ]
    done = runner.invoke(app, ["search", "pytest", "--json"])
    assert [hit["file"] for hit in json.loads(done.stdout)] == ["project_deploy_checklist.md"]
    done = runner.invoke(app, ["search", "zzzz"])
    assert (done.exit_code, done.stdout) == (1, "no memory matches 'zzzz'\n")
    done = runner.invoke(app, ["search", "tea", "--type", "bogus"])
    assert done.exit_code == 2
    assert done.stderr == "sandman: unknown memory type 'bogus'; use one of user, feedback, project, reference\n"


def test_regression_a_querys_private_span_is_never_searched_for(layout: Layout, project: Path) -> None:
    # search read the whole query: a span's words found the memory.
    assert files(search(layout, "pytest <private>kubernetes</private>")) == ["project_deploy_checklist.md"]
    assert search(layout, "kubernetes <private>pytest</private>") == []
    assert search(layout, "kubernetes <PRIVATE>pytest, never closed") == []
    with pytest.raises(InputError) as raised:
        search(layout, "<private>pytest</private>")
    assert "pytest" not in str(raised.value)


def test_search_on_an_empty_root_finds_nothing(layout: Layout) -> None:
    assert search(layout, "zeppelin") == []


def test_the_next_commit_finds_a_hand_edit_made_in_place(layout: Layout, project: Path) -> None:
    search(layout, "deploy")
    path = layout.bank(bank_name(project)) / "project_staging_cluster.md"
    path.write_text(path.read_text().replace("production", "dirigible"))
    remember(layout, "Another fact.", cwd=str(project))  # its transaction commits the hand edit first
    assert files(search(layout, "dirigible")) == ["project_staging_cluster.md"]


def test_the_served_site_answers_search_json_from_the_index(layout: Layout, project: Path) -> None:
    import threading
    import urllib.error
    import urllib.request

    from sandman.site.serve import url
    from sandman.verbs.report import open_server

    server, _ = open_server(layout, host="127.0.0.1", port=0, public=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(url(server) + "search.json?q=" + "pytest") as response:
            hits = json.loads(response.read())
        assert hits == [{"n": "Deploy checklist", "d": "What to check before shipping", "t": "project",
                         "b": bank_name(project), "u": f"banks/{bank_name(project)}/project_deploy_checklist.html",
                         "x": "Tests run with pytest and the fake claude."}]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url(server) + "search.json?q=%22%22")
        assert refused.value.code == 400
        assert "has no word to search for" in json.loads(refused.value.read())["error"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_forget_rebuilds_the_search_index_without_the_memories(layout: Layout, isolated: Path) -> None:
    from sandman.verbs.forget import forget

    sid = "5e550000-0000-4000-8000-00000000f019"
    remember(layout, "The zeppelin code word is blue.", cwd=str(isolated / "p"), session=sid)
    assert files(search(layout, "zeppelin")) == ["project_the_zeppelin_code_word_is_blue.md"]
    forget(layout, sid, memories=True)
    assert layout.search_index.is_file()  # a new file, built whole: none of the deleted words linger
    assert b"zeppelin" not in b"".join(path.read_bytes() for path in layout.root.glob(".search.sqlite*"))
    assert search(layout, "zeppelin") == []


def test_search_shows_how_often_a_memory_reached_a_session_and_counts_the_session_searching(
        layout: Layout, project: Path, monkeypatch) -> None:
    import json

    from sandman.recall import ledger

    runner = CliRunner()
    path = f"{bank_name(project)}/project_deploy_checklist.md"
    ledger.append(layout, "earlier-session", "recall", [path])
    done = runner.invoke(app, ["search", "pytest"])  # by hand: no session, nothing counted
    assert done.stdout.splitlines()[0].endswith(" · reached 1 session, last " + ledger.usage(layout)[path].last)
    assert ledger.usage(layout)[path].sessions == 1
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "searching-session")
    done = runner.invoke(app, ["search", "pytest", "--json"])
    [hit] = json.loads(done.stdout)
    assert (hit["sessions"], hit["last"]) == (2, ledger.usage(layout)[path].last)
    assert layout.delivered_ledger("searching-session").read_text().split("\t")[1:] == ["search", path + "\n"]


@pytest.fixture
def release(isolated: Path, layout: Layout) -> Path:
    project = isolated / "shop"
    remember(layout, "Deploys go through make release.", cwd=str(project), name="Release path",
             description="How code reaches production")
    remember(layout, "Two takes of one session would otherwise races on the pointer; the lock prevents races.",
             cwd=str(project), name="Take lock", description="Why take holds a lock")
    remember(layout, "The cafeteria opens at nine.", cwd=str(project), name="Lunch", description="Opening hours")
    return project


def test_search_finds_a_word_s_other_forms_and_a_question_in_a_person_s_words(layout: Layout, release: Path) -> None:
    # Issue 27: each of these found nothing while every word was required and words were not stemmed.
    for query in ("deploy", "how do I ship a new version?", "publish the release tags", "deployed releases"):
        assert files(search(layout, query))[:1] == ["project_release_path.md"], query
    assert files(search(layout, "race")) == ["project_take_lock.md"]
    assert files(search(layout, "racing")) == ["project_take_lock.md"]
    hit = search(layout, "deploying")[0]
    assert (hit.line_number, hit.line) == (1, "Deploys go through make release.")


def test_regression_search_deployment_finds_deploys(layout: Layout, release: Path) -> None:
    # Porter stems "Deploys" to "deploi" but "deployment" to "deploy": the memory was missed.
    assert files(search(layout, "deployment"))[:1] == ["project_release_path.md"]
    assert files(search(layout, "deploy"))[:1] == ["project_release_path.md"]
    assert files(search(layout, "deployments to production"))[:1] == ["project_release_path.md"]


def test_regression_search_corrects_a_misspelled_word(layout: Layout, release: Path) -> None:
    # Issue 27 item 8: misspellings found nothing (a word no memory holds matched no memory).
    assert files(search(layout, "cafetria"))[:1] == ["project_lunch.md"]
    assert files(search(layout, "relase path"))[:1] == ["project_release_path.md"]
    with pytest.raises(InputError):
        search(layout, "how?")  # still no word to search for
    assert search(layout, "harbour weather") == []  # nothing near enough to correct to


def test_the_index_s_words_follow_the_memories_they_come_from(layout: Layout, release: Path) -> None:
    import sqlite3

    def words() -> dict[str, int]:
        connection = sqlite3.connect(layout.search_index)
        try:
            return dict(connection.execute("SELECT word, memories FROM words"))
        finally:
            connection.close()

    search(layout, "deploy")
    assert words()["cafeteria"] == 1 and words()["races"] == 1 and words()["release"] == 1
    assert "deploys" in words() and "nine" in words() and "the" in words() and "at" not in words()
    (layout.bank(bank_name(release)) / "project_lunch.md").unlink()
    assert search(layout, "cafetria") == []  # no memory holds "cafeteria" now: nothing to correct to
    assert "cafeteria" not in words() and "opens" not in words() and words()["release"] == 1


def test_search_ranks_the_memory_sharing_more_words_first(layout: Layout, release: Path) -> None:
    hits = search(layout, "when does the cafeteria lock open")
    assert files(hits) == ["project_lunch.md", "project_take_lock.md"]


def test_search_bounds_a_1_mb_query_to_its_first_terms(layout: Layout, release: Path) -> None:
    # Issue 34: a query's time grew far faster than its length (8,000 words 37 s; 1 MB ran for minutes).
    query = "release " + " ".join(f"word{i}" for i in range(120_000))
    assert len(query) > 1_000_000
    used = index.query_terms(query)
    assert len(used) == index.MAX_TERMS and used[0] == "release"
    assert files(search(layout, query))[:1] == ["project_release_path.md"]
    done = CliRunner().invoke(app, ["search", "zzzz " * 300_000])
    assert (done.exit_code, done.stdout) == (1, f"no memory matches {'zzzz ' * 12!r}...\n")


def test_search_past_its_time_bound_is_a_one_line_error(layout: Layout, release: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "PROGRESS_STEPS", 1)  # look at the clock at every step
    with pytest.raises(InputError) as refused:
        index.rank(layout, "deploy", seconds=0)
    assert str(refused.value) == "search query 'deploy' took over 0 s; use fewer words"
    assert files(index.rank(layout, "deploy")) == ["project_release_path.md"]


def test_rank_keeps_to_the_banks_it_is_given(layout: Layout, release: Path, project: Path) -> None:
    assert files(index.rank(layout, "deploy", banks=[bank_name(release)])) == ["project_release_path.md"]
    assert set(files(index.rank(layout, "deploy"))) >= {"project_release_path.md", "project_deploy_checklist.md"}
    assert index.rank(layout, "deploy", banks=[]) == []
    assert index.rank(layout, "how do I?") == []


def test_an_index_of_the_earlier_schema_is_rebuilt_with_stems(layout: Layout, release: Path) -> None:
    import sqlite3

    search(layout, "deploy")
    connection = sqlite3.connect(layout.search_index)
    connection.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    connection.commit()
    connection.close()
    assert files(search(layout, "deploy")) == ["project_release_path.md"]
    connection = sqlite3.connect(layout.search_index)
    assert connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (index.SCHEMA_VERSION,)
    connection.close()


def test_fts_query_keeps_a_person_s_meaningful_words_as_quoted_alternatives() -> None:
    from sandman.banks.query import MAX_TERMS, fts_query, fts_related, terms

    assert fts_query("how do I ship a new version?", related=False) == '"ship" OR "new" OR "version"'
    assert fts_related("how do I ship a new version?") == (
        '"deploy" OR "deployment" OR "release" OR "publish" OR "rollout"')
    assert fts_query('the "staging cluster" mix_audit NEAR(x*) a:b', related=False) == (
        '"staging cluster" OR "mix audit" OR "mix" OR "audit" OR "near"')
    for nothing in ("", "   ", '""', "...", "how do I?", "ok, thanks!", "x" * 41):
        assert fts_query(nothing) is None, nothing
    # The bound: the first MAX_TERMS distinct terms of the first MAX_QUERY_CHARS characters.
    many = " ".join(f"w{i}" for i in range(10_000))
    assert terms(many) == [f"w{i}" for i in range(MAX_TERMS)]
    assert terms("late " * 1 + "x " * 5_000 + "tail") == ["late"]  # "tail" lies past 10,000 characters


def test_the_query_builder_imports_nothing_of_sandman_but_itself() -> None:
    import subprocess
    import sys

    code = ("import sys; before = set(sys.modules); import sandman.banks.query; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    ours = [name for name in loaded if name.startswith("sandman")]
    assert ours == ["sandman", "sandman.banks", "sandman.banks.query"]
    assert not {"pathlib", "sqlite3", "json", "yaml"} & set(loaded)


@pytest.mark.parametrize("fast", [True, False])
def test_regression_search_of_several_words_is_one_query_not_an_unexpected_extra_argument(
        layout: Layout, project: Path, fast: bool) -> None:
    """``sandman search make release`` failed "Got unexpected extra argument(s) (release)", exit 2,
    though the README documents ``sandman search <words>``: the words are one query, joined by a
    space, in the fast dispatcher (which answers first) and in typer's command alike."""
    from helpers import sandman

    if fast:
        done = sandman("search", "staging", "--limit", "5", "cluster")
        code, out, err = done.returncode, done.stdout.decode(), done.stderr.decode()
    else:
        typed = CliRunner().invoke(app, ["search", "staging", "--limit", "5", "--", "cluster", "-x"])
        code, out, err = typed.exit_code, typed.stdout, typed.stderr
    one = CliRunner().invoke(app, ["search", "staging cluster" + ("" if fast else " -x"), "--limit", "5"])

    assert (code, err) == (one.exit_code, "") and out == one.stdout
    assert code == 0 and "Staging cluster" in out


@pytest.mark.parametrize("args", [
    ["pytest"], ["pytest", "--json"], ["zzzz"], ["tea", "--type", "bogus"], ["deploy", "--limit", "1"],
    ["deploy", "--limit=1", "--json"], ["--bank", "_user", "tea"], ["deploy", "--type=project", "--reindex"],
    ["\"staging cluster\""], ["the"], ["deploy", "--bank", "/nowhere/relative/../x"],
    ["staging", "cluster"], ["staging", "--limit", "1", "cluster", "--json"], ["zzzz", "yyyy"],
])
def test_search_runs_before_typer_and_prints_what_typer_s_command_does(layout: Layout, project: Path,
                                                                       args: list[str]) -> None:
    """issue 29: ``sandman search`` is parsed and run without typer and pydantic (95 % of its time),
    with the same output, errors and exit status as typer's command."""
    from helpers import imported, sandman

    typed = CliRunner().invoke(app, ["search", *args])
    done = sandman("search", *args)
    assert (done.returncode, done.stdout.decode(), done.stderr.decode()) == (typed.exit_code, typed.stdout,
                                                                              typed.stderr)
    assert not {name.split(".")[0] for name in imported("search", *args)} & {"typer", "click", "pydantic"}


@pytest.mark.parametrize("args", [["deploy", "--limit", "x"], ["deploy", "--json=1"], ["--limit"],
                                  ["deploy", "--limit", "1", "--limit", "2"], ["deploy", "--nope"]])
def test_search_shapes_the_fast_parser_is_unsure_of_go_to_typer(args: list[str]) -> None:
    from sandman import dispatch

    assert dispatch.parse_search(args) is None


def test_regression_two_processes_rebuilding_the_index_at_once_both_succeed(layout: Layout) -> None:
    """A prompt hook's detached refresh and a search rebuilt a missing index at the same time: one
    replaced the file under the other's journal, which failed with "disk I/O error" (exit 1)."""
    import subprocess

    for n in range(30):
        remember(layout, f"Fact {n} about the billing ledger kept in integer cents.", cwd="/tmp/ledger")
    failures = []
    for _ in range(8):
        layout.search_index.unlink(missing_ok=True)
        runs = [subprocess.Popen([sys.executable, "-m", "sandman.recall.index"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE) for _ in range(4)]
        failures += [run.communicate() + (run.returncode,) for run in runs if run.wait() != 0]
    assert failures == []
    journals = "".join(path.read_text() for path in (layout.root / ".trace").glob("recall-*.log"))
    assert "index-refreshed" in journals and " failed " not in journals


def test_regression_a_test_name_over_40_characters_was_no_word_to_search_for(layout: Layout, project: Path) -> None:
    remember(layout, "test_search_refuses_query_without_meaningful_word fails on CI", cwd=str(project))
    expected = [hit.file for hit in search(layout, "meaningful")]
    assert len(expected) == 1
    assert files(search(layout, "test_search_refuses_query_without_meaningful_word"))[0] == expected[0]
    done = CliRunner().invoke(app, ["search", "test_search_refuses_query_without_meaningful_word"])
    assert done.exit_code == 0, done.stderr
    assert "fails on CI" in done.stdout
