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

PROBE = """
import json, sys, runpy
sys.argv = ["sandman", *{args!r}]
try:
    runpy.run_module("sandman", run_name="__main__")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})), file=sys.stderr)
"""


def loaded(*args: str, stdin: bytes = b"", watch: tuple[str, ...] = HEAVY) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=list(args), heavy=watch)],
        input=stdin, capture_output=True, env=os.environ,
    )
    return json.loads(done.stderr.decode().strip().splitlines()[-1])


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
    assert layout.pointer(sid).is_file() and not live.exists()  # the take ran to its end
    stdin = json.dumps({"session_id": "s", "cwd": str(tmp_path), "source": "startup"}).encode()
    assert loaded("recall", "--hook", stdin=stdin, watch=SLOW_STDLIB) == []
