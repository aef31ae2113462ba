"""``sandman report``: the owner's digest of the shifts' reports (design, "The perpetual shift").

Only ``report serve`` exists yet: it serves the rendered site (``.site/``) on
127.0.0.1:1705, re-rendering first so what it serves is current. It refuses a
non-loopback address unless told ``--public``: the site shows every memory.

Module level is standard library only (``report --hook`` will live here): the
render, which needs jinja2, markdown-it and pygit2, is imported when serving.
"""

from __future__ import annotations

from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING

from sandman import journal
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.site.serve import is_loopback, make_server, url

if TYPE_CHECKING:
    from sandman.site.render import RenderStats


def site_search(layout: Layout, query: str) -> tuple[int, object]:
    """Answer the site's search page: ``(200, [{n, d, t, b, u, x}, ...])`` as search-index.js
    shapes a memory (``x`` the matching line), or ``(400, {"error": <one line>})``."""
    import sqlite3

    from sandman.banks import search
    from sandman.errors import SandmanError
    from sandman.site.pages import memory_path

    try:
        hits = search.search(layout, query, limit=100)
    except (SandmanError, sqlite3.Error, OSError) as error:
        return 400, {"error": str(error)}
    return 200, [{"n": hit.name, "d": hit.description, "t": hit.type, "b": hit.bank,
                  "u": memory_path(hit.bank, hit.file), "x": hit.line} for hit in hits]


def open_server(layout: Layout, *, host: str, port: int, public: bool) -> tuple[ThreadingHTTPServer, RenderStats]:
    """Re-render the site if stale and bind a server for it; return the server (not yet serving).

    Raises InputError for a non-loopback ``host`` without ``public`` (nothing is
    rendered or bound then), the errors of render_site, OSError when the address
    cannot be bound.
    """
    from sandman.site.render import render_site

    if not public and not is_loopback(host):
        raise InputError(
            f"refusing to serve on {host}: it is not a loopback address, so anyone who can reach it "
            "would read every memory; use 127.0.0.1, or pass --public to mean it"
        )
    stats = render_site(layout)
    server = make_server(layout.site, host, port, public=public, search=lambda query: site_search(layout, query))
    journal.write(layout, "report", "serving", url=url(server), public=public, written=stats.written)
    return server, stats


# --- proposals: report propose|approve|decline|proposals (sandman/machine/proposals.py) ---------


def proposal_body(body: str | None, body_file: str | None, stdin) -> str:
    """The body ``report propose`` files: ``--body`` as given, or ``--body-file`` read (``-`` reads
    ``stdin``, a binary stream). Raises InputError: both given, a file that is unreadable, not
    UTF-8, or over 256 KiB (the 4,000-character cap is checked by ``proposals.propose``)."""
    if body is not None and body_file is not None:
        raise InputError("give --body or --body-file, not both")
    if body_file is None:
        return body or ""
    limit = 256 * 1024
    try:
        if body_file == "-":
            data = stdin.read(limit + 1)
        else:
            with open(body_file, "rb") as handle:
                data = handle.read(limit + 1)
    except OSError as error:
        raise InputError(f"--body-file {body_file}: {error.strerror or error}") from None
    if len(data) > limit:
        raise InputError(f"--body-file {body_file} is over 256 KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"--body-file {body_file} is not UTF-8 text") from None
