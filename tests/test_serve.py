"""`sandman report serve`: loopback only unless --public, and a handler that refuses climbing paths."""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from typer.testing import CliRunner

from sandman.banks.commit import commit_memory
from sandman.banks.memory import Memory
from sandman.cli import app
from sandman.errors import InputError
from sandman.layout import Layout
from sandman.site.render import render_site
from sandman.site.serve import is_loopback, make_server, refused
from sandman.verbs.report import open_server


def remember(layout: Layout, name: str, body: str = "A body.\n") -> None:
    memory = Memory(name=name, description=f"{name}.", type="project", body=body)
    commit_memory(layout, memory, directory="/home/user/proj", verb="remember")


@contextmanager
def serving(server) -> Iterator[tuple[str, int]]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[:2]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def get(address: tuple[str, int], path: str, host: str | None = None) -> tuple[int, bytes]:
    """GET ``path`` exactly as given (http.client sends it unnormalised), with ``host`` as the Host header."""
    connection = http.client.HTTPConnection(*address, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": host} if host is not None else {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("path", [
    "/../etc/passwd", "/banks/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/banks/%2E%2E/x",
    "/./index.html", "/.state/manifest.json", "/banks//etc/passwd", "/%2F%2Fetc/passwd", "//etc/passwd",
    "http://evil.example/index.html",
    "/a%5C..%5Cb", "/index.html%00.txt",
])
def test_climbing_dotted_and_absolute_paths_are_refused(path: str) -> None:
    assert refused(path) is not None


@pytest.mark.parametrize("path", ["/", "/index.html", "/banks/-home-user-proj/", "/search.html?q=a/../b",
                                  "/banks/_user/user_x.html#h"])
def test_ordinary_paths_are_served(path: str) -> None:
    assert refused(path) is None


def test_the_server_serves_pages_and_refuses_escapes(layout: Layout, tmp_path) -> None:
    remember(layout, "Build with make")
    render_site(layout)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    (layout.site / "leak.txt").symlink_to(secret)
    with serving(make_server(layout.site, "127.0.0.1", 0)) as address:
        status, body = get(address, "/index.html")
        assert status == 200 and b"Build with make" not in body and b"/home/user/proj" in body
        assert get(address, "/banks/-home-user-proj/project_build_with_make.html")[0] == 200
        for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/.state/manifest.json", "/leak.txt"):
            status, body = get(address, path)
            assert status == 403, path
            assert b"TOP-SECRET-CONTENT" not in body and b"\"format\"" not in body
        assert get(address, "/banks/")[0] == 404  # no directory listings


@pytest.mark.parametrize("host, expected", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.10", False), ("no-such-host.invalid", False),
])
def test_is_loopback(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected


def test_a_non_loopback_address_is_refused_without_public_and_nothing_is_rendered(layout: Layout) -> None:
    remember(layout, "Build with make")
    with pytest.raises(InputError, match="refusing to serve on 0.0.0.0: it is not a loopback address"):
        open_server(layout, host="0.0.0.0", port=0, public=False)
    assert not (layout.site / "index.html").exists()


def test_public_allows_a_non_loopback_address(layout: Layout) -> None:
    remember(layout, "Build with make")
    server, _ = open_server(layout, host="0.0.0.0", port=0, public=True)
    with serving(server) as (_, port):
        assert get(("127.0.0.1", port), "/index.html")[0] == 200


def test_serve_re_renders_a_stale_site_first(layout: Layout) -> None:
    remember(layout, "Build with make")
    render_site(layout)
    remember(layout, "Added since the last render")
    server, stats = open_server(layout, host="127.0.0.1", port=0, public=False)
    with serving(server) as address:
        assert stats.written > 0
        assert get(address, "/banks/-home-user-proj/project_added_since_the_last_render.html")[0] == 200
    server, stats = open_server(layout, host="127.0.0.1", port=0, public=False)
    server.server_close()
    assert stats.written == 0


def test_report_serve_command_refuses_a_public_address(layout: Layout) -> None:
    remember(layout, "Build with make")
    result = CliRunner().invoke(app, ["report", "serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert result.output.startswith("sandman: refusing to serve on 0.0.0.0: it is not a loopback address")


def test_report_serve_command_rejects_a_bad_port(layout: Layout) -> None:
    result = CliRunner().invoke(app, ["report", "serve", "--port", "70000"])
    assert result.exit_code == 2 and "Invalid value for '--port'" in result.output


def test_a_port_in_use_is_one_line_naming_the_address(layout: Layout) -> None:
    import socket

    remember(layout, "Build with make")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["report", "serve", "--port", str(port)])
    assert result.exit_code == 1
    assert result.output == f"sandman: Address already in use (127.0.0.1:{port})\n"


def test_the_report_verb_module_imports_only_the_standard_library() -> None:
    # report --hook will live in sandman.verbs.report; hook modules stay light.
    probe = ("import sys, sandman.verbs.report; "
             "print(sorted(m for m in ('jinja2', 'markdown_it', 'pygit2', 'yaml', 'typer', 'rich') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_dns_rebinding_a_foreign_host_header_is_refused(layout: Layout) -> None:
    remember(layout, "Build with make")
    server, _ = open_server(layout, host="127.0.0.1", port=0, public=False)
    with serving(server) as address:
        port = address[1]
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}",
                     f"localhost.evil.example:{port}", f"[::1]:{port}"):
            status, body = get(address, "/index.html", host=host)
            assert status == 421, host
            assert b"/home/user/proj" not in body
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}"):
            assert get(address, "/index.html", host=host)[0] == 200, host


def test_public_serves_any_host_header(layout: Layout) -> None:
    remember(layout, "Build with make")
    server, _ = open_server(layout, host="127.0.0.1", port=0, public=True)
    with serving(server) as address:
        assert get(address, "/index.html", host="memory.example.org")[0] == 200


@pytest.mark.parametrize("path", ["//etc/passwd", "///etc/passwd", "/banks//etc/passwd"])
def test_double_slash_path_is_refused_with_403_as_documented(layout: Layout, path: str) -> None:
    remember(layout, "Build with make")
    render_site(layout)
    with serving(make_server(layout.site, "127.0.0.1", 0)) as address:
        assert get(address, path)[0] == 403


def test_report_help_says_what_report_does_today() -> None:
    # Issue 15 gave report the shifts' reports; before it, report's help had to name serve alone.
    line = next(line for line in CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output.splitlines()
                if line.strip().startswith("report "))
    assert "reports, unread first" in line and "site" in line
    text = CliRunner().invoke(app, ["report", "--help"], env={"COLUMNS": "200"}).output
    assert "show " in text and "Serve the rendered site, re-rendering it first if stale." in text
