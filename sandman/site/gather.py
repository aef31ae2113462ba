"""Phase one of a render: read the memory root into a Snapshot, touching nothing.

Every memory, archived memory, MEMORY.md and voyage entry is read and hashed
(SHA-256 of its bytes). Parsing frontmatter is the slow part of a read, so
parsed results are kept in a cache keyed by that hash (``.site/.state/
sources/``, one file per bank and one for the log, so one changed memory
rewrites one bank's part): a file whose bytes did not change is never parsed twice. The
git history of every path comes from store.history, kept in
``.site/.state/history.marshal`` and walked only from the HEAD it last saw.
Both caches are Python's ``marshal`` format (plain dicts, lists, strings and
numbers), several times faster to read and write than JSON at megabytes.

A file that cannot be read or parsed is not an error: it is kept with its
error and its text, and its page shows both.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from sandman import private
from sandman.banks import frontmatter
from sandman.banks.index import memory_names
from sandman.banks.listing import bank_directory_of, bank_folders
from sandman.banks.memory import parse_memory
from sandman.errors import FormatError, RepositoryError
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout
from sandman.store.atomic import is_real_dir, is_regular, read_regular, remove_wrong_kind
from sandman.store.history import PathHistory
from sandman.dreamqueue import queue
from sandman.voyage import began, entry_paths, parse_entry

SOURCES_FORMAT = 3  # one file per part (docs/BANK-FORMAT.md, ".site/"); 1 was one sources.marshal, 2 kept private spans


@dataclass
class SourceFile:
    """One file the site is made from: where it is, its hash, and what parsing it gave.

    ``data`` is a JSON-able dict: the parsed fields, or ``{"error": ..., "raw": ...}``.
    """

    relpath: str  # repo-relative POSIX path
    sha: str
    data: dict

    @property
    def ok(self) -> bool:
        return "error" not in self.data


@dataclass
class Bank:
    """One bank folder: its index, its live memories and its archive."""

    name: str
    label: str | None  # the directory it belongs to; None for the user-wide bank
    index: SourceFile | None
    memories: list[SourceFile] = field(default_factory=list)
    archived: list[SourceFile] = field(default_factory=list)


@dataclass
class Snapshot:
    """Everything a render needs, read from the root in one pass."""

    banks: list[Bank]
    entries: list[SourceFile]  # log/<day>.md, ascending
    began: str | None
    queue: list[dict]
    history: PathHistory | None  # None when the root is not a git repository
    repo: object | None  # the pygit2 Repository, for diffs
    walked: int = 0  # commits walked to bring the history up to HEAD
    # How often each memory (``<bank>/<file>``) reached a session: sandman.recall.ledger.usage.
    usage: dict = field(default_factory=dict)

    def unreadable(self) -> int:
        files = [f for bank in self.banks for f in (bank.memories + bank.archived)] + self.entries
        return sum(1 for f in files if not f.ok)


def display_value(value: object) -> str:
    """Return a frontmatter value as one display string: lists joined by ``, ``, structures as JSON."""
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
        return ", ".join(str(item) for item in value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _fields(front: frontmatter.Frontmatter) -> list[list[str]]:
    return [[key, display_value(value)] for key, value in front.to_dict().items()]


def _decode(data: bytes) -> tuple[str | None, str]:
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "the file is not UTF-8"


def parse_memory_bytes(data: bytes) -> dict:
    """Return the JSON-able parse of a memory file's bytes (fields, or error and raw text)."""
    text, problem = _decode(data)
    if text is None:
        return {"error": problem, "raw": data.decode("utf-8", "replace")}
    try:
        memory = parse_memory(text)
    except FormatError as error:
        return {"error": str(error), "raw": private.redact(text)}
    # A memory edited by hand (or committed before its spans were hidden) may hold a
    # private span: the site shows none (sandman.private).
    hide = private.redact
    return {
        "name": hide(memory.name), "description": hide(memory.description), "type": memory.type,
        "created": memory.created, "updated": memory.updated, "replaces": memory.replaces,
        "body": hide(memory.body), "fields": [[key, hide(value)] for key, value in _fields(memory.front)],
    }


