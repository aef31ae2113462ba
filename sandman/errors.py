"""The exceptions sandman raises on purpose.

They are turned into output in exactly two places: ``sandman/cli/`` (common.run) prints the message
as one line on stderr and exits with ``exit_code``; ``hook.py`` writes it as a
journal line and exits 0, because a hook must never break Claude Code.

Every message names the input that was wrong and, where there is one, the fix.
Standard library only: the hook entry points import this module.
"""

from __future__ import annotations


class SandmanError(Exception):
    """Base of every deliberate failure; ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class InputError(SandmanError):
    """The caller gave a bad argument, payload or file (exit 2, nothing written)."""

    exit_code = 2


class ConfigError(SandmanError):
    """An environment variable or settings file holds an unusable value."""

    exit_code = 2


class SecretRefused(InputError):
    """A memory carries a credential; ``kinds`` names what was found, never the value."""

    def __init__(self, kinds: list[str], where: str = "it contains", what: str = "memory"):
        self.kinds = kinds
        fix = "remember the fact without it" if what == "memory" else "write it again without it"
        super().__init__(f"{what} refused: {where} a secret (" + ", ".join(kinds)
                         + f"); remove the credential and {fix}")


class PassRefused(SandmanError):
    """``breathe pass`` will not compose a pass: no source is due, or the day's budget is spent (exit 3)."""

    exit_code = 3


class FormatError(SandmanError):
    """A file under the root does not follow docs/BANK-FORMAT.md."""


class RepositoryError(SandmanError):
    """The memory root's git repository could not be read or written."""


class GitBusy(RepositoryError):
    """A git lock file in the memory root belongs to a process that is not a dead sandman (a person's
    running ``git``): sandman leaves it alone and writes nothing (docs/BANK-FORMAT.md, "Git's lock files")."""


class LockBusy(SandmanError):
    """Another sandman process holds a lock this verb needs."""


class CrossDeviceError(SandmanError):
    """A move would cross filesystems; sandman never falls back to a copy."""


# --- transcripts and take (issue 3) ------------------------------------------


class UnrecognisedTranscript(InputError):
    """A file's envelope matches no host (neither Claude Code nor Codex)."""


class TranscriptNotFound(InputError):
    """No transcript for the session: never there, or another take moved it first."""


class TranscriptLive(SandmanError):
    """The transcript was written within the live window; the session may still run."""


class ArchiveChanged(SandmanError):
    """An archived transcript's first bytes no longer hash to what its take recorded."""


class NothingNew(InputError):
    """The session was taken and its transcript holds nothing since (docs/take.md, "Resume")."""


# --- dream (issue 4) ---------------------------------------------------------


class ReplyRejected(SandmanError):
    """A mind's reply breaks the dream reply contract; ``reason`` is the journal's word for why.

    The mind abstains (docs/BANK-FORMAT.md, "Dream replies"); nothing it said is used.
    """

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"reply rejected: {reason}")


# --- sync and doctor (issue 7) -----------------------------------------------


class SyncError(SandmanError):
    """A sync could not complete; the local root is as it was before it began.

    ``reason`` is one word for the journal and doctor: ``unreachable``,
    ``credentials``, ``rejected``, ``no-remote``, ``no-root``, ``not-a-branch``,
    ``hidden`` (a commit would carry the hidden tier off the machine),
    ``link`` (a symbolic link would be pushed or checked out),
    ``secret`` (a commit to be pushed adds a credential),
    ``remote-exists``, ``conflict`` (a merge that would lose a memory, or a path
    both a file and a folder), ``checkout`` (the merged tree could not be
    checked out; the remote already has it, and the next sync fast-forwards).
    """

    def __init__(self, reason: str, message: str):
        self.reason = reason
        # The id of the ``recover`` commit sync made of leftover working-tree
        # changes before it failed, if it made one: the one local change kept.
        self.recovered: str | None = None
        super().__init__(message)


# --- the static site (sandman.site) ---


class SiteError(SandmanError):
    """The site cannot be rendered as asked: two pages claim one output path, or a page
    would land outside ``.site/``."""


# --- the minds' binary (dream) ---


class ClaudeNotFound(SandmanError):
    """The minds' ``claude`` binary ($SANDMAN_CLAUDE_BIN, else ``claude`` on PATH) is not there:
    no mind could run, so the run stops before starting any."""


# --- what a sandman write finds in the root before it commits (breaker3 problems 2 and 6) ---


class LeftoverSecret(SandmanError):
    """A change left in the versioned tier outside sandman (a hand edit, a stray file) carries a
    credential; ``path`` (repo-relative) and ``kinds`` name it, never the value. Nothing was
    committed; the file stays as it is for its owner to fix."""

    exit_code = 2

    def __init__(self, root: str, path: str, kinds: list[str]):
        self.path = path
        self.kinds = kinds
        super().__init__(
            f"{path} in {root} contains a secret ({', '.join(kinds)}), left there outside sandman; "
            "nothing was committed: remove the credential from that file (or delete it) and try again"
        )


class ForeignRepository(SandmanError):
    """The memory root is a git repository sandman did not create; sandman commits nothing into it."""

    exit_code = 2


# --- search, curators, notes (issue 19) ---------------------------------------
class SearchIndexError(SandmanError):
    """The search index (``.search.sqlite``) could not be built or read; deleting it is safe."""


class ProposalRefused(SandmanError):
    """Every curator reply of a run was refused or abstained: no proposal set was written."""
