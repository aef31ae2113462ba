"""``sandman note "<what's next>"``: leave a short note for the next session in a directory.

(``sandman handoff`` until issue 33; that spelling still runs this verb, with a
line on stderr, for one release.) The record and how recall delivers it are
sandman.note's; this verb checks the note — not empty, at most
``config.NOTE_MAX_CHARS`` characters, UTF-8,
no NUL, no credential (the secrets ban: recall injects it into a session) —
hides its private spans (sandman.private), and writes it, replacing the
directory's previous note.
"""

from __future__ import annotations

import codecs
import os
from typing import BinaryIO

from sandman import config, journal, note as notes, private
from sandman.banks.names import normalize_directory
from sandman.banks.secrets import refuse_secrets
from sandman.errors import InputError, SecretRefused
from sandman.layout import Layout
from sandman.pointers import check_session_id

VERB = "note"


def read_stream(stream: BinaryIO) -> str:
    """The note a binary ``stream`` holds (``sandman note -``: stdin), decoded as UTF-8 (an invalid
    byte kept as a surrogate escape, which ``leave`` refuses), reading at most
    4 x ``config.NOTE_MAX_CHARS`` + 1 bytes: a longer stream cannot be a note (a character is at
    most 4 bytes), and memory stays bounded. Raises InputError when the stream holds more, saying
    the note is over the characters of its first 4 x NOTE_MAX_CHARS bytes (its true length is not
    read)."""
    limit = 4 * config.NOTE_MAX_CHARS
    data = stream.read(limit + 1)
    if len(data) <= limit:
        return data.decode("utf-8", "surrogateescape")
    # The complete characters of the first `limit` bytes; at least one more follows.
    at_least = len(codecs.getincrementaldecoder("utf-8")("surrogateescape").decode(data[:limit]))
    raise InputError(f"note is over {at_least:,} characters; keep it under {config.NOTE_MAX_CHARS:,} "
                     "(it is read inside the recall budget)")


def leave(layout: Layout, note: str, *, cwd: str | None = None, once: bool = False,
          session: str | None = None) -> notes.Note:
    """Write the note of ``cwd`` (default the current directory); return the record.

    Raises InputError (an empty note, one over 2,000 characters, not UTF-8 or
    holding NUL, a credential in it, a relative cwd, a bad session id), and
    then writes nothing. OSError when the record cannot be written.
    """
    if session is not None:
        check_session_id(session)
    try:
        note.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError("note is not valid UTF-8; pass text in UTF-8") from None
    if "\0" in note:
        raise InputError("note holds a NUL character; remove it")
    note = private.redact(note).strip()
    if not note or not note.replace(private.MARK, "").strip():
        raise InputError("note is empty; say what the next session should do")
    if len(note) > config.NOTE_MAX_CHARS:
        raise InputError(f"note is {len(note):,} characters; keep it under "
                         f"{config.NOTE_MAX_CHARS:,} (it is read inside the recall budget)")
    directory = str(normalize_directory(cwd or os.getcwd()))
    try:
        refuse_secrets(note)
    except SecretRefused as error:
        journal.write(layout, VERB, "refused", reason="secret", kinds=",".join(error.kinds))
        raise InputError(f"note refused: it contains a secret ({', '.join(error.kinds)}); "
                         "remove the credential") from None
    previous = notes.read(layout, directory)
    written = notes.write(layout, directory, note, once=once, session=session)
    journal.write(layout, VERB, "replaced" if previous else "written", cwd=directory, session=session,
                  chars=len(note), once=once or None,
                  previous_delivered=previous.data["delivered"] if previous else None)
    return written
