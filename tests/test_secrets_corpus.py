"""The secrets ban against the generated corpus (tests/secrets_corpus.py; docs/secrets.md): every
credential kind refused, every look-alike passed, and the surfaces that are not memories (the minds'
input, the site) masked. The floors are the issue's: refusal >= 98 %, false refusals <= 2 %."""

from __future__ import annotations

import gzip
import json
import random
import string
from pathlib import Path

import pytest

from secrets_corpus import credentials, look_alikes
from sandman.banks import secret_rules
from sandman.banks.secrets import MASK, find_secrets, mask_secrets, refuse_secrets
from sandman.errors import SecretRefused
from sandman.verbs.remember import remember

CREDENTIALS = credentials()
LOOK_ALIKES = look_alikes()


def test_the_corpus_is_as_large_as_promised() -> None:
    assert len({kind for kind, _ in CREDENTIALS}) == len(CREDENTIALS) >= 100
    assert len({kind for kind, _ in LOOK_ALIKES}) == len(LOOK_ALIKES) >= 60


def test_the_corpus_is_generated_fresh_and_the_same_every_run() -> None:
    assert credentials() == CREDENTIALS and credentials(seed=1) != CREDENTIALS


@pytest.mark.parametrize(("kind", "text"), CREDENTIALS, ids=[kind for kind, _ in CREDENTIALS])
def test_each_credential_kind_is_refused(kind: str, text: str) -> None:
    assert find_secrets(text), kind


@pytest.mark.parametrize(("kind", "text"), LOOK_ALIKES, ids=[kind for kind, _ in LOOK_ALIKES])
def test_each_look_alike_passes(kind: str, text: str) -> None:
    assert find_secrets(text) == [], kind


@pytest.mark.parametrize(("kind", "text"), CREDENTIALS, ids=[kind for kind, _ in CREDENTIALS])
def test_the_hook_pre_check_never_clears_a_credential(kind: str, text: str) -> None:
    assert secret_rules.suspected(text), kind


def _refused(text: str) -> bool:
    try:
        refuse_secrets(text)
    except SecretRefused:
        return True
    return False


def test_regression_the_pre_check_cleared_credentials_the_ban_refuses() -> None:
    """``refuse_secrets`` (what ``remember`` and every channel run) asks the ban only about what the pre-check
    flags: a Sidekiq key (two 8-hex halves, no digit needed), a Sumo Logic access id (14 characters) and a
    value after `` - `` were refused by ``find_secrets`` and let through by ``refuse_secrets``."""
    draw = random.Random(30)
    sumo = "su" + "".join(draw.choice(string.ascii_letters + string.digits) for _ in range(12))
    half = "".join(draw.choice("abcdef") for _ in range(8))
    for text in (f"export BUNDLE_ENTERPRISE__CONTRIBSYS__COM={half}:{half[::-1]}",
                 f'BUNDLE_GEMS__CONTRIBSYS__COM: "{half}:{half[::-1]}"',
                 f'sumologic.accessId = "{sumo}"', f'export SUMOLOGIC_ACCESSID="{sumo}"',
                 "nethunt token - '" + "".join(draw.choice(string.ascii_lowercase + "$@ ^&") for _ in range(30)) + "'"):
        assert find_secrets(text), text
        assert secret_rules.suspected(text) and _refused(text), text


VECTORS = Path(__file__).resolve().parent.parent / "bench" / "secrets_vectors.json.gz"


def test_refuse_secrets_refuses_exactly_what_the_ban_refuses_on_every_public_vector() -> None:
    """The pre-check never clears what the ban refuses, over every vector of bench/secrets_vectors.json.gz
    (gitleaks' and trufflehog's examples, each label) and the own corpus: the bench measures ``refuse_secrets``."""
    texts = [vector["text"] for vector in json.loads(gzip.decompress(VECTORS.read_bytes()))["vectors"]]
    texts += [text for _, text in CREDENTIALS + LOOK_ALIKES]
    cleared = [text[:80] for text in texts if not secret_rules.suspected(text) and find_secrets(text)]
    assert cleared == []


def test_the_real_transcripts_hold_no_secret(corpus: Path) -> None:
    """The shared corpus's real sessions and payloads, each file whole: no rule refuses any of them."""
    found = {}
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        kinds = find_secrets(path.read_bytes().decode("utf-8", errors="replace"))
        if kinds:
            found[str(path.relative_to(corpus))] = kinds
    assert found == {}


