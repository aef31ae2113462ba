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


GITLOAD = textwrap.dedent(
    """
    import json, os, sys
    from sandman.store.gitload import import_for_local_commits

    import_for_local_commits()
    import pygit2

    print(json.dumps({"cafile": pygit2.settings.ssl_cert_file, "capath": pygit2.settings.ssl_cert_dir,
                      "env": os.environ.get("SSL_CERT_FILE"), "dir_env": os.environ.get("SSL_CERT_DIR")}))
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
    assert _gitload(SSL_CERT_DIR=str(certs)) == {"cafile": None, "capath": str(certs), "env": None,
                                                 "dir_env": str(certs)}
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("")
    # A bundle of the person's own is not parsed either, and their variable is theirs again after.
    assert _gitload(SSL_CERT_DIR=str(certs), SSL_CERT_FILE=str(bundle)) == {
        "cafile": None, "capath": str(certs), "env": str(bundle), "dir_env": str(certs)}


def test_without_a_certificate_directory_or_bundle_pygit2_still_imports(tmp_path: Path) -> None:
    # Names of nothing usable made pygit2's own import fail ("failed to load certificates"): a local
    # commit's libgit2 is given the file system's root, where it finds no certificate, and needs none.
    for values in ({"SSL_CERT_DIR": str(tmp_path / "none"), "SSL_CERT_FILE": str(tmp_path / "none.pem")},
                   {"SSL_CERT_DIR": "", "SSL_CERT_FILE": ""}, {"SSL_CERT_DIR": "/dev/null", "SSL_CERT_FILE": "/dev/null"}):
        assert _gitload(**values) == {"cafile": None, "capath": "/", "env": values["SSL_CERT_FILE"],
                                      "dir_env": values["SSL_CERT_DIR"]}, values


def test_a_remember_commits_whatever_the_certificate_variables_name(tmp_path: Path) -> None:
    from helpers import sandman

    garbage = tmp_path / "garbage.pem"
    garbage.write_bytes(b"not a certificate\n" * 100)
    for values in ({"SSL_CERT_DIR": str(tmp_path / "none"), "SSL_CERT_FILE": str(tmp_path / "none.pem")},
                   {"SSL_CERT_FILE": str(garbage)}, {"SSL_CERT_DIR": "", "SSL_CERT_FILE": ""}):
        done = sandman("remember", f"A fact kept with {sorted(values)}.", "--cwd", str(tmp_path / "proj"),
                       env={"SANDMAN_ROOT": str(tmp_path / "root"), **values})
        assert (done.returncode, done.stderr) == (0, b""), values
