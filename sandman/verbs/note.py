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

import os

from sandman import config, journal, note as notes, private
from sandman.banks.names import normalize_directory
from sandman.banks.secrets import refuse_secrets
from sandman.errors import InputError, SecretRefused
from sandman.layout import Layout
from sandman.pointers import check_session_id

VERB = "note"


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
