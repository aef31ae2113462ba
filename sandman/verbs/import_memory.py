"""``sandman import claude-memory``: Claude Code's native auto memory into the banks (issue 17).

Claude Code keeps its own auto memory in ``<config dir>/projects/<project
folder>/memory/``: a ``MEMORY.md`` index and one markdown file per memory with
``name``, ``description`` and ``type`` frontmatter (``type`` may also sit under
``metadata:``), the same shape as a bank's. The project folder is Claude
Code's slug of the repository's root directory (every non-alphanumeric
character of the path becomes ``-``), so it cannot be turned back into a
directory by itself: a folder's directory is the one directory, among the
cwds its sessions recorded (the transcripts beside it, the pointers of
sessions taken from it, and their ancestors) and the directories the banks
record, whose slug is the folder's name. ``--project DIR`` names it instead.

Each file becomes one memory of the bank of that directory (a ``user`` memory
goes to the user-wide bank, as ``remember`` does), written through
``bank_transaction`` (the single format authority: slug, index, secrets ban,
one commit ``import: …`` with ``Verb: import``) with the same type, name,
description and body, its unknown frontmatter keys kept, ``source:
[claude-memory]`` and two keys recording where it came from:
``imported_from`` (the file, relative to Claude Code's projects folder) and
``imported_sha256`` (the file's bytes). A second run finds the memory by
``imported_from`` among the committed memories (the plan is made inside the
transaction, after its recovery has rolled back what a killed import left): the same bytes are ``unchanged`` (nothing is committed), an
edited native file ``replaces`` its earlier import (archived into
``_archive/``). A file whose text holds a credential is skipped (``secret``),
the rest still land. A new file whose memory the retired ledger holds (``forget
--memory``, a curator, upkeep: the same memory or the same claim in other words,
in its bank or one above, as dream tells it) is skipped (``retired``), so a
forgotten memory does not come back from Claude Code's own copy.

Every decision is a journal line in ``.trace/import-<date>.log``.
The reading and the planning live one floor down, in
sandman/claudecode/memory.py; this module is the verb: the transaction, the
journal lines and the lines for a person.
"""

from __future__ import annotations

import os

from sandman import journal
from sandman.banks.commit import bank_transaction
from sandman.banks.memory import one_line
from sandman.banks.names import bank_name
from sandman.claudecode.memory import REASONS, VERB, ImportResult, plan, project_folder_name
from sandman.errors import InputError, SecretRefused
from sandman.layout import Layout

__all__ = ["REASONS", "ImportResult", "import_claude_memory", "lines", "plan", "project_folder_name"]


def import_claude_memory(layout: Layout, *, project: str | None = None, dry_run: bool = False) -> ImportResult:
    """Import Claude Code's auto memory into the banks (docs/import.md); return what was done.

    ``project`` (a directory) limits the import to its project folder and
    names its directory. One commit for everything imported or replaced, none
    when nothing changed; a root that does not exist yet is created first (not
    by a dry run, which writes nothing). Raises InputError (a bad
    ``--project``), LockBusy, RepositoryError; never for one native file
    (each is skipped with a reason).
    """
    if project is not None and not os.path.isdir(project):
        raise InputError(f"--project {project} is not a directory")
    if dry_run:
        result = plan(layout, project)
        result.dry_run = True
        return result
    if not layout.memories.is_dir():
        from sandman.verbs.init import init

        init(layout)  # the first use creates the root, as every verb that writes does
    # Planned inside the transaction, after its recovery: a killed import's uncommitted files are
    # rolled back there, so judging them "unchanged" from the working tree before would lose them.
    with bank_transaction(layout, verb=VERB, subject="Claude Code's auto memory") as tx:
        result = plan(layout, project)
        todo = [item for item in result.items if item.action in ("import", "replace")]
        for item in todo:
            directory = None if item.directory is None else str(item.directory)
            try:
                item.written = tx.write_memory(bank_name(item.directory), item.memory, replaces=item.existing,
                                               directory=directory)
            except (InputError, SecretRefused) as error:  # refused before writing: this file only
                item.action, item.reason, item.detail = "skip", "invalid", str(error)
        written = sum(item.written is not None for item in todo)
        tx.subject = f"{written} memory file(s) from Claude Code's auto memory"
    result.commit = tx.commit
    for item in result.items:
        facts = {"file": item.relpath}
        if item.written is not None:
            facts["memory"] = item.written.relative_to(layout.root).as_posix()
        if item.action == "replace":
            facts["replaced"] = item.existing
        journal.write(layout, VERB, {"import": "imported", "replace": "replaced"}.get(item.action, item.action),
                      reason=item.reason, detail=item.detail, **facts)
    journal.write(layout, VERB, "finished", imported=result.count("import"), replaced=result.count("replace"),
                  unchanged=result.count("unchanged"), skipped=result.count("skip"),
                  commit=(result.commit or "")[:12] or None)
    return result


def lines(result: ImportResult) -> list[str]:
    """One line per native file, then the counts."""
    verbs = {"import": "would import" if result.dry_run else "imported",
             "replace": "would replace" if result.dry_run else "replaced", "unchanged": "unchanged"}
    out = []
    for item in result.items:
        if item.action == "skip":
            detail = f" ({item.detail})" if item.detail else ""
            out.append(f"skipped {item.relpath}: {REASONS[item.reason]}{detail}")
        else:
            bank = "the user-wide bank" if item.directory is None else str(item.directory)
            out.append(f"{verbs[item.action]} {item.relpath} -> {bank}: {one_line(item.memory.name)}")
    out.append(f"import: {result.count('import')} imported, {result.count('replace')} replaced, "
               f"{result.count('unchanged')} unchanged, {result.count('skip')} skipped"
               + (" (dry run: nothing written)" if result.dry_run else ""))
    return out
