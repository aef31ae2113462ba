"""The remember process imports pygit2 without libgit2 parsing the CA bundle (store/gitload.py, issue 29).

Each case runs in a process of its own: pygit2 hands libgit2 the certificates once, at its import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GITLOAD = textwrap.dedent(
    """
    import json, os, sys
    from sandman.store.gitload import import_for_local_commits

    import_for_local_commits()
    import pygit2

    print(json.dumps({"cafile": pygit2.settings.ssl_cert_file, "capath": pygit2.settings.ssl_cert_dir,
                      "env": os.environ.get("SSL_CERT_FILE")}))
    """
)


def _gitload(**env: str) -> dict:
    clean = {name: value for name, value in os.environ.items() if name not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    done = subprocess.run([sys.executable, "-c", GITLOAD], capture_output=True, text=True, env={**clean, **env},
                          check=True)
    return json.loads(done.stdout)


def test_a_local_commits_pygit2_gets_the_certificate_directory_and_no_bundle(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    assert _gitload(SSL_CERT_DIR=str(certs)) == {"cafile": None, "capath": str(certs), "env": None}
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("")
    # A bundle of the person's own is not parsed either, and their variable is theirs again after.
    assert _gitload(SSL_CERT_DIR=str(certs), SSL_CERT_FILE=str(bundle)) == {
        "cafile": None, "capath": str(certs), "env": str(bundle)}


def test_without_a_certificate_directory_pygit2_is_imported_as_it_comes(tmp_path: Path) -> None:
    import shutil
    import ssl

    system = Path(ssl.get_default_verify_paths().openssl_cafile)
    if not system.is_file():
        pytest.skip(f"no CA bundle at {system} to hand libgit2")
    bundle = tmp_path / "bundle.pem"
    shutil.copyfile(system, bundle)
    # No directory to stand in: libgit2 is given the bundle, as any process gives it.
    assert _gitload(SSL_CERT_DIR=str(tmp_path / "none"), SSL_CERT_FILE=str(bundle)) == {
        "cafile": str(bundle), "capath": None, "env": str(bundle)}
