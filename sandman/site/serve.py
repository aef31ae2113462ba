"""Serving ``.site/`` over HTTP with the standard library, on loopback unless told otherwise.

The handler serves files under ``.site/`` and nothing else: a request path with
a ``..`` or ``.`` part, a dotted part (``.state/`` holds the render's caches),
an empty part (``//etc/passwd`` reads as absolute), a backslash or a NUL is
refused with 403 before any file is looked up, and a path that resolves
outside the folder (a symlink) is refused too. Directories are not listed.
``/search.json?q=<query>`` is answered from the search index when the server
was given a search function (``report serve`` gives one).

Unless serving ``--public``, a request whose ``Host`` header is not the bound
address or ``localhost`` with the bound port is refused with 421: a page on
another site whose name was re-pointed at 127.0.0.1 (DNS rebinding) would
otherwise read every memory through the visitor's browser.
"""

from __future__ import annotations

import http.server
import io
import json
import ipaddress
import socket
from functools import partial
from http import HTTPStatus
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

# Served by ``report serve`` from the search index, not from a file: the site's search page asks it.
SEARCH_PATH = "/search.json"

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def refused(request_path: str) -> str | None:
    """Return why a request path is refused, or None when it may be served.

    ``request_path`` is the raw path of the request line, query included.
    """
    # Not urlsplit: it reads "//etc/passwd" as the host "etc" and the path "/passwd".
    path = unquote(request_path.split("?", 1)[0].split("#", 1)[0])
    if not path.startswith("/"):
        return "the path is not absolute from the site's top"
    if "\\" in path or "\0" in path:
        return "the path holds a backslash or NUL"
    parts = path[1:].split("/")
    for i, part in enumerate(parts):
        if part in ("..", "."):
            return "the path climbs with '..' or '.'"
        if part.startswith("."):
            return "dotted paths are not served"
        if part == "" and i < len(parts) - 1:
            return "the path holds an absolute or empty part"
    return None


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Serves one folder read-only; refuses climbing, dotted and absolute paths with 403,
    and a Host the server does not answer for (``server.allowed_hosts``) with 421."""

    server_version = "sandman"

    def send_head(self):
        allowed = getattr(self.server, "allowed_hosts", None)
        host = self.headers.get("Host")
        if allowed is not None and host is not None and host.strip().lower() not in allowed:
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, f"Refused: this server answers only for {min(allowed)}")
            return None
        search = getattr(self.server, "search", None)
        if search is not None and self.path.split("?", 1)[0] == SEARCH_PATH:
            return self._search(search)
        # The target as sent: http.server turns a leading "//" into "/" in self.path.
        words = self.requestline.split()
        reason = refused(words[1] if len(words) > 1 else self.path)
        if reason is not None:
            self.send_error(403, f"Refused: {reason}")
            return None
        top = Path(self.directory).resolve()
        if not Path(self.translate_path(self.path)).resolve().is_relative_to(top):
            self.send_error(403, "Refused: the path leads outside the site")
            return None
        refresh = getattr(self.server, "refresh", None)
        if refresh is not None:
            refresh()  # bring the site up to date first (site.fresh.Refresher; never raises)
        return super().send_head()

    def _search(self, search):
        """Answer ``/search.json?q=<query>`` with the search index's hits (sandman.banks.search)."""
        query = parse_qs(urlsplit(self.path).query).get("q", [""])[0]
        status, body = search(query)
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return io.BytesIO(data)

    def list_directory(self, path):
        self.send_error(404, "No page here")
        return None

    def end_headers(self) -> None:
        for key, value in SECURITY_HEADERS.items():
            self.send_header(key, value)
        super().end_headers()


def is_loopback(host: str) -> bool:
    """True when every address ``host`` names is a loopback address (127.0.0.0/8, ::1).

    A name that does not resolve is not loopback.
    """
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allowed_hosts: frozenset[str] | None = None  # Host headers answered; None: any (--public)
    search = None  # query -> (HTTP status, JSON value) for /search.json; None: not answered
    refresh = None  # called before a file is served (site.fresh.Refresher.refresh); None: never


class _Server6(_Server):
    address_family = socket.AF_INET6


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def make_server(site: Path, host: str, port: int, *, public: bool = False,
                search=None, refresh=None) -> http.server.ThreadingHTTPServer:
    """Bind a threading HTTP server for ``site`` on ``host:port`` (0: any free port).

    ``search`` (a query -> ``(status, JSON value)`` function) answers
    ``/search.json?q=``; ``refresh`` (no arguments, never raises) is called before a file
    is served, to bring the site up to date. Unless ``public``, it answers only requests whose Host header is
    ``<host>:<port>``, ``<bound address>:<port>`` or ``localhost:<port>``
    (421 otherwise; a request without Host is served). It is bound, not yet
    serving: call ``serve_forever``. Raises OSError when the address cannot be
    bound (in use, not this machine's).
    """
    handler = partial(SiteHandler, directory=str(site))
    server_class = _Server6 if ":" in host else _Server
    try:
        server = server_class((host, port), handler)
    except OSError as error:
        error.filename = error.filename or _authority(host, port)  # "Address already in use (127.0.0.1:1705)"
        raise
    server.search = search
    server.refresh = refresh
    bound, bound_port = server.server_address[:2]
    server.allowed_hosts = None if public else frozenset(
        _authority(name.lower(), bound_port) for name in (bound, host, "localhost")
    )
    return server


def url(server: http.server.HTTPServer) -> str:
    """Return the ``http://host:port/`` a bound server answers on."""
    host, port = server.server_address[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
