"""commit_memory: the single format authority (docs/BANK-FORMAT.md, "Writing a bank").

Every write to the versioned tier goes through a ``BankTransaction``, under
``.commit.lock``:

1. The root is created or adopted (store.repo.ensure_root).
2. Recovery: a transaction a killed process left half done is rolled back from
   its undo log (sandman.banks.undo); then any other change left in the working
   tree (a hand edit) is committed on its own (``recover: ...``, ``Verb:
   recover``), with the indexes of its banks regenerated, so the next commit
   holds only its own files. A new file that is none of sandman's formats
   (layout.owns) is never committed: it is moved into ``.strays/``. A leftover file that carries a credential stops
   the transaction before anything is committed (errors.LeftoverSecret).
   A transaction that names its ``scope`` (the bank folders and files it may
   write: ``remember``'s) looks for leftovers there only, comparing those files
   with HEAD, and runs the whole recovery only when it finds one: a hand edit
   elsewhere waits for the next transaction without a scope (take, dream,
   reflect, forget...), so a remember costs what its bank holds, not what the
   root holds (issue 29).
3. The verb's operations run, each recorded in the undo log before it is made:
   a memory written (slug, collision suffix, secrets ban, atomic write), a
   replaced file moved into ``_archive/``, a file archived or (for forget alone)
   deleted, a plain file written (``_reflect.json``, the voyage log).
4. MEMORY.md of every touched bank is regenerated from its folder.
5. One pygit2 commit of exactly the changed paths: ``<verb>: <subject>`` with
   ``Verb:`` and ``Session:`` trailers (plus any the verb adds). A scoped
   transaction over a root with history commits without the git index
   (store.repo.commit_flat: HEAD's tree with its paths applied), the index
   catching up at once while small, else at the next commit through it
   (docs/BANK-FORMAT.md, "The index behind HEAD").

If an operation raises, what the transaction had done is undone and nothing is
committed; if its process is killed, the next transaction undoes it. After a
transaction returns, ``git status`` in the root is clean (but for a scoped
transaction's paths while a large root's index has not caught up: ``keep_lock``,
the ``sandman remember`` process, whose child catches it up).
"""

from __future__ import annotations

import os
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

from sandman import config, journal, private
from sandman.banks import index as bank_index
from sandman.banks.listing import bank_folders, write_recall_cache
from sandman.banks.memory import Memory, clean_body, fingerprint, one_line, validate_fields
from sandman.banks.names import bank_name, memory_filename, normalize_directory
from sandman.banks.secrets import (added_lines, refuse_secret_files, refuse_secrets, refuse_secrets_in_paths,
                                   versioned_secrets)
from sandman.banks.undo import UndoLog, remove_created, roll_back
from sandman.errors import InputError, LeftoverSecret, SandmanError, SecretRefused
from sandman.journal import iso, now_utc
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout, owns
from sandman.store import repo as store
from sandman.store.atomic import TEMP_NAME, fsync_dir, is_real_dir, is_regular, move_no_replace, write_atomic


# A MEMORY.md at least this long (bytes) is logged in the undo log by HEAD's blob, not by its bytes.
STORED_MIN_BYTES = 4096


class ConflictError(SandmanError):
    """A file changed since the caller read it; the operation was not applied."""


@dataclass
class Committed:
    """What one commit_memory call produced: the memory file and the commit id (hex)."""

    path: Path
    commit: str | None
    # ``.commit.lock`` still held, when the caller asked to keep it (bank_transaction's ``keep_lock``).
    lock: object = None


