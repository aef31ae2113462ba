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


def imported(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> set[str]:
    """Return the dotted names of the modules a real ``python -X importtime -m sandman <args>``
    process imports, read from its import-time log on stderr. The log is written as each
    import happens, so it holds for a process that ends by ``os._exit`` (the hooks do)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "sandman", *args], input=stdin,
                          capture_output=True, env=env if env is not None else os.environ.copy(), timeout=120)
    names = set()
    for line in done.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and " " not in name:  # not the header, "imported package"
                names.add(name)
    return names
