"""Merging two machines' memory roots (docs/BANK-FORMAT.md, "Merging two machines").

sync hands this module three flat trees (repo-relative path -> (blob id, mode)):
the common ancestor (``base``), this machine (``ours``) and the remote
(``theirs``), and gets back the merged flat tree and the list of what it had to
keep twice. One memory per file is what makes this work: two machines that
learned different things touched different files, and those merge by path.

Per path (derived files aside):

- the same on both sides, or changed on one side only: that side's version
  (a deletion on one side of a file the other left alone is that side's
  decision: an archive move or a ``forget``);
- a memory file (live or in ``_archive/``) changed on both sides: this
  machine's version stays where it is and the remote's is kept beside it under
  a collision suffix (``<stem>_2.md``…; ``<stamp>-2_<file>`` in ``_archive/``),
  a live copy carrying ``conflict_of: <file>`` in its frontmatter;
- a memory edited on one side and archived or deleted on the other: the edit
  stays live;
- a trail day file (``trail/<yyyy>/<mm>/<dd>.jsonl``) changed on both sides:
  this machine's lines, then the remote's lines this machine lacks (the trail
  is append-only, so both machines' events are kept);
- any other file changed on both sides (``_reflect.json``, a voyage entry):
  this machine's version; the remote's stays in the merge's second parent.

Derived files are never merged as text: every MEMORY.md of a bank the two
sides disagree on is regenerated from the merged folder with
banks.index.render_index, and log/INDEX.md with the renderer the caller passes.

A last check refuses the merge if any memory version either side made since
the ancestor would be missing from the result.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sandman.banks import frontmatter
from sandman.banks.index import render_index
from sandman.banks.names import MEMORY_TYPES
from sandman.errors import FormatError, SyncError
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout
from sandman.store.atomic import write_atomic

Entry = tuple[str, int]
FlatTree = dict[str, Entry]
CONFLICT_KEY = "conflict_of"
_ARCHIVED = re.compile(r"(\d{8}T\d{6})(?:-\d+)?_(.+)")


class Blobs(Protocol):
    """Access to the object database: read a blob's bytes, write bytes as a blob (hex id)."""

    def read(self, blob: str) -> bytes: ...

    def write(self, data: bytes) -> str: ...


@dataclass
class Kept:
    """One place where the merge kept more than one side's work, and how."""

    kind: str  # both-changed | both-added | edit-kept | file-both-changed | index-kept
    path: str  # the file at stake, repo-relative
    copy: str | None = None  # where the remote's version went, when it was kept beside ours

    def describe(self, remote: str) -> str:
        """Return one line for the person: what happened to ``path`` and where each version is."""
        if self.kind in ("both-changed", "both-added"):
            how = "changed here and on" if self.kind == "both-changed" else "added here and on"
            return f"kept both versions of {self.path} ({how} {remote}): {remote}'s is {Path(self.copy or '').name}"
        if self.kind == "edit-kept":
            return f"kept {self.path}: edited on one side, archived or deleted on the other"
        if self.kind == "index-kept":
            return f"kept this machine's {self.path}: both sides changed it; the next reflect regenerates it"
        return f"kept this machine's {self.path}: both sides changed it; {remote}'s is in the merge's second parent"


@dataclass
class Merged:
    """The merged flat tree and what was kept twice."""

    tree: FlatTree
    kept: list[Kept] = field(default_factory=list)


@dataclass(frozen=True)
class _Paths:
    memories: str  # "memories"
    log: str  # "log"
    log_index: str  # "log/INDEX.md"
    trail: str = "trail"  # "trail"

    @classmethod
    def of(cls, layout: Layout) -> "_Paths":
        def rel(path: Path) -> str:
            return path.relative_to(layout.root).as_posix()

        return cls(rel(layout.memories), rel(layout.log), rel(layout.log_index), rel(layout.trail))

    def kind(self, path: str) -> str | None:
        """``live``, ``archive``, ``index`` (a MEMORY.md or log/INDEX.md), ``trail`` (a trail day file),
        or None for other files."""
        if path == self.log_index:
            return "index"
        if path.startswith(self.trail + "/") and path.endswith(".jsonl"):
            return "trail"
        parts = path.split("/")
        if len(parts) < 3 or parts[0] != self.memories or parts[1].startswith("."):
            return None
        if len(parts) == 3:
            name = parts[2]
            if name == BANK_INDEX:
                return "index"
            if name.endswith(".md") and "_" in name and name.split("_", 1)[0] in MEMORY_TYPES:
                return "live"
        if len(parts) == 4 and parts[2] == BANK_ARCHIVE:
            return "archive"
        return None


