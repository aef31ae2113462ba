"""The Claude Code settings a shift session runs with (docs/shift.md, "The profile").

Three layers, each from Claude Code 2.1.332's own settings (names and effects cited in
docs/shift.md):

- ``sandbox``: Bash runs inside Claude Code's sandbox (``enabled``), the session refuses to
  start when it cannot (``failIfUnavailable``), no command may leave it
  (``allowUnsandboxedCommands: false`` ignores ``dangerouslyDisableSandbox``), writes are
  confined to the worktree (the working directory) plus ``filesystem.allowWrite``: the memory
  root (sandman's verbs write the trail there) and the repository's ``.git`` (a worktree's
  commits land in its objects and refs), and the network to ``network.allowedDomains`` (none).
- ``permissions``: ``dontAsk`` (what is not allowed is refused, nobody is asked), the tools
  allowed, and prefix ``deny`` rules as a first line.
- ``hooks.PreToolUse``: the guard (machine.guard) on every tool call, which parses what the
  prefix rules cannot and fails closed.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from sandman import config
from sandman.layout import Layout

GUARD_TIMEOUT_SECONDS = 30
# What doctor runs to learn whether bubblewrap can make the namespaces Claude Code's sandbox uses
# (a new network and process namespace over a read-only root); seconds it may take.
BWRAP_PROBE = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-pid", "true")
BWRAP_PROBE_TIMEOUT_SECONDS = 10

DENY = [
    "Bash(git push:*)", "Bash(git push)", "Bash(git reset:*)", "Bash(git rebase:*)", "Bash(git checkout:*)",
    "Bash(git switch:*)", "Bash(git stash:*)", "Bash(git stash)", "Bash(git clean:*)",
    "Bash(git commit --amend:*)", "Bash(git branch -D:*)", "Bash(git branch -f:*)", "Bash(git worktree:*)",
    "Bash(git update-ref:*)", "Bash(git filter-branch:*)", "Bash(pkill:*)", "Bash(killall:*)",
    "Bash(gh pr merge:*)", "Bash(sandman trail revoke:*)", "Bash(sandman reconcile:*)", "Bash(sandman forget:*)",
    "Bash(sandman report approve:*)", "Bash(sandman report decline:*)",
]
ALLOW = ["Read", "Edit", "Write", "Glob", "Grep", "Bash"]


def guard_command(layout: Layout, shift_id: str | None, pass_id: str | None = None) -> str:
    """The hook's command line: this Python running the guard, failing closed (``|| exit 2``);
    ``--pass`` puts it in the reading session's mode (machine.guard.decide_reading)."""
    args = [sys.executable, "-m", "sandman.machine.guard", "--hook", "--root", str(layout.root)]
    if shift_id:
        args += ["--shift", shift_id]
    if pass_id:
        args += ["--pass", pass_id]
    return " ".join(shlex.quote(arg) for arg in args) + " || exit 2"


def worktree_of(repo: str | None, shift_id: str | None) -> Path | None:
    """``<repo>/.claude/worktrees/<id>`` (machine.tick.add_worktree), None without a repository."""
    if not repo or not shift_id:
        return None
    return Path(repo) / ".claude" / "worktrees" / shift_id


def build(layout: Layout, shift_id: str | None = None, meta: dict | None = None) -> dict:
    """``{permission_mode, model, settings, env}`` for shift ``shift_id`` (``meta``: its meta.json,
    for the repository). ``settings`` is what ``claude --settings`` receives."""
    settings = config.machine(layout)
    meta = meta or {}
    repo = None if meta.get("rest") else meta.get("repo")
    writable = [str(layout.root)]
    if repo:
        writable.append(str(Path(repo) / ".git"))
    return {
        "permission_mode": config.SHIFT_PERMISSION_MODE,
        "model": settings.model,
        "settings": {
            "permissions": {"defaultMode": config.SHIFT_PERMISSION_MODE, "allow": list(ALLOW), "deny": list(DENY)},
            "sandbox": {
                "enabled": True,
                "failIfUnavailable": True,
                "allowUnsandboxedCommands": False,
                "autoAllowBashIfSandboxed": False,
                "filesystem": {"allowWrite": writable},
                "network": {"allowedDomains": []},
            },
            "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
                {"type": "command", "command": guard_command(layout, shift_id), "timeout": GUARD_TIMEOUT_SECONDS},
            ]}]},
        },
        "env": {config.SHIFT_ENV: shift_id or "<shift id>", "SANDMAN_ROOT": str(layout.root)},
    }