class BankTransaction:
    """The operations of one commit; obtain it from ``bank_transaction``.

    A plain class, not a dataclass: nothing compares or prints one, and making the dataclass
    was half a millisecond of every remember's start (issue 29).
    """

    def __init__(self, layout: Layout, log: UndoLog, subject: str = "",
                 trailers: dict[str, str | list[str]] | None = None):
        self.layout = layout
        self.log = log
        self.subject = subject  # the commit subject; a block may refine it once it knows what it did
        self.changed: set[Path] = set()
        self.banks: dict[Path, str | None] = {}  # folder -> its directory
        self.undo: list[Callable[[], None]] = []
        self.commit: str | None = None
        # The MEMORY.md line of each memory file this transaction wrote (the file is not read back).
        self.written: dict[Path, str] = {}
        # The commit's trailers beyond Verb and Session; a block may add some once it knows what it did.
        self.trailers: dict[str, str | list[str]] = trailers if trailers is not None else {}
        # ``.commit.lock``, still held after the block when the caller asked to keep it (``keep_lock``).
        self.lock: object = None
        # The memory file names of each bank folder a scoped transaction's recovery listed and found
        # as HEAD holds them: the folder is not listed again (``memory_names``).
        self.listed: dict[Path, list[str]] = {}  # sorted
        # The folders of files written whose names are not fsynced yet (``_reindex`` does it, once each).
        self.unsynced: set[Path] = set()

    def bank(self, name: str, directory: str | None = None) -> Path:
        """Return the folder of bank ``name`` and mark it touched (its index is regenerated)."""
        folder = self.layout.bank(name)
        if folder not in self.banks or directory:
            self.banks[folder] = directory
        return folder

    def memory_names(self, folder: Path, prefix: str = "") -> list[str]:
        """``banks.index.memory_names(folder, prefix)`` as this transaction has left the folder: from
        recovery's listing and what the block wrote there when it was listed, else listed now."""
        names = self.listed.get(folder)
        if names is None:
            return bank_index.memory_names(folder, prefix)
        mine = [path for path in self.changed if path.parent == folder and bank_index.is_memory_name(path.name)]
        if mine:
            names = list(names)
            for path in mine:
                at = bisect_left(names, path.name)
                present = at < len(names) and names[at] == path.name
                if is_regular(path) and not present:
                    names.insert(at, path.name)
                elif present and not is_regular(path):
                    del names[at]
        start = bisect_left(names, prefix)  # sorted: the names with ``prefix`` follow one another
        end = start
        while end < len(names) and names[end].startswith(prefix):
            end += 1
        return names[start:end]

    def check(self, path: Path, expected: str | None) -> None:
        """Raise ConflictError unless ``path``'s SHA-256 is ``expected`` (None: must be absent)."""
        if fingerprint(path) != expected:
            raise ConflictError(f"{path.name} changed since it was read; operation skipped")

    def write_memory(
        self, bank: str, memory: Memory, *, replaces: str | None = None, directory: str | None = None
    ) -> Path:
        """Write ``memory`` into bank ``bank``; return its path.

        Name and description are made one line and the body clean
        (``clean_body``: no NUL or bidi override, ``\\n`` line endings, one final
        newline), as the bank format stores them; ``created`` is filled when
        empty and ``updated`` set to now (UTC). ``replaces`` names a file of the
        same bank that moves into ``_archive/`` and is recorded as lineage. The
        file is ``<type>_<slug>.md`` with ``_2``, ``_3``… on collision with a
        file that is not the one being replaced. Raises InputError (bad field),
        SecretRefused (a secret in the text, a source, the lineage, the bank's
        name or directory), FileNotFoundError (``replaces`` is gone) before writing.
        """
        prepare(memory)
        refuse_secrets(memory.name, memory.description, memory.body)
        # Every other value that lands in the file or its path: sources (a session id), lineage, the bank.
        refuse_secrets(*memory.source, *memory.witnesses, memory.replaces or "", replaces or "",
                       where="its source or lineage holds")
        refuse_secrets_in_paths(bank, directory or "", where="its bank directory holds")
        folder = self.bank(bank, directory)
        if replaces is not None and not is_regular(folder / replaces):
            raise FileNotFoundError(f"{bank}/{replaces} does not exist; nothing to replace")
        stamp = iso(now_utc())
        memory.created = memory.created or stamp
        memory.updated = stamp
        memory.replaces = replaces or memory.replaces
        if replaces is not None:
            # Archive first: the new file may take the replaced file's name.
            self.archive(bank, replaces)
        path = self._free_path(folder, memory)
        text = memory.text()
        self.log.created(path)
        write_atomic(path, text, sync_folder=False)  # the folder is fsynced once, with its index (_reindex)
        self.unsynced.add(folder)
        self.changed.add(path)
        self.written[path] = bank_index.index_line(path.name, memory.name, memory.description)
        self.undo.append(lambda: remove_created(self.layout, path))
        return path

    def _free_path(self, folder: Path, memory: Memory) -> Path:
        suffix = 1
        while True:
            path = folder / memory_filename(memory.type, memory.name, suffix)
            if not path.exists():
                return path
            suffix += 1

    def archive(self, bank: str, filename: str) -> Path:
        """Move a live memory of ``bank`` to ``_archive/<YYYYMMDDTHHMMSS>_<file>``; return the new path.

        Raises FileNotFoundError when the file is gone.
        """
        folder = self.bank(bank)
        source = _member(folder, filename)
        stamp = now_utc().strftime("%Y%m%dT%H%M%S")
        for attempt in range(1, 1000):
            prefix = stamp if attempt == 1 else f"{stamp}-{attempt}"
            target = folder / BANK_ARCHIVE / f"{prefix}_{filename}"
            try:
                self.log.moved(source, target)
                move_no_replace(source, target)
                break
            except FileExistsError:
                continue
        self.changed.update((source, target))
        self.undo.append(lambda: _unarchive(target, source))
        return target

    def delete(self, bank: str, filename: str) -> None:
        """Delete a live memory of ``bank`` outright: for ``forget`` only, never the pipeline."""
        folder = self.bank(bank)
        path = _member(folder, filename)
        data = path.read_bytes()
        self.log.replaced(path, data)
        path.unlink()
        self.changed.add(path)
        self.undo.append(lambda: write_atomic(path, data))

    def write_file(self, path: Path, data: bytes | str) -> None:
        """Write a versioned file that is not a memory (``_reflect.json``, a log entry) atomically.

        The lines it adds to the file are held to the versioned tier's ban
        (secrets.versioned_secrets, docs/secrets.md "Every channel"): raises
        SecretRefused, naming the file and the kinds, before anything is written.
        """
        _inside(self.layout, path)
        old = path.read_bytes() if path.exists() else None
        text = data if isinstance(data, str) else data.decode("utf-8", errors="replace")
        kinds = versioned_secrets(added_lines((old or b"").decode("utf-8", errors="replace"), text))
        if kinds:
            raise SecretRefused(kinds, f"{path.relative_to(self.layout.root).as_posix()} would hold", what="write")
        self.log.replaced(path, old)
        write_atomic(path, data)
        self.changed.add(path)
        self.undo.append(lambda: write_atomic(path, old) if old is not None else path.unlink(missing_ok=True))

    def remove_file(self, path: Path) -> None:
        """Remove a versioned file that is not a memory (a voyage entry being replaced by hand)."""
        _inside(self.layout, path)
        if path.exists():
            data = path.read_bytes()
            self.log.replaced(path, data)
            path.unlink()
            self.changed.add(path)
            self.undo.append(lambda: write_atomic(path, data))

    def _reindex(self) -> None:
        for folder, directory in self.banks.items():
            index = folder / BANK_INDEX
            if not folder.exists():
                continue
            # Recovery has committed any hand edit, so the index is current for
            # every file this transaction did not touch: only those are re-read.
            mine = {path.name for path in self.changed if path.parent == folder}
            known = {name: line for name, line in bank_index.current_lines(folder).items() if name not in mine}
            known.update((path.name, line) for path, line in self.written.items() if path.parent == folder)
            text = bank_index.render_index(folder, directory, known, self.memory_names(folder))
            current = index.read_bytes() if index.exists() else None
            if text.encode("utf-8") != current:
                self.log.replaced(index, current)
                write_atomic(index, text)  # fsyncs the folder: the memory files written there too
                self.unsynced.discard(folder)
                # The derived recall head, in the same transaction (a rollback leaves it stale,
                # and readers rebuild a stale one): the next SessionStart reads 9,000 characters, not the bank.
                write_recall_cache(self.layout, folder, config.RECALL_BUDGET_UTF16)
            self.changed.add(index)
        for folder in self.unsynced:  # a folder whose index did not change
            fsync_dir(folder)
        self.unsynced.clear()


def _unarchive(target: Path, source: Path) -> None:
    move_no_replace(target, source)
    try:
        target.parent.rmdir()  # only when the undo left _archive/ empty
    except OSError:
        pass


def _member(folder: Path, filename: str) -> Path:
    if "/" in filename or "\0" in filename or filename in ("", ".", "..", BANK_INDEX):
        raise InputError(f"{filename!r} is not a memory file name")
    path = folder / filename
    if not is_regular(path):  # a symbolic link in a bank is not a memory
        raise FileNotFoundError(f"{folder.name}/{filename} does not exist")
    return path


def _inside(layout: Layout, path: Path) -> None:
    resolved = path.resolve()
    if not resolved.is_relative_to(layout.root.resolve()) or any(
        part.startswith(".") for part in resolved.relative_to(layout.root.resolve()).parts
    ):
        raise InputError(f"{path} is not in the versioned tier of {layout.root}")


def _relpaths(layout: Layout, paths: set[Path]) -> list[str]:
    return sorted(path.relative_to(layout.root).as_posix() for path in paths)


def _vet(added: list[tuple[str, str]]) -> None:
    """Refuse a commit that adds a secret to any file, as sync's pre-push scan would (docs/secrets.md,
    "Every channel"): what sandman commits is never refused at push."""
    for path, text in added:
        kinds = versioned_secrets(text)
        if kinds:
            raise SecretRefused(kinds, f"the commit would add to {path}", what="commit")


