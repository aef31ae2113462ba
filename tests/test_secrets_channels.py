"""Every channel to the versioned tier meets one ban, and that ban never locks sync (issue 30;
docs/secrets.md, "Every channel"). Values are generated from their formats with a seeded generator,
as tests/secrets_corpus.py does: no credential is written in this file."""

from __future__ import annotations

import json
import random
import string

import pytest
from helpers import git, sandman
from syncworld import PROJECT, add, head, make_world, remote_head

from sandman.banks.commit import bank_transaction
from sandman.banks.memory import read_memory
from sandman.banks.names import bank_name
from sandman.curators import retired
from sandman.errors import SecretRefused
from sandman.machine import trail as trails
from sandman.store.atomic import write_atomic
from sandman.verbs.init import init
from sandman.verbs.sync import sync

RNG = random.Random(30)
GITHUB_PAT = "ghp_" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
AWS_KEY_ID = "AKIA" + "".join(RNG.choice(string.ascii_uppercase[:22] + "234567") for _ in range(16))


def test_regression_a_retired_memory_whose_name_holds_digits_never_locks_sync(tmp_path):
    """The retired ledger wrote `"key": "project_builds_need_python_3_12"`; the pre-push scan called it
    an assigned credential and refused every later push until history was rewritten."""
    world = make_world(tmp_path)
    path = add(world.a, "Project builds need Python 3.12", "CI pins 3.12 since the parser rewrite.")
    memory = read_memory(path)
    bank = bank_name(PROJECT)
    with bank_transaction(world.a, verb="reconcile", subject="retire it") as tx:
        retired.append(tx, world.a, [retired.entry(bank, path.name, memory, "reconcile test")])
    assert '"key": "project_project_builds_need_python_3_12"' in retired.path(world.a).read_text()

    assert sync(world.a).action == "pushed"
    assert remote_head(world.remote) == head(world.a)


def test_a_commit_sandman_makes_meets_the_pre_push_check_before_it_is_made(layout):
    """A writer that puts a file in place without write_file (its own write_atomic) still cannot commit
    a line the pre-push scan would refuse: the commit is refused, so no later push is."""
    init(layout)
    before = git(layout.root, "rev-parse", "HEAD")
    target = layout.root / "notes.md"
    with pytest.raises(SecretRefused) as caught:
        with bank_transaction(layout, verb="test", subject="a note") as tx:
            write_atomic(target, f"deploy with {GITHUB_PAT}\n")
            tx.changed.add(target)
    assert "github-pat" in caught.value.kinds and GITHUB_PAT not in str(caught.value)
    assert git(layout.root, "rev-parse", "HEAD") == before


def test_write_file_refuses_a_credential_before_writing_and_names_the_file(layout):
    init(layout)
    target = layout.root / "notes.md"
    with pytest.raises(SecretRefused) as caught:
        with bank_transaction(layout, verb="test", subject="a note") as tx:
            tx.write_file(target, f"key id {AWS_KEY_ID} for the bucket\n")
    assert "notes.md would hold a secret (aws-access-key-id)" in str(caught.value)
    assert not target.exists()


def test_write_file_reads_only_the_lines_it_adds(layout):
    """A line already committed (by hand, before the ban) does not stop the next append to the file."""
    init(layout)
    target = layout.root / "notes.md"
    target.write_text(f"old {AWS_KEY_ID}\n")
    git(layout.root, "add", "notes.md")
    git(layout.root, "-c", "user.name=Hand", "-c", "user.email=hand@example.invalid", "commit", "-q", "-m", "by hand")
    with bank_transaction(layout, verb="test", subject="append") as tx:
        tx.write_file(target, target.read_text() + "a clean line\n")
    assert target.read_text().endswith("a clean line\n")


@pytest.mark.parametrize("flag", ["--data", "--model"])
def test_trail_append_refuses_a_credential_in_data_or_model(layout, flag):
    init(layout)
    value = json.dumps({"token": GITHUB_PAT}) if flag == "--data" else GITHUB_PAT
    done = sandman("trail", "append", "shift.note", "a clean summary", flag, value)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode() == ("sandman: event refused: --model or --data holds a secret (github-pat); "
                                    "remove the credential and write it again without it\n")
    assert trails.read(layout).events == []
    assert GITHUB_PAT.encode() not in b"".join(p.read_bytes() for p in layout.root.rglob("*") if p.is_file())


def test_trail_append_keeps_clean_data(layout):
    init(layout)
    done = sandman("trail", "append", "shift.note", "a clean summary", "--data", '{"pr": 12}', "--model", "sonnet")
    assert done.returncode == 0, done.stderr
    (event,) = trails.read(layout).events
    assert event.data == {"pr": 12} and event.model == "sonnet"
