"""Reading banks on the fast path: MEMORY.md lines, memory bodies, the list of banks.

recall runs before the user's first prompt and the MCP server lists banks; both
read what commit_memory wrote (docs/BANK-FORMAT.md, "MEMORY.md" and "Memory
files") with plain string handling. Nothing here loads YAML: a file is split at
its line-anchored ``---`` fences, a body is everything after the closing fence
and one blank line, and the few single-line values read (MEMORY.md's
``directory``) are unquoted by hand. Writers use banks.index and banks.memory.

Standard library only: ``recall --hook`` imports this module.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import namedtuple
from itertools import repeat
from pathlib import Path

from sandman import private
from sandman.banks.names import USER_BANK, bank_directory, bank_name
from sandman.errors import InputError
from sandman.layout import BANK_INDEX, Layout
from sandman.store.atomic import is_real_dir, read_regular, write_atomic

# A MEMORY.md line: ``- [<name, with [ ] \ escaped>](<file>) — <description>``. The name's runs of
# plain characters are taken whole (possessive: an escape or a run can be read one way only), not one
# character per step: half the time of the regex over a MEMORY.md of 1,000 lines, read at every remember.
_INDEX_LINE = re.compile(r"- \[(?:[^\\\]]++|\\.)*+\]\(([^()/\\\s]+\.md)\)")
_FENCE = re.compile(r"---[ \t]*")


class IndexEntry:
    """One MEMORY.md line as written, and the memory file it links to (a bare name).

    The link is parsed on first use: recall reads every line of every bank in
    the chain but opens only the few bodies its budget holds, and a regex over
    10,000 lines cost the SessionStart hook about 10 ms.
    """

    __slots__ = ("line", "_file")

    def __init__(self, line: str, file: str | None = None):
        self.line = line
        self._file = file

    @property
    def file(self) -> str:
        if self._file is None:
            match = _INDEX_LINE.match(self.line)
            self._file = match.group(1) if match else ""
        return self._file

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IndexEntry) and (self.line, self.file) == (other.line, other.file)

    def __repr__(self) -> str:
        return f"IndexEntry(line={self.line!r}, file={self.file!r})"


class Bank(namedtuple("Bank", "name folder directory entries")):
    """One bank folder: its ``name`` (str), ``folder`` (Path), the ``directory`` it belongs
    to (str, None for the user-wide bank) and its index lines (``entries``, a tuple of
    IndexEntry; empty when the folder has no MEMORY.md).
    """

    __slots__ = ()

    @property
    def label(self) -> str:
        """The directory, or ``user-wide`` for the memories of the person."""
        return self.directory if self.directory is not None else "user-wide"


def split_frontmatter(text: str) -> tuple[list[str], str] | None:
    """Return ``(frontmatter lines, body)`` of a file's text, or None without frontmatter.

    The fences are whole ``---`` lines; a leading BOM is ignored; the body is
    everything after the closing fence and one blank line (docs/BANK-FORMAT.md).
    """
    lines = text.removeprefix("\ufeff").split("\n")
    if not lines or not _FENCE.fullmatch(lines[0].rstrip("\r")):
        return None
    for i in range(1, len(lines)):
        if _FENCE.fullmatch(lines[i].rstrip("\r")):
            rest = lines[i + 1 :]
            if rest and not rest[0].strip():
                rest = rest[1:]
            return [line.rstrip("\r") for line in lines[1:i]], "\n".join(rest)
    return None


def scalar(front: list[str], key: str) -> str | None:
    """Return the single-line value of ``key`` in frontmatter lines, unquoted, or None.

    Handles what banks.frontmatter writes for a string: plain, ``'single'``
    (``''`` for a quote) and ``"double"`` (JSON-compatible escapes).
    """
    prefix = f"{key}:"
    for line in front:
        if not line.startswith(prefix):
            continue
        value = line[len(prefix) :].strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            return value[1:-1].replace("''", "'")
        if len(value) >= 2 and value[0] == value[-1] == '"':
            try:
                loaded = json.loads(value)
            except (ValueError, RecursionError):
                return value[1:-1]
            return loaded if isinstance(loaded, str) else value[1:-1]
        return value
    return None


def _read_text(path: Path) -> str | None:
    # Never through a symbolic link: MEMORY.md or a memory linked to a private file.
    try:
        return read_regular(path).decode("utf-8", "replace")
    except OSError:
        return None


def index_entries(folder: Path) -> tuple[IndexEntry, ...]:
    """Return the memory lines of ``folder/MEMORY.md`` in file order (empty when absent).

    Only ``- [`` lines count; anything else in the body is ignored. A line
    whose link is not a bare ``*.md`` file name has ``file`` "".
    """
    text = _read_text(folder / BANK_INDEX)
    split = split_frontmatter(text) if text is not None else None
    if split is None:
        return ()
    return tuple(IndexEntry(line.rstrip()) for line in split[1].splitlines() if line.startswith("- ["))


def lines_by_file(folder: Path) -> dict[str, str]:
    """Return ``{entry.file: entry.line}`` of ``index_entries(folder)`` for the lines that link a file
    (a later line for the same file wins), without an entry per line: a remember reads every line
    of its bank's MEMORY.md (1,000 of them in a bank of 1,000) to regenerate it."""
    text = _read_text(folder / BANK_INDEX)
    split = split_frontmatter(text) if text is not None else None
    if split is None:
        return {}
    found = {}
    for line in split[1].splitlines():
        if line.startswith("- ["):
            match = _INDEX_LINE.match(line)
            if match:
                found[match.group(1)] = line.rstrip()
    return found


def _index_head(text: str | None, cap: int) -> tuple[int, list[str]]:
    """``(count, recall_head(lines, cap))`` of the index lines of MEMORY.md's ``text`` (its ``- [``
    lines, right-stripped, private spans hidden): only the lines of the head are made, the
    rest counted (a bank of 1,000 holds 1,000 lines, its head some 70)."""
    split = split_frontmatter(text) if text is not None else None
    if split is None:
        return 0, []
    lines = split[1].splitlines()
    # A line holds a private span only with a "<": most indexes hold none, and are not read line by line again.
    marked = "<" in split[1]
    head: list[str] = []
    total = 0
    for at, line in enumerate(lines):
        if not line.startswith("- ["):
            continue
        line = private.redact(line.rstrip()) if marked else line.rstrip()
        total += len(line) + 1
        if total > cap:
            return len(head) + sum(map(str.startswith, lines[at:], repeat("- ["))), head
        head.append(line)
    return len(head), head


# --- the recall cache: each bank's head, derived, never trusted blindly ---------

RECALL_CACHE_VERSION = 1


def _identity(st: os.stat_result) -> list[int]:
    # MEMORY.md is replaced whole (a new inode) by every writer: commit_memory, git checkout, a hand edit.
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _read_index(folder: Path) -> tuple[list[int] | None, str | None]:
    """Return the identity (inode, size, mtime, ctime) of ``folder/MEMORY.md`` and its text, both
    taken from one open file; ``(None, None)`` when it is missing, a link or not a regular file."""
    try:
        fd = os.open(folder / BANK_INDEX, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None, None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None, None
        try:
            return _identity(st), handle.read().decode("utf-8", "replace")
        except OSError:
            return None, None


def recall_head(lines: list[str], cap: int) -> list[str]:
    """Return the first of ``lines`` whose costs (characters, one newline each) sum to at most
    ``cap``: every line past them costs the index more than ``cap`` characters."""
    total = 0
    for i, line in enumerate(lines):
        total += len(line) + 1
        if total > cap:
            return lines[:i]
    return lines


def write_recall_cache(layout: Layout, folder: Path, cap: int) -> tuple[int, list[str]] | None:
    """Rewrite ``.recall/<bank>.json`` from the bank's MEMORY.md (docs/BANK-FORMAT.md, "Recall
    cache"); return ``(count of index lines, the head of ``recall_head(.., cap)``)``, or None
    when the bank has no readable MEMORY.md (then the cache is removed). A cache that cannot be
    written is left stale: readers check it, so that loses only speed.
    """
    identity, text = _read_index(folder)
    cache = layout.recall_cache(folder.name)
    if identity is None:
        try:
            cache.unlink(missing_ok=True)
        except OSError:
            pass
        return None
    count, head = _index_head(text, cap)
    record = {"version": RECALL_CACHE_VERSION, "index": identity, "cap": cap, "count": count, "head": head}
    try:
        write_atomic(cache, json.dumps(record, ensure_ascii=False), durable=False)
    except OSError:
        pass
    return count, head


def read_bank_head(layout: Layout, folder: Path, directory: str | None, cap: int) -> tuple[Bank, int]:
    """Return the bank at ``folder`` with only its first index lines, and its count of index lines.

    The lines are ``recall_head(every line, cap)``: recall, whose budget is at
    most ``cap`` characters, can show no line past them. They come from
    ``.recall/<bank>.json`` when its recorded identity of MEMORY.md (inode, size,
    times) and ``cap`` match; otherwise from MEMORY.md, and the cache is rewritten.
    """
    try:
        st = os.lstat(folder / BANK_INDEX)
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        return Bank(name=folder.name, folder=folder, directory=directory, entries=()), 0
    try:
        record = json.loads(read_regular(layout.recall_cache(folder.name)))
    except (OSError, ValueError, RecursionError):
        record = None
    if (isinstance(record, dict) and record.get("version") == RECALL_CACHE_VERSION
            and record.get("index") == _identity(st) and record.get("cap") == cap
            and isinstance(record.get("count"), int) and isinstance(record.get("head"), list)
            and all(isinstance(line, str) for line in record["head"])):
        count, head = record["count"], record["head"]
    else:
        found = write_recall_cache(layout, folder, cap)
        count, head = found if found is not None else (0, [])
    entries = tuple(IndexEntry(line) for line in head)
    return Bank(name=folder.name, folder=folder, directory=directory, entries=entries), count


def memory_body(folder: Path, file: str) -> str:
    """Return the body of memory ``file`` in ``folder``, trailing whitespace trimmed.

    An unreadable file, or one without frontmatter, gives ``""``: recall then
    shows its index line alone. Private spans a hand edit left in the file are
    ``[private]`` (sandman.private): recall reaches the model.
    """
    if not file:
        return ""
    text = _read_text(folder / file)
    split = split_frontmatter(text) if text is not None else None
    return private.redact(split[1]).rstrip() if split is not None else ""


def bank_directory_of(folder: Path) -> str | None:
    """Return the directory a bank folder belongs to; None for the user-wide bank.

    Decoded from the folder name; a name that does not decode (cut to length,
    made by hand) is read from MEMORY.md's ``directory`` field, else the folder
    name stands for itself.
    """
    if folder.name == USER_BANK:
        return None
    try:
        return str(bank_directory(folder.name))
    except InputError:
        pass
    text = _read_text(folder / BANK_INDEX)
    split = split_frontmatter(text) if text is not None else None
    recorded = scalar(split[0], "directory") if split is not None else None
    return recorded or folder.name


def read_bank(folder: Path, directory: str | None) -> Bank:
    """Return the Bank at ``folder`` (which may not exist: then it has no entries)."""
    return Bank(name=folder.name, folder=folder, directory=directory, entries=index_entries(folder))


def bank_folders(layout: Layout) -> list[Path]:
    """Return every bank folder under ``memories/``, sorted by name.

    Dotted folders (``.recent``) are not banks, and neither is a symbolic link
    (to a folder or anything else), nor anything when ``memories/`` itself is
    a link: what a link points at is never read as memory. Raises nothing for
    a missing root: the list is empty.
    """
    if not is_real_dir(layout.memories):
        return []
    try:
        entries = list(layout.memories.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((p for p in entries if not p.name.startswith(".") and is_real_dir(p)), key=lambda p: p.name)


def list_banks(layout: Layout) -> list[Bank]:
    """Return every bank under ``memories/`` (see ``bank_folders``), sorted by name."""
    return [read_bank(folder, bank_directory_of(folder)) for folder in bank_folders(layout)]


def find_bank(layout: Layout, key: str) -> Bank | None:
    """Return the bank named ``key``, or the bank of the absolute directory ``key``, or None.

    Raises InputError for a directory holding a NUL character.
    """
    name = bank_name(key) if key.startswith("/") else key
    for bank in list_banks(layout):
        if bank.name == name or bank.directory == key:
            return bank
    return None
