"""The fast paths import nothing heavy (STYLE.md, "The CLI boundary")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("pygit2", "jinja2", "markdown_it", "rich", "typer", "yaml", "betterleaks")
# Each costs a hook start milliseconds (dataclasses pulls in inspect, about 9 ms).
SLOW_STDLIB = ("dataclasses", "inspect", "typing")

def loaded(*args: str, stdin: bytes = b"", watch: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of the packages in ``watch`` that ``sandman <args>`` imports."""
    from helpers import imported

    return sorted(m for m in imported(*args, stdin=stdin) if m.split(".")[0] in watch)


def test_help_imports_no_git_site_or_terminal_libraries() -> None:
    heavy = set(loaded("--help"))
    assert heavy.isdisjoint({"pygit2", "jinja2", "markdown_it", "rich", "betterleaks"}), heavy


def test_take_hook_imports_nothing_heavy() -> None:
    assert loaded("take", "--hook", stdin=b"{}") == []


def test_hook_with_other_arguments_is_refused_not_run_as_a_hook(tmp_path) -> None:
    from helpers import sandman

    done = sandman("take", "--all", "--hook", stdin=b"{}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2, b"sandman: take --all takes no session id, --force, --transcript or --hook\n")
    done = sandman("recall", "--hook", "--budget", "10", stdin=b"{}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2, b"sandman: recall --hook reads its cwd from stdin; it takes no --cwd or --budget\n")


def test_both_hooks_on_their_working_paths_import_no_slow_standard_modules(tmp_path, layout) -> None:
    from hardening import transcript
    from helpers import sandman

    assert sandman("init").returncode == 0
    sid = "6f1c2d3e-0000-4000-8000-000000000001"
    live = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-tmp-p" / f"{sid}.jsonl"
    live.parent.mkdir(parents=True)
    live.write_bytes(transcript(sid, str(tmp_path), "2026-11-30T10:00:00Z", "keep the port at 7000"))
    payload = {"session_id": sid, "transcript_path": str(live), "cwd": str(tmp_path), "reason": "clear"}

    assert loaded("take", "--hook", stdin=json.dumps(payload).encode(), watch=SLOW_STDLIB) == []
    assert layout.pointer(sid).is_file() and layout.take_record(sid).is_file()  # the take ran to its end
    stdin = json.dumps({"session_id": "s", "cwd": str(tmp_path), "source": "startup"}).encode()
    assert loaded("recall", "--hook", stdin=stdin, watch=SLOW_STDLIB) == []


# Typer imports pydantic for the first parameter it processes: these run before it (sandman/dispatch.py).
PARSER_LIBRARIES = ("typer", "click", "pydantic")


def test_remember_imports_neither_typer_nor_pydantic(tmp_path, layout) -> None:
    assert loaded("remember", "Deploys go through the release script.", "--cwd", str(tmp_path),
                  watch=PARSER_LIBRARIES) == []
    assert len(list(layout.memories.rglob("project_deploys_go_through_the_release_script.md"))) == 1


def test_a_plain_remember_into_a_bank_named_with_digits_loads_no_secret_rules(layout) -> None:
    """A directory of letters and digits (``/srv/app-2024/api-v2``) is cleared by the pre-check for
    paths: the rule set (70 ms) loads for a remember that carries something to check, not for every
    remember into such a bank (issue 29)."""
    from helpers import sandman

    assert sandman("remember", "The first memory makes the bank.", "--cwd", "/srv/app-2024/api-v2").returncode == 0
    modules = loaded("remember", "Deploys go through the release script.", "--cwd", "/srv/app-2024/api-v2",
                     watch=("betterleaks", "sandman"))
    assert "sandman.banks.remember" not in modules and "sandman.verbs.remember" in modules  # it ran
    assert "sandman.banks.secret_rules" not in modules and not [m for m in modules if m.startswith("betterleaks")]
    assert len(list(layout.memories.rglob("project_deploys_go_through_the_release_script.md"))) == 1


def test_a_command_help_page_imports_no_pydantic() -> None:
    from sandman.cli import app

    for command in app.registered_commands:
        name = command.name or command.callback.__name__
        assert loaded(name, "--help", watch=("pydantic",)) == [], name
    assert loaded("hooks", "install", "--help", watch=("pydantic",)) == []


def test_help_pages_before_typer_are_typers_own() -> None:
    from helpers import sandman

    through_typer = "import sys\nfrom sandman.cli import app\napp(args=sys.argv[1:], prog_name='sandman')"
    env = {**os.environ, "COLUMNS": "100"}
    for args in (["remember"], ["recall"], ["take"], ["hooks"], ["hooks", "install"], ["report", "serve"]):
        typer_page = subprocess.run([sys.executable, "-c", through_typer, *args, "--help"], capture_output=True,
                                    env=env)
        assert (typer_page.returncode, typer_page.stderr) == (0, b"")
        assert sandman(*args, "--help", env={"COLUMNS": "100"}).stdout == typer_page.stdout, args


def _typer_page(*args: str, columns: str) -> bytes:
    through_typer = "import sys\nfrom sandman.cli import app\napp(args=sys.argv[1:], prog_name='sandman')"
    done = subprocess.run([sys.executable, "-c", through_typer, *args, "--help"], capture_output=True,
                          env={**os.environ, "COLUMNS": columns})
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout


def test_kept_help_pages_are_typers_own_at_each_width(layout) -> None:
    from helpers import sandman

    layout.root.mkdir(parents=True)
    for args in ([], ["remember"], ["hooks", "install"], ["report", "serve"]):
        for columns in ("100", "60"):
            typer_page = _typer_page(*args, columns=columns)
            rendered = sandman(*args, "--help", env={"COLUMNS": columns})
            kept = sandman(*args, "--help", env={"COLUMNS": columns})
            assert rendered.stdout == typer_page, (args, columns)
            assert (kept.returncode, kept.stderr, kept.stdout) == (0, b"", typer_page), (args, columns)
    [sources] = list(layout.help_cache.iterdir())
    assert len(list(sources.iterdir())) == 8


def test_a_kept_help_page_is_served_without_importing_typer(layout) -> None:
    from helpers import sandman

    layout.root.mkdir(parents=True)
    assert sandman("recall", "--help").returncode == 0
    assert loaded("recall", "--help", watch=("typer", "click", "pydantic")) == []


def test_help_pages_kept_for_other_code_are_not_served_and_are_removed(layout) -> None:
    from helpers import sandman

    layout.root.mkdir(parents=True)
    assert sandman("remember", "--help", env={"COLUMNS": "100"}).returncode == 0
    [sources] = list(layout.help_cache.iterdir())
    [page] = list(sources.iterdir())
    stale = layout.help_cache / "0123456789abcdef"
    stale.mkdir()
    (stale / page.name).write_text("a page of another version\n")
    page.unlink()
    assert sandman("remember", "--help", env={"COLUMNS": "100"}).stdout == _typer_page("remember", columns="100")
    assert sorted(p.name for p in layout.help_cache.iterdir()) == [sources.name]


def test_the_help_sources_key_follows_every_source_file(tmp_path, monkeypatch) -> None:
    from sandman import dispatch

    fake = tmp_path / "click"
    (fake / "sub").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "sub" / "formatting.py").write_text("WIDTH = 80\n")
    real = dispatch._package_dir
    monkeypatch.setattr(dispatch, "_package_dir", lambda name: str(fake) if name == "click" else real(name))
    before = dispatch._sources_key()
    assert dispatch._sources_key() == before
    (fake / "sub" / "formatting.py").write_text("WIDTH = 100\n")
    assert dispatch._sources_key() != before
    monkeypatch.setattr(dispatch, "_package_dir", lambda name: None if name == "typer" else real(name))
    assert dispatch._sources_key() is None


def test_help_creates_no_memory_root_and_works_when_the_root_is_a_file(layout) -> None:
    from helpers import sandman

    assert sandman("remember", "--help").stdout.startswith(b"Usage: sandman remember")
    assert not os.path.lexists(layout.root)
    layout.root.parent.mkdir(parents=True, exist_ok=True)
    layout.root.write_text("not a folder")
    done = sandman("remember", "--help")
    assert (done.returncode, done.stdout.startswith(b"Usage: sandman remember")) == (0, True)


def test_shapes_the_dispatcher_is_unsure_of_go_to_typer() -> None:
    from sandman.cli import app
    from sandman.dispatch import help_page, parse_remember

    for args in (["--cwd"], ["a", "b"], ["--bogus", "x", "a"], ["--name", "n", "--name", "m", "a"], ["--", "-x"],
                 ["-x"], []):
        assert parse_remember(args) is None, args
    assert parse_remember(["a body", "--type=user", "--cwd", "/x"]) == {
        "body": "a body", "cwd": "/x", "type_": "user", "name": None, "description": None, "session": None}
    assert help_page(app, ["nosuchverb", "--help"]) is None
    assert help_page(app, ["remember", "x", "--help"]) is None
    assert help_page(app, ["--version", "--help"]) is None


def imported_sandman_modules(module: str) -> set[str]:
    """The sandman modules ``module`` imports anywhere in its source (inside functions too)."""
    import ast

    import sandman

    source = Path(sandman.__file__).parent.parent / (module.replace(".", "/") + ".py")
    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sandman"):
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_hook_take_dream_and_cli_imports_run_one_way() -> None:
    for upper, lower in (("sandman.hook", "sandman.verbs.take"), ("sandman.verbs.dream", "sandman.dream.run"),
                         ("sandman.cli", "sandman.dispatch")):
        assert upper not in imported_sandman_modules(lower), (lower, upper)
    assert "sandman.verbs.dream" not in imported_sandman_modules("sandman.verbs.take")


def test_recall_and_the_archive_sit_below_the_verbs() -> None:
    # Their substance is one floor down (issue 27): nothing there reaches up into sandman.verbs.
    import sandman

    package = Path(sandman.__file__).parent
    for floor in ("recall", "archive"):
        for path in sorted((package / floor).glob("*.py")):
            module = f"sandman.{floor}.{path.stem}"
            if module == "sandman.archive.root":  # makes the root on a first take through the init verb, lazily
                continue
            assert not [name for name in imported_sandman_modules(module) if name.startswith("sandman.verbs")], module


def test_report_hook_with_a_digest_imports_nothing_heavy_or_slow(tmp_path, layout) -> None:
    from helpers import sandman

    assert sandman("init").returncode == 0
    folder = layout.shift_dir("s-20261201T2300Z")
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"id": "s-20261201T2300Z", "repo": "/r", "outcome": "finished"}))
    (folder / "report.md").write_text("# Shift s-20261201T2300Z: r\n")
    stdin = json.dumps({"session_id": "s", "cwd": str(tmp_path), "source": "startup",
                        "hook_event_name": "SessionStart"}).encode()
    assert loaded("report", "--hook", stdin=stdin, watch=HEAVY + SLOW_STDLIB) == []
    assert layout.reports_read.is_file()  # the digest was printed and marked read


def test_the_prompt_and_file_hooks_on_their_working_paths_import_nothing_heavy_or_slow(tmp_path, layout) -> None:
    from sandman.banks import search
    from sandman.verbs.remember import remember

    remember(layout, "Deploys go through make release; src/app/main.py starts it.", cwd=str(tmp_path))
    search.open_index(layout).close()
    prompt = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
              "prompt": "how do I deploy a release?"}
    read = {"session_id": "s2", "cwd": str(tmp_path), "hook_event_name": "PostToolUse", "tool_name": "Read",
            "tool_input": {"file_path": str(tmp_path / "src" / "app" / "main.py")}}
    for flag, payload in (("--prompt-hook", prompt), ("--file-hook", read)):
        assert loaded("recall", flag, stdin=json.dumps(payload).encode(), watch=HEAVY + SLOW_STDLIB) == [], flag
    assert layout.delivered_ledger("s").is_file() and layout.delivered_ledger("s2").is_file()  # both added it