def parse_entry_bytes(data: bytes, day: str) -> dict:
    """Return the JSON-able parse of a voyage entry's bytes (fields, or error and raw text)."""
    text, problem = _decode(data)
    if text is None:
        return {"error": problem, "raw": data.decode("utf-8", "replace")}
    try:
        entry = parse_entry(text, day)
    except FormatError as error:
        return {"error": str(error), "raw": text}
    return {
        "day": entry.day, "position": entry.position, "kind": entry.kind, "title": entry.title,
        "next": entry.next, "fingerprint": entry.fingerprint, "sources": entry.sources,
        "body": entry.body, "fields": _fields(entry.front),
    }


def parse_index_bytes(data: bytes) -> dict:
    """Return the JSON-able parse of a MEMORY.md: its body, or error and raw text."""
    text, problem = _decode(data)
    if text is None:
        return {"error": problem, "raw": data.decode("utf-8", "replace")}
    try:
        _, body = frontmatter.parse(text)
    except FormatError as error:
        return {"error": str(error), "raw": text}
    return {"body": body}


def file_identity(st: os.stat_result) -> list[int]:
    """Inode, size, mtime and ctime (ns): every writer of a source replaces or rewrites it, which
    changes at least one of them."""
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class SourceReader:
    """Reads source files through the parse cache; ``cache`` maps ``<kind>:<sha>`` to a parse.

    ``seen`` maps a relpath to ``[inode, size, mtime ns, ctime ns, sha]`` as the last render
    read it: a regular file whose identity is unchanged is not read or hashed again (an
    incremental render reads only what changed). ``used`` and ``identities`` collect what
    this render needed, per part of the root (``part``: a bank, the log): saved, they are the
    next cache. ``before`` holds each part as the cache had it (part -> ``(parsed, seen)``),
    so only the parts that changed are written again (``changed_parts``).
    """

    def __init__(self, layout: Layout, cache: dict[str, dict], seen: dict[str, list] | None = None,
                 before: dict[str, tuple[dict, dict]] | None = None):
        self.layout = layout
        self.cache = cache
        self.seen = seen or {}
        self.before = before or {}
        self.parts: dict[str, tuple[dict[str, dict], dict[str, list]]] = {}
        self.parsed = 0  # files parsed because their bytes were not in the cache
        self.part("")

    def part(self, name: str) -> None:
        """Record what is read from now on under the part ``name`` (``memories/<bank>``, ``log``)."""
        self.used, self.identities = self.parts.setdefault(name, ({}, {}))

    def changed_parts(self) -> dict[str, tuple[dict[str, dict], dict[str, list]]]:
        """Return the parts (name -> ``(parsed, seen)``) that differ from the cache's: the ones to write."""
        return {
            name: (used, identities) for name, (used, identities) in self.parts.items()
            if (used or identities or name in self.before)
            and (name not in self.before or used.keys() != self.before[name][0].keys()
                 or identities != self.before[name][1])
        }

    def read(self, path: str | Path, relpath: str, kind: str, parse) -> SourceFile:
        """Read ``path`` (``relpath`` from the root) and return it parsed, from the cache when it can."""
        return self.read_all([(path, relpath)], kind, parse)[0]

    def read_folder(self, folder: str, top: str, names: list[str], kind: str, parse) -> list[SourceFile]:
        """Return ``read(f"{folder}/{name}", f"{top}/{name}", kind, parse)`` for each name, in order."""
        return self.read_all([(f"{folder}/{name}", f"{top}/{name}") for name in names], kind, parse)

    def read_all(self, files: list[tuple[str | Path, str]], kind: str, parse) -> list[SourceFile]:
        """Return ``read(path, relpath, kind, parse)`` for each ``(path, relpath)``, in order."""
        seen, cache, used, identities = self.seen, self.cache, self.used, self.identities
        lstat, is_regular_mode = os.lstat, stat.S_ISREG
        prefix = kind + ":"
        read = []
        for path, relpath in files:
            recorded = seen.get(relpath)
            if type(recorded) is list and len(recorded) == 5:
                # The fast path of an incremental render, taken for thousands of files: one
                # lstat, and the recorded identity reused as this render's (it is equal).
                try:
                    st = lstat(path)
                except OSError:
                    st = None
                sha = recorded[4]
                if (st is not None and is_regular_mode(st.st_mode) and recorded[0] == st.st_ino
                        and recorded[1] == st.st_size and recorded[2] == st.st_mtime_ns
                        and recorded[3] == st.st_ctime_ns and type(sha) is str):
                    key = prefix + sha
                    parsed = cache.get(key)
                    if type(parsed) is dict:
                        used[key] = parsed
                        identities[relpath] = recorded
                        read.append(SourceFile(relpath, sha, parsed))
                        continue
            read.append(self._read(path, relpath, kind, parse))
        return read

    def _read(self, path: str | Path, relpath: str, kind: str, parse) -> SourceFile:
        # The slow path: open, hash, and parse unless the bytes are in the cache.
        try:
            with open(path, "rb", opener=_no_follow) as handle:
                st = os.fstat(handle.fileno())
                if not stat.S_ISREG(st.st_mode):
                    raise OSError(22, "is not a regular file", str(path))
                data = handle.read()
        except OSError:
            try:
                data, st = read_regular(Path(path)), None  # its error, worded as every reader words it
            except OSError as error:
                return SourceFile(relpath, "", {"error": f"cannot read the file: {error.strerror}", "raw": ""})
        sha = hashlib.sha256(data).hexdigest()
        key = f"{kind}:{sha}"
        parsed = self.cache.get(key)
        if not isinstance(parsed, dict):
            parsed = parse(data)
            self.parsed += 1
        self.used[key] = parsed
        if st is not None:
            self.identities[relpath] = [*file_identity(st), sha]
        return SourceFile(relpath, sha, parsed)


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)


