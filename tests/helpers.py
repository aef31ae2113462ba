"""Helpers tests import: running sandman as a real subprocess, inspecting git."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def sandman(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the installed ``sandman`` entry point as Claude Code would: a real subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "sandman", *args],
        input=stdin, capture_output=True, env={**os.environ, **(env or {})},
        cwd=cwd, timeout=timeout,
    )


def git(root: Path, *args: str) -> str:
    """Run the git CLI in ``root`` (tests may inspect with git; product code never does)."""
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout
