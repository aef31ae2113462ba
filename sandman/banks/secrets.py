"""The secrets ban, enforced in code (design, "Invariants": keys, tokens and
credentials never become memories).

Text is scanned line by line with detect-secrets' maintained detectors (cloud
keys, tokens, private keys, passwords in URLs, JWTs, ``password: ...``
assignments), plus detectors for model-provider keys it does not know. The
entropy detector for hex strings is left out: git commit ids are hex, common in
memories, and not secrets. A finding is reported by kind, never by value.
"""

from __future__ import annotations

import re

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.settings import default_settings

from sandman.errors import SecretRefused

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


class AssignedCredentialDetector(RegexBasedDetector):
    """``password: hunter2``-style lines whose value is one bare token, and bearer tokens."""

    secret_type = "Assigned Credential"
    denylist = [
        re.compile(
            r"(?i)(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key)"
            r"\s*[:=]\s*(?!(?:true|false|none|null|yes|no)\s*$)[^\s'\"`]{6,}\s*$"
        ),
        re.compile(r"\bBearer\s+[A-Za-z0-9._~+/\-]{20,}"),
    ]


def _plugins() -> list:
    plugins = [
        cls() for kind, cls in get_mapping_from_secret_type_to_class().items()
        if kind not in _IGNORED_KINDS
    ]
    return plugins + [AnthropicKeyDetector(), ProjectKeyDetector(), ProviderTokenDetector(), AssignedCredentialDetector()]


def find_secrets(*texts: str) -> list[str]:
    """Return the sorted kinds of secret found in ``texts`` (empty when clean)."""
    kinds: set[str] = set()
    with default_settings():
        plugins = _plugins()
        for text in texts:
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