def test_regression_the_pre_check_flagged_every_memory_file_by_its_times() -> None:
    """``created: 2026-12-05T10:28:35Z`` is a run of 16 characters mixing letters with digits, so the
    commit of every memory loaded and ran the full scan (about 150 ms, issue 29). A run that is a
    time alone is cleared; a token glued to a time, or a credential word given a time, is not."""
    from sandman.banks.memory import Memory

    text = Memory(name="Build with make", description="Run make.", type="project", body="Run make.\n",
                  created="2026-12-05T10:28:35Z", updated="2026-12-05T10:28:35.123456+00:00").text()
    assert not secret_rules.suspected(text)
    assert secret_rules.suspected("at 2026-12-05T10:28:35Zghp8f3k2j4h5g6")
    assert secret_rules.suspected("token: 2026-12-05T10:28:35Z")


def test_regression_the_pre_check_flagged_every_index_line_of_a_name_with_a_digit() -> None:
    """``(project_release_v2_notes.md)`` in a MEMORY.md line is a run mixing letters with digits, so
    the commit of any memory named with a digit ran the full scan (issue 29). A run that is a memory
    file name alone is cleared; the name beside it, in its own case, is still read."""
    assert not secret_rules.suspected(
        "- [Release 2 notes](project_release_2_notes.md) — The release 2 script reads pyproject.\n")
    token = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
    assert secret_rules.suspected(f"- [Token {token}](project_token_{token.lower()}.md) — x\n")
    assert secret_rules.suspected(f"see memories/bank/project_token_{token.lower()}.md")


@pytest.mark.parametrize(("kind", "text"), CREDENTIALS, ids=[kind for kind, _ in CREDENTIALS])
def test_a_masked_credential_is_gone(kind: str, text: str) -> None:
    masked = mask_secrets(text)
    assert MASK in masked and find_secrets(masked) == [], (kind, masked)


def test_the_aws_documented_example_key_is_a_placeholder() -> None:
    # AWS's docs name it the example key (it says EXAMPLE); gitleaks lists it as a false positive. It was refused.
    assert find_secrets("AWS's docs use " + "AKIAIOSFODNN7" + "EXAMPLE as the example key.") == []
    assert find_secrets("aws_access_key_id = " + "AKIAIOSFODNN7" + "EXAMPLE\naws_secret_access_key = "
                        + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY") == []


def test_an_aws_key_id_in_the_example_keys_shape_is_still_refused() -> None:
    assert find_secrets("AWS's docs use " + "AKIAIOSFODNN7" + "QZ4RW8T as the key.") == ["aws-access-key-id"]


@pytest.mark.parametrize("kind", ["soft-hyphen-in-token", "fullwidth-token", "pem-pkcs8-encrypted", "putty-v3",
                                  "kubeconfig-client-key", "url-password-bang", "azure-sas", "cli-sshpass"])
def test_a_remember_of_a_missed_class_leaves_no_trace(layout, tmp_path, kind: str) -> None:
    text = dict(CREDENTIALS)[kind]
    with pytest.raises(SecretRefused):
        remember(layout, "Deploy note: " + text, cwd=str(tmp_path))
    for path in layout.root.rglob("*"):
        if path.is_file():
            assert text.encode() not in path.read_bytes(), path


def test_the_path_pre_check_flags_every_credential_kind_found_in_a_directory_name() -> None:
    """take's pointer carried a cwd named after a key; the cwd's pre-check (suspected_path) must
    send every such directory to the full check, while a test's temporary directory stays plain."""
    from sandman.banks.secret_rules import suspected_path

    missed = []
    for kind, text in credentials():
        path = "/tmp/" + text.replace("/", "-").replace("\n", " ")
        if find_secrets(path) and not suspected_path(path):
            missed.append(kind)
    assert missed == []
    assert not suspected_path("/tmp/pytest-of-user/pytest-12/test_both_hooks_on_their_working_0")
    assert not suspected_path("/home/user/projects/spotter-worktrees/spotter-dov")


def test_a_credential_in_a_memorys_directory_or_bank_name_is_refused_through_the_path_pre_check() -> None:
    """A memory's bank directory and bank name pass the pre-check for paths (issue 29: the one for
    text loaded the rule set at every remember into ``/srv/app-2024/api-v2``); every credential
    kind placed in a directory the full check finds in either must still be refused."""
    from sandman.banks.names import bank_name
    from sandman.banks.secrets import refuse_secrets_in_paths
    from sandman.errors import InputError, SecretRefused

    missed = []
    for kind, text in credentials():
        for directory in ("/tmp/" + text.replace("/", "-").replace("\n", " "),
                          "/home/u/" + text.replace("/", "_").replace("\n", "") + "/src"):
            try:
                bank = bank_name(directory)
            except InputError:
                continue  # not a directory a bank can be named after
            if not find_secrets(bank, directory):
                continue
            try:
                refuse_secrets_in_paths(bank, directory)
            except SecretRefused:
                continue
            missed.append(kind)
    assert missed == []
    for plain in ("/srv/app-2024/api-v2", "/home/alice/src/webapp2", "/tmp/tester4/w/big"):
        refuse_secrets_in_paths(bank_name(plain), plain)  # plain directories pass, and load no rule set