def merge_trees(
    layout: Layout,
    base: FlatTree,
    ours: FlatTree,
    theirs: FlatTree,
    blobs: Blobs,
    *,
    log_index: Callable[[Path], str] | None = None,
) -> Merged:
    """Merge ``theirs`` into ``ours`` over ``base``; return the merged tree and what was kept twice.

    ``log_index`` renders log/INDEX.md from a log folder on disk (reflect's
    renderer); when None, a log/INDEX.md changed on both sides keeps this
    machine's version. Raises SyncError (``conflict``) rather than return a
    tree that would lose a memory version either side made since ``base``.
    """
    paths = _Paths.of(layout)
    merged: FlatTree = {}
    kept: list[Kept] = []
    relocate: list[str] = []
    for path in sorted(set(base) | set(ours) | set(theirs)):
        kind = paths.kind(path)
        if kind == "index":
            continue
        b, o, t = base.get(path), ours.get(path), theirs.get(path)
        if o == t or t == b:
            result = o
        elif o == b:
            result = t
        elif o is None or t is None:
            result = o if t is None else t  # never lose the side that changed it
            kept.append(Kept("edit-kept", path))
        elif kind in ("live", "archive"):
            result = o
            relocate.append(path)
        elif kind == "trail":
            result = (blobs.write(_union_lines(blobs.read(o[0]), blobs.read(t[0]))), o[1])
        else:
            result = o
            kept.append(Kept("file-both-changed", path))
        if result is not None:
            merged[path] = result
    taken = set(base) | set(ours) | set(theirs) | set(merged)
    for path in relocate:
        copy = _free_name(path, paths.kind(path), taken)
        taken.add(copy)
        blob, mode = theirs[path]
        if paths.kind(path) == "live":
            blob = blobs.write(_with_lineage(blobs.read(blob), Path(path).name))
        merged[copy] = (blob, mode)
        kept.append(Kept("both-added" if path not in base else "both-changed", path, copy))
    _check_nothing_lost(paths, base, ours, theirs, merged, {theirs[p][0] for p in relocate})
    kept += _regenerate(paths, ours, theirs, merged, blobs, base, log_index)
    return Merged(merged, kept)


def _union_lines(ours: bytes, theirs: bytes) -> bytes:
    """This machine's trail lines, then the remote's lines it lacks, in the remote's order."""
    if ours and not ours.endswith(b"\n"):
        ours += b"\n"
    have = set(ours.splitlines())
    extra = [line for line in theirs.splitlines() if line.strip() and line not in have]
    return ours + b"".join(line + b"\n" for line in extra)


def _free_name(path: str, kind: str | None, taken: set[str]) -> str:
    folder, name = path.rsplit("/", 1)
    n = 2
    while True:
        if kind == "archive" and (match := _ARCHIVED.fullmatch(name)):
            candidate = f"{folder}/{match.group(1)}-{n}_{match.group(2)}"
        else:
            candidate = f"{folder}/{name[: -len('.md')] if name.endswith('.md') else name}_{n}.md"
        if candidate not in taken:
            return candidate
        n += 1


def _with_lineage(data: bytes, original: str) -> bytes:
    """Return a memory's bytes with ``conflict_of: <original>`` set; unreadable files stay byte for byte."""
    try:
        front, body = frontmatter.parse(data.decode("utf-8"))
        front.set(CONFLICT_KEY, original)
        return frontmatter.dump(front, body).encode("utf-8")
    except (UnicodeDecodeError, FormatError):
        return data


