"""``sandman search``: the FTS5 index over every live memory (docs/search.md)."""

from __future__ import annotations

import json
import os
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
    assert files(search(layout, "tea's")) == []


def test_search_refuses_a_query_without_words(layout: Layout, project: Path) -> None:
    with pytest.raises(InputError, match=r"search query '\"\"' has no words in it; give at least one word"):
        search(layout, '""')


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


def test_search_on_an_empty_root_finds_nothing(layout: Layout) -> None:
    assert search(layout, "anything") == []


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
        assert "has no words in it" in json.loads(refused.value.read())["error"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_forget_deletes_the_search_index_with_the_memories(layout: Layout, isolated: Path) -> None:
    from sandman.verbs.forget import forget

    sid = "5e550000-0000-4000-8000-00000000f019"
    remember(layout, "The zeppelin code word is blue.", cwd=str(isolated / "p"), session=sid)
    assert files(search(layout, "zeppelin")) == ["project_the_zeppelin_code_word_is_blue.md"]
    forget(layout, sid, memories=True)
    assert not layout.search_index.exists()
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
