"""The memory root a take writes into: made a repository on the first take, and never someone else's.

Standard library only at module level (pygit2 is imported only on the first
take, or when a root's .gitignore does not look like sandman's).
"""

from __future__ import annotations

from sandman import journal
from sandman.errors import SandmanError
from sandman.layout import GITIGNORE_SIGNATURE, Layout

VERB = "take"


def ensure_repository(layout: Layout) -> None:
    """Make the root a git repository on the first take (every verb sets the tree up on first use).

    After the rename and the pointer, so a hook pays for pygit2 only once, on
    the very first take. Best effort: a failure is a journal line, never a lost take.
    """
    if (layout.root / ".git").exists():
        return
    from sandman.verbs.init import init

    try:
        init(layout)
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
