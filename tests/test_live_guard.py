"""The shift's profile in the real Claude Code 2.1.332 (docs/shift.md, "The profile"; docs/live-tests.md).

Each session runs with the settings ``shift run`` passes, as ``sandman shift profile <id>`` prints
them (the sandbox, ``dontAsk``, the guard hook), in a shift's worktree whose ``origin`` is a local bare
repository, and the fake Messages API answers with ``tool_use`` blocks of Bash:

- ``git push origin main``: the guard hook denies it, the trail holds the ``guard.deny`` event,
  the remote's ``main`` is where it was, and the model is told why;
- what the guard lets through because it cannot see it (a script file that writes outside the
  worktree; a connection to a local server, direct and through the sandbox's proxy): the sandbox
  (bubblewrap) stops it; a write, a commit and a ``sandman remember`` in the worktree succeed;
- the same profile on a ``PATH`` without ``bwrap``: Claude Code refuses to start.

The first two need ``bwrap`` and ``socat`` (``.ci/run`` installs Debian's ``bubblewrap`` and
``socat``) and skip without them, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import sandman
from live_claude import ToolUse, run_print, tool_results

from sandman.layout import Layout
from sandman.machine import profile as profiles
from sandman.machine import shift as shifts
from sandman.machine import trail as trails
from sandman.verbs.init import init

SHIFT = "s-20261205T0100Z"
GIT_ENV = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@t.invalid", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@t.invalid"}
GIT = ["git", "-c", "user.name=T", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]


def a_shift_in_its_worktree(layout: Layout, tmp_path: Path) -> tuple[Path, Path, str]:
    """A repository with a bare ``origin``, a shift's worktree on ``shift/<id>``, the shift's meta.json;
    returns (worktree, origin, origin's main before)."""
    init(layout)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    repo = tmp_path / "code" / "app"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(GIT + ["-C", str(repo), "add", "a.txt"], check=True)
    subprocess.run(GIT + ["-C", str(repo), "commit", "-q", "-m", "a"], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", str(origin)], check=True)
    subprocess.run(["git", "-C", str(repo), "push", "-q", "origin", "main"], check=True)
    before = subprocess.run(["git", "-C", str(origin), "rev-parse", "main"], capture_output=True, text=True,
                            check=True).stdout.strip()
    (repo / "b.txt").write_text("unpushed\n")
    subprocess.run(GIT + ["-C", str(repo), "add", "b.txt"], check=True)
    subprocess.run(GIT + ["-C", str(repo), "commit", "-q", "-m", "b"], check=True)
    worktree = repo / ".claude" / "worktrees" / SHIFT
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "-b", f"shift/{SHIFT}", str(worktree)],
                   check=True)
    folder = layout.shift_dir(SHIFT)
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"id": SHIFT, "repo": str(repo), "trunk": "main",
                                                  "branch": f"shift/{SHIFT}", "worktree": str(worktree),
                                                  "rest": False}))
    return worktree, origin, before


def run_shift(layout: Layout, worktree: Path, fake_api, *replies, env_extra: dict | None = None):
    """One ``claude -p`` of shift SHIFT in ``worktree``, as ``shift run`` starts it: the permission
    mode, settings and environment exactly as ``sandman shift profile SHIFT`` prints them (the
    sandbox, ``dontAsk``, the guard hook), ``--output-format json``; ``replies`` scripted."""
    printed = sandman("shift", "profile", SHIFT)
    assert printed.returncode == 0, printed.stderr
    built = json.loads(printed.stdout)
    assert built == shifts.profile(layout, SHIFT)  # what tick.run passes
    fake_api.script(*replies)
    return run_print("work", worktree, fake_api,
                     args=["--permission-mode", built["permission_mode"], "--settings", json.dumps(built["settings"]),
                           "--output-format", "json"],
                     env_extra={**built["env"], **GIT_ENV, **(env_extra or {})})


def needs_the_sandbox() -> None:
    """Skip, saying why, where Claude Code's sandbox cannot run (no bwrap or socat on PATH)."""
    missing = profiles.sandbox_missing()
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (apt install bubblewrap socat; .ci/run installs them): "
                    "the shift's profile asks for Claude Code's sandbox")


def results_by_id(fake_api) -> dict[str, dict]:
    """The tool_result blocks of the session's last request, by tool_use id."""
    return {block["tool_use_id"]: block for block in tool_results(fake_api.messages()[-1])}


def text_of(result: dict) -> str:
    content = result.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def test_the_guard_denies_a_push_to_the_trunk_in_the_real_claude_code(layout, tmp_path, fake_api):
    needs_the_sandbox()
    worktree, origin, before = a_shift_in_its_worktree(layout, tmp_path)
    done = run_shift(layout, worktree, fake_api, ToolUse("Bash", {"command": "git push origin main"}), "done")
    assert done.rc == 0, done.stderr
    results = [block for body in fake_api.messages() for block in tool_results(body)]
    assert results and results[0].get("is_error") is True
    assert "sandman shift guard" in json.dumps(results[0]) and "trunk" in json.dumps(results[0])
    events = [e for e in trails.read(layout).events if e.kind == "guard.deny"]
    assert len(events) == 1 and events[0].shift == SHIFT and events[0].data["rule"] == "git-push-trunk"
    assert json.loads(events[0].data["input"]) == {"command": "git push origin main"} or \
        "git push origin main" in events[0].data["input"]
    after = subprocess.run(["git", "-C", str(origin), "rev-parse", "main"], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert after == before  # nothing was pushed


class Counting(BaseHTTPRequestHandler):
    """A local web server's handler that records every request it gets."""

    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.seen.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"reached")

    def log_message(self, *args: object) -> None:
        pass


