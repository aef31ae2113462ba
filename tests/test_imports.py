"""The fast paths import nothing heavy (STYLE.md, "The CLI boundary")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("pygit2", "jinja2", "markdown_it", "rich", "typer", "yaml", "detect_secrets")

PROBE = """
import json, sys, runpy
sys.argv = ["sandman", *{args!r}]
try:
    runpy.run_module("sandman", run_name="__main__")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})), file=sys.stderr)
"""


def loaded(*args: str, stdin: bytes = b"") -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=list(args), heavy=HEAVY)],
        input=stdin, capture_output=True, env=os.environ,
    )
    return json.loads(done.stderr.decode().strip().splitlines()[-1])


def test_help_imports_no_git_site_or_terminal_libraries() -> None:
    heavy = set(loaded("--help"))
    assert heavy.isdisjoint({"pygit2", "jinja2", "markdown_it", "rich", "detect_secrets"}), heavy


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
