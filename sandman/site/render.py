"""Rendering the memory root into ``<root>/.site/``: gather everything, then write.

Phase one reads the root (site.gather), builds every page with its context
(site.pages), refuses two pages claiming one output path and any output path
that would resolve outside ``.site/``. Nothing is written before all of it has
succeeded. Phase two writes each page whose digest changed: the digest is the
SHA-256 of the renderer's own fingerprint (templates, assets and this package's
code) and the page's context, so a page whose sources did not change is not
rewritten. Pages the last render wrote and this one no longer makes (a
forgotten memory) are removed.

What the last render knew lives in ``.site/.state/``: the manifest (page ->
digest), the parse cache (one file per bank and one for the log), the history cache and the trail cache (site.machine); deleting it forces a full
render. One render writes ``.site/`` at a time (``.site/.state/render.lock``).
"""

from __future__ import annotations

import gc
import hashlib
import json
import marshal
import os
import time
from dataclasses import dataclass
from pathlib import Path


from sandman import __version__, config
from sandman.errors import InputError, SiteError
from sandman.layout import Layout, resource
from sandman.site.gather import (Snapshot, SourceReader, cache_parts, dump_source_part, dump_state, gather,
                                 load_json, load_source_cache, load_state)
from sandman.site.machine import gather_machine, machine_pages
from sandman.site.markup import environment
from sandman.site.pages import (LOG_FAMILY, Page, PageBuilder, family_inputs, family_of, live_keys, log_inputs,
                                root_of)
from sandman.store.atomic import TEMP_NAME, remove_wrong_kind, write_atomic
from sandman.store.repo import locked
from sandman.store.runlock import WaitLock
from sandman.store.history import DiffReader

MANIFEST_FORMAT = 2


@dataclass
class RenderStats:
    """What one render did: pages made, written, removed; files it could not read; seconds."""

    site: Path
    pages: int
    written: int
    removed: int
    unreadable: int
    commits_walked: int
    seconds: float


def _files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts)


def renderer_fingerprint(templates: Path, assets: Path) -> str:
    """Return the SHA-256 of everything that shapes a page besides its data: the templates,
    the static assets and the code of sandman.site, so a new sandman re-renders once."""
    code = Path(__file__).resolve().parent
    digest = hashlib.sha256(__version__.encode())
    for folder in (templates, assets, code):
        for path in _files(folder):
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def page_digest(fingerprint: str, page: Page) -> str:
    """Return the SHA-256 of what a page is made of: the renderer and the page's context.

    The context is serialised with marshal format 2, which writes equal values
    as equal bytes (no back-references) and is several times faster than JSON
    on thousands of pages; contexts are built in a fixed key order. A page with a ``key``
    is digested by it instead of its context. A new Python may change the format: that costs
    one full render, never a stale page.
    """
    if page.key is not None:  # what decides the context, smaller (site.pages.Page.key)
        data = marshal.dumps([page.kind, page.template, "key", page.key], 2)
    else:
        data = marshal.dumps([page.kind, page.template, page.context], 2)
    return hashlib.sha256(fingerprint.encode() + b"\0" + data).hexdigest()


def _lexically_inside(path: str) -> bool:
    # No absolute, empty or dotted part ('.', '..', '.state'): the server would refuse those anyway.
    # Written without splitting (5,400 paths a render): an empty part is a leading, trailing or
    # doubled '/', a dotted part a leading '.' or a '/.'.
    return not (not path or path[0] in "/." or path[-1] == "/" or "//" in path or "/." in path
                or "\\" in path or "\0" in path)


def plan(layout: Layout, pages: list[Page], kept: dict[str, Page] | None = None) -> dict[str, Page]:
    """Map each page's site path to the page; refuse duplicates and escapes.

    ``kept`` maps the paths of pages kept as they are (their family unchanged) to one page
    standing for the family (kind ``kept``); they are checked like the others, after them.
    A path must stay inside ``.site/`` both as written (no empty, absolute or
    dotted parts: no ``..``, nothing under ``.state/``) and once its folder is
    resolved (no symlinked folder leading out). The file itself is replaced
    by a rename, which replaces a symlink rather than writing through it.
    Raises SiteError when two pages claim one path, or a path leads outside.
    """
    site = layout.site.resolve()
    state = layout.site_state.resolve()
    folders: dict[str, tuple[Path, bool]] = {}
    planned: dict[str, Page] = {}
    pairs = [(page.path, page) for page in pages]
    for path, page in pairs + list((kept or {}).items()):
        if path in planned:
            other = planned[path]
            raise SiteError(f"{other.source} and {page.source} both render to .site/{path}; rename one")
        folder = path.rpartition("/")[0]
        if folder not in folders:
            resolved = (layout.site / folder).resolve()
            folders[folder] = (resolved, resolved.is_relative_to(site) and not resolved.is_relative_to(state))
        resolved, inside = folders[folder]
        if not inside or not _lexically_inside(path):
            raise SiteError(f"{page.source} would render to {resolved / path.rpartition('/')[2]}, "
                            f"outside {layout.site}")
        planned[path] = page
    return planned