def _vet_leftover(root: Path) -> Callable[[list[tuple[str, str]]], None]:
    def vet(added: list[tuple[str, str]]) -> None:
        for path, text in added:
            kinds = versioned_secrets(text)
            if kinds:
                raise LeftoverSecret(str(root), path, kinds)
    return vet


def prepare(memory: Memory) -> None:
    """Make ``memory``'s fields what a bank stores, in place, and check them: private spans
    hidden (sandman.private), name and description one line, the body clean. Raises
    InputError naming the field (memory.validate_fields); a caller deciding in advance
    whether a write would succeed (import's dry run) calls it too."""
    # Private spans never reach a bank, whoever wrote the memory.
    memory.name = one_line(private.redact(memory.name))
    memory.description = one_line(private.redact(memory.description))
    memory.body = clean_body(private.redact(memory.body))
    validate_fields(memory.type, memory.name, memory.description, memory.body)


@contextmanager
def bank_transaction(
    layout: Layout,
    *,
    verb: str,
    subject: str,
    session: str | None = None,
    trailers: dict[str, str] | None = None,
    scope: Sequence[Path] | None = None,
    keep_lock: bool = False,
) -> Iterator[BankTransaction]:
    """Run a block of bank operations as one commit under ``.commit.lock``.

    Yields a BankTransaction; on a clean exit regenerates the touched indexes
    and commits ``<verb>: <subject>`` (``tx.commit`` holds the id, None when
    nothing changed). On an exception, undoes what was done, commits nothing,
    and re-raises. ``scope``, when given, lists the absolute bank folders and
    files the block may write: recovery then looks for leftovers there only
    (``recover_scope``), and a block that changes anything outside it raises
    SandmanError, with nothing committed. A scoped (flat) commit catches the git index up
    before returning; with ``keep_lock``, only while the index is small
    (config.INDEX_CATCH_UP_MAX_BYTES), and ``.commit.lock`` stays held after a block that
    succeeded, in ``tx.lock``, for the caller to hand to the catch-up
    (store.repo.catch_up_in_child). Raises LockBusy after 120 s of waiting,
    RepositoryError, LeftoverSecret (a change left in the working tree carries
    a credential: nothing is done), ForeignRepository (store.repo.ensure_root).
    """
    # Refused before anything is touched; checked again at commit time for what the block adds.
    refuse_secrets(subject)  # the subject is the memory's name for most verbs: worded as for the text
    refuse_secrets(session or "", *(v for value in (trailers or {}).values()
                                    for v in ([value] if isinstance(value, str) else value)),
                   where="its session id or a commit trailer holds")
    adopted = store.ensure_root(layout)
    lock = store.commit_lock(layout)
    with store.locked(lock):
        repo = store.open_repo(layout)
        # A root whose first commit was never made (its creation killed) is recovered whole.
        # A scoped transaction over a root with history commits without the git index (flat: what it
        # costs does not grow with the root); the others stage through it.
        flat = not (scope is None or adopted or store.head_id(repo) is None)
        listed = None
        if not flat:
            recover(layout, repo)
        else:
            listed = recover_scope(layout, repo, scope)
        # Each bank folder's time before the block writes: the search index is then refreshed with
        # what the block wrote alone, when it was current with the folder (search.refresh_written).
        before = {path: _mtime(path) for path in scope} if flat else {}
        # The trees the bank folders' stat records were checked at (store.repo.note_clean, after the commit).
        trees = ({path: store.tree_at(repo, path.relative_to(layout.root).as_posix())
                  for path in scope if path.parent == layout.memories} if flat else {})
        if adopted:
            _index_every_bank(layout, repo)
        def stored(path: Path, data: bytes) -> str | None:
            # MEMORY.md of a bank recovery found as HEAD holds it: logged by HEAD's blob, not by
            # its bytes (120 KB fsynced in a bank of 1,000).
            if path.name == BANK_INDEX and path.parent in (listed or {}) and len(data) >= STORED_MIN_BYTES:
                return store.head_blob(repo, path.relative_to(layout.root).as_posix())
            return None

        tx = BankTransaction(layout, UndoLog(layout, store.head_id(repo), stored), subject,
                             trailers=dict(trailers or {}))
        for folder, files in (listed or {}).items():
            tx.listed[folder] = sorted(name for name, st in files.items()
                                       if "/" not in name and S_ISREG(st.st_mode) and bank_index.is_memory_name(name))
        try:
            yield tx
            if scope is not None:
                _within(layout, tx.changed, scope)  # before the indexes are written
            tx._reindex()
            paths = _relpaths(layout, tx.changed)
            if not flat:  # a flat commit leaves out itself what holds HEAD's bytes (store.repo.commit_flat)
                paths = store.dirty_among(repo, paths)
            if paths:
                all_trailers = {"Verb": verb, "Session": session or ""}
                all_trailers.update(tx.trailers)
                # The commit message is pushed by sync and read by recall's trail: the ban covers it too.
                values = [v for value in all_trailers.values() for v in ([value] if isinstance(value, str) else value)]
                refuse_secrets(tx.subject)
                refuse_secrets(*values, where="its session id or a commit trailer holds")
                if flat:
                    tx.commit = store.commit_flat(
                        repo, paths, f"{verb}: {tx.subject}", all_trailers, vet=_vet,
                        catch_up_below=config.INDEX_CATCH_UP_MAX_BYTES if keep_lock else sys.maxsize)
                else:
                    tx.commit = store.commit_paths(repo, paths, f"{verb}: {tx.subject}", all_trailers, vet=_vet)
        except BaseException:
            for step in reversed(tx.undo):
                try:
                    step()
                except OSError:
                    pass
            if tx.banks:
                tx.undo.clear()
                tx.written.clear()  # undone: a replaced file may be back under a written file's name
                tx._reindex()
            try:
                if not flat:  # a flat commit never stages anything
                    store.reset_index(repo)  # a commit that failed may have staged what was just undone
            except SandmanError:
                pass
            tx.log.close()
            raise
        tx.log.close()
        if tx.commit is not None:
            for folder, tree in trees.items():
                store.note_clean(repo, folder.relative_to(layout.root).as_posix(), store.stat_record(repo, folder.name),
                                 tree, [path.relative_to(folder).as_posix() for path in tx.changed
                                        if path.is_relative_to(folder)])
        if tx.commit is not None and tx.banks:
            _refresh_search(layout, sorted(folder.name for folder in tx.banks),
                            {folder: before[folder] for folder in tx.banks if folder in before}, tx.changed)
        if keep_lock:
            lock.acquire()  # a second hold: the with's release below leaves the lock held
            tx.lock = lock


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _refresh_search(layout: Layout, banks: list[str], before: dict[Path, int | None] | None = None,
                    changed: set[Path] = frozenset()) -> None:
    """Keep the search index current with the banks a commit touched (sandman.banks.search); build it
    whole when there is none (the first commit of memories, as dream's first), since the prompt and
    file hooks read it and never build it. ``before`` maps each bank folder of a scoped transaction
    to its modification time before the block wrote, ``changed`` what the block wrote: only those
    files are read again when the index was current (search.refresh_written).

    The index is derived: a failure here costs a slower next search (it finds
    the change itself), never the commit, so it is a journal line.
    """
    import sqlite3  # here, not at the top: take --hook imports this module

    from sandman.banks import search

    before = before or {}
    try:
        if not layout.search_index.is_file():
            search.build(layout)
        elif before and set(banks) == {folder.name for folder in before}:
            for folder, mtime in before.items():
                files = [path.name for path in changed if path.parent == folder and path.name.endswith(".md")
                         and path.name != BANK_INDEX and not path.name.startswith(".")]
                search.refresh_written(layout, folder.name, files, mtime)
        else:
            search.refresh(layout, banks)
    except (sqlite3.Error, OSError) as error:
        journal.write(layout, "search", "refresh-failed", error=str(error))


