"""The backfill's substance (issue 8; docs/take.md, "Backfill: take --all"): decide each transcript
the hosts keep, and take one.

``survey`` decides every transcript (and orphan folder) without changing
anything: an ``Item`` taken, or skipped with one of ``REASONS``; ``take_item``
takes one decided item through take's own ``take_source`` (unforced: the
live window guards it again). ``Backfill`` is what one batch decided and did.
The ``take --all`` verb (sandman/verbs/take_all.py) and the backstop
(sandman/verbs/take_missed.py) run batches over these; nothing here imports
sandman.verbs or sandman.cli.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sandman import config
from sandman.archive import parts
from sandman.archive.taking import check_live, take_source
from sandman.banks.names import normalize_directory
from sandman.errors import InputError, SandmanError, TranscriptLive, TranscriptNotFound
from sandman.layout import Layout
from sandman.pointers import check_session_id
from sandman.transcripts import locate, summarize
from sandman.transcripts.locate import Source

# Why a transcript was not taken; the key is the journal's and the summary's word.
REASONS = {
    "live": "written in the last 120 s: the session may still be running",
    "future": "written in the future by this machine's clock: the clock or the file's time is off",
    "recent": "written inside the --older-than window",
    "live-job": "a Claude Code job would resume it",
    "starting": "the session whose start ran the backstop",
    "live-session": "its Claude Code process is still running (its .started record)",
    "other-project": "its cwd is outside --project",
    "no-cwd": "it records no absolute working directory, so no bank could hold its memories",
    "mind-session": "a dream mind's own session (its cwd is inside the memory root)",
    "subagent": "a subagent transcript (agent-*.jsonl), part of its parent session",
    "duplicate": "another transcript carries the same session id: take one by hand with --transcript",
    "refused": "not a transcript take accepts (a symbolic link, an unsafe session id)",
    "unreadable": "it could not be read",
    "orphan-folder": "a session folder whose transcript is gone; nothing takes it",
    "taken": "taken already, and nothing written since (Claude Code keeps its name of it for --resume)",
    "gone": "it vanished before it could be taken (another take moved it)",
    "failed": "the take failed; the transcript stays where it was",
}

# Skips counted in the summary but neither listed nor journaled one by one: a history holds
# every session the hook already took (their transcripts stay for --resume).
QUIET = ("other-project", "taken")


@dataclass
class Item:
    """One transcript (or orphan folder) the backfill looked at.

    ``reason`` is None for a session taken (or, in a dry run, to be taken),
    else a key of REASONS; ``detail`` says more (the error, the job id).
    ``age_s`` is seconds since the file was last written; ``size`` the bytes
    of the transcript and its companion folder (as archived, once taken).
    """

    path: Path
    session: str | None = None
    host: str | None = None
    cwd: str | None = None
    title: str | None = None
    age_s: float | None = None
    size: int = 0
    reason: str | None = None
    detail: str | None = None
    source: Source | None = field(default=None, repr=False)

    def skip(self, reason: str, detail: str | None = None) -> Item:
        self.reason, self.detail = reason, detail
        return self


@dataclass
class Backfill:
    """What one ``take --all`` decided and did.

    ``items`` in the order they were decided (oldest transcript first, orphan
    folders last); ``reclaimed`` the sessions the drain took; ``dream_pid``
    the detached dream it started (None: none); ``queued`` dream's queue
    depth at the end (None in a dry run).
    """

    items: list[Item]
    older_than_s: int
    project: Path | None
    dry_run: bool
    reclaimed: list[str] = field(default_factory=list)
    dream_pid: int | None = None
    queued: int | None = None

    @property
    def taken(self) -> list[Item]:
        return [item for item in self.items if item.reason is None]

    @property
    def skipped(self) -> list[Item]:
        return [item for item in self.items if item.reason is not None]

    @property
    def bytes(self) -> int:
        """Bytes archived (or, in a dry run, to be archived)."""
        return sum(item.size for item in self.taken)

    def reasons(self) -> Counter[str]:
        """How many transcripts each reason skipped."""
        return Counter(item.reason for item in self.skipped)


# --- deciding -----------------------------------------------------------------


def _tree_size(folder: Path | None) -> int:
    if folder is None:
        return 0
    total = 0
    for base, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(base, name)).st_size
            except OSError:
                continue
    return total


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _examine(layout: Layout, path: Path, window_s: int, project: Path | None, now: float) -> Item:
    """Decide one transcript without changing anything; return its Item."""
    item = Item(path=path)
    try:
        stat = path.lstat()
    except FileNotFoundError:
        return item.skip("gone")
    except OSError as error:
        return item.skip("unreadable", error.strerror or str(error))
    item.age_s = now - stat.st_mtime
    if path.name.startswith("agent-") and _under(path, config.claude_projects_dir()):
        return item.skip("subagent")
    named = locate.session_id_of(path)
    already = named is not None and parts.untouched(layout, named, path, stat)
    if already:
        item.session = named
        where = _pointer_cwd(layout, named) if project is not None else None
        if project is None or where is not None:
            return item.skip("taken" if where is None or _under(where, project) else "other-project")
    try:
        source = locate.source(path)
        session = summarize(path, source.host)
        item.session = check_session_id(locate.session_id_of(path) or session.session_id)
    except TranscriptNotFound:
        return item.skip("gone")
    except InputError as error:
        return item.skip("refused", str(error))
    except FileNotFoundError:  # taken by someone else while it was read
        return item.skip("gone")
    except OSError as error:
        return item.skip("unreadable", f"{error.strerror or error}")
    item.source, item.host, item.title = source, source.host, session.title
    item.size = stat.st_size + _tree_size(source.companion)
    try:
        cwd = normalize_directory(session.cwd) if session.cwd else None
    except InputError:
        cwd = None
    if cwd is None:
        return item.skip("no-cwd")
    item.cwd = str(cwd)
    if _under(cwd, normalize_directory(layout.root)):
        return item.skip("mind-session")
    if project is not None and not _under(cwd, project):
        return item.skip("other-project")
    if item.age_s < -config.TAKE_CLOCK_SLACK_S:  # waiting would not help: say so (check_live's message)
        return item.skip("future", f"{int(-item.age_s)} s ahead; take it by hand: sandman take {item.session} --force")
    if already:  # a pointer that did not say where: placed by the transcript's cwd
        return item.skip("taken")
    try:
        check_live(path, now)
    except TranscriptLive:
        return item.skip("live")
    except TranscriptNotFound:
        return item.skip("gone")
    if item.age_s < window_s:
        return item.skip("recent")
    job = locate.live_job(item.session)
    if job is not None:
        return item.skip("live-job", f"job {job}")
    return item


def _pointer_cwd(layout: Layout, session: str) -> Path | None:
    """The absolute cwd the session's pointer records (``.recent/<id>.json``), or None."""
    import json

    try:
        cwd = json.loads(layout.pointer(session).read_bytes()).get("cwd")
        return normalize_directory(cwd) if isinstance(cwd, str) else None
    except (OSError, ValueError, RecursionError, AttributeError, InputError):
        return None


