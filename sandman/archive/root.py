"""The memory root a take writes into: made a repository on the first take, and never someone else's.

``create_root`` is ``sandman init``'s substance (sandman/verbs/init.py is the command over it);
it lives here, the lowest module that needs it, so the first take does not reach up into the verbs.

Standard library only at module level (pygit2 is imported only on the first
take, or when a root's .gitignore does not look like sandman's).
"""

from __future__ import annotations

from sandman import journal
from sandman.errors import SandmanError
from sandman.layout import GITIGNORE_SIGNATURE, Layout

VERB = "take"


def create_root(layout: Layout) -> bool:
    """Create the root's tree and git repository; return True when anything changed.

    A folder that exists but is not a repository (or a repository with no
    commit yet) is adopted in place: its visible files become the first
    commit, and every bank's MEMORY.md is regenerated (a bank without one
    would be invisible to recall). A repository with history that is not a
    memory root is refused (store.repo.ensure_root). Raises ForeignRepository,
    LeftoverSecret, RepositoryError, LockBusy, OSError (the root cannot be
    created).
    """
    from sandman.banks.commit import index_every_bank  # pygit2: never at a hook's import
    from sandman.store.repo import ensure_root

    changed = ensure_root(layout)
    for folder in (layout.memories, layout.recent, layout.log, layout.trace):
        folder.mkdir(parents=True, exist_ok=True)
    # An adopted folder may hold memory files without indexes; recall reads MEMORY.md.
    changed = bool(index_every_bank(layout)) or changed
    if changed:
        journal.write(layout, "init", "created", root=str(layout.root))
    return changed


def ensure_repository(layout: Layout) -> None:
    """Make the root a git repository on the first take (every verb sets the tree up on first use).

    After the rename and the pointer, so a hook pays for pygit2 only once, on
    the very first take. Best effort: a failure is a journal line, never a lost take.
    """
    if (layout.root / ".git").exists():
        return
    try:
        create_root(layout)
    except (SandmanError, OSError) as error:
        journal.write(layout, VERB, "init-failed", error=str(error))


def refuse_foreign_root(layout: Layout) -> None:
    """Raise ForeignRepository when the root is a git repository sandman did not create: a
    transcript must not be filed into someone's project (store.repo.ensure_root's rule).

    The hook reads only the .gitignore; pygit2 is imported just when that does not settle it.
    """
    try:
        rules = set(layout.gitignore.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        rules = set()
    if rules >= set(GITIGNORE_SIGNATURE) or not (layout.root / ".git").exists():
        return
    from sandman.store.repo import open_repo, refuse_foreign

    refuse_foreign(layout, open_repo(layout))