def _check_nothing_lost(
    paths: _Paths, base: FlatTree, ours: FlatTree, theirs: FlatTree, merged: FlatTree, moved: set[str]
) -> None:
    present = {blob for blob, _ in merged.values()} | moved
    for side in (ours, theirs):
        for path, entry in side.items():
            if paths.kind(path) not in ("live", "archive"):
                continue
            # A version this side left as the ancestor had it may give way to the
            # other side's edit, archive move or forget; one it made may not vanish.
            if entry[0] not in present and base.get(path) != entry:
                raise SyncError("conflict", f"refusing to merge: {path} would be lost; nothing was changed")


def _regenerate(
    paths: _Paths, ours: FlatTree, theirs: FlatTree, merged: FlatTree, blobs: Blobs,
    base: FlatTree, log_index: Callable[[Path], str] | None,
) -> list[Kept]:
    """Put the derived files into ``merged``: carried over where both sides agree, else re-rendered."""
    kept: list[Kept] = []
    banks = {
        path.split("/")[1] for path in (*ours, *theirs, *merged)
        if paths.kind(path) is not None and path != paths.log_index
    }
    for bank in sorted(banks):
        folder = f"{paths.memories}/{bank}/"
        index = folder + BANK_INDEX
        if not any(path.startswith(folder) for path in merged):
            continue
        if _under(ours, folder) == _under(theirs, folder):
            if index in ours:
                merged[index] = ours[index]
            continue
        text = _render(merged, folder, blobs, render_index, keep={index: ours.get(index) or theirs.get(index)})
        merged[index] = (blobs.write(text.encode("utf-8")), _mode(ours, theirs, index))
    log_folder = paths.log + "/"
    index = paths.log_index
    if index not in ours and index not in theirs:
        return kept
    if _under(ours, log_folder) == _under(theirs, log_folder):
        if index in ours:
            merged[index] = ours[index]
    elif log_index is not None:
        # The index whose voyage began first keeps ``began`` fixed (docs/BANK-FORMAT.md, "log/").
        first = min((e for e in (ours.get(index), theirs.get(index)) if e is not None),
                    key=lambda entry: _began(blobs.read(entry[0])))
        text = _render(merged, log_folder, blobs, log_index, keep={index: first})
        merged[index] = (blobs.write(text.encode("utf-8")), _mode(ours, theirs, index))
    else:
        b, o, t = base.get(index), ours.get(index), theirs.get(index)
        choice = t if o == b else o
        if choice is not None:
            merged[index] = choice
        if o != b and t != b and o != t:
            kept.append(Kept("index-kept", index))
    return kept


def _began(index: bytes) -> str:
    """Return the ``began:`` day of a log/INDEX.md's bytes ("~" sorts after any day when absent)."""
    match = re.search(rb"^began: *'?(\d{4}-\d{2}-\d{2})", index, re.M)
    return match.group(1).decode() if match else "~"


def _under(tree: FlatTree, folder: str) -> FlatTree:
    return {path: entry for path, entry in tree.items() if path.startswith(folder)}


def _mode(ours: FlatTree, theirs: FlatTree, path: str) -> int:
    entry = ours.get(path) or theirs.get(path)
    return entry[1] if entry else 0o100644


def _render(
    merged: FlatTree, folder: str, blobs: Blobs, render: Callable[[Path], str], keep: dict[str, Entry | None]
) -> str:
    """Write the merged folder's top-level files (and ``keep``) into a scratch copy and render it.

    The scratch copy has the folder's own name, so a renderer that reads the
    name (a bank's directory) sees what it would see in the root.
    """
    name = folder.rstrip("/").rsplit("/", 1)[-1]
    with tempfile.TemporaryDirectory(prefix="sandman-sync-") as scratch:
        target = Path(scratch) / name
        target.mkdir()
        files = {p: e for p, e in merged.items() if p.startswith(folder) and "/" not in p[len(folder):]}
        files.update({p: e for p, e in keep.items() if e is not None})
        for path, (blob, _) in files.items():
            write_atomic(target / path[len(folder):], blobs.read(blob))
        return render(target)