def _within(layout: Layout, changed: set[Path], scope: Sequence[Path]) -> None:
    """Raise SandmanError (a verb's bug, not the person's input) when a path of ``changed`` is
    neither one of ``scope`` nor inside one."""
    outside = sorted(path for path in changed if not any(path == top or path.is_relative_to(top) for top in scope))
    if outside:
        raise SandmanError(f"{_relpaths(layout, set(outside))[0]} is outside the transaction's scope "
                         f"({', '.join(_relpaths(layout, set(scope)))}); nothing was committed")


def _sweep_temp_files(layout: Layout, banks: Sequence[Path] | None = None) -> None:
    """Delete temp files a killed writer left in the banks and the log (``banks`` given: in
    those bank folders only).

    Every writer there holds ``.commit.lock``, as the caller does now, so any
    temp file present is an orphan. (``memories/.recent/`` is written without
    the lock by take and is left alone.)
    """
    folders = [layout.log] + bank_folders(layout) if banks is None else [None, *banks]
    folders += [bank / BANK_ARCHIVE for bank in folders[1:]]
    folders = [folder for folder in folders if folder is not None]
    for folder in folders:
        try:
            entries = [entry.path for entry in os.scandir(folder)
                       if entry.name.startswith(".") and entry.name.endswith(".tmp") and TEMP_NAME.fullmatch(entry.name)]
        except (FileNotFoundError, NotADirectoryError):
            continue  # a glob of a folder that is not there found nothing either
        for orphan in entries:
            Path(orphan).unlink(missing_ok=True)


