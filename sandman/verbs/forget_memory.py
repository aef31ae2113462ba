"""``sandman forget --memory <file>``: one memory leaves its bank, and dream never learns it again.

One commit (``Verb: forget``, ``Event:``/``Kind: forget.memory``) deletes the
memory file, regenerates the bank's MEMORY.md, appends its line to the retired
ledger (curators.retired, ``"by": "forget <event id>"``) and the
``forget.memory`` event to the trail. A dream that proposes the same memory
again (same bank, and same file key or same body) is refused
(``refused-retired``). It is revocable: ``sandman trail revoke <event>`` then
``sandman reconcile <event>`` revert that commit, bringing the memory back and
its ledger line out (docs/forget.md, "Forget one memory").

Unlike ``forget <session>``, nothing here destroys a transcript: the memory's
words stay in git history (docs/forget.md says how to purge it) and in the
retired ledger only as its name, file key and the SHA-256 of its body.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sandman.banks.commit import bank_transaction
from sandman.banks.memory import read_memory
from sandman.curators import retired
from sandman.errors import FormatError, InputError
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout
from sandman.machine import trail

VERB = "forget"
KIND = "forget.memory"


@dataclass
class ForgottenMemory:
    """What ``forget_memory`` did: the bank and file (names), the memory's name, the commit, the event id."""

    bank: str
    file: str
    name: str
    commit: str | None
    event: str


def resolve(layout: Layout, given: str | os.PathLike[str]) -> Path:
    """Return the memory file ``given`` names; raise InputError with the fix when it names none.

    ``given`` is a path (absolute, or relative to the working directory), or
    relative to the memory root (``memories/<bank>/<file>``, as ``sandman
    search`` prints it) or to ``memories/`` (``<bank>/<file>``). It must be a
    regular file directly inside a bank folder: not MEMORY.md, not in
    ``_archive/``, not a pointer, not a symbolic link, and a memory its
    frontmatter reader accepts.
    """
    text = os.fspath(given)
    if not text.strip():
        raise InputError("--memory is empty; pass the path of a memory file (sandman search prints them)")
    raw = Path(text).expanduser()
    candidates = [raw] if raw.is_absolute() else [Path.cwd() / raw, layout.root / raw, layout.memories / raw]
    path = next((c for c in candidates if os.path.lexists(c)), None)
    if path is None:
        raise InputError(f"memory {text} does not exist; pass the path of a memory file "
                         f"(sandman search prints them)")
    path = Path(os.path.abspath(path))
    memories = Path(os.path.abspath(layout.memories))
    if path.parent.name == BANK_ARCHIVE and path.parent.parent.parent == memories:
        raise InputError(f"{path} is in {BANK_ARCHIVE}/, archived already: it reaches no recall; "
                         f"pass a live memory of {path.parent.parent}")
    if path.parent.parent != memories or path.parent.name.startswith("."):
        raise InputError(f"{path} is not a memory of a bank under {memories}; pass a file "
                         f"{memories}/<bank>/<type>_<name>.md")
    if path.is_symlink() or not path.is_file():
        raise InputError(f"{path} is not a regular file; pass a memory file of a bank")
    if path.name == BANK_INDEX:
        raise InputError(f"{path} is the bank's index, not a memory; pass one memory file of {path.parent}")
    if path.suffix != ".md":
        raise InputError(f"{path} is not a memory (memories are .md files); pass one memory file of {path.parent}")
    return path


def forget_memory(layout: Layout, given: str | os.PathLike[str]) -> ForgottenMemory:
    """Delete one memory in one commit, retire it, and record a ``forget.memory`` trail event.

    Returns the site's fate as ``forget`` renders it (the search index and a
    rendered site lose the memory's copies). Raises InputError (``given``
    names no live memory, or a file that is not one), LockBusy,
    RepositoryError; then nothing changed.
    """
    path = resolve(layout, given)
    bank, file = path.parent.name, path.name
    try:
        memory = read_memory(path)
    except FormatError as error:
        raise InputError(f"{path} is not a memory ({error}); pass one memory file of {path.parent}") from None
    subject = f"retire {bank}/{file}: {memory.name}"
    event = trail.new_event(KIND, f"forget {bank}/{file}"[:300],
                            data={"bank": bank, "file": file, "name": memory.name})
    with bank_transaction(layout, verb=VERB, subject=subject) as tx:
        tx.delete(bank, file)
        retired.append(tx, layout, [retired.entry(bank, file, memory, f"forget {event.id}")])
        trail.write(tx, event)  # `trail revoke` + `reconcile` bring the memory back
    from sandman.forget.session import forget_derived

    forget_derived(layout)
    return ForgottenMemory(bank=bank, file=file, name=memory.name, commit=tx.commit, event=event.id)