def existing_files(site: Path, state: str = ".state") -> set[str]:
    """Return the site-relative paths of the files under ``site`` (its state folder ``state``,
    layout.site_state's name, left out), and delete the temp files a killed writer left
    (store.atomic.TEMP_NAME) under ``site`` and ``state`` as they are met: for a caller holding the site lock (``layout.site_lock``),
    which every writer of ``.site/`` holds, so any such file is a killed render's. Symbolic
    links to folders are not followed; other dotted folders are not entered."""
    found = set()
    temp_name = TEMP_NAME.fullmatch
    for folder, dirs, files in os.walk(site):
        prefix = os.path.relpath(folder, site).replace(os.sep, "/")
        top = prefix == "."
        if top:
            dirs[:] = [name for name in dirs if not name.startswith(".") or name == state]
        elif prefix == state or prefix.startswith(state + "/"):
            for name in files:
                if name[0] == "." and temp_name(name):
                    _unlink_quietly(os.path.join(folder, name))
            continue
        else:
            dirs[:] = [name for name in dirs if not name.startswith(".")]
        for name in files:
            if name[0] == "." and temp_name(name):
                _unlink_quietly(os.path.join(folder, name))
            else:
                found.add(name if top else f"{prefix}/{name}")
    return found


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)  # never follows a link: a link named so goes, what it points at stays
    except OSError:
        pass


class Writer:
    """Phase two: renders and writes the pages whose digests changed."""

    def __init__(self, layout: Layout, snapshot: Snapshot):
        self.env = environment(compiled=layout.site_templates_cache)
        self.assets = resource("site")
        self.diffs = None
        if snapshot.repo is not None:
            self.diffs = DiffReader(snapshot.repo, snapshot.history.diffs if snapshot.history is not None else None)

    def render(self, page: Page) -> bytes:
        if page.kind == "asset":
            return (self.assets / page.context["asset"]).read_bytes()
        if page.kind == "text":
            return page.context["text"].encode("utf-8")
        context = dict(page.expand(page.context) if page.expand else page.context, root=root_of(page.path))
        if page.template == "memory.html" and self.diffs is not None:
            context["changes"] = [
                dict(change, diff=self.diffs.diff(change["id"], change["path"])) for change in page.context["changes"]
            ]
        return self.env.get_template(page.template).render(context).encode("utf-8")


def family_digest(fingerprint: str, inputs: list) -> str:
    """Return the SHA-256 of a family's inputs (site.pages.family_inputs) and the renderer."""
    return hashlib.sha256(fingerprint.encode() + b"\0" + marshal.dumps(inputs, 2)).hexdigest()


def _load_manifest(layout: Layout) -> tuple[dict[str, str], dict[str, list]]:
    """Return the pages (path -> digest) and the families (name -> ``[digest, [paths]]``) the
    last render recorded; both empty when the manifest is missing, unreadable or of another format."""
    data = load_json(layout.site_manifest)
    if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT and isinstance(data.get("pages"), dict):
        pages = {key: value for key, value in data["pages"].items() if isinstance(value, str)}
        families = data.get("families")
        families = {
            name: value for name, value in (families.items() if isinstance(families, dict) else ())
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], list) and all(isinstance(path, str) and path in pages for path in value[1])
        }
        return pages, families
    return {}, {}


SEARCH_FORMAT = 2  # one file per bank (docs/BANK-FORMAT.md, ".site/"); 1 was one search.marshal


