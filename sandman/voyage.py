"""The voyage log: ``log/<yyyy-mm-dd>.md`` entries and ``log/INDEX.md`` (docs/BANK-FORMAT.md, "log/").

One entry per UTC day on which memories landed, written by reflect (design,
station ⑤ and "The voyage log"). An entry is frontmatter then a markdown body:

    ---
    day: 2026-11-30
    position: 12
    kind: passage
    title: Three banks learned how their tests run
    next: Watch whether the upload retry holds.
    fingerprint: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    sources: [-home-user-proj/feedback_tests_run_with_pytest_rs.md]
    ---

    The body, at most 1,000 characters.

``INDEX.md`` is derived from the entries, ascending by day, with ``began:``
fixed at the first entry ever written. Every frontmatter goes through
sandman.banks.frontmatter, the one reader. This module reads and formats; the
writes are reflect's, through banks.commit (``tx.write_file``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from sandman.banks import frontmatter
from sandman.banks.frontmatter import Frontmatter
from sandman.banks.memory import one_line
from sandman.errors import FormatError
from sandman.layout import Layout
from sandman.store.atomic import is_real_dir, is_regular, read_regular

# The words an entry's ``kind`` is chosen from: sandman's running vocabulary.
KINDS = ("landfall", "passage", "squall", "refit")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
INDEX_NAME = "voyage log"


def check_day(text: object) -> str:
    """Return ``text`` if it is a real calendar day ``YYYY-MM-DD``; raise FormatError otherwise."""
    if not isinstance(text, str) or not _DAY.fullmatch(text):
        raise FormatError(f"day {text!r} is not a YYYY-MM-DD date")
    try:
        date.fromisoformat(text)
    except ValueError:
        raise FormatError(f"day {text!r} is not a calendar date") from None
    return text


def position(began: str, day: str) -> int:
    """Return ``day``'s position in the voyage: days since ``began``, plus one (``began`` is 1).

    A day before ``began`` (a backfill older than the first entry) is 0 or
    negative. Raises FormatError for a day that is not ``YYYY-MM-DD``.
    """
    return (date.fromisoformat(check_day(day)) - date.fromisoformat(check_day(began))).days + 1


def fingerprint(sources: Iterable[tuple[str, str]]) -> str:
    """Return the SHA-256 hex digest of a day's sources, given as ``(name, body)`` pairs.

    The pairs are sorted first, so the order they were listed in does not
    matter; each contributes ``name``, NUL, ``body``, NUL in UTF-8.
    """
    digest = hashlib.sha256()
    for name, body in sorted(sources):
        digest.update(name.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(body.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


@dataclass
class LogEntry:
    """One voyage entry; ``front`` keeps the file's frontmatter, unknown keys included."""

    day: str
    kind: str
    title: str
    body: str
    position: int | None = None
    next: str = ""
    fingerprint: str = ""
    sources: list[str] = field(default_factory=list)
    front: Frontmatter = field(default_factory=Frontmatter)

    def text(self) -> str:
        """Return the file text: the known keys set in ``front`` (order kept), then the body.

        Title and next are made one line. Raises FormatError for a day that is
        not ``YYYY-MM-DD``.
        """
        front = Frontmatter(list(self.front.entries))
        for key, value in (
            ("day", check_day(self.day)), ("position", self.position), ("kind", one_line(self.kind)),
            ("title", one_line(self.title)), ("next", one_line(self.next)),
            ("fingerprint", self.fingerprint), ("sources", list(self.sources)),
        ):
            if value is None:
                front.remove(key)
            else:
                front.set(key, value)
        return frontmatter.dump(front, self.body)


def parse_entry(text: str, day: str | None = None) -> LogEntry:
    """Read a voyage entry from its file text; ``day`` is the one its file name claims.

    Raises FormatError when the frontmatter is unreadable, ``day``, ``kind`` or
    ``title`` is missing, ``day`` disagrees with the file name, ``position`` is
    not an integer or ``sources`` is not a list of strings.
    """
    front, body = frontmatter.parse(text)
    values = front.to_dict()
    entry_day = check_day(values.get("day"))
    if day is not None and entry_day != day:
        raise FormatError(f"day {entry_day} disagrees with the file name {day}.md")
    for key in ("kind", "title"):
        if not isinstance(values.get(key), str) or not values[key]:
            raise FormatError(f"frontmatter field {key!r} is missing or not a string")
    place = values.get("position")
    if place is not None and (not isinstance(place, int) or isinstance(place, bool)):
        raise FormatError(f"position {place!r} is not an integer")
    sources = values.get("sources") or []
    if not isinstance(sources, list) or not all(isinstance(item, str) for item in sources):
        raise FormatError("frontmatter field 'sources' is not a list of strings")
    return LogEntry(
        day=entry_day, kind=values["kind"], title=values["title"], body=body, position=place,
        next=frontmatter.text_value(values, "next"), fingerprint=frontmatter.text_value(values, "fingerprint"),
        sources=list(sources), front=front,
    )


