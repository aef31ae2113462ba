"""Import pygit2 for a process that commits to the memory root and nothing else (``sandman remember``).

At import, pygit2 hands libgit2 the CA certificates Python's ``ssl`` names
(``ssl.get_default_verify_paths()``), for https remotes, and libgit2's OpenSSL
parses the whole bundle file then: 6.5 ms of every remember, 0.55 x ``python -c
pass`` (issue 29), for a process that never opens a connection. When the system
has a certificate directory, ``import_for_local_commits`` imports pygit2 with
``SSL_CERT_FILE`` empty, the variable ``ssl`` reads for the bundle's path, so
libgit2 gets the directory alone, whose certificates OpenSSL reads one by one
when a connection needs them. The environment is restored at once; the
processes that reach remotes (sync) import pygit2 as it comes. docs/performance.md,
"remember".
"""

from __future__ import annotations

import os
import sys


def import_for_local_commits() -> None:
    """Import pygit2, its CA bundle not parsed when a certificate directory stands in for it
    (nothing is done when pygit2 is imported already, or the system has no such directory).
    Raises what ``import pygit2`` raises (ImportError)."""
    if "pygit2" in sys.modules:
        return
    import ssl  # pygit2 imports it: no cost of its own

    if ssl.get_default_verify_paths().capath is None:
        import pygit2  # noqa: F401 - without a directory, libgit2 needs the bundle to be given one

        return
    saved = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = ""  # no such file: ssl names no bundle, the directory alone
    try:
        import pygit2  # noqa: F401
    finally:
        if saved is None:
            del os.environ["SSL_CERT_FILE"]
        else:
            os.environ["SSL_CERT_FILE"] = saved