# What a reading session may call (docs/breathe.md, "The runner"): read files, fetch pages of its
# sources' hosts (``WebFetch(domain:<host>)`` each), and run the Bash commands the guard's reading
# mode lets through (``sandman breathe file|close|list|sources`` and read-only commands). No Edit or
# Write: its only writes are breaths and the pass's close.
READING_ALLOW = ["Read", "Glob", "Grep", "Bash"]
READING_DENY = ["Edit", "Write", "MultiEdit", "NotebookEdit", "Bash(git:*)", "Bash(sandman breathe adopt:*)",
                "Bash(sandman breathe spike:*)", "Bash(sandman breathe drop:*)", "Bash(sandman breathe reweight:*)"]


def reading(layout: Layout, pass_id: str, hosts: list[str]) -> dict:
    """``{permission_mode, model, settings, env}`` of the reading session of pass ``pass_id``: a
    shift's sandbox (``failIfUnavailable``, nothing unsandboxed) whose network is ``hosts`` (the
    hosts of the pass's sources) and whose only writable folder is the memory root (``breathe
    file`` and ``breathe close`` commit there), ``dontAsk`` with READING_ALLOW/READING_DENY, and the
    guard in its reading mode on every call (docs/breathe.md, "The runner"). ``env`` sets
    ``CLAUDE_MEMORY_PIPELINE=1``: what a web page says never reaches the banks through the session's
    own hooks (take, recall)."""
    settings = config.machine(layout)
    domains = sorted({host.lower() for host in hosts if host})
    return {
        "permission_mode": config.SHIFT_PERMISSION_MODE,
        "model": settings.model,
        "settings": {
            "permissions": {"defaultMode": config.SHIFT_PERMISSION_MODE,
                            "allow": list(READING_ALLOW) + [f"WebFetch(domain:{host})" for host in domains],
                            "deny": list(READING_DENY)},
            "sandbox": {
                "enabled": True,
                "failIfUnavailable": True,
                "allowUnsandboxedCommands": False,
                "autoAllowBashIfSandboxed": False,
                "filesystem": {"allowWrite": [str(layout.root)]},
                "network": {"allowedDomains": domains},
            },
            "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
                {"type": "command", "command": guard_command(layout, None, pass_id),
                 "timeout": GUARD_TIMEOUT_SECONDS},
            ]}]},
        },
        "env": {"SANDMAN_ROOT": str(layout.root), config.PIPELINE_ENV: "1"},
    }


def sandbox_missing() -> list[str]:
    """What Claude Code's sandbox needs on Linux and this machine lacks (``bwrap``, ``socat``);
    [] elsewhere or when both are on ``PATH``."""
    if not sys.platform.startswith("linux"):
        return []
    return [name for name in ("bwrap", "socat") if shutil.which(name) is None]


def sandbox_unavailable() -> str | None:
    """Why Claude Code's sandbox cannot run on this machine, or None (it can, or not Linux).

    Missing ``bwrap``/``socat`` (sandbox_missing): Claude Code 2.1.332 then refuses to start a
    session that sets ``failIfUnavailable``. A ``bwrap`` that cannot make its namespaces (user
    namespaces refused, a container without the capability): Claude Code starts anyway and every
    Bash call fails with bwrap's error, so the probe (``bwrap`` BWRAP_PROBE, at most
    BWRAP_PROBE_TIMEOUT_SECONDS) is run and its first line of error returned (docs/shift.md,
    "The profile"; docs/live-tests.md)."""
    missing = sandbox_missing()
    if missing:
        return f"{', '.join(missing)} not installed (apt install bubblewrap socat)"
    if not sys.platform.startswith("linux"):
        return None
    try:
        done = subprocess.run([shutil.which("bwrap") or "bwrap", *BWRAP_PROBE], capture_output=True, text=True,
                              timeout=BWRAP_PROBE_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"bwrap did not finish a sandboxed `true` in {BWRAP_PROBE_TIMEOUT_SECONDS} s"
    except OSError as error:
        return f"bwrap does not run: {error}"
    if done.returncode != 0:
        said = next((line.strip() for line in done.stderr.splitlines() if line.strip()), "no message")
        return f"bwrap cannot make its namespaces (exit {done.returncode}: {said})"
    return None