def _load_search_chunks(layout: Layout) -> dict[str, list[str]]:
    """Return each family's part of the search index as the last render made it: name ->
    ``[family digest, chunk]``; a part missing, unreadable or of another format is left out."""
    names = cache_parts(layout.site_search_cache)
    chunks = {}
    for name in names:
        data = load_state(layout.site_search_cache / name)
        if (isinstance(data, dict) and data.get("format") == SEARCH_FORMAT and isinstance(data.get("family"), str)
                and isinstance(data.get("digest"), str) and isinstance(data.get("chunk"), str)
                and layout.site_search_part(data["family"]).name == name):
            chunks[data["family"]] = [data["digest"], data["chunk"]]
    return chunks


def _save_search_chunks(layout: Layout, made: dict[str, list[str]], loaded: dict[str, list[str]]) -> None:
    """Write the parts of the search index that differ from the ones loaded; remove the parts of
    families that are gone (and the one-file cache of an older sandman)."""
    for family, (digest, chunk) in made.items():
        if loaded.get(family) != [digest, chunk]:
            write_atomic(layout.site_search_part(family),
                         dump_state({"format": SEARCH_FORMAT, "family": family, "digest": digest, "chunk": chunk}),
                         durable=False)  # a cache: lost or torn by a crash, it is rebuilt
    for family in loaded.keys() - made.keys():
        layout.site_search_part(family).unlink(missing_ok=True)
    layout.site_search_cache_v1.unlink(missing_ok=True)


def _kept_families(snapshot: Snapshot, fingerprint: str, families: dict[str, list], present: set[str],
                   live: set[str]) -> tuple[dict[str, str], set[str]]:
    """Return each family's digest now (the banks', and the log's: the voyage entries' pages),
    and the families whose digest is the one the last render recorded with every page of it
    still on disk: those are neither built nor written. ``live``: site.pages.live_keys."""
    now = {family_of(bank): family_digest(fingerprint, family_inputs(snapshot, bank)) for bank in snapshot.banks}
    now[LOG_FAMILY] = family_digest(fingerprint, log_inputs(snapshot, live))
    kept = {
        name for name, digest in now.items()
        if name in families and families[name][0] == digest and all(path in present for path in families[name][1])
    }
    return now, kept


def _remove(layout: Layout, relpath: str) -> bool:
    site = layout.site.resolve()
    target = (layout.site / relpath).resolve()
    if not target.is_relative_to(site) or target.is_relative_to(layout.site_state.resolve()):
        return False
    try:
        target.unlink()
    except FileNotFoundError:
        return False
    folder = target.parent
    while folder != site and folder.is_relative_to(site):
        try:
            folder.rmdir()  # only when empty: a folder with other pages stays
        except OSError:
            break
        folder = folder.parent
    return True


def render_site(layout: Layout) -> RenderStats:
    """Render the memory root into ``<root>/.site/`` incrementally; return what was done.

    Raises InputError when the root does not exist, SiteError (two pages for
    one path, a path outside ``.site/``), LockBusy (another render holds the
    lock for 300 s), RepositoryError (an unreadable git repository), OSError.
    A memory or entry that cannot be parsed is rendered with its error, not raised.
    """
    started = time.perf_counter()
    if not layout.root.is_dir():
        raise InputError(f"there is no memory root at {layout.root}; run `sandman init` first")
    # The state is a cache: an entry of the wrong kind there (a file where a folder belongs, a
    # link) is removed and rebuilt, as a damaged cache file is, never followed out of .site/.
    remove_wrong_kind(layout.site_state, folder=True)
    layout.site_state.mkdir(parents=True, exist_ok=True)
    remove_wrong_kind(layout.site_lock, folder=False)
    lock = WaitLock(layout.site_lock, config.SITE_RENDER_LOCK_TIMEOUT_S)
    locked(lock)  # sandman's one way in: a lock file that cannot be made fails at once
    # A render allocates hundreds of thousands of small dicts and lists (the caches, the
    # contexts) that all live until it ends: the cyclic collector would walk them again and
    # again for nothing (0.6 x the time of an incremental render with it on, measured in
    # docs/performance.md). Reference counting still frees everything; cycles wait until the end.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for path, folder in ((layout.site_manifest, False), (layout.site_history_cache, False),
                             (layout.site_trail_cache, False), (layout.site_sources_cache_v1, False),
                             (layout.site_search_cache_v1, False), (layout.site_sources_cache, True),
                             (layout.site_search_cache, True), (layout.site_templates_cache, True)):
            remove_wrong_kind(path, folder)
        return _render(layout, started)
    finally:
        if collecting:
            gc.enable()
        lock.release()


