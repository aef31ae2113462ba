"""Two memory roots and a bare remote on disk, for sync's tests (file URLs, no network)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pygit2

from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.memory import Memory, read_memory
from sandman.banks.names import bank_name
from sandman.layout import Layout
from sandman.verbs.init import init
from sandman.verbs.sync import setup
from helpers import git

PROJECT = "/work/proj"


@dataclass
class World:
    remote: Path
    url: str
    a: Layout
    b: Layout


def bare_remote(tmp_path: Path, name: str = "remote.git") -> tuple[Path, str]:
    path = tmp_path / name
    pygit2.init_repository(str(path), bare=True, initial_head="main")
    return path, path.as_uri()


def make_world(tmp_path: Path) -> World:
    """A pushes its first commit to a fresh bare remote; B, a fresh root, adopts it."""
    remote, url = bare_remote(tmp_path)
    a, b = Layout(tmp_path / "a"), Layout(tmp_path / "b")
    for side in (a, b):
        init(side)
        setup(side, url)
    return World(remote, url, a, b)


def add(layout: Layout, name: str, body: str, directory: str | None = PROJECT, memory_type: str = "project") -> Path:
    """Commit one memory the way remember does; return its path."""
    memory = Memory(name=name, description=f"About {name}", type=memory_type, body=body + "\n", source=["remember"])
    return commit_memory(layout, memory, directory=directory, verb="remember").path


def edit(layout: Layout, filename: str, body: str, directory: str = PROJECT) -> Path:
    """Replace a memory with a new body under the same name (the old one goes to _archive/)."""
    bank = bank_name(directory)
    with bank_transaction(layout, verb="remember", subject=f"edit {filename}") as tx:
        memory = read_memory(layout.bank(bank) / filename)
        memory.body = body + "\n"
        return tx.write_memory(bank, memory, replaces=filename)


def archive(layout: Layout, filename: str, directory: str = PROJECT) -> Path:
    with bank_transaction(layout, verb="reflect", subject=f"archive {filename}") as tx:
        return tx.archive(bank_name(directory), filename)


def head(layout: Layout) -> str:
    return git(layout.root, "rev-parse", "HEAD").strip()


def remote_head(remote: Path) -> str:
    return git(remote, "rev-parse", "refs/heads/main").strip()


def files(layout: Layout) -> dict[str, str]:
    """Every file under the root but .git/, as relative path -> SHA-256 of its bytes."""
    out = {}
    for path in sorted(layout.root.rglob("*")):
        relative = path.relative_to(layout.root)
        if path.is_file() and relative.parts[0] != ".git":
            out[relative.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def versioned(layout: Layout) -> dict[str, str]:
    """The versioned tier only (what git tracks), as path -> SHA-256."""
    return {path: digest for path, digest in files(layout).items()
            if not any(part.startswith(".") for part in path.split("/")) or path == ".gitignore"}


def snapshot(layout: Layout) -> dict[str, object]:
    """HEAD, the index file's bytes, `git status`, and the file tree: what "untouched" compares."""
    return {
        "head": head(layout),
        "index": hashlib.sha256((layout.root / ".git" / "index").read_bytes()).hexdigest(),
        "status": git(layout.root, "status", "--porcelain", "--untracked-files=all"),
        "files": versioned(layout),
    }