def load_json(path: Path) -> object:
    """Return the JSON in ``path``, or None when it is missing or unreadable (a cache rebuilds)."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def load_state(path: Path) -> object:
    """Return the value marshalled in ``path`` (a cache of ``.site/.state/``), or None when it is
    missing or unreadable (another Python's format, a damaged file): the cache rebuilds."""
    try:
        return marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None


def dump_state(value: object) -> bytes:
    """Return ``value`` (plain data only) in the format load_state reads."""
    # Version 2: no back-references, so no table of every object written (version 4 keeps one).
    return marshal.dumps(value, 2)


def load_source_cache(layout: Layout) -> tuple[dict[str, dict], dict[str, list], dict[str, tuple[dict, dict]]]:
    """Return the parse cache (``<kind>:<sha>`` -> parse), the files' identities as last read
    (relpath -> ``[inode, size, mtime ns, ctime ns, sha]``), both merged over the parts, and
    each part as read (part -> ``(parsed, seen)``); a part that is unreadable or of another
    format counts as empty (docs/BANK-FORMAT.md, ".site/")."""
    cache: dict[str, dict] = {}
    seen: dict[str, list] = {}
    before: dict[str, tuple[dict, dict]] = {}
    for name in cache_parts(layout.site_sources_cache):
        data = load_state(layout.site_sources_cache / name)
        if (isinstance(data, dict) and data.get("format") == SOURCES_FORMAT and isinstance(data.get("part"), str)
                and isinstance(data.get("parsed"), dict) and isinstance(data.get("seen"), dict)
                and layout.site_sources_part(data["part"]).name == name):
            cache.update(data["parsed"])
            seen.update(data["seen"])
            before[data["part"]] = (data["parsed"], data["seen"])
    return cache, seen, before


def cache_parts(folder: Path) -> list[str]:
    """Return the names of the ``*.marshal`` files in ``folder`` (a cache of ``.site/.state/``),
    sorted; one of the wrong kind (a folder, a link) is removed, never followed, for the render
    to write it again. Empty when the folder is missing or cannot be listed."""
    try:
        entries = [entry for entry in os.scandir(folder) if entry.name.endswith(".marshal")]
    except OSError:
        return []
    names = []
    for entry in entries:
        if entry.is_file(follow_symlinks=False):
            names.append(entry.name)
        else:
            remove_wrong_kind(Path(entry.path), folder=False)
    return sorted(names)


def dump_source_part(part: str, parsed: dict[str, dict], seen: dict[str, list]) -> bytes:
    """Return one part of the parse cache in the format load_source_cache reads."""
    return dump_state({"format": SOURCES_FORMAT, "part": part, "parsed": parsed, "seen": seen})


def _archived_files(folder: Path) -> list[Path]:
    # Regular files only, in a real folder: a link is never followed (store.atomic.read_regular).
    if not is_real_dir(folder / BANK_ARCHIVE):
        return []
    try:
        entries = list((folder / BANK_ARCHIVE).iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((p for p in entries if p.suffix == ".md" and is_regular(p) and not p.name.startswith(".")),
                  key=lambda p: p.name)


def _queue(layout: Layout) -> list[dict]:
    """Return the queued pointers as the site shows them; a title's secrets masked (a pointer
    written before the ban covered titles, or edited by hand, may hold one)."""
    from sandman.banks.secrets import mask_secrets

    waiting = []
    for pointer in queue(layout):
        data = pointer.data
        waiting.append({
            "session": pointer.session,
            "title": private.redact(mask_secrets(display_value(data.get("title")))),
            "cwd": display_value(data.get("cwd")),
            "ended": display_value(data.get("ended")),
            "host": display_value(data.get("host")),
        })
    return waiting


def _history(layout: Layout) -> tuple[PathHistory | None, object | None, int]:
    from sandman.store import repo as store

    if not store.is_repository(layout):
        return None, None, 0
    repo = store.open_repo(layout)
    history = PathHistory.from_json(load_state(layout.site_history_cache))
    try:
        walked = history.update(repo)
    except RepositoryError:
        # A damaged cache or an odd history: one fresh walk, and let that one raise.
        history = PathHistory()
        walked = history.update(repo)
    return history, repo, walked


def gather(layout: Layout, reader: SourceReader) -> Snapshot:
    """Read the whole root into a Snapshot. Raises RepositoryError (an unreadable repository)
    and OSError (a folder that cannot be listed); a bad file is kept with its error."""
    banks = []
    for folder in bank_folders(layout):
        index_path = folder / BANK_INDEX
        top = folder.relative_to(layout.root).as_posix()
        reader.part(top)
        bank = Bank(
            name=folder.name,
            label=bank_directory_of(folder),
            index=reader.read(index_path, f"{top}/{BANK_INDEX}", "index", parse_index_bytes)
            if is_regular(index_path) else None,
        )
        base = os.fspath(folder)
        bank.memories = reader.read_folder(base, top, memory_names(folder), "memory", parse_memory_bytes)
        bank.archived = [reader.read(path, f"{top}/{BANK_ARCHIVE}/{path.name}", "memory", parse_memory_bytes)
                         for path in _archived_files(folder)]
        banks.append(bank)
    log = layout.log.relative_to(layout.root).as_posix()
    reader.part(log)
    entries = [
        # The day is part of the key: the same bytes under another file name are a mismatch.
        reader.read(path, f"{log}/{path.name}", f"entry-{path.stem}",
                    lambda data, day=path.stem: parse_entry_bytes(data, day))
        for path in entry_paths(layout)
    ]
    history, repo, walked = _history(layout)
    from sandman.recall.ledger import usage

    return Snapshot(banks, entries, began(layout), _queue(layout), history, repo, walked, usage(layout))