# Lines of an orphan folder's transcript read for a cwd, and transcripts read.
_ORPHAN_LINES = 20
_ORPHAN_FILES = 5


def _orphan_in(folder: Path, project: Path) -> bool:
    """True when the orphan session folder ``folder`` (``<projects>/<slug>/<uuid>/``) belongs to
    ``project``: the cwd the first transcripts in it record (a subagent's lines carry it) is
    ``project`` or below; when none records one, its project folder's name is Claude Code's
    name for ``project`` or for a folder below it (``-a-b``, ``-a-b-...``)."""
    import json

    for transcript in sorted(folder.rglob("*.jsonl"))[:_ORPHAN_FILES]:
        try:
            with open(transcript, "rb") as stream:
                for _, line in zip(range(_ORPHAN_LINES), stream):
                    try:
                        cwd = json.loads(line).get("cwd")
                    except (ValueError, AttributeError, RecursionError):
                        continue
                    if isinstance(cwd, str) and os.path.isabs(cwd):
                        try:
                            return _under(normalize_directory(cwd), project)
                        except InputError:
                            continue
        except OSError:
            continue
    slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(project))
    return folder.parent.name == slug or folder.parent.name.startswith(slug + "-")


def survey(layout: Layout, window_s: int, project: Path | None, *, paths: list[Path] | None = None,
           orphans: bool = True) -> list[Item]:
    """Decide every transcript the hosts keep, oldest first, then the orphan folders; change nothing.

    ``paths`` narrows the transcripts looked at (default: ``locate.session_files()``);
    ``orphans`` False leaves the orphan folders out. Never raises for a
    transcript: what cannot be read is an Item skipped as ``unreadable`` or ``refused``.
    """
    now = time.time()
    paths = locate.session_files() if paths is None else paths
    items = [_examine(layout, path, window_s, project, now) for path in paths]
    items.sort(key=lambda item: (-(item.age_s or 0.0), str(item.path)))
    named: dict[str, list[Item]] = {}
    for item in items:
        if item.reason is None:
            named.setdefault(item.session, []).append(item)
    for group in named.values():
        if len(group) > 1:
            for item in group:
                item.skip("duplicate", ", ".join(str(other.path) for other in group if other is not item))
    if orphans:
        items += [Item(path=folder, size=_tree_size(folder)).skip("orphan-folder")
                  for folder in locate.orphan_companions() if project is None or _orphan_in(folder, project)]
    return items


# --- taking --------------------------------------------------------------------


def take_item(layout: Layout, item: Item) -> None:
    """Take one decided item through take_source (unforced: the live window guards it again)."""
    try:
        taken = take_source(layout, item.session, item.source, force=False)
    except TranscriptLive:
        item.skip("live", "written again since the survey")
        return
    except TranscriptNotFound:
        item.skip("gone")
        return
    except (SandmanError, OSError) as error:
        item.skip("failed", f"{type(error).__name__}: {error}")
        return
    try:
        item.size = taken.archived.stat().st_size + _tree_size(taken.companion)
    except OSError:
        pass  # the survey's figure stands
