"""Claude Code's native auto memory, read and planned for import (issue 17; docs/import.md).

Where the native memory lives (``<config dir>/projects/<project folder>/memory/``),
which directory each project folder stands for, what each file becomes
(``Planned``: import, replace, unchanged, or skip with one of ``REASONS``) and
what an earlier import left: ``plan`` decides all of it without writing. The
``sandman import claude-memory`` verb (sandman/verbs/import_memory.py) writes
the plan through one bank transaction and journals it; nothing here imports
sandman.verbs or sandman.cli.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from sandman import config
from sandman.banks import frontmatter
from sandman.banks.commit import prepare
from sandman.banks.index import memory_files
from sandman.banks.listing import bank_directory_of, bank_folders
from sandman.banks.memory import Memory
from sandman.banks.names import MEMORY_TYPES, bank_name, normalize_directory
from sandman.banks.secrets import find_secrets
from sandman.curators import retired
from sandman.errors import FormatError, InputError, SandmanError
from sandman.layout import Layout
from sandman.pointers import list_pointers

VERB = "import"
SOURCE = "claude-memory"
INDEX = "MEMORY.md"

REASONS = {
    "secret": "its text holds a credential (the secrets ban)",
    "unreadable": "it is not a memory file sandman can read (frontmatter, UTF-8, fields)",
    "bad-type": "its type is none of user, feedback, project, reference",
    "invalid": "a bank cannot hold it as it is",
    "unknown-directory": "no session or bank names the directory of its project folder: pass --project DIR",
    "ambiguous-directory": "several directories share its project folder's name: pass --project DIR",
    "retired": "the retired ledger holds it",
}


def project_folder_name(directory: Path) -> str:
    """Return Claude Code's project folder name of ``directory``: each non-alphanumeric character is ``-``."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in str(directory))


@dataclass
class Planned:
    """One native memory file and what the import does with it.

    ``action`` is ``import`` (new), ``replace`` (its earlier import differs),
    ``unchanged`` or ``skip`` (``reason``, a key of REASONS). ``directory``
    the bank's directory (None: the user-wide bank); ``existing`` the earlier
    import's file name in that bank.
    """

    path: Path
    relpath: str
    action: str = "import"
    reason: str | None = None
    detail: str | None = None
    directory: Path | None = None
    memory: Memory | None = None
    digest: str = ""
    existing: str | None = None
    written: Path | None = None


@dataclass
class ImportResult:
    """What one import planned and did; ``commit`` is None when nothing was committed."""

    items: list[Planned] = field(default_factory=list)
    dry_run: bool = False
    commit: str | None = None

    def count(self, action: str) -> int:
        return sum(1 for item in self.items if item.action == action)


# --- finding the folders and their directories ----------------------------------------