def test_the_sandbox_stops_what_the_guard_cannot_see_and_lets_the_worktree_be_written(layout, tmp_path,
                                                                                       fake_api):
    needs_the_sandbox()
    worktree, origin, before = a_shift_in_its_worktree(layout, tmp_path)
    handler = type("Seen", (Counting,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    outside, checkout = tmp_path / "outside.txt", worktree.parents[2] / "escaped.txt"
    try:
        done = run_shift(
            layout, worktree, fake_api,
            # (a) a script in the worktree that writes outside it: the guard does not read script files
            ToolUse("Bash", {"command": f"printf 'open(\"{outside}\", \"w\").write(\"x\")\\n"
                                        f"open(\"{checkout}\", \"w\").write(\"x\")' > s.py && python3 s.py"},
                    id="toolu_write_outside"),
            # (b) the network: direct (no proxy), Python's urllib, and through the sandbox's own proxy
            ToolUse("Bash", {"command": f"curl -sS -m 5 --noproxy '*' {url}; echo curl=$?; "
                                        f"python3 -c 'import urllib.request; urllib.request.urlopen(\"{url}\", timeout=5)'"
                                        f"; echo urllib=$?; curl -sS -m 5 --noproxy '' -x \"$HTTP_PROXY\" {url}; "
                                        "curl -sS -m 5 http://example.invalid/"},
                    id="toolu_network"),
            # (c) the worktree, its repository's .git and the memory root (through sandman's verb)
            ToolUse("Bash", {"command": "echo inside > inside.txt && git add inside.txt && git commit -q -m inside "
                                        "&& echo session=$CLAUDE_CODE_SESSION_ID && sandman remember "
                                        "'The sandbox lets sandman write its root.' --cwd \"$PWD\""},
                    id="toolu_inside"),
            "done")
    finally:
        server.shutdown()
        server.server_close()
    assert done.rc == 0, done.stderr
    results = results_by_id(fake_api)
    # Not the guard: it let every call run.
    assert not [e for e in trails.read(layout).events if e.kind == "guard.deny"]
    assert not any("hook" in text_of(result) for result in results.values()), results
    # (a) stopped by the sandbox: the filesystem outside the worktree is read-only
    assert "Read-only file system" in text_of(results["toolu_write_outside"])
    assert not outside.exists() and not checkout.exists()
    # (b) stopped by the sandbox: no network namespace route to the host, the proxy's empty allowlist
    network = text_of(results["toolu_network"])
    assert "curl=7" in network and "urllib=1" in network and "Connection refused" in network
    assert network.count("Connection blocked by network allowlist") == 2
    assert handler.seen == []  # the local server got no request
    # (c) allowed: the file, the commit on the shift's branch, the memory root's commit
    assert (worktree / "inside.txt").read_text() == "inside\n"
    subject = subprocess.run(["git", "-C", str(worktree.parents[2]), "log", "-1", "--format=%s", f"shift/{SHIFT}"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert subject == "inside"
    assert "The sandbox lets sandman write its root." in subprocess.run(
        ["git", "-C", str(layout.root), "log", "-1", "--format=%s"], capture_output=True, text=True,
        check=True).stdout
    # Bash commands see the session's id: the one Claude Code reports for the run
    session = json.loads(done.stdout)["session_id"]
    assert f"session={session}" in text_of(results["toolu_inside"])


def path_without(tmp_path: Path, name: str) -> str:
    """This process's PATH (the venv first, as the harness runs it) with ``name`` hidden: each folder
    holding ``name`` is replaced by a folder of links to everything else in it."""
    folders = []
    for n, folder in enumerate([str(Path(sys.executable).parent), *os.environ.get("PATH", "").split(os.pathsep)]):
        if folder and (Path(folder) / name).exists():
            mirror = tmp_path / f"path-{n}"
            mirror.mkdir()
            for entry in os.listdir(folder):
                if entry != name:
                    os.symlink(Path(folder) / entry, mirror / entry)
            folder = str(mirror)
        folders.append(folder)
    return os.pathsep.join(folders)


def test_the_profile_asks_for_the_sandbox_and_claude_code_refuses_to_start_without_bwrap(layout, tmp_path,
                                                                                        fake_api, monkeypatch):
    worktree, origin, before = a_shift_in_its_worktree(layout, tmp_path)
    path = path_without(tmp_path, "bwrap")
    monkeypatch.setenv("PATH", path)
    assert "bwrap" in profiles.sandbox_missing()  # what doctor names
    done = run_shift(layout, worktree, fake_api, ToolUse("Bash", {"command": "touch ran.txt"}), "done",
                     env_extra={"PATH": path})
    assert done.rc == 1
    assert "sandbox required but unavailable" in done.stderr and "bubblewrap (bwrap) not installed" in done.stderr
    assert "sandbox.failIfUnavailable" in done.stderr
    assert not (worktree / "ran.txt").exists() and not fake_api.messages()
