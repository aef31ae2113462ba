"""The secrets ban, enforced in code (design, "Invariants": keys, tokens and
credentials never become memories).

Text is scanned line by line with detect-secrets' maintained detectors (cloud
keys, tokens, private keys, passwords in URLs, JWTs, ``password: ...``
assignments), plus detectors for model-provider keys it does not know. The
entropy detector for hex strings is left out: git commit ids are hex, common in
memories, and not secrets. Zero-width characters are removed from the copy
that is scanned. A finding is reported by kind, never by value.
"""

from __future__ import annotations

import re
from pathlib import Path

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.settings import default_settings

from sandman.banks.memory import ZERO_WIDTH
from sandman.errors import LeftoverSecret, SecretRefused

# Findings that are not credentials in prose about software.
_IGNORED_KINDS = {"Hex High Entropy String", "Public IP (ipv4)"}
# Memories are markdown prose: the keyword detector's markdown mode flags quoted
# assignments without flagging sentences such as "password: see the vault".
_SCAN_AS = "memory.md"


class AnthropicKeyDetector(RegexBasedDetector):
    """Anthropic API and admin keys (``sk-ant-...``)."""

    secret_type = "Anthropic API Key"
    denylist = [re.compile(r"\bsk-ant-[a-z0-9]{2,10}-[A-Za-z0-9_\-]{20,}")]


class ProjectKeyDetector(RegexBasedDetector):
    """OpenAI-style project and service keys (``sk-proj-...``, ``sk-svcacct-...``)."""

    secret_type = "OpenAI API Key"
    denylist = [re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}")]


class ProviderTokenDetector(RegexBasedDetector):
    """Cloud and model-provider tokens detect-secrets has no plugin for."""

    secret_type = "Provider API Token"
    denylist = [
        re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"),  # Google / Gemini API key
        re.compile(r"\bhf_[A-Za-z0-9]{30,}"),  # Hugging Face
        re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),  # npm access token
        re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b"),  # DigitalOcean
        re.compile(r"\bgsk_[A-Za-z0-9]{40,}"),  # Groq
        re.compile(r"\br8_[A-Za-z0-9]{30,}"),  # Replicate
        re.compile(r"\bxai-[A-Za-z0-9]{40,}"),  # xAI
        re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),  # GitLab personal access token
        re.compile(r"\bsk-[A-Za-z0-9]{40,}"),  # OpenAI-style legacy secret key
    ]


class GitHubFineGrainedDetector(RegexBasedDetector):
    """GitHub fine-grained personal access tokens (``github_pat_<22>_<59>``); detect-secrets
    knows only the ``ghp_``-style prefixes."""

    secret_type = "GitHub Token"
    denylist = [re.compile(r"\bgithub_pat_[A-Za-z0-9]{20,}_[A-Za-z0-9]{40,}")]


class UrlPasswordDetector(RegexBasedDetector):
    """A password in a URL with no user name (``redis://:<password>@host``); detect-secrets'
    basic-auth detector asks for a user before the ``:``. A placeholder (``<password>``,
    ``${VAR}``) is not a password."""

    secret_type = "Basic Auth Credentials"
    denylist = [re.compile(r"://:([^\s/@<>{}$]{4,})@")]


# ``password: <value>`` anywhere in a line: the value is one token, ended by whitespace or the line's end.
_ASSIGNED = re.compile(
    r"(?i)(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key)"
    r"\s*[:=]\s*([^\s'\"`]{6,})(?=\s|$)"
)
_BEARER = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/\-]{20,}")
# What opens a placeholder (``<your key>``, ``${TOKEN}``, ``(stored in the vault)``, ``***``), not a value.
_PLACEHOLDER_OPENERS = "<([{$%*"
_SENTENCE_END = ".,;:!?)"


def _credential_like(value: str) -> bool:
    """True when the token assigned to a credential word looks like a credential.

    Prose says ``api_key: configured`` or ``password: required.``; a
    credential mixes letters with digits or symbols (``Tr0ub4dor&3x``). So
    the value, its sentence punctuation trimmed, must be at least 6
    characters, hold a letter and a non-letter, and be neither a placeholder
    nor a URL or path (which name where a secret lives, not the secret).
    """
    value = value.rstrip(_SENTENCE_END)
    if len(value) < 6 or value[0] in _PLACEHOLDER_OPENERS or value[0] in "/~" or "://" in value:
        return False
    return any(c.isalpha() for c in value) and any(not c.isalpha() for c in value)


class AssignedCredentialDetector(RegexBasedDetector):
    """``password: hunter22``-style assignments whose value looks like a credential, and bearer tokens."""

    secret_type = "Assigned Credential"
    denylist = [_ASSIGNED, _BEARER]

    def analyze_string(self, string: str):
        for match in _ASSIGNED.finditer(string):
            if _credential_like(match.group(1)):
                yield match.group(1)
        yield from _BEARER.findall(string)


def _plugins() -> list:
    plugins = [
        cls() for kind, cls in get_mapping_from_secret_type_to_class().items()
        if kind not in _IGNORED_KINDS
    ]
    return plugins + [AnthropicKeyDetector(), ProjectKeyDetector(), ProviderTokenDetector(),
                      GitHubFineGrainedDetector(), UrlPasswordDetector(), AssignedCredentialDetector()]


def find_secrets(*texts: str) -> list[str]:
    """Return the sorted kinds of secret found in ``texts`` (empty when clean).

    Each text is scanned with its zero-width characters removed: one inside a
    token hides it from every pattern and not from a reader who copies it.
    """
    kinds: set[str] = set()
    with default_settings():
        plugins = _plugins()
        for text in texts:
            text = ZERO_WIDTH.sub("", text)
            for number, line in enumerate(text.splitlines(), start=1):
                for plugin in plugins:
                    for found in plugin.analyze_line(filename=_SCAN_AS, line=line, line_number=number):
                        kinds.add(found.type)
    return sorted(kinds)


def refuse_secrets(*texts: str) -> None:
    """Raise SecretRefused, naming the kinds found, when any text carries a secret."""
    kinds = find_secrets(*texts)
    if kinds:
        raise SecretRefused(kinds)


def refuse_secret_files(root: Path, paths: list[str]) -> None:
    """Raise LeftoverSecret for the first of ``paths`` (repo-relative, under ``root``) holding a secret.

    For changes sandman is about to commit that it did not write itself (a
    hand edit or a stray file, found by recovery or when a folder is adopted):
    the whole file is scanned as a memory's text is, its bytes read as UTF-8
    with undecodable bytes replaced. What is not a file (a deletion) is
    skipped. Raises LeftoverSecret, OSError (a file that cannot be read).
    """
    for path in paths:
        if not (root / path).is_file():
            continue
        text = (root / path).read_bytes().decode("utf-8", errors="replace")
        kinds = find_secrets(text)
        if kinds:
            raise LeftoverSecret(str(root), path, kinds)
