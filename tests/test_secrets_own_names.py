"""The secrets ban reads a memory's own file name the way it reads the name it was made from (issue 30).

A MEMORY.md line links the memory's file, ``<type>_<slug>.md``, whose slug glues the name's words and a hash with
``_`` into what reads as a prefixed token. The commit's vet (and sync's pre-push scan, the same function) refused
everyday memories for it; a credential in the name itself must still be refused.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from helpers import git, sandman
from sandman.banks.index import index_line
from sandman.banks.names import memory_filename
from sandman.banks.secrets import find_secrets, versioned_secrets
from sandman.errors import SecretRefused
from sandman.verbs.remember import remember

EVERYDAY = [
    "Fixed in commit 4f2a9c3e1b7d8a6f5e4d3c2b1a0f9e8d7c6b5a49 on main.",
    "Revert 4f2a9c3e1b7d8a6f5e4d3c2b1a0f9e8d7c6b5a49 because it broke CI.",
    "Cherry-pick 4f2a9c3e1b7d8a6f5e4d3c2b1a0f9e8d7c6b5a49 onto release.",
    "Fixed in 4f2a9c3e1b7d8a6f5e4d3c2b1a0f9e8d7c6b5a49.",
    "request_id=5de7818b-b5da-4468-8c6f-5a9c33814f57 returned 502",
    "md5 9dd4e461268c8034f5c8564e155c67a6",
    "Job 01HQZX3K7B9V2M4N6P8R0T1W3Y finished.",
    'Etag "33a64df551425fcc55e4d42a148795d9f25f89d4" is returned for the index.',
    "The password reset page is /account/password/reset.",
]


@pytest.mark.parametrize("body", EVERYDAY)
def test_regression_a_memory_is_not_refused_for_its_own_file_slug(layout, tmp_path: Path, body: str) -> None:
    """Each body passed the ban; its MEMORY.md line (name, file, description) was refused at commit."""
    committed = remember(layout, body, cwd=str(tmp_path))
    index = committed.path.parent / "MEMORY.md"
    line = next(line for line in index.read_text().splitlines() if committed.path.name in line)
    assert find_secrets(line) == [] and versioned_secrets(line + "\n") == []


def test_regression_the_same_memory_through_the_shell_is_committed(layout, tmp_path: Path) -> None:
    done = sandman("remember", EVERYDAY[0], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # what sync's pre-push scan reads of that commit: the lines it adds to each file
    for path in git(layout.root, "show", "--name-only", "--format=", "HEAD").split():
        added = "".join(line[1:] + "\n" for line in git(layout.root, "show", "--format=", "HEAD", "--", path)
                        .splitlines() if line.startswith("+") and not line.startswith("+++"))
        assert versioned_secrets(added) == [], path


def _token(seed: int) -> str:
    chooser = random.Random(seed)
    return "ghp_" + "".join(chooser.choice(string.ascii_letters + string.digits) for _ in range(36))


@pytest.mark.parametrize("seed", range(3))
def test_a_credential_in_a_memorys_name_is_still_refused(layout, tmp_path: Path, seed: int) -> None:
    with pytest.raises(SecretRefused):
        remember(layout, "The deploy token lives in the vault.", cwd=str(tmp_path), name=_token(seed))
    with pytest.raises(SecretRefused):
        remember(layout, f"Use {_token(seed)} for the mirror.", cwd=str(tmp_path))


def test_a_credential_in_the_body_is_still_refused_through_the_shell(layout, tmp_path: Path) -> None:
    key = "AKIA" + "Q3EGRZ7VN2KXJ4PD"  # invented
    done = sandman("remember", f"The CI key is {key}.", "--name", "CI key", cwd=tmp_path)
    assert done.returncode == 2 and b"aws-access-key-id" in done.stderr


def test_a_slug_no_text_of_its_line_makes_is_scanned_as_it_stands() -> None:
    """Only a memory's own slug is read as its name: the same run beside another name is a token still."""
    chooser = random.Random(3)
    token = "project_" + "".join(chooser.choice(string.ascii_lowercase + string.digits) for _ in range(40))
    assert find_secrets(f"- [Release notes]({token}.md) — notes")
    name = "Fixed in " + token[len("project_"):]
    line = index_line(memory_filename("project", name), name, name)
    assert find_secrets(line) == find_secrets(name)


def test_a_collision_suffix_and_a_cut_slug_are_read_as_the_name() -> None:
    name = "Revert 4f2a9c3e1b7d8a6f5e4d3c2b1a0f9e8d7c6b5a49 because it broke CI on every runner"
    for suffix in (1, 2, 13):
        assert find_secrets(index_line(memory_filename("project", name, suffix), name, "why")) == []


def test_the_retired_ledgers_file_and_key_are_read_beside_its_name() -> None:
    name = "Fixed in commit 4f2a9c3e1b7d8a6f5e4d3c2b1a0f9e8d7c6b5a49 on main."
    file = memory_filename("project", name)
    line = (f'{{"bank": "-tmp-x", "file": "{file}", "type": "project", "name": "{name}", '
            f'"key": "{file[:-3]}", "at": "2026-12-01T22:05:00Z", "by": "forget ev-1"}}')
    assert find_secrets(line) == []


def test_regression_the_readded_ledger_line_of_a_hash_named_memory_passes() -> None:
    """Re-adding a retired memory by hand writes its key to the ledger; the key alone held the hash and was refused."""
    import json

    from sandman.banks.memory import Memory
    from sandman.curators import retired

    name = "Fixed in commit 4f2a9c3e1b7d8a6f5e4d3c2b1a0f9e8d7c6b5a49 on main."
    memory = Memory(name=name, description=name, type="project", body=name)
    line = json.dumps(retired.readded("-tmp-x", memory), ensure_ascii=False) + "\n"
    assert versioned_secrets(line) == []