def _render(layout: Layout, started: float) -> RenderStats:
    # Phase one: read everything, build every page, check every output path.
    reader = SourceReader(layout, *load_source_cache(layout))
    snapshot = gather(layout, reader)
    templates, assets = resource("templates"), resource("site")
    asset_names = [path.relative_to(assets).as_posix() for path in _files(assets)]
    fingerprint = renderer_fingerprint(templates, assets)
    old, old_families = _load_manifest(layout)
    present = existing_files(layout.site, layout.site_state.name)
    # A bank whose sources and history did not change keeps its pages as they are, and so do the
    # voyage entries when none changed: they are not built, digested or written (their paths
    # are still checked, with the rest).
    live = live_keys(snapshot)
    families, kept = _kept_families(snapshot, fingerprint, old_families, present, live)
    chunks = _load_search_chunks(layout)
    machine, lead = machine_pages(gather_machine(layout), snapshot)
    builder = PageBuilder(snapshot, {name: chunk for name, (digest, chunk) in chunks.items()
                                     if families.get(name) == digest}, lead, families, live)
    pages = builder.pages(asset_names, skip=frozenset(kept)) + machine
    standing = {name: Page("", "kept", "", {}, name, name) for name in kept}  # one for all of a family's pages
    planned = plan(layout, pages, {path: standing[name] for name in sorted(kept) for path in old_families[name][1]})
    digests = {path: old[path] if page.kind == "kept" else page_digest(fingerprint, page)
               for path, page in planned.items()}
    stale = [path for path, digest in digests.items() if old.get(path) != digest or path not in present]
    members: dict[str, list[str]] = {name: [] for name in families}
    for path, page in planned.items():
        if page.family in members:
            members[page.family].append(path)
    recorded = {name: [families[name], paths] for name, paths in members.items()}

    # Phase two: write what changed, remove what is gone, then record it.
    writer = Writer(layout, snapshot)
    if writer.diffs is not None:
        writer.diffs.expect(change["id"] for path in stale if planned[path].template == "memory.html"
                            for change in planned[path].context["changes"])
    for path in stale:
        write_atomic(layout.site / path, writer.render(planned[path]), durable=False)
    removed = sum(1 for path in old if path not in planned and _remove(layout, path))
    if stale or removed:
        # One flush of every page instead of two fsyncs each (thousands of them on a
        # full render), before the manifest records them as written.
        os.sync()
    # The state is rewritten only when it changed: on a large root it is megabytes.
    # Per part (a bank, the log): one changed memory rewrites its bank's part, not 9 MB of parses.
    for part, (parsed, seen) in reader.changed_parts().items():
        write_atomic(layout.site_sources_part(part), dump_source_part(part, parsed, seen),
                     durable=False)  # a cache: lost or torn by a crash, it is rebuilt
    for part in reader.before.keys() - reader.parts.keys():
        layout.site_sources_part(part).unlink(missing_ok=True)  # a bank that is gone
    layout.site_sources_cache_v1.unlink(missing_ok=True)  # the one-file cache of an older sandman
    if snapshot.history is not None and (snapshot.walked or not layout.site_history_cache.is_file()):
        write_atomic(layout.site_history_cache, dump_state(snapshot.history.to_json()), durable=False)
    made = {name: [families[name], chunk] for name, chunk in builder.search_chunks.items() if name in families}
    if made:
        _save_search_chunks(layout, made, chunks)
    if digests != old or recorded != old_families:
        # Not fsynced: the pages it records were flushed above, and whatever a crash leaves of it
        # is safe: the old manifest rewrites the pages it does not match, a torn one reads as
        # none (a full render). Its two fsyncs were 5 to 20 ms of an incremental render.
        write_atomic(layout.site_manifest,
                     # No indent: json's C encoder runs only without one (indent=0 took 10 % of a render).
                     json.dumps({"format": MANIFEST_FORMAT, "pages": digests, "families": recorded}),
                     durable=False)
    return RenderStats(
        site=layout.site, pages=len(planned), written=len(stale), removed=removed,
        unreadable=snapshot.unreadable(), commits_walked=snapshot.walked,
        seconds=time.perf_counter() - started,
    )
