"""``sandman site``: render the memory root into ``<root>/.site/``, nothing else.

reflect renders the site at the end of its pass; this verb is the same render
without the pass (docs/site.md). The render is incremental: a page whose
sources did not change is not rewritten.
"""

from __future__ import annotations

from sandman import journal
from sandman.layout import Layout
from sandman.site.render import RenderStats, render_site


def site(layout: Layout) -> RenderStats:
    """Render ``.site/`` and journal what was done; return the render's figures.

    Raises InputError (no memory root), SiteError, LockBusy, RepositoryError, OSError.
    """
    stats = render_site(layout)
    journal.write(
        layout, "site", "rendered", pages=stats.pages, written=stats.written, removed=stats.removed,
        unreadable=stats.unreadable, commits=stats.commits_walked, seconds=round(stats.seconds, 3),
    )
    return stats