def _memory_folders(project: Path | None) -> list[tuple[str, Path]]:
    """Return ``(project folder name, memory folder)`` pairs under Claude Code's projects folder."""
    projects = config.claude_projects_dir()
    if project is not None:
        name = project_folder_name(project)
        folder = projects / name / "memory"
        return [(name, folder)] if folder.is_dir() and not folder.is_symlink() else []
    try:
        entries = sorted(os.scandir(projects), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        folder = Path(entry.path) / "memory"
        if entry.is_dir(follow_symlinks=False) and folder.is_dir() and not folder.is_symlink():
            found.append((entry.name, folder))
    return found


def _known_directories(layout: Layout) -> set[Path]:
    """Every directory a session or a bank names, with its ancestors."""
    from sandman.transcripts import locate, summarize

    seen: set[Path] = set()

    def add(text: object) -> None:
        if not isinstance(text, str) or not os.path.isabs(text):
            return
        try:
            path = normalize_directory(text)
        except InputError:
            return
        seen.update([path, *path.parents])

    for pointer in list_pointers(layout):
        add(pointer.data.get("cwd"))
    for folder in bank_folders(layout):
        add(bank_directory_of(folder))
    projects = config.claude_projects_dir()
    for path in locate.session_files():
        if projects in path.parents:
            try:
                add(summarize(path, "claude").cwd)
            except (OSError, SandmanError):
                continue
    return seen


def _directory_of(name: str, known: set[Path]) -> tuple[Path | None, str | None]:
    matches = sorted(path for path in known if project_folder_name(path) == name)
    if not matches:
        return None, "unknown-directory"
    if len(matches) > 1:
        return None, "ambiguous-directory"
    return matches[0], None


# --- reading one native file -------------------------------------------------------------


def _read(item: Planned) -> None:
    """Fill ``item.memory`` and ``item.digest`` from the native file, or mark it skipped."""
    try:
        data = item.path.read_bytes()
    except OSError as error:
        item.action, item.reason, item.detail = "skip", "unreadable", error.strerror or str(error)
        return
    item.digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
        front, body = frontmatter.parse(text)
        values = front.to_dict()
    except (UnicodeDecodeError, FormatError) as error:
        item.action, item.reason, item.detail = "skip", "unreadable", str(error)
        return
    kind = values.get("type")
    metadata = values.get("metadata")
    if kind is None and isinstance(metadata, dict):
        kind = metadata.get("type")
    name, description = values.get("name"), values.get("description")
    if not isinstance(name, str) or not name.strip() or not isinstance(description, str) or not description.strip():
        item.action, item.reason, item.detail = "skip", "unreadable", "name or description is missing"
        return
    if kind not in MEMORY_TYPES:
        item.action, item.reason, item.detail = "skip", "bad-type", repr(kind)
        return
    kinds = find_secrets(text)
    if kinds:
        item.action, item.reason, item.detail = "skip", "secret", ",".join(kinds)
        return
    front.set("source", [SOURCE])
    front.set("imported_from", item.relpath)
    front.set("imported_sha256", item.digest)
    memory = Memory(name=name, description=description, type=kind, body=body, source=[SOURCE], front=front)
    try:
        prepare(memory)  # what the write would refuse (a body over 64 KiB), refused now: the dry run agrees
    except InputError as error:
        item.action, item.reason, item.detail = "skip", "invalid", str(error)
        return
    item.memory = memory


def _earlier_imports(layout: Layout, directory: Path | None) -> dict[str, tuple[str, str]]:
    """Return ``imported_from -> (file name, imported_sha256)`` over the live memories of a bank."""
    found: dict[str, tuple[str, str]] = {}
    for path in memory_files(layout.bank(bank_name(directory))):
        try:
            front, _ = frontmatter.parse(path.read_text(encoding="utf-8"))
            values = front.to_dict()
        except (OSError, UnicodeDecodeError, FormatError):
            continue
        origin, digest = values.get("imported_from"), values.get("imported_sha256")
        if isinstance(origin, str):
            found[origin] = (path.name, str(digest))
    return found


def _retired(layout: Layout, directory: Path | None, memory: Memory) -> dict | None:
    """The retired ledger's line that retired ``memory`` (or the same claim in other words) in
    the bank of ``directory`` or a bank above it, as dream tells (curators.retired); None when none."""
    from sandman.minds.evidence import Evidence
    from sandman.minds.reply import allowed_banks

    bank = bank_name(directory)
    chain = [bank] if directory is None else [bank_name(d) for d in allowed_banks(str(directory))]
    return retired.retired(layout, bank, memory) or retired.retiring(
        layout, chain, memory.type, [Evidence(memory.name, memory.description, memory.body)])


def plan(layout: Layout, project: str | None = None) -> ImportResult:
    """Decide every native memory file (or those of ``project``, a directory) without writing anything."""
    folder = normalize_directory(os.path.abspath(project)) if project is not None else None
    projects = config.claude_projects_dir()
    result = ImportResult()
    known: set[Path] | None = None
    earlier: dict[Path | None, dict[str, tuple[str, str]]] = {}
    for name, memory_folder in _memory_folders(folder):
        if folder is not None:
            directory, reason = folder, None
        else:
            if known is None:
                known = _known_directories(layout)
            directory, reason = _directory_of(name, known)
        for path in sorted(memory_folder.glob("*.md")):
            if path.name == INDEX or path.is_symlink() or not path.is_file():
                continue
            item = Planned(path=path, relpath=path.relative_to(projects).as_posix())
            result.items.append(item)
            if reason is not None:
                item.action, item.reason = "skip", reason
                continue
            _read(item)
            if item.memory is None:
                continue
            item.directory = None if item.memory.type == "user" else directory
            if item.directory not in earlier:
                earlier[item.directory] = _earlier_imports(layout, item.directory)
            previous = earlier[item.directory].get(item.relpath)
            if previous is not None:
                item.existing = previous[0]
                item.action = "unchanged" if previous[1] == item.digest else "replace"
                continue
            line = _retired(layout, item.directory, item.memory)
            if line is not None:
                item.action, item.reason = "skip", "retired"
                item.detail = f"retired {line.get('bank')}/{line.get('file')} by {line.get('by')}"
    return result
