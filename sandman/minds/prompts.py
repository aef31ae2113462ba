"""Prompt templates: loading, one-pass filling, and data fences.

A template is ``prompts/<name>.md`` (found through ``layout.resource``) with
``{{ slot }}`` placeholders. ``fill`` replaces every slot in a single pass, so
text put into a slot is never scanned again: a transcript that contains
``{{ banks }}`` stays those characters.

Third-party text (a transcript, a title, highlights: anything a person, a
tool or a web page wrote) reaches a mind only inside a data fence::

    <data-<nonce> label="transcript">
    ...
    </data-<nonce>>

The nonce is 16 random hex digits chosen per prompt and checked absent from
every fenced text, so the text cannot close its own fence; the prompt tells the
mind that fenced text is data, never instructions. Standard library only.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable

from sandman.errors import FormatError
from sandman.layout import resource

_SLOT = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def load(name: str) -> str:
    """Return the text of ``prompts/<name>.md``.

    Raises FileNotFoundError when the prompts folder or the template is missing.
    """
    return (resource("prompts") / f"{name}.md").read_text(encoding="utf-8")


def slots(template: str) -> set[str]:
    """Return the slot names a template uses."""
    return set(_SLOT.findall(template))


def fill(template: str, values: dict[str, str]) -> str:
    """Replace every ``{{ slot }}`` of ``template`` with ``values[slot]`` in one pass.

    Raises FormatError naming a slot the template uses that ``values`` lacks,
    or a value given for a slot the template does not have (a renamed slot
    would otherwise drop its text silently).
    """
    missing = slots(template) - values.keys()
    unused = values.keys() - slots(template)
    if missing or unused:
        raise FormatError(
            f"prompt template slots do not match: missing {sorted(missing)}, unused {sorted(unused)}"
        )
    return _SLOT.sub(lambda match: values[match.group(1)], template)


def new_nonce(texts: Iterable[str]) -> str:
    """Return a fence nonce (16 hex digits) that occurs in none of ``texts``."""
    texts = list(texts)
    while True:
        nonce = secrets.token_hex(8)
        if not any(nonce in text for text in texts):
            return nonce


def fence(label: str, text: str, nonce: str) -> str:
    """Return ``text`` fenced as data under ``label`` (a word of ours, never third-party text).

    Raises ValueError when ``text`` contains the nonce: it could close its fence.
    """
    if nonce in text:
        raise ValueError("fenced text contains the fence nonce")
    return f'<data-{nonce} label="{label}">\n{text}\n</data-{nonce}>'
