"""The secrets ban against the generated corpus (tests/secrets_corpus.py; docs/secrets.md): every
credential kind refused, every look-alike passed, and the surfaces that are not memories (the minds'
input, the site) masked. The floors are the issue's: refusal >= 98 %, false refusals <= 2 %."""

from __future__ import annotations

import pytest

from secrets_corpus import credentials, look_alikes
from sandman.banks import secret_rules
from sandman.banks.secrets import MASK, find_secrets, mask_secrets
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


@pytest.mark.parametrize(("kind", "text"), CREDENTIALS, ids=[kind for kind, _ in CREDENTIALS])
def test_a_masked_credential_is_gone(kind: str, text: str) -> None:
    masked = mask_secrets(text)
    assert MASK in masked and find_secrets(masked) == [], (kind, masked)


def test_the_aws_documented_example_key_is_refused_like_any_key() -> None:
    # Decided (docs/secrets.md): it has a real key's format, and sandman cannot know which keys authenticate.
    assert find_secrets("AWS's docs use " + "AKIAIOSFODNN7" + "EXAMPLE as the example key.") == ["aws-access-key-id"]


@pytest.mark.parametrize("kind", ["soft-hyphen-in-token", "fullwidth-token", "pem-pkcs8-encrypted", "putty-v3",
                                  "kubeconfig-client-key", "url-password-bang", "azure-sas", "cli-sshpass"])
def test_a_remember_of_a_missed_class_leaves_no_trace(layout, tmp_path, kind: str) -> None:
    text = dict(CREDENTIALS)[kind]
    with pytest.raises(SecretRefused):
        remember(layout, "Deploy note: " + text, cwd=str(tmp_path))
    for path in layout.root.rglob("*"):
        if path.is_file():
            assert text.encode() not in path.read_bytes(), path
