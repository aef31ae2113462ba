"""``sandman reconcile <event|shift> [--dry-run] [--json]``: undo a revoked decision (docs/reconcile.md).

Thin over sandman.machine.reconcile: call, and turn the result into lines for a
person (``lines``). The exit status is 1 when any repository failed; a repository
skipped (no target commit in it, and no trunk to name or not readable) is not a failure.
"""

from __future__ import annotations

from sandman.layout import Layout
from sandman.machine.reconcile import Result, reconcile as run_reconcile


def reconcile(layout: Layout, target: str, *, dry_run: bool = False) -> Result:
    """Reconcile a revoked event or shift (machine.reconcile.reconcile)."""
    return run_reconcile(layout, target, dry_run=dry_run)


def lines(result: Result) -> list[str]:
    """What happened, per repository, for a person."""
    out = []
    verb = "would revert" if result.dry_run else "reverted"
    for repo in result.repos:
        where = "memory root " + repo.path if repo.memory_root else repo.path
        if repo.status == "failed":
            out.append(f"FAILED {where}: {repo.error}")
            continue
        if repo.status == "skipped":
            out.append(f"skipped {where}: {repo.error}")
            continue
        if repo.status == "nothing" and not repo.off_trunk:
            continue
        onto = f" on {repo.branch}" if repo.branch and not repo.memory_root else (
            f" on {repo.trunk}" if repo.trunk else "")
        for commit in repo.commits:
            revert = f" -> {commit['revert'][:12]}" if commit.get("revert") else ""
            out.append(f"{verb} {where}{onto}: {commit['commit'][:12]} {commit['subject']}{revert}")
        if repo.already:
            out.append(f"already reverted {where}: {len(repo.already)} commit(s)")
        for commit in repo.off_trunk:
            out.append(f"off trunk {where}: {commit['commit'][:12]} {commit['subject']} (not reverted; "
                       f"the trunk {repo.trunk} does not reach it)")
        for path in repo.retired:
            out.append(f"{'would retire' if result.dry_run else 'retired'}: {path}")
        for path in repo.restored:
            out.append(f"{'would restore' if result.dry_run else 'restored'}: {path}")
        if repo.branch and not repo.memory_root and repo.status == "reverted":
            out.append(f"review and merge {repo.branch} in {repo.path}; sandman never moves its trunk")
    out += result.unmerged
    if result.event is not None:
        out.append(f"event: {result.event.id}")
    if not any(repo.commits for repo in result.repos) and not result.failed:
        out.append(f"nothing to revert for {result.target}" + (
            "" if not any(repo.already for repo in result.repos) else " (already reconciled)"))
    return out
