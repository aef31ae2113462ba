"""Import pygit2 for a process that commits to the memory root and nothing else (``sandman remember``).

At import, pygit2 hands libgit2 the CA certificates Python's ``ssl`` names
(``ssl.get_default_verify_paths()``), for https remotes, and libgit2's OpenSSL
parses the whole bundle file then: 6.5 ms of every remember, 0.55 x ``python -c
pass`` (issue 29), for a process that never opens a connection. And when
``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` name nothing usable, the import fails
("failed to load certificates"), and so would the remember.

``import_for_local_commits`` imports pygit2 with ``SSL_CERT_FILE`` empty, the
variable ``ssl`` reads for the bundle's path, so libgit2 is given a certificate
directory alone, whose certificates OpenSSL reads one at a time when a
connection needs them: the system's, or, without one, the file system's root
(``SSL_CERT_DIR``), where it finds none. Both variables are restored at once.
The processes that reach remotes (sync) import pygit2 as it comes.
docs/performance.md, "Fourth pass (issue 29)".
"""

from __future__ import annotations

import os
import sys

# ssl's variables for the bundle's path and the directory's.
_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")


def import_for_local_commits() -> None:
    """Import pygit2 with libgit2 given a certificate directory and no CA bundle (nothing is done
    when pygit2 is imported already). Raises what ``import pygit2`` raises (ImportError)."""
    if "pygit2" in sys.modules:
        return
    import ssl  # pygit2 imports it: no cost of its own

    saved = {name: os.environ.get(name) for name in _VARIABLES}
    has_directory = ssl.get_default_verify_paths().capath is not None
    os.environ["SSL_CERT_FILE"] = ""  # no such file: ssl names no bundle
    if not has_directory:
        os.environ["SSL_CERT_DIR"] = os.sep  # a directory that exists, holding no certificate
    try:
        import pygit2  # noqa: F401
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