def _index_every_bank(layout: Layout, repo) -> str | None:
    """Regenerate every bank's MEMORY.md and commit what changed; return the id.

    For a root that was adopted with memory files but no (or stale) indexes:
    recall reads MEMORY.md, so a bank without one would be invisible. The
    caller holds ``.commit.lock``.
    """
    changed = []
    for folder in bank_folders(layout):
        index = folder / BANK_INDEX
        text = bank_index.render_index(folder)
        if not index.exists() or index.read_text(encoding="utf-8") != text:
            write_atomic(index, text)
            changed.append(index)
    if not changed:
        return None
    return store.commit_paths(repo, _relpaths(layout, set(changed)), "init: index every bank", {"Verb": "init"},
                              vet=_vet_leftover(layout.root))


def index_every_bank(layout: Layout) -> str | None:
    """Regenerate and commit every bank's MEMORY.md under ``.commit.lock`` (``sandman init``).

    Returns the commit id, None when every index was current. Raises LockBusy,
    RepositoryError, LeftoverSecret, ForeignRepository.
    """
    store.ensure_root(layout)
    with store.locked(store.commit_lock(layout)):
        repo = store.open_repo(layout)
        recover(layout, repo)
        return _index_every_bank(layout, repo)


def recover(layout: Layout, repo) -> str | None:
    """Roll back a transaction a killed process left half done, then commit any other change
    left in the working tree (a hand edit), indexes regenerated; return the commit id.

    Orphaned temp files of killed writers are deleted first. Symbolic links are
    left out (store.repo.committable_paths). A leftover change that carries a
    credential is never committed: LeftoverSecret is raised, naming the file,
    with nothing committed and every file left as it is (the caller's write
    does not happen either, so ``git status`` stays what the person left). The
    caller holds ``.commit.lock``. Returns None when nothing was left to
    commit. Raises LeftoverSecret, RepositoryError, OSError (a file the undo
    log names cannot be put back, a leftover file that cannot be read).
    """
    _roll_back_killed(layout, repo)
    # A remembered file a person's `git clean` deleted while the index was behind (it showed as
    # untracked) comes back from HEAD: never committed as a deletion (docs/BANK-FORMAT.md, "The index behind HEAD").
    restored = store.restore_behind(repo)
    if restored:
        journal.write(layout, "recover", "restored", files=",".join(restored))
    dirty = store.committable_paths(repo)
    if not dirty:
        return None
    # What was left here did not pass the secrets ban remember and dream apply:
    # a credential in it would be pushed by sync and injected by recall.
    try:
        refuse_secret_files(layout.root, dirty)
    except LeftoverSecret as error:
        journal.write(layout, "recover", "refused", reason="secret", file=error.path, kinds=",".join(error.kinds))
        raise
    set_strays_aside(layout, repo)
    banks = {
        layout.root / Path(path).parts[0] / Path(path).parts[1]
        for path in dirty
        if Path(path).parts[0] == "memories" and len(Path(path).parts) > 2
    }
    for folder in banks:
        if folder.is_dir():
            text = bank_index.render_index(folder)
            index = folder / BANK_INDEX
            if not index.exists() or index.read_text(encoding="utf-8") != text:
                write_atomic(index, text)
    paths = store.committable_paths(repo)
    if not paths:
        return None
    try:
        commit = store.commit_paths(
            repo, paths, "recover: commit changes left in the working tree", {"Verb": "recover"},
            vet=_vet_leftover(layout.root),
        )
    except LeftoverSecret as error:
        store.reset_index(repo)
        journal.write(layout, "recover", "refused", reason="secret", file=error.path, kinds=",".join(error.kinds))
        raise
    _refresh_search(layout, sorted(folder.name for folder in banks))  # a hand edit made in place
    return commit