def read_entry(path: Path) -> LogEntry:
    """Read the entry at ``log/<day>.md``. Raises FormatError (naming the file) or OSError
    (a symbolic link or other non-regular file among them: store.atomic.read_regular)."""
    try:
        return parse_entry(read_regular(path).decode("utf-8"), path.stem)
    except UnicodeDecodeError:
        raise FormatError(f"{path} is not UTF-8") from None
    except FormatError as error:
        raise FormatError(f"{path}: {error}") from None


@dataclass
class EntryFile:
    """One ``log/<day>.md`` file: its entry, or the error that kept it from being read."""

    day: str
    path: Path
    entry: LogEntry | None
    error: str | None = None


def entry_paths(layout: Layout) -> list[Path]:
    """Return the ``log/<yyyy-mm-dd>.md`` files, ascending by day (INDEX.md and others left out).

    Only regular files count: a symbolic link (or ``log/`` being one) is never read.
    """
    if not is_real_dir(layout.log):
        return []
    try:
        paths = [path for path in layout.log.iterdir() if path.suffix == ".md" and is_regular(path)]
    except FileNotFoundError:
        return []
    return sorted((path for path in paths if _DAY.fullmatch(path.stem)), key=lambda path: path.stem)


def scan(layout: Layout) -> list[EntryFile]:
    """Return every entry file ascending by day, each read or carrying its error.

    Raises nothing for a bad entry (it carries the error); OSError only when
    ``log/`` itself cannot be listed.
    """
    files = []
    for path in entry_paths(layout):
        try:
            files.append(EntryFile(path.stem, path, read_entry(path)))
        except (FormatError, OSError) as error:
            files.append(EntryFile(path.stem, path, None, str(error)))
    return files


def read_entries(layout: Layout) -> list[LogEntry]:
    """Return the readable entries, ascending by day (the last five are reflect's context)."""
    return [file.entry for file in scan(layout) if file.entry is not None]


def read_began(layout: Layout) -> str | None:
    """Return INDEX.md's ``began`` when it holds a valid day, else None (absent or unreadable)."""
    try:
        front, _ = frontmatter.parse(layout.log_index.read_text(encoding="utf-8"))
        return check_day(front.get("began"))
    except (OSError, UnicodeDecodeError, FormatError):
        return None


def began(layout: Layout) -> str | None:
    """Return the day the voyage began: INDEX.md's ``began``, else the earliest entry's day.

    None when there is neither: the next entry written begins the voyage.
    """
    fixed = read_began(layout)
    if fixed is not None:
        return fixed
    days = [path.stem for path in entry_paths(layout)]
    return days[0] if days else None


def index_line(file: EntryFile) -> str:
    """Return INDEX.md's line for one entry file (an unreadable one names its error)."""
    link = f"[{file.day}]({file.day}.md)"
    if file.entry is None:
        return f"- {link} — unreadable: {one_line(file.error or '')}"
    entry = file.entry
    place = f" · day {entry.position}" if entry.position is not None else ""
    return f"- {link}{place} · {one_line(entry.kind)} — {one_line(entry.title)}"


def render_log_index(layout: Layout) -> str:
    """Return the text of ``log/INDEX.md`` for the entries on disk (docs/BANK-FORMAT.md, "log/").

    Ascending by day, one line per entry file. ``began`` is kept from the
    existing INDEX.md, else set to the earliest entry's day; with no entries
    and no INDEX.md it is left out. The caller writes the text (reflect,
    through ``tx.write_file(layout.log_index, ...)``). Raises OSError when
    ``log/`` cannot be listed.
    """
    files = scan(layout)
    start = read_began(layout) or (files[0].day if files else None)
    front = Frontmatter.from_mapping({
        "name": INDEX_NAME,
        "description": "Index of the voyage log, one line per day; regenerated by sandman, do not edit",
    })
    if start is not None:
        front.set("began", start)
    front.set("entries", len(files))
    lines = [index_line(file) for file in files]
    return frontmatter.dump(front, "\n".join(lines) + ("\n" if lines else ""))
