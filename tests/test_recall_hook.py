"""``sandman recall --hook`` as Claude Code runs it: a real subprocess fed the corpus's payloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import sandman
from sandman import config
from sandman.layout import Layout
from sandman.verbs.remember import remember

# Sources that get the whole surface; resume and fork keep theirs in context.
STARTS = ("startup.full", "startup.doc", "clear", "compact", "startup.live-2.1.332", "compact.live-2.1.332")


def payload(corpus: Path, kind: str, **fields: object) -> bytes:
    """A corpus SessionStart payload with some fields replaced (the corpus itself is read-only)."""
    data = json.loads((corpus / "hooks" / f"session-start.{kind}.json").read_text())
    data.update(fields)
    return json.dumps(data).encode()


def journal(layout: Layout) -> str:
    return "".join(p.read_text() for p in sorted(layout.trace.glob("recall-*.log")))


@pytest.fixture
def project(layout: Layout, isolated: Path) -> Path:
    project = isolated / "proj"
    remember(layout, "The project builds with make.\nRun make test before pushing.", cwd=str(project))
    remember(layout, "Prefers short answers.", memory_type="user")
    return project


@pytest.mark.parametrize("kind", STARTS)
def test_session_start_gets_the_json_claude_code_expects(layout, corpus, project, kind) -> None:
    done = sandman("recall", "--hook", stdin=payload(corpus, kind, cwd=str(project)))
    assert done.returncode == 0 and done.stderr == b""
    reply = json.loads(done.stdout)
    assert list(reply) == ["hookSpecificOutput"]
    assert list(reply["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert reply["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert "Run make test before pushing." in context and "Prefers short answers." in context
    assert len(context.encode("utf-16-le")) // 2 <= config.RECALL_BUDGET_UTF16
    assert "recall recalled hook=true" in journal(layout)


def test_the_reply_matches_the_documented_output_shape(corpus) -> None:
    documented = json.loads((corpus / "hooks" / "session-start.output.minimal.json").read_text())
    assert set(documented["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}


def test_regression_compaction_dropped_the_recall(layout, corpus, project) -> None:
    # After /compact only what the compact hook returns survives: the live 2.1.332 payload gets the surface.
    live = json.loads((corpus / "hooks" / "session-start.compact.live-2.1.332.json").read_text())
    live["cwd"] = str(project)
    done = sandman("recall", "--hook", stdin=json.dumps(live).encode())
    assert done.returncode == 0
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(f"# sandman recall: {project}")
    assert "Run make test before pushing." in context and "Prefers short answers." in context
    assert "source=compact" in journal(layout)


@pytest.mark.parametrize("kind", ["resume", "resume.live-2.1.332", "fork"])
def test_a_resumed_session_is_not_given_the_surface_twice(layout, corpus, project, kind) -> None:
    done = sandman("recall", "--hook", stdin=payload(corpus, kind, cwd=str(project)))
    assert done.returncode == 0
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("sandman: this session continues; its memory surface is already in its context")
    assert f"{project}: 2 memories" not in context and f"{project}: 1 memory" in context
    assert "user-wide: 1 memory" in context
    assert "Run make test before pushing." not in context


@pytest.mark.parametrize("event", ["SessionEnd", "UserPromptSubmit", 7])
def test_a_payload_of_another_event_gets_no_surface(layout, corpus, project, event) -> None:
    done = sandman("recall", "--hook", stdin=payload(corpus, "startup.full", cwd=str(project),
                                                     hook_event_name=event))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "reason=not-session-start" in journal(layout)


@pytest.mark.parametrize("data", [b"", b"\xff\xfe{not json", b"[1, 2]", b'"text"', b"{\"cwd\": "])
def test_an_unreadable_payload_prints_nothing_and_is_journaled(layout, project, data) -> None:
    done = sandman("recall", "--hook", stdin=data)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "reason=unreadable-payload" in journal(layout)


@pytest.mark.parametrize("cwd", [None, "relative/dir", 42])
def test_a_payload_without_an_absolute_cwd_prints_nothing(layout, corpus, project, cwd) -> None:
    data = json.loads((corpus / "hooks" / "session-start.minimal.json").read_text())
    if cwd is not None:
        data["cwd"] = cwd
    done = sandman("recall", "--hook", stdin=json.dumps(data).encode())
    assert (done.returncode, done.stdout) == (0, b"")
    assert "reason=no-cwd session=abc-123" in journal(layout)


def test_a_payload_without_cwd_recalls_for_claude_project_dir(layout, corpus, project, monkeypatch) -> None:
    """The corpus's minimal payload has no cwd; Claude Code gives every hook $CLAUDE_PROJECT_DIR."""
    sandman("remember", "Builds run with make.", "--cwd", str(project))
    data = (corpus / "hooks" / "session-start.minimal.json").read_bytes()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    done = sandman("recall", "--hook", stdin=data)
    text = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert done.returncode == 0 and "Builds run with make." in text
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", "relative/dir")
    assert sandman("recall", "--hook", stdin=data).stdout == b""


