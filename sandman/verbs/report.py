"""``sandman report``: the owner's side of the shifts (design, "The perpetual shift"; docs/report.md).

- ``report``: the shifts' reports, unread first (``report_list``);
- ``report show <shift>``: one report whole, then marked read (``show``);
- ``report --hook``: at SessionStart, the digest of the unread reports, once (``hook``);
- ``report serve``: serves the rendered site (``.site/``) on 127.0.0.1:1705,
  re-rendering first so what it serves is current. It refuses a non-loopback
  address unless told ``--public``: the site shows every memory.

The substance is sandman/machine/report.py. Module level is standard library only
(``report --hook`` runs at every session start, tests/test_imports.py): the site's
server and render, which need jinja2, markdown-it and pygit2, are imported when serving.
"""

from __future__ import annotations

import json

from sandman import config, hookpayload, journal
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.machine import report as reports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook path)
if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    from sandman.site.render import RenderStats

VERB = "report"
# SessionStart sources that show the digest: a new conversation. A resume, a fork or a compaction
# continues one whose person was already shown it (docs/report.md, "At session start").
DIGEST_SOURCES = ("startup", "clear", None)


def report_list(layout: Layout) -> list[reports.ReportInfo]:
    """Every report, unread first then newest first (machine.report.reports)."""
    return reports.reports(layout)


def list_line(info: reports.ReportInfo) -> str:
    """One listing line: unread mark, shift id, repository, outcome, closed time, counts."""
    mark = "new " if not info.read else "    "
    return mark + reports.summary(info)


def show(layout: Layout, shift_id: str) -> str:
    """The text of ``shift_id``'s report.md, then marked read. Raises InputError for a malformed
    id or a shift without a report; a read mark that cannot be written is a journal line."""
    text = reports.report_text(layout, shift_id)
    revoked = reports.revoked_shifts(layout).get(shift_id)
    if revoked:
        text = (f"REVOKED by {revoked} (`sandman trail show {revoked}`); `sandman reconcile {shift_id}` "
                "undoes what of it reached a trunk.\n\n" + text)
    try:
        reports.mark_read(layout, [shift_id])
    except OSError as error:
        journal.write(layout, VERB, "mark-failed", shift=shift_id, error=str(error))
    return text


def hook(layout: Layout, payload: bytes) -> str | None:
    """Answer SessionStart with the digest of the unread reports, once.

    ``payload`` is the hook's stdin (``{session_id, cwd, hook_event_name, source, ...}``).
    For ``source`` ``startup``, ``clear`` or none given, with unread reports, returns
    ``{"systemMessage": <the person's digest>, "hookSpecificOutput": {"hookEventName":
    "SessionStart", "additionalContext": <the model's digest>}}`` and a newline, then marks
    the reports the person was shown read (chosen and marked under ``.reports-read.lock``,
    taken without waiting, so concurrent starts print it once); the model's digest is at most
    ``config.REPORT_DIGEST_UTF16`` UTF-16 code units, Claude Code's cap on one hook's context
    (recall's is another hook's, capped on its own). Returns None (print nothing) when nothing is unread, for the
    other sources, and, with a journal line, for an unreadable payload, another
    ``hook_event_name``, a shift session (``$SANDMAN_SHIFT`` set: the reports are the
    owner's, not the night's) or a root without ``memories/``. A read mark that cannot be
    written is a journal line (the digest is still printed).
    """
    started = hookpayload.session_start(layout, VERB, payload)
    if started is None:
        return None
    data, session = started
    source = data.get("source") if isinstance(data.get("source"), str) else None
    if source not in DIGEST_SOURCES:
        return None
    if config.current_shift():
        # A shift session is a Claude Code session too: the reports are the owner's news, not its.
        journal.write(layout, VERB, "declined", hook=True, reason="shift-session", shift=config.current_shift(),
                      session=session)
        return None
    if not layout.memories.is_dir():
        journal.write(layout, VERB, "skipped", hook=True, reason="no-root", root=str(layout.root), session=session)
        return None
    # Choosing the unread reports and marking them read is one step under the marks' lock: of
    # sessions starting at once, one shows the digest. The hook never waits for it.
    try:
        lock = reports.marks_lock(layout, 0)
    except OSError as error:
        journal.write(layout, VERB, "skipped", hook=True, reason="marks-lock-failed", error=str(error),
                      session=session)
        return None
    if lock is None:
        journal.write(layout, VERB, "skipped", hook=True, reason="marks-busy", session=session)
        return None
    try:
        waiting = reports.unread_reports(layout, locked=True)
        if not waiting:
            return None
        ordered = reports.worst_first(waiting)
        context, in_context = reports.digest(ordered, config.REPORT_DIGEST_UTF16)
        person, shown = reports.message(ordered, config.REPORT_MESSAGE_LINES)
        seen = [info.shift for info in ordered[:shown]]
        try:
            reports.mark_read(layout, seen, locked=True)
            marked = len(seen)
        except OSError as error:
            journal.write(layout, VERB, "mark-failed", hook=True, session=session, error=str(error))
            marked = 0
    finally:
        lock.release()
    from sandman.recall.budget import utf16_units

    reply = {"systemMessage": person}
    if context:
        reply["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": context}
    journal.write(layout, VERB, "digest", hook=True, session=session, source=source, unread=len(waiting),
                  shown=shown, in_context=in_context, units=utf16_units(context), marked=marked)
    return json.dumps(reply, ensure_ascii=False) + "\n"


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

    The server re-renders before answering a page when the root changed since
    (sandman.site.fresh); a render that fails then keeps the last good site served.

    Raises InputError for a non-loopback ``host`` without ``public`` (nothing is
    rendered or bound then), the errors of render_site, OSError when the address
    cannot be bound.
    """
    from sandman.site.fresh import Refresher
    from sandman.site.render import render_site
    from sandman.site.serve import is_loopback, make_server, url

    if not public and not is_loopback(host):
        raise InputError(
            f"refusing to serve on {host}: it is not a loopback address, so anyone who can reach it "
            "would read every memory; use 127.0.0.1, or pass --public to mean it"
        )
    refresher = Refresher(layout, render_site)
    stats = render_site(layout)
    refresher.rendered()
    server = make_server(layout.site, host, port, public=public, search=lambda query: site_search(layout, query),
                         refresh=refresher.refresh)
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
