"""``sandman remember``: the in-session path, from a real shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git, sandman
from sandman.banks.memory import read_memory
from sandman.verbs.remember import derive_description, derive_name


def test_remember_from_a_shell_lands_a_reviewable_memory(layout, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    done = sandman("remember", "Deploys go through `make release`. Never push tags by hand.", cwd=project)
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.decode().strip())
    assert path.parent.parent == layout.memories
    memory = read_memory(path)
    assert memory.name == "Deploys go through `make release`. Never push tags by hand."
    assert memory.description == "Deploys go through `make release`."
    assert memory.source == ["remember"] and memory.witnesses == []
    log = git(layout.root, "log", "-p", "-1")
    assert "remember: Deploys go through" in log and "Verb: remember" in log
    assert "+Deploys go through `make release`. Never push tags by hand." in log
    assert git(layout.root, "status", "--porcelain") == ""


def test_remember_options_and_stdin(layout, tmp_path: Path) -> None:
    done = sandman(
        "remember", "-", "--cwd", str(tmp_path), "--type", "feedback", "--name", "Terse answers",
        "--description", "Keep answers short", "--session", "s-1", stdin=b"The user wants short answers.\n",
    )
    assert done.returncode == 0, done.stderr
    memory = read_memory(Path(done.stdout.decode().strip()))
    assert (memory.type, memory.name, memory.description) == ("feedback", "Terse answers", "Keep answers short")
    assert "Session: s-1" in git(layout.root, "log", "-1", "--format=%B")


def test_user_memory_goes_to_the_user_wide_bank(layout, tmp_path: Path) -> None:
    done = sandman("remember", "Prefers British spelling.", "--type", "user", "--cwd", str(tmp_path))
    assert Path(done.stdout.decode().strip()).parent == layout.bank("_user")


def test_remembering_the_same_text_twice_commits_once(layout, tmp_path: Path) -> None:
    first = sandman("remember", "Same fact.", "--cwd", str(tmp_path))
    second = sandman("remember", "Same fact.", "--cwd", str(tmp_path))
    assert first.stdout == second.stdout
    assert git(layout.root, "rev-list", "--count", "HEAD").strip() == "2"  # init + one


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["remember", ""], "sandman: memory body is empty\n"),
        (["remember", "x" * 70_000], "sandman: memory body is 70,000 bytes; the limit is 65,536 (64 KiB)\n"),
        (["remember", "x", "--type", "opinion"],
         "sandman: type 'opinion' is unknown; use one of user, feedback, project, reference\n"),
        (["remember", "x", "--cwd", "relative/dir"],
         "sandman: directory 'relative/dir' is relative; give an absolute path\n"),
        (["remember", "key AKIAUJZDE8GXD6NCF10E here"],
         "sandman: memory refused: it contains a secret (aws-access-key-id); "
         "remove the credential and remember the fact without it\n"),
        # --session was not checked: a path or a 200-character id went into the commit trailer.
        (["remember", "x", "--session", "../../etc"],
         "sandman: session id '../../etc' holds characters a file name cannot carry\n"),
        (["remember", "x", "--session", "a" * 200], "sandman: session id is 200 characters; the limit is 128\n"),
        (["remember", "x", "--session", ""], "sandman: session id '' is missing or not a string\n"),
    ],
)


def test_bad_input_is_one_line_exit_2_nothing_written(layout, tmp_path: Path, args: list[str], message: str) -> None:
    done = sandman(*args, cwd=tmp_path)
    assert (done.returncode, done.stderr.decode(), done.stdout) == (2, message, b"")
    assert not any(layout.memories.glob("*/*.md")) if layout.memories.exists() else True


def test_non_utf8_argument_is_refused(layout, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandman", "remember", b"caf\xe9 au lait"],
        capture_output=True, cwd=tmp_path, env=os.environ,
    )
    assert done.returncode == 2
    assert done.stderr == b"sandman: body is not valid UTF-8; pass text in UTF-8\n"


def test_relative_root_is_refused(tmp_path: Path) -> None:
    done = sandman("remember", "x", env={"SANDMAN_ROOT": "rel/root"}, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == b"sandman: SANDMAN_ROOT='rel/root' is relative; set it to an absolute path\n"
    assert not (tmp_path / "rel").exists()


def test_unwritable_root_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = sandman("remember", "x", env={"SANDMAN_ROOT": str(blocker / "root")}, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.decode().startswith("sandman: ") and done.stderr.count(b"\n") == 1


@pytest.mark.parametrize(
    ("body", "name", "description"),
    [
        ("# Heading\nrest", "Heading", "# Heading rest"),
        ("One. Two.", "One. Two.", "One."),
        ("word " * 40, ("word " * 12).strip(), ("word " * 40).strip()[:149] + "…"),
    ],
)


def test_derived_name_and_description(body: str, name: str, description: str) -> None:
    assert derive_name(body) == name
    assert derive_description(body) == description


def test_a_body_of_exactly_64_kib_is_accepted(layout, tmp_path: Path) -> None:
    done = sandman("remember", "-", "--cwd", str(tmp_path), "--name", "Big", stdin=b"x" * 65_536)
    assert done.returncode == 0, done.stderr


def test_remember_help_shows_plain_metavars_not_braces() -> None:
    from typer.testing import CliRunner

    from sandman.cli import app

    for command, usage in ((["remember"], "Usage: sandman remember [OPTIONS] BODY"),
                           (["take"], "Usage: sandman take [OPTIONS] [SESSION]"),
                           (["forget"], "Usage: sandman forget [OPTIONS] [SESSION]")):
        done = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
        assert done.exit_code == 0
        assert usage in done.output
        assert "{" not in done.output
    text = CliRunner().invoke(app, ["remember", "--help"], env={"COLUMNS": "200"}).output
    assert "--cwd DIR" in text and "--session ID" in text and "--cwd <str>" not in text


def test_identical_remembers_at_once_write_one_file(layout, tmp_path: Path) -> None:
    """Six identical remembers in parallel left two or four copies: the duplicate check ran outside the lock."""
    processes = [subprocess.Popen([sys.executable, "-m", "sandman", "remember", "Raced fact.", "--cwd", str(tmp_path)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ) for _ in range(6)]
    outputs = {process.communicate(timeout=120)[0] for process in processes}
    assert len(outputs) == 1
    bank = Path(outputs.pop().decode().strip()).parent
    assert [p.name for p in bank.glob("project_*.md")] == ["project_raced_fact.md"]


def test_a_cwd_that_is_not_utf8_is_one_line_exit_2(layout, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "sandman", "remember", "x", "--cwd", b"/tmp/\xff\xfe"],
                          capture_output=True, env=os.environ, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, b"sandman: --cwd is not valid UTF-8; pass text in UTF-8\n")


def test_a_huge_stdin_is_refused_without_reading_it_all(layout, tmp_path: Path) -> None:
    done = sandman("remember", "-", "--cwd", str(tmp_path), stdin=b"x" * (8 << 20))
    assert done.returncode == 2
    assert done.stderr == b"sandman: memory body on stdin is over 131,072 bytes; the limit is 65,536 (64 KiB)\n"


def test_a_body_from_a_closed_stdin_is_refused_as_empty_in_one_line(layout, tmp_path: Path) -> None:
    # fd 0 closed before Python starts: sys.stdin is None, and there is no body to read.
    done = subprocess.run([sys.executable, "-m", "sandman", "remember", "-", "--cwd", str(tmp_path)],
                          capture_output=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=None, env=os.environ, preexec_fn=lambda: os.close(0))
    assert done.returncode == 2
    assert done.stderr.startswith(b"sandman: ") and done.stderr.count(b"\n") == 1, done.stderr
    assert not layout.memories.exists() or not list(layout.memories.rglob("project_*.md"))


@pytest.mark.parametrize(("args", "body"), [
    (["- Use uv, not pip"], "- Use uv, not pip"),
    (["--cwd", "{dir}", "--verbose must be passed to claude -p"], "--verbose must be passed to claude -p"),
    (["-----BEGIN NOTES----- port 7000", "--cwd", "{dir}"], "-----BEGIN NOTES----- port 7000"),
    (["--name", "- a dashed name", "--cwd", "{dir}", "- the body"], "- the body"),
])
def test_a_body_starting_with_a_dash_is_the_body_not_an_option(layout, tmp_path: Path, args: list[str],
                                                                 body: str) -> None:
    done = sandman("remember", *(a.replace("{dir}", str(tmp_path)) for a in args), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, b"")
    assert read_memory(Path(done.stdout.decode().strip())).body.strip() == body


def test_a_misspelt_option_is_still_an_error_not_a_body(layout, tmp_path: Path) -> None:
    done = sandman("remember", "--tpye", "user", "A fact.", "--cwd", str(tmp_path))
    assert done.returncode == 2 and b"No such option: --tpye" in done.stderr
    assert not layout.memories.exists() or not any(layout.memories.rglob("*.md"))


def test_a_nul_in_the_body_is_refused_not_silently_removed(layout, tmp_path: Path) -> None:
    """Issue 20, fault 7: a NUL in a body read from stdin was removed and the rest committed,
    changing what the person asked to remember without a word."""
    done = sandman("remember", "-", "--cwd", str(tmp_path), stdin=b"Ports: 80\x00443 are open.\n")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr == (b"sandman: body holds a NUL character (byte 0), which a memory file cannot keep; "
                           b"remove it and remember again\n")
    assert not layout.memories.exists() or not [p for p in layout.memories.rglob("*.md")]  # nothing written


# A credential in --session or --cwd went into the Session: trailer, the source: line, the bank's
# folder name, MEMORY.md and commit paths: the secrets ban read only the body, name and description.
GITHUB_TOKEN = "ghp_" + "k3Xq9ZrT2vLm8NpB4wYc7HdF1sGj6aEu0oQi"
AWS_KEY_ID = "AKIA" + "UJZDE8GXD6NCF10E"


@pytest.mark.parametrize(
    "args",
    [
        ["remember", "harmless fact3", "--session", GITHUB_TOKEN],
        ["remember", "harmless fact4", "--cwd", "/tmp/" + AWS_KEY_ID],
    ],
    ids=["session", "cwd"],
)
def test_a_secret_in_session_or_cwd_is_refused_not_committed(layout, tmp_path: Path, args: list[str]) -> None:
    done = sandman(*args, cwd=tmp_path)
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.startswith("sandman: ") and err.count("\n") == 1 and "secret" in err
    assert GITHUB_TOKEN not in err and AWS_KEY_ID not in err
    if layout.memories.exists():
        assert not any(layout.memories.glob("*/*.md"))
        assert not any(AWS_KEY_ID in p.name for p in layout.memories.iterdir())
    if (layout.root / ".git").exists():
        log = git(layout.root, "log", "--all", "--format=%B", "--name-only")
        assert GITHUB_TOKEN not in log and AWS_KEY_ID not in log


# --- issue 29: a remember costs what its bank holds, not what the root holds ---------------------


def test_regression_remember_scanned_the_whole_root_for_hand_edits(layout, tmp_path: Path) -> None:
    """A remember looked at every file of the root (two whole-tree ``status`` scans), so its cost
    grew with the root. It now recovers its own bank alone: a hand edit in another bank is left for
    the next transaction without a scope, which commits it as ``recover`` as before."""
    from sandman.banks.commit import commit_memory, settle
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name

    mine, other = tmp_path / "mine", tmp_path / "other"
    commit_memory(layout, Memory(name="Other fact", description="d.", type="project", body="B.\n"),
                  directory=str(other), verb="remember")
    edited = layout.bank(bank_name(other)) / "project_other_fact.md"
    edited.write_text(edited.read_text() + "Edited by hand.\n")
    done = sandman("remember", "A fact of mine.", "--cwd", str(mine))
    assert done.returncode == 0, done.stderr
    assert git(layout.root, "log", "--format=%s", "-1") == "remember: A fact of mine.\n"
    assert git(layout.root, "show", "--name-only", "--format=", "HEAD").split() == [
        f"memories/{bank_name(mine)}/MEMORY.md", f"memories/{bank_name(mine)}/project_a_fact_of_mine.md"]
    assert git(layout.root, "status", "--porcelain") == f" M {edited.relative_to(layout.root).as_posix()}\n"
    assert settle(layout) is not None  # the next unscoped transaction commits the hand edit on its own
    assert git(layout.root, "log", "--format=%s", "-1") == "recover: commit changes left in the working tree\n"
    assert git(layout.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("edit", ["changed", "deleted", "added", "index"])
def test_a_hand_edit_in_the_bank_a_remember_writes_is_recovered_first(layout, tmp_path: Path, edit: str) -> None:
    """The guarantee the whole-root recovery gave a remember holds for its own bank: a change left
    there (a memory changed, deleted or added by hand, MEMORY.md edited) is committed as ``recover``
    before the remember, and MEMORY.md lists what the folder holds (a hand edit of MEMORY.md alone
    is undone by its regeneration, as the whole-root recovery did: nothing is left to recover)."""
    from sandman.banks.index import render_index
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name

    project = tmp_path / "proj"
    assert sandman("remember", "First fact.", "--cwd", str(project)).returncode == 0
    bank = layout.bank(bank_name(project))
    first = bank / "project_first_fact.md"
    if edit == "changed":
        first.write_text(first.read_text().replace("First fact.\n", "First fact, edited.\n"))
    elif edit == "deleted":
        first.unlink()
    elif edit == "added":
        (bank / "project_by_hand.md").write_text(
            Memory(name="By hand", description="Typed.", type="project", body="Typed.\n").text())
    else:
        (bank / "MEMORY.md").write_text((bank / "MEMORY.md").read_text() + "- a line by hand\n")
    done = sandman("remember", "Second fact.", "--cwd", str(project))
    assert done.returncode == 0, done.stderr
    before = "remember: First fact." if edit == "index" else "recover: commit changes left in the working tree"
    assert git(layout.root, "log", "--format=%s", "-2").splitlines() == ["remember: Second fact.", before]
    assert git(layout.root, "status", "--porcelain") == ""
    assert (bank / "MEMORY.md").read_text() == render_index(bank)


def test_remember_imports_neither_the_machine_nor_the_minds(layout) -> None:
    """A plain remember (no ``$SANDMAN_SHIFT``) loads what it writes with: not the shift machinery,
    the minds, sync, or the full secrets scan for plain words (issue 29: each was part of its start;
    the scan loaded because every memory file's ``created`` time looked like a token to the
    pre-check)."""
    probe = ("import sys\nfrom sandman import __main__\n"
             "__main__._leave = sys.exit  # the process ends with os._exit: a SystemExit here, to look\n"
             "try:\n    __main__.main(['remember', 'A fact.', '--cwd', sys.argv[1]])\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith(('sandman.machine', 'sandman.minds', "
             "'sandman.store.sync', 'typer', 'pydantic', 'betterleaks'))))")
    # The root's creation scans the files it adopts; the remembers after it are what is measured.
    assert sandman("remember", "The first fact.", "--cwd", "/home/user/src/project").returncode == 0
    # A plain directory: pytest's tmp_path (``pytest-12/test_x_0``) holds runs the pre-check flags.
    done = subprocess.run([sys.executable, "-c", probe, "/home/user/src/project"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_added_lines_of_the_paths_a_commit_changes_are_those_of_its_tree_diff(tmp_path: Path) -> None:
    """The secrets vet of a commit reads the lines each changed path adds (``added_lines_of``); it
    must read exactly what sync's pre-push scan reads of the commit (``tree_added_lines``): new,
    changed and deleted files, a file without a final newline, bytes that are not UTF-8."""
    import random

    import pygit2

    from sandman.store.repo import added_lines_of, tree_added_lines

    repo = pygit2.init_repository(str(tmp_path / "r"))
    person = pygit2.Signature("t", "t@example.invalid")
    rng, parent = random.Random(29), None
    for _ in range(80):
        changed = []
        for _ in range(rng.randint(1, 4)):
            name = f"d{rng.randint(0, 2)}/f{rng.randint(0, 6)}.md"
            path = tmp_path / "r" / name
            if rng.random() < 0.2 and path.exists():
                path.unlink()
            else:
                path.parent.mkdir(exist_ok=True)
                lines = [rng.choice(["a", "b", "ç é", "x" * rng.randint(1, 5), "last"]) for _ in range(rng.randint(0, 5))]
                data = ("\n".join(lines) + ("\n" if rng.random() < 0.7 else "")).encode()
                path.write_bytes(data + (b"\xff\xfe" if rng.random() < 0.1 else b""))
            changed.append(name)
        index = repo.index
        for name in changed:
            if (tmp_path / "r" / name).exists():
                index.add(name)
            elif name in index:
                index.remove(name)
        index.write()
        tree = repo[index.write_tree()]
        old = repo[parent].tree if parent else None
        assert sorted(added_lines_of(repo, old, tree, changed)) == sorted(tree_added_lines(repo, old, tree))
        parent = repo.create_commit("HEAD", person, person, "m", tree.id, [parent] if parent else [])


def test_a_cwd_naming_a_file_is_refused_not_made_a_bank(layout, tmp_path: Path) -> None:
    # A tester's `--cwd /etc/passwd` made a bank `-etc-passwd` without a word.
    afile = tmp_path / "notes.txt"
    afile.write_text("x\n")
    done = sandman("remember", "a fact", "--cwd", str(afile), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode() == (f"sandman: --cwd '{afile}' is a file, not a directory; "
                                    "give the directory the memory is about\n")
    assert not layout.memories.exists() or not any(layout.memories.glob("*/*.md"))


def test_a_stdout_that_fails_after_the_commit_says_so_in_one_line(layout, tmp_path: Path) -> None:
    # The path printed after the commit raised a traceback and exit 1 when stdout was /dev/full:
    # the user read a failure for a memory that was committed.
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "sandman", "remember", "Deploys go through make release"],
                              stdout=full, stderr=subprocess.PIPE, cwd=tmp_path, env=os.environ, timeout=120)
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err
    assert err.startswith("sandman: the memory is committed (") and err.count("\n") == 1
    assert "remember: Deploys go through make release" in git(layout.root, "log", "--format=%s")


def test_a_reader_gone_before_the_path_is_printed_is_no_failure(layout, tmp_path: Path) -> None:
    # `sandman remember … | true`: the pipe's reader is gone before the path is written.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run([sys.executable, "-m", "sandman", "remember", "Release tags are signed"],
                              stdout=writer, stderr=subprocess.PIPE, cwd=tmp_path, env=os.environ, timeout=120)
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (0, b"")
    assert "remember: Release tags are signed" in git(layout.root, "log", "--format=%s")


def test_an_error_with_stderr_closed_never_lands_on_stdout(layout, tmp_path: Path) -> None:
    # With stderr closed, print(file=sys.stderr) wrote the error to stdout, where a caller reads the path.
    done = subprocess.run([sys.executable, "-m", "sandman", "remember", "x", "--type", "bogus"],
                          stdout=subprocess.PIPE, cwd=tmp_path, env=os.environ, timeout=120,
                          preexec_fn=lambda: os.close(2))
    assert (done.returncode, done.stdout) == (2, b"")


def test_an_error_with_a_full_stderr_keeps_its_exit_status(layout, tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "sandman", "remember", ""], stdout=subprocess.PIPE,
                              stderr=full, cwd=tmp_path, env=os.environ, timeout=120)
    assert (done.returncode, done.stdout) == (2, b"")
