"""The site's pages: every output path, and the data each page is made of.

The URL scheme (site-relative POSIX paths; every link between pages is
relative, so the folder works opened from disk):

    index.html                            home: banks, newest voyage entries, dream's queue
    search.html, search-index.js          client-side search over the live memories
    log/index.html, log/<day>.html        the voyage log
    banks/<bank>/index.html               a bank: its MEMORY.md rendered, its memories
    banks/<bank>/<stem>.html              a memory: fields, body, lineage, and its history
                                          (each commit that touched it, with the diff)
    banks/<bank>/_archive/<stem>.html     an archived memory
    archive.html                          every superseded memory, newest first
    trail/, shifts/, breaths/, reports.html, proposals.html, score.html, score/
                                          the machine's pages (site.machine)
    static/<asset>                        copied from the site/ folder

Memory files are ``<type>_*.md``, so no memory page can be named ``index``
or ``_archive``. A page's context is JSON-able and holds everything
the page shows: its digest decides whether the page is written again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote

from sandman import config
from sandman.layout import BANK_ARCHIVE
from sandman.pointers import parse_time
from sandman.site.gather import Bank, Snapshot, SourceFile

USER_LABEL = "user-wide memories"
# _archive/<YYYYMMDDTHHMMSS>[-<n>]_<file>: when it moved, the how-manieth move in that second, its name.
_ARCHIVED = re.compile(r"(\d{8}T\d{6})(?:-(\d+))?_(.+)")
# The archive stamp is taken just after the replacing file's ``updated``; allow for the clock ticking.
ARCHIVE_SLACK = timedelta(seconds=2)
MAX_LINEAGE = 100


@dataclass
class Page:
    """One output file: ``kind`` is ``html`` (``template`` rendered with ``context``),
    ``text`` (``context["text"]`` written as is) or ``asset`` (a file of site/ copied).

    ``expand``, when set, turns ``context`` into what the template gets, only for a page
    being written: ``context`` then holds a compact key of everything the page shows
    (a trail day's file digest and the facts from elsewhere), which is what the digest covers."""

    path: str  # site-relative POSIX path
    kind: str
    template: str
    context: dict
    source: str  # what the page is made from, for error messages
    # ``bank:<name>`` for a bank's pages, ``log`` for the voyage entries' pages: site.render may
    # skip a family whose inputs did not change.
    family: str = ""
    expand: Callable[[dict], dict] | None = None
    # When set, what the page's digest covers instead of its context: data that decides the
    # context as surely and is far smaller (search-index.js: its banks' family digests, not 4 MB).
    key: object = None


def stem(filename: str) -> str:
    return filename[: -len(".md")] if filename.endswith(".md") else filename


def memory_path(bank: str, filename: str, archived: bool = False) -> str:
    return f"banks/{bank}/{'_archive/' if archived else ''}{stem(filename)}.html"


def bank_path(bank: str) -> str:
    return f"banks/{bank}/index.html"


def entry_path(day: str) -> str:
    return f"log/{day}.html"


def root_of(path: str) -> str:
    """Return the way up from the page at ``path`` to the site's top (``""``, ``"../"``, ...)."""
    return "../" * path.count("/")


def family_of(bank: Bank) -> str:
    """Return the name of a bank's family of pages (its page and its memories' pages)."""
    return f"bank:{bank.name}"


LOG_FAMILY = "log"


def live_keys(snapshot: Snapshot) -> set[str]:
    """Return ``<bank>/<file>`` of every live memory: how an entry's ``sources`` name them."""
    return {f"{bank.name}/{_filename(source)}" for bank in snapshot.banks for source in bank.memories}


def log_inputs(snapshot: Snapshot, live: set[str]) -> list:
    """Return everything the voyage entries' pages are made of, as marshal-able data: each entry's
    path and SHA-256 (its neighbours are the entries beside it), and for each of its sources
    whether that memory is live (``live``: live_keys), which decides whether it is a link."""
    inputs = []
    for source in snapshot.entries:
        sources = source.data.get("sources") or []
        inputs.append([source.relpath, source.sha, [key in live for key in sources]])
    return [LOG_FAMILY, inputs]


def family_inputs(snapshot: Snapshot, bank: Bank) -> list:
    """Return everything a bank's family of pages is made of, as marshal-able data: the bank's
    name and label, each source's path and SHA-256, and the commits of each path its pages
    show (an archived memory's live path too). Commit ids name immutable commits, so equal
    inputs make equal pages; site.render skips a family whose inputs did not change."""
    history = snapshot.history
    paths = history.paths if history is not None else {}

    def source(item: SourceFile, live: str | None = None) -> list:
        return [item.relpath, item.sha, paths.get(item.relpath), paths.get(live) if live else None]

    archived = []
    for item in bank.archived:
        match = _ARCHIVED.fullmatch(_filename(item))
        live = f"{item.relpath.rsplit('/', 2)[0]}/{match.group(3)}" if match else None
        archived.append(source(item, live))
    reached = [list(snapshot.usage.get(usage_key(item), ())) for item in bank.memories]
    return [
        bank.name, bank.label, history is not None,
        source(bank.index) if bank.index is not None else None,
        [source(item) for item in bank.memories], archived, reached,
    ]


def usage_key(source: SourceFile) -> str:
    """A memory's key in the deliveries ledger (sandman.recall.ledger): ``<bank>/<file>``."""
    return source.relpath.split("/", 1)[1] if source.relpath.startswith("memories/") else source.relpath


def _filename(source: SourceFile) -> str:
    return source.relpath.rsplit("/", 1)[-1]


def _name(source: SourceFile) -> str:
    return source.data.get("name") or _filename(source)


def _stamp_time(stamp: str) -> datetime | None:
    try:
        return datetime.strptime(stamp, "%Y%m%dT%H%M%S")
    except ValueError:
        return None


def _stamp_display(stamp: str) -> str:
    moment = _stamp_time(stamp)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else stamp


class Lineage:
    """Resolves ``replaces`` within one bank: a file name to the archived copy it became.

    ``replaces`` names a file, and one name can be archived many times (a
    memory replaced again and again keeps its name). The copy a file replaced
    is the latest one moved before it: before it was written (its ``updated``,
    give or take the clock ticking) and, for an archived file, before it was
    itself moved.
    """

    def __init__(self, bank: Bank):
        self.found: dict[str, SourceFile | None] = {}  # relpath -> its predecessor, once worked out
        self.moved: dict[str, tuple[str, int]] = {}  # archived relpath -> (stamp, n): its place in move order
        self.by_original: dict[str, list[SourceFile]] = {}
        for source in bank.archived:
            match = _ARCHIVED.fullmatch(_filename(source))
            if match:
                self.moved[source.relpath] = (match.group(1), int(match.group(2) or 1))
                self.by_original.setdefault(match.group(3), []).append(source)

    def predecessor(self, source: SourceFile) -> SourceFile | None:
        """Return the archived copy ``source`` replaced, or None."""
        if source.relpath not in self.found:
            self.found[source.relpath] = self._predecessor(source)
        return self.found[source.relpath]

    def _predecessor(self, source: SourceFile) -> SourceFile | None:
        candidates = self.by_original.get(source.data.get("replaces") or "", [])
        if not candidates:
            return None
        own = self.moved.get(source.relpath)
        if own is not None:
            candidates = [c for c in candidates if self.moved[c.relpath] < own]
        written = parse_time(source.data.get("updated"))
        if written is not None:
            limit = written.replace(tzinfo=None) + ARCHIVE_SLACK
            timely = [c for c in candidates if (_stamp_time(self.moved[c.relpath][0]) or limit) <= limit]
            candidates = timely or candidates
        return max(candidates, key=lambda c: self.moved[c.relpath], default=None)

    def chain(self, source: SourceFile) -> list[SourceFile]:
        """Return the archived predecessors of ``source``, nearest first (cycles cut)."""
        chain: list[SourceFile] = []
        seen = {source.relpath}
        current = self.predecessor(source)
        while current is not None and current.relpath not in seen and len(chain) < MAX_LINEAGE:
            chain.append(current)
            seen.add(current.relpath)
            current = self.predecessor(current)
        return chain


class PageBuilder:
    """Builds every page of one snapshot (phase one: nothing is written here)."""

    def __init__(self, snapshot: Snapshot, search_chunks: dict[str, str] | None = None, lead: dict | None = None,
                 families: dict[str, str] | None = None, live: set[str] | None = None):
        """``search_chunks``: a bank family's part of the search index as an earlier render made
        it, for the families whose inputs did not change since (site.render keeps them).
        ``lead``: what the home page leads with (site.machine: unread reports, worst three).
        ``families``: each bank family's digest (site.render), which decides its part of the
        search index: given, search-index.js is digested by them. ``live``: live_keys, when made."""
        self.snapshot = snapshot
        self.search_chunks = dict(search_chunks or {})  # family -> its items, as JSON without the brackets
        self.lead = lead or {}
        self.families = families
        self.live = live if live is not None else live_keys(snapshot)
        # Per bank: its lineage (each file's chain of predecessors, worked out for the pages being
        # built only), and the file that superseded each archived one (the archive page shows all).
        self.lineages: dict[str, Lineage] = {}
        self.successors: dict[str, SourceFile] = {}
        for bank in snapshot.banks:
            lineage = self.lineages[bank.name] = Lineage(bank)
            for source in bank.memories + bank.archived:
                before = lineage.predecessor(source)
                if before is not None:
                    self.successors.setdefault(before.relpath, source)

    def pages(self, assets: list[str], skip: frozenset[str] = frozenset()) -> list[Page]:
        """Return every page; the families named in ``skip`` (``bank:<name>``, ``log``) are left out."""
        pages = [self._home(), self._log_index(), self._archive(), self._search_page(), self._search_index()]
        if LOG_FAMILY not in skip:
            pages += self._entries()
        for bank in self.snapshot.banks:
            if family_of(bank) not in skip:
                pages += self._bank(bank)
        pages += [Page(f"static/{name}", "asset", "", {"asset": name}, f"site/{name}") for name in assets]
        return pages

    # -- summaries shared by several pages --
    def _label(self, bank: Bank) -> str:
        return bank.label or USER_LABEL

    def _memory_summary(self, bank: Bank, source: SourceFile, archived: bool) -> dict:
        data = source.data
        return {
            "file": _filename(source), "name": _name(source), "ok": source.ok,
            "description": data.get("description") or data.get("error") or "",
            "type": data.get("type") or "", "updated": data.get("updated") or "",
            "url": memory_path(bank.name, _filename(source), archived),
        }

    def _entry_summary(self, source: SourceFile) -> dict:
        data, day = source.data, _filename(source)[: -len(".md")]
        return {
            "day": day, "url": entry_path(day), "ok": source.ok, "error": data.get("error") or "",
            "kind": data.get("kind") or "", "title": data.get("title") or "",
            "position": data.get("position"),
        }

    # -- pages --
    def _home(self) -> Page:
        banks = [{
            "name": bank.name, "label": self._label(bank), "url": bank_path(bank.name),
            "live": len(bank.memories), "archived": len(bank.archived),
        } for bank in self.snapshot.banks]
        newest = [self._entry_summary(source) for source in reversed(self.snapshot.entries)]
        context = {
            "title": "sandman", "banks": banks,
            "live": sum(bank["live"] for bank in banks), "archived": sum(bank["archived"] for bank in banks),
            "entries": newest[: config.SITE_HOME_LOG_ENTRIES], "log_count": len(newest),
            "queue": self.snapshot.queue, "lead": self.lead,
        }
        return Page("index.html", "html", "home.html", context, "the memory root")

    def _log_index(self) -> Page:
        context = {
            "title": "Voyage log", "began": self.snapshot.began or "",
            "entries": [self._entry_summary(source) for source in self.snapshot.entries],
        }
        return Page("log/index.html", "html", "log_index.html", context, "log/")

    def _entries(self) -> list[Page]:
        pages = []
        entries = self.snapshot.entries
        for i, source in enumerate(entries):
            summary = self._entry_summary(source)
            data = source.data
            sources = []
            for key in data.get("sources") or []:
                bank, _, filename = key.partition("/")
                found = key in self.live
                sources.append({"key": key, "url": memory_path(bank, filename) if found else None})
            context = {
                **summary, "title": summary["title"] or summary["day"],
                "next": data.get("next") or "", "fingerprint": data.get("fingerprint") or "",
                "body": data.get("body") or "", "fields": data.get("fields") or [],
                "raw": data.get("raw") or "", "sources": sources,
                "previous_day": _filename(entries[i - 1])[:-3] if i > 0 else None,
                "next_day": _filename(entries[i + 1])[:-3] if i + 1 < len(entries) else None,
            }
            pages.append(Page(entry_path(summary["day"]), "html", "log_entry.html", context, source.relpath,
                              LOG_FAMILY))
        return pages

    def _bank(self, bank: Bank) -> list[Page]:
        index = bank.index.data if bank.index else {"error": "MEMORY.md is missing", "raw": ""}
        context = {
            "title": self._label(bank), "name": bank.name,
            "index_body": index.get("body") or "", "index_error": index.get("error") or "",
            "links": {_filename(s): quote(f"{stem(_filename(s))}.html") for s in bank.memories},
            "memories": [self._memory_summary(bank, s, False) for s in bank.memories],
            "archived": [self._memory_summary(bank, s, True) for s in reversed(bank.archived)],
        }
        pages = [Page(bank_path(bank.name), "html", "bank.html", context, f"bank {bank.name}")]
        for archived, sources in ((False, bank.memories), (True, bank.archived)):
            for source in sources:
                pages.append(self._memory(bank, source, archived))
        for page in pages:
            page.family = family_of(bank)
        return pages

    def _archived_link(self, bank: Bank, source: SourceFile) -> dict:
        match = _ARCHIVED.fullmatch(_filename(source))
        return {
            "name": _name(source), "file": _filename(source),
            "url": memory_path(bank.name, _filename(source), True),
            "stamp": _stamp_display(match.group(1)) if match else "",
        }

    def _successor_link(self, bank: Bank, source: SourceFile) -> dict | None:
        after = self.successors.get(source.relpath)
        if after is None:
            return None
        after_archived = after.relpath.rsplit("/", 2)[-2] == BANK_ARCHIVE
        return {"name": _name(after), "url": memory_path(bank.name, _filename(after), after_archived)}

    def _memory(self, bank: Bank, source: SourceFile, archived: bool) -> Page:
        data, filename = source.data, _filename(source)
        history_paths = [source.relpath]
        match = _ARCHIVED.fullmatch(filename) if archived else None
        if match:
            # Its live path: memories/<bank>/_archive/<stamp>_<file> was memories/<bank>/<file>.
            history_paths.append(f"{source.relpath.rsplit('/', 2)[0]}/{match.group(3)}")
        memory = {
            "bank": bank.name, "label": self._label(bank), "bank_url": bank_path(bank.name),
            "file": filename, "relpath": source.relpath, "archived": archived,
            "title": _name(source), "ok": source.ok,
            "stamp": _stamp_display(match.group(1)) if match else "",
            "description": data.get("description") or "", "type": data.get("type") or "",
            "fields": data.get("fields") or [], "body": data.get("body") or "",
            "error": data.get("error") or "", "raw": data.get("raw") or "",
            "replaces": data.get("replaces") or "",
            "lineage": [self._archived_link(bank, item) for item in self.lineages[bank.name].chain(source)],
            "successor": self._successor_link(bank, source),
            "repo": self.snapshot.history is not None, "changes": self._changes(history_paths),
            "reached": None if archived else self._reached(source),
        }
        return Page(memory_path(bank.name, filename, archived), "html", "memory.html", memory, source.relpath)

    def _reached(self, source: SourceFile) -> dict:
        """How often the memory reached a session: ``{"sessions": int, "last": ISO time or ""}``."""
        found = self.snapshot.usage.get(usage_key(source))
        return {"sessions": found.sessions if found else 0, "last": found.last if found else ""}

    def _changes(self, relpaths: list[str]) -> list[dict]:
        """The commits of a page's history: the file's own, then (for an archived file) its
        live path's commits from before the one that archived it."""
        history = self.snapshot.history
        if history is None:
            return []
        own = history.paths.get(relpaths[0], [])
        changes = [(commit_id, relpaths[0]) for commit_id in own]
        if len(relpaths) > 1 and own:
            earlier = history.paths.get(relpaths[1], [])
            if own[-1] in earlier:
                changes += [(commit_id, relpaths[1]) for commit_id in earlier[earlier.index(own[-1]) + 1:]]
        result = []
        for commit_id, relpath in changes:
            info = history.commits[commit_id]
            result.append({
                "id": commit_id, "path": relpath, "time": info.time, "author": info.author,
                "subject": info.subject, "trailers": [list(pair) for pair in info.trailers],
            })
        return result

    def _archive(self) -> Page:
        rows = []
        for bank in self.snapshot.banks:
            for source in bank.archived:
                rows.append({
                    **self._archived_link(bank, source), "bank": bank.name, "label": self._label(bank),
                    "bank_url": bank_path(bank.name), "successor": self._successor_link(bank, source),
                })
        rows.sort(key=lambda row: (row["stamp"], row["bank"], row["file"]), reverse=True)
        return Page("archive.html", "html", "archive.html", {"title": "Archive", "rows": rows}, "_archive/")

    def _search_page(self) -> Page:
        return Page("search.html", "html", "search.html", {"title": "Search"}, "the memories")

    def _search_chunk(self, bank: Bank) -> str:
        """Return a bank's items of the search index: the JSON array without its brackets."""
        family = family_of(bank)
        if family not in self.search_chunks:
            items = []
            for source in bank.memories:
                data = source.data
                items.append({
                    "n": _name(source), "d": data.get("description") or data.get("error") or "",
                    "t": data.get("type") or "", "b": self._label(bank),
                    "u": quote(memory_path(bank.name, _filename(source))),
                    "x": " ".join((data.get("body") or data.get("raw") or "").split()),
                })
            self.search_chunks[family] = json.dumps(items, ensure_ascii=True, separators=(",", ":"))[1:-1]
        return self.search_chunks[family]

    def _search_index(self) -> Page:
        # The banks' parts joined are exactly json.dumps of all the items in one list.
        items = ",".join(chunk for chunk in map(self._search_chunk, self.snapshot.banks) if chunk)
        # A script, not a .json file: browsers refuse fetch() from pages opened from disk.
        text = "window.sandmanSearchIndex = [" + items + "];\n"
        key = None
        if self.families is not None and all(family_of(bank) in self.families for bank in self.snapshot.banks):
            # Each bank's part is made from its family's inputs only, so their digests decide the text.
            key = ["search-index", [self.families[family_of(bank)] for bank in self.snapshot.banks]]
        return Page("search-index.js", "text", "", {"text": text}, "the memories", key=key)
