"""``sandman remember "<body>"``: commit one memory now, the in-session path.

The memory goes into the bank of ``--cwd`` (default: the current directory);
a ``user`` memory (about the person, not a directory) goes into the user-wide
bank. Name and description default to the body's first line and first
sentence. The write is commit_memory's: secrets ban, slug, index, one commit
``remember: <name>`` with ``Verb: remember``. Its source is ``[remember]``,
and the session id when ``--session`` names one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sandman import config, journal, private
from sandman.banks.commit import BankTransaction, Committed, bank_transaction
from sandman.curators import retired
from sandman.banks.index import cut
from sandman.banks.memory import REMEMBER_SOURCE, Memory, clean_body, one_line, read_memory
from sandman.banks.names import MEMORY_TYPES, bank_name, memory_filename, normalize_directory
from sandman.banks.worktrees import bank_directory
from sandman.errors import FormatError, InputError, SecretRefused
from sandman.layout import Layout

DEFAULT_TYPE = "project"
DERIVED_NAME_CHARS = 60
DERIVED_DESCRIPTION_CHARS = 150


def _utf8(label: str, text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{label} is not valid UTF-8; pass text in UTF-8") from None
    return text


def derive_name(body: str) -> str:
    """Return a name from the body's first non-empty line, markdown marks dropped,
    cut at a word boundary to at most 60 characters."""
    first = next((line for line in body.splitlines() if line.strip()), "")
    first = one_line(re.sub(r"^\s*(?:#+|[-*+>]|\d+[.)])\s*", "", first))
    if len(first) <= DERIVED_NAME_CHARS:
        return first
    head = first[:DERIVED_NAME_CHARS]
    return (head.rsplit(" ", 1)[0] if " " in head else head).rstrip(" ,;:-")


def derive_description(body: str) -> str:
    """Return the body's first sentence as one line, cut at 150 characters."""
    text = one_line(body)
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return cut(match.group(1) if match else text, DERIVED_DESCRIPTION_CHARS)


def _same_memory(tx: BankTransaction, directory, memory: Memory) -> Path | None:
    """Return a live memory of the bank with the same type, name and body, if any."""
    folder = tx.layout.bank(bank_name(directory))
    stem = memory_filename(memory.type, one_line(memory.name))[: -len(".md")]
    for name in tx.memory_names(folder, prefix=stem):
        path = folder / name
        try:
            found = read_memory(path)
        except FormatError:
            continue
        if (found.type, found.name, found.body) == (memory.type, one_line(memory.name), memory.body):
            return path
    return None


def remember(
    layout: Layout,
    body: str,
    *,
    cwd: str | None = None,
    memory_type: str = DEFAULT_TYPE,
    name: str | None = None,
    description: str | None = None,
    session: str | None = None,
    keep_lock: bool = False,
) -> Committed:
    """Commit ``body`` as one memory and return where it landed.

    ``cwd`` is an absolute directory (default ``os.getcwd()``); ``memory_type``
    one of user, feedback, project, reference; ``session`` the id for the
    commit's ``Session:`` trailer and the memory's ``source`` (beside
    ``remember``), so that ``forget <session> --memories`` finds it. Raises InputError (empty body, body over
    64 KiB, text not UTF-8 or holding a NUL, unknown type, relative cwd or one naming a file, a session id that
    pointers.check_session_id refuses, a ``$SANDMAN_SHIFT`` that names no shift), SecretRefused;
    both write nothing. Also LockBusy, RepositoryError. Inside a shift (``$SANDMAN_SHIFT``) the
    commit also appends ``shift.remember`` (parent: the shift's start) and carries its ``Event:``
    and ``Shift:``, so revoking the shift and reconciling it retires the memory.

    The git index is caught up with the commit before this returns (docs/BANK-FORMAT.md,
    "The index behind HEAD"); with ``keep_lock`` (the ``sandman remember`` process), only
    while it is small, and the returned ``lock`` is ``.commit.lock``, still held, for the
    caller to hand to store.repo.catch_up_in_child once its output is written.
    """
    if session is not None:
        from sandman.pointers import check_session_id  # only then: a plain remember's start is the hot path

        check_session_id(session)
    for label, text in (("body", body), ("name", name or ""), ("description", description or ""),
                        ("--cwd", cwd or "")):
        _utf8(label, text)
        if "\0" in text:
            # Never silently change what the person asked to remember: refuse, as for an empty body.
            raise InputError(f"{label} holds a NUL character (byte 0), which a memory file cannot keep; "
                             "remove it and remember again")
    if memory_type not in MEMORY_TYPES:
        raise InputError(f"type {memory_type!r} is unknown; use one of {', '.join(MEMORY_TYPES)}")
    # Private spans never reach a memory (sandman.private): hidden before a name is derived.
    body = private.redact(body)
    name = private.redact(name) if name else name
    description = private.redact(description) if description else description
    if body.strip() and not body.replace(private.MARK, "").strip():
        raise InputError("memory body is all <private>…</private>; nothing is left to remember")
    if cwd and os.path.exists(cwd) and not os.path.isdir(cwd):
        raise InputError(f"--cwd {cwd!r} is a file, not a directory; give the directory the memory is about")
    directory = None if memory_type == "user" else bank_directory(layout, normalize_directory(cwd or os.getcwd()))
    memory = Memory(
        name=name or derive_name(body),
        description=description or derive_description(body),
        type=memory_type,
        body=clean_body(body.strip()) if body.strip() else "",
        source=[REMEMBER_SOURCE] + ([session] if session else []),
    )
    made_in = None
    if config.current_shift() is not None:
        # Inside a shift the commit carries its Event: and Shift:; the machine package is loaded
        # only then (a plain remember's process start is the hot path, issue 29).
        from sandman.machine import shift as shifts
        from sandman.machine import trail as trails

        made_in = shifts.of_environment(layout)
    # Outside a shift a remember writes its bank and, for a memory retired before, the ledger: its
    # recovery looks there only (banks.commit.recover_scope), so it costs what the bank holds.
    scope = None if made_in is not None else [layout.bank(bank_name(directory)), retired.path(layout)]
    try:
        with bank_transaction(layout, verb="remember", subject=one_line(memory.name), session=session,
                              scope=scope, keep_lock=keep_lock) as tx:
            # Under the commit lock: two identical remembers at once must not both write.
            existing = _same_memory(tx, directory, memory)
            if existing is None:
                path = tx.write_memory(bank_name(directory), memory,
                                       directory=None if directory is None else str(directory))
                # Re-added by hand: a memory a curator or upkeep retired is the owner's again.
                if retired.retired(layout, bank_name(directory), memory) is not None:
                    retired.append(tx, layout, [retired.readded(bank_name(directory), memory)])
                if made_in is not None:
                    trails.write(tx, shifts.memory_event(made_in, "shift.remember", one_line(memory.name)[:200],
                                                         data={"file": path.relative_to(layout.root).as_posix()}))
    except SecretRefused as error:
        journal.write(layout, "remember", "refused", reason="secret", kinds=",".join(error.kinds))
        raise
    if existing is not None:
        journal.write(layout, "remember", "unchanged", file=existing.relative_to(layout.root).as_posix())
        return Committed(path=existing, commit=None, lock=tx.lock)
    journal.write(
        layout, "remember", "committed",
        file=path.relative_to(layout.root).as_posix(), commit=(tx.commit or "")[:12],
    )
    return Committed(path=path, commit=tx.commit, lock=tx.lock)