def test_a_missing_root_prints_nothing_and_is_journaled(layout, corpus, tmp_path: Path) -> None:
    done = sandman("recall", "--hook", stdin=payload(corpus, "startup.full", cwd=str(tmp_path)))
    assert (done.returncode, done.stdout) == (0, b"")
    assert "reason=no-root" in journal(layout)
    assert not layout.memories.exists()


def test_inside_the_pipeline_recall_is_silent(layout, corpus, project) -> None:
    done = sandman("recall", "--hook", stdin=payload(corpus, "startup.full", cwd=str(project)),
                   env={config.PIPELINE_ENV: "1"})
    # hook.py leaves before reading anything: minds are memory-blind, and quiet.
    assert (done.returncode, done.stdout) == (0, b"")
    assert journal(layout) == ""


def test_a_broken_bank_file_never_breaks_the_hook(layout, corpus, project) -> None:
    from sandman.banks.names import bank_name

    bank = layout.bank(bank_name(project))
    (bank / "MEMORY.md").write_bytes(b"---\nname: x\n---\n\n- [Broken](project_gone.md) \xff\xfe\n")
    done = sandman("recall", "--hook", stdin=payload(corpus, "startup.full", cwd=str(project)))
    assert done.returncode == 0
    assert "- [Broken](project_gone.md)" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


# --- import weight -----------------------------------------------------------

def modules(*args: str, stdin: bytes = b"") -> set[str]:
    """The top-level packages ``sandman <args>`` imports."""
    from helpers import imported

    return {name.split(".")[0] for name in imported(*args, stdin=stdin)}


def test_the_recall_hook_imports_nothing_heavy(layout, corpus, project) -> None:
    loaded = modules("recall", "--hook", stdin=payload(corpus, "startup.full", cwd=str(project)))
    assert "sandman" in loaded
    heavy = {"typer", "click", "pygit2", "jinja2", "markdown_it", "rich", "yaml", "mcp", "pydantic", "betterleaks"}
    assert loaded.isdisjoint(heavy), loaded & heavy


def test_help_imports_neither_the_site_nor_git_nor_the_mcp_sdk() -> None:
    loaded = modules("--help")
    assert loaded.isdisjoint({"pygit2", "jinja2", "markdown_it", "rich", "mcp", "pydantic"}), loaded


# --- by hand -----------------------------------------------------------------


def test_recall_by_hand_prints_the_surface(layout, project) -> None:
    done = sandman("recall", "--cwd", str(project), "--budget", "5000")
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    assert text.startswith(f"# sandman recall: {project}\n") and "Run make test before pushing." in text


def test_recall_by_hand_defaults_to_the_current_directory(layout, project) -> None:
    project.mkdir(parents=True, exist_ok=True)
    done = sandman("recall", cwd=project)
    assert done.returncode == 0 and f"# sandman recall: {project}\n" in done.stdout.decode()


@pytest.mark.parametrize(("args", "message"), [
    (("--budget", "0"), "sandman: budget 0 is not a positive number of UTF-16 code units\n"),
    (("--cwd", "rel/dir"), "sandman: directory 'rel/dir' is relative; give an absolute path\n"),
])
def test_recall_by_hand_refuses_bad_input_in_one_line(layout, args, message) -> None:
    done = sandman("recall", *args)
    assert (done.returncode, done.stderr.decode(), done.stdout) == (2, message, b"")


def test_the_typer_command_routes_hook_to_the_hook_entry_point(layout, corpus, project) -> None:
    from typer.testing import CliRunner

    from sandman.cli import app

    result = CliRunner().invoke(app, ["recall", "--hook"], input=payload(corpus, "clear", cwd=str(project)))
    assert result.exit_code == 0
    assert json.loads(result.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_a_cwd_with_a_lone_surrogate_is_skipped_not_a_crash(layout, project) -> None:
    sandman("remember", "Anything.", "--cwd", str(project))
    done = sandman("recall", "--hook",
                   stdin=b'{"session_id": "a", "hook_event_name": "SessionStart", "cwd": "/tmp/\\ud800x"}')
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "recall skipped hook=true reason=no-cwd session=a" in journal(layout)


def test_json_nested_too_deep_is_an_unreadable_payload_not_a_crash(layout, project) -> None:
    sandman("remember", "Anything.", "--cwd", str(project))
    done = sandman("recall", "--hook", stdin=b'{"a":' * 100_000)
    assert (done.returncode, done.stdout) == (0, b"")
    assert "reason=unreadable-payload" in journal(layout) and "crashed" not in journal(layout)