def strangers(repo) -> list[str]:
    """The new files (never committed) in the root's versioned tier that are none of the formats
    sandman owns (layout.owns), sorted, as repo-relative POSIX paths. Symbolic links are left out
    (they are never committed and doctor names them). Raises RepositoryError."""
    new = store.new_paths(repo)
    return [path for path in store.committable_paths(repo) if path in new and not owns(path)]


def set_strays_aside(layout: Layout, repo) -> list[str]:
    """Move every stranger (``strangers``) into ``.strays/<UTC stamp>/<relpath>`` (dotted: never
    versioned), journal it (``recover strayed``) and return the paths moved; a file that cannot
    be moved is left where it is, uncommitted. The single writer never commits a file that is
    not one of its formats (docs/BANK-FORMAT.md, "Strays"). The caller holds ``.commit.lock``."""
    moved, stamp = [], now_utc()
    for path in strangers(repo):
        try:
            move_no_replace(layout.root / path, layout.stray(stamp, path))
        except OSError as error:
            journal.write(layout, "recover", "stray-kept", file=path, error=str(error))
            continue
        moved.append(path)
        where = layout.stray(stamp, path).relative_to(layout.root).as_posix()
        journal.write(layout, "recover", "strayed", file=path, to=where)
    return moved


def recover_scope(layout: Layout, repo, scope: Sequence[Path]) -> dict[Path, dict[str, os.stat_result]] | None:
    """``recover`` for a transaction that writes only ``scope`` (absolute bank folders and
    files). Returns the files of each bank folder of ``scope`` that is a folder
    (store.repo.list_files: relative path to ``lstat``) when all of ``scope`` was found as
    HEAD holds it, for the transaction not to list them again; None when the whole
    recovery ran.

    A transaction a killed process left half done is rolled back, and orphaned
    temp files in the scope's bank folders deleted; then each folder and file of
    ``scope`` is compared with HEAD (store.repo.is_clean).
    When one holds a leftover change, the whole ``recover`` runs (every hand
    edit of the root committed, strays set aside, secrets refused) before the
    block writes; else nothing else is read, and a hand edit elsewhere waits for
    the next unscoped transaction. The caller holds ``.commit.lock``. Raises
    what ``recover`` raises.
    """
    _roll_back_killed(layout, repo, [path for path in scope if path.is_dir()])
    listed = {}
    for path in scope:
        bank = path.parent == layout.memories
        if bank and is_real_dir(path):
            try:
                listed[path] = store.list_files(path)
            except OSError:
                pass  # is_clean lists it again, and says why it cannot (RepositoryError)
        if not store.is_clean(repo, path.relative_to(layout.root).as_posix(),
                              store.stat_record(repo, path.name) if bank else None, listed.get(path)):
            recover(layout, repo)
            return None
    return listed


