"""A taken session's pointer (docs/BANK-FORMAT.md, "Pointers"): its fields, built from the transcript.

``pointer_data`` builds what take (and the recovery of an interrupted take)
writes to ``memories/.recent/<sid>.json``: where the transcript was archived,
the part to dream (``offset``, ``bytes``, ``sha256``), the session's cwd,
times, title and highlights, the secrets ban applied to what the session
wrote. ``earlier_parts`` keeps the archive names of earlier takes that are
other files. Standard library only at module level: take --hook imports it.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from sandman import config, journal
from sandman.archive import parts
from sandman.errors import SandmanError
from sandman.layout import Layout
from sandman.pointers import read_pointer
from sandman.transcripts import Session, summarize
from sandman.transcripts.locate import Source

VERB = "take"


def _rel(layout: Layout, path: Path) -> str:
    return path.relative_to(layout.root).as_posix()


def vet_shown(layout: Layout, source: Source, title: str | None, highlights: list[str]) -> tuple[str | None, list[str]]:
    """Return the title with its secrets masked and the highlights that hold none (the secrets ban).

    A pointer's title and highlights reach recall, the minds and the site: a
    ``sandman remember`` whose refusal was hidden (``2>/dev/null || true``)
    still looks committed in the transcript. The full check loads a rule set
    (hundreds of milliseconds), so it runs only on text the stdlib pre-check
    cannot clear (banks.secret_check.suspected); each highlight dropped is a
    journal line naming its kinds, never its text.
    """
    from sandman.banks.secret_check import suspected

    texts = [t for t in [title or "", *highlights] if t]
    if not any(suspected(text) for text in texts):
        return title, highlights
    from sandman.banks.secrets import find_secrets, mask_secrets

    if title and find_secrets(title):
        title = mask_secrets(title)
    kept = []
    for highlight in highlights:
        kinds = find_secrets(highlight)
        if kinds:
            journal.write(layout, VERB, "highlight-refused", origin=str(source.path), kinds=", ".join(kinds))
        else:
            kept.append(highlight)
    return title, kept


def pointer_data(layout: Layout, source: Source, archived: Path, companion: Path | None,
                 cwd: str | None, session: Session | None, *, part: parts.Part) -> tuple[dict, int]:
    """Return the pointer's fields for a transcript just archived (BANK-FORMAT "Pointers"),
    and how many of its lines the reader skipped (-1: the file could not be read).

    ``session`` is the transcript's summary, read before the link (``vet``). A
    transcript that cannot be read still gets a pointer: cwd from the
    payload, the end time from the file's modification time. ``part`` is the
    byte range the pointer names (``offset``, ``bytes``, ``sha256``); a part
    that starts past 0 (a resumed session's second ending) takes its
    highlights from its own bytes: the earlier ones were dreamt already.
    """
    if session is not None:
        highlights = session.highlights
        if part.offset:
            highlights = part_highlights(archived, source.host, part) or []
        facts = {"cwd": session.cwd, "started": session.started, "ended": session.ended,
                 "title": session.title, "highlights": highlights}
        facts["title"], facts["highlights"] = vet_shown(layout, source, session.title, highlights)
        skipped = sum(session.skipped.values())
    else:
        facts, skipped = {"cwd": None, "started": None, "ended": None, "title": None, "highlights": []}, -1
    if facts["ended"] is None:
        facts["ended"] = journal.iso(datetime.fromtimestamp(archived.stat().st_mtime, timezone.utc))
    data = {
        "host": source.host,
        "archived": _rel(layout, archived),
        "cwd": facts["cwd"] or cwd,
        "started": facts["started"],
        "ended": facts["ended"],
        "title": facts["title"],
        "highlights": facts["highlights"],
        "origin": str(source.path),
        "taken": journal.iso(journal.now_utc()),
        "offset": part.offset,
        "bytes": part.bytes,
        "sha256": part.sha256,
    }
    if isinstance(data["cwd"], str):
        data["cwd"], masked = vet_cwd(layout, source, data["cwd"])
        if masked:
            data["cwd_masked"] = True
    if companion is not None:
        data["companion"] = _rel(layout, companion)
    shift = config.current_shift()  # a shift session's SessionEnd hook runs with its $SANDMAN_SHIFT
    if shift is not None:
        from sandman.machine.trail import is_shift_id

        if is_shift_id(shift):
            data["shift"] = shift  # dream links what it learns from this session to that shift
    return data, skipped


def part_highlights(archived: Path, host: str, part: parts.Part) -> list[str] | None:
    """The highlights inside the part's own bytes; None when they cannot be read."""
    try:
        return summarize(archived, host, start=part.offset, end=part.bytes).highlights
    except (OSError, SandmanError):
        return None


def vet_cwd(layout: Layout, source: Source, cwd: str) -> tuple[str, bool]:
    """Return the pointer's cwd with its secrets masked as ``[secret]``, and whether any was (the secrets ban).

    A cwd reaches recall, the site and the bank a dream files into: a
    directory named after a key must not carry it there. The transcript
    itself is archived unchanged (never lose data); a pointer whose cwd was
    masked is marked ``cwd_masked`` and routed by dream without a mind. The full check runs only
    when the stdlib pre-check for paths (secret_check.suspected_path) cannot
    clear the cwd; the journal line names the kinds, never the value.
    """
    from sandman.banks.secret_check import suspected_path

    if not suspected_path(cwd):
        return cwd, False
    from sandman.banks.secrets import find_secrets, mask_secrets

    kinds = find_secrets(cwd)
    if not kinds:
        return cwd, False
    journal.write(layout, VERB, "cwd-masked", origin=str(source.path), kinds=", ".join(kinds))
    return mask_secrets(cwd), True


def _same_file(layout: Layout, a: str, b: str) -> bool:
    try:
        return os.path.samefile(layout.root / a, layout.root / b)
    except OSError:
        return False


def earlier_parts(layout: Layout, session_id: str, data: dict) -> list[str]:
    """Keep in ``earlier`` the archive names of earlier takes of the session that are other files.

    A resumed session appends to the file it was taken from, so its parts
    share one archived name; a transcript written anew after a take (or
    taken before takes linked) is another file, which the newer pointer
    must not lose (forget destroys every one). Returns the list (also set
    in ``data`` when not empty).
    """
    old = read_pointer(layout.pointer(session_id))
    record = parts.read_record(layout, session_id)
    earlier: list[str] = []
    if old is not None:
        earlier += [p for p in old.data.get("earlier", []) if isinstance(p, str)]
        earlier += [old.data.get(key) for key in ("archived", "companion")]
    if record is not None:
        earlier += [*record.earlier, record.archived, record.companion]
    current = (data["archived"], data.get("companion"))
    # A name of this very file (one inode) is no earlier part but a second name a killed take
    # made: the recovery of its intent removes it (archive.intents), and so its companion folder.
    same = {value for value in earlier if isinstance(value, str) and _same_file(layout, value, data["archived"])}
    same |= {PurePosixPath(value).with_suffix("").as_posix() for value in same}
    kept: list[str] = []
    for value in earlier:
        if isinstance(value, str) and value not in current and value not in kept and value not in same:
            kept.append(value)
    if kept:
        data["earlier"] = kept
    return kept