def _roll_back_killed(layout: Layout, repo, banks: Sequence[Path] | None = None) -> int | None:
    """Delete orphaned temp files (of ``banks`` alone when given, see ``_sweep_temp_files``) and
    roll back a transaction a killed process left half done (banks.undo.roll_back); the caller
    holds ``.commit.lock``."""
    _sweep_temp_files(layout, banks)
    head = store.head_id(repo)
    undone = roll_back(layout, head, lambda blob: repo[blob].data)
    if undone is not None:
        store.reset_index(repo)  # the killed commit may have staged what was just undone
        journal.write(layout, "recover", "rolled-back" if undone else "dropped", undone=undone,
                      head=(head or "")[:12])
    return undone


def roll_back_killed(layout: Layout) -> int | None:
    """Under ``.commit.lock``, undo what a killed transaction left (its ``.commit.undo``), and
    nothing else: a hand edit stays uncommitted (reconcile refuses a root with one). Returns
    how many changes were undone, None when no log was left. Raises LockBusy, RepositoryError,
    OSError (a file the log names cannot be put back)."""
    store.ensure_root(layout)
    with store.locked(store.commit_lock(layout)):
        return _roll_back_killed(layout, store.open_repo(layout))


def roll_back_if_killed(layout: Layout) -> int | None:
    """For a reader: roll back a transaction a killed process left (its ``.commit.undo``) now,
    rather than read its half until the next write; return how many changes were undone.

    Never waits: while a writer holds ``.commit.lock`` its transaction is running, not
    killed, and nothing is done (None). A failure to roll back is left to the next write's
    recovery, which reports it (None); never raises.
    """
    if not layout.commit_undo.exists():
        return None
    try:
        with store.locked(store.commit_lock(layout, timeout=0)):
            return _roll_back_killed(layout, store.open_repo(layout))
    except (SandmanError, OSError):
        return None


def settle(layout: Layout) -> str | None:
    """Recover the root before a verb reads its banks to decide something; return a recover commit id.

    Readers never lock, so a transaction a killed process left half done is
    what they read until the next transaction recovers it: reflect would plan
    an upkeep over a listing the recovery then rolls back. Under
    ``.commit.lock``, ``recover`` runs now. Raises LockBusy, RepositoryError,
    LeftoverSecret, ForeignRepository, OSError.
    """
    store.ensure_root(layout)
    with store.locked(store.commit_lock(layout)):
        return recover(layout, store.open_repo(layout))


def commit_memory(
    layout: Layout,
    memory: Memory,
    *,
    directory: str | os.PathLike[str] | None,
    verb: str,
    session: str | None = None,
    replaces: str | None = None,
    trailers: dict[str, str] | None = None,
) -> Committed:
    """Commit one memory into the bank of ``directory`` (None: the user-wide bank).

    The common case of ``bank_transaction``: one memory written (replacing
    ``replaces`` when given), the index regenerated, one commit
    ``<verb>: <memory name>``. Raises InputError, SecretRefused (nothing
    written; a secret in the memory's text, its sources, its bank directory,
    the session id or a trailer), FileNotFoundError, LockBusy, RepositoryError, LeftoverSecret and
    ForeignRepository (nothing written).
    """
    name = bank_name(directory)
    folder_directory = None if directory is None else str(normalize_directory(directory))
    memory.name = one_line(memory.name)
    with bank_transaction(
        layout, verb=verb, subject=memory.name, session=session, trailers=trailers
    ) as tx:
        path = tx.write_memory(name, memory, replaces=replaces, directory=folder_directory)
    return Committed(path=path, commit=tx.commit)
