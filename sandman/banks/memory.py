"""One memory: its file text, its fields, and their validation (docs/BANK-FORMAT.md, "Memory files").

A memory file is ``<type>_<slug>.md``: frontmatter with ``name``,
``description``, ``type``, ``created``, ``updated``, ``source``, ``witnesses``
and, after a replacement, ``replaces``; then one blank line and the markdown
body. Unknown frontmatter keys survive a read-write round trip untouched.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from sandman import config
from sandman.banks import frontmatter
from sandman.banks.frontmatter import Frontmatter, list_value, text_value
from sandman.banks.names import MEMORY_TYPES
from sandman.errors import FormatError, InputError
from sandman.store.atomic import read_regular

# The ``source`` of a memory asked for by hand (sandman remember), beside any session id.
REMEMBER_SOURCE = "remember"
NAME_MAX_CHARS = 120
DESCRIPTION_MAX_CHARS = 300
# Bidirectional overrides and isolates: they make a line display as something it is not.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Zero-width characters in a name or description (invisible, so they can hide inside a token,
# ``ghp_…\u200b…``), but for the joiners (U+200C, U+200D) between two non-ASCII characters: there
# they are text (Persian spelling, emoji sequences), not an invisible name.
_INVISIBLE = re.compile("[\u200b\u2060\ufeff]|(?<![^\x00-\x7f\\s])[\u200c\u200d]|[\u200c\u200d](?![^\x00-\x7f\\s])")


def one_line(text: str) -> str:
    """Return ``text`` as one clean line: control, bidi-override and zero-width characters
    dropped (a zero-width joiner between two non-ASCII characters is kept), whitespace runs
    collapsed to one space, ends trimmed."""
    text = _INVISIBLE.sub("", _BIDI.sub("", text))
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in text)
    return " ".join(text.split())


def clean_body(text: str) -> str:
    """Return a body with NUL and bidi overrides removed, line endings as ``\\n``,
    trailing whitespace trimmed and one final newline."""
    text = _BIDI.sub("", text.replace("\0", "")).replace("\r\n", "\n").replace("\r", "\n")
    return text.rstrip() + "\n"


@dataclass
class Memory:
    """A memory's fields; ``front`` keeps the file's frontmatter, unknown keys included."""

    name: str
    description: str
    type: str
    body: str
    created: str = ""
    updated: str = ""
    source: list[str] = field(default_factory=list)
    witnesses: list[str] = field(default_factory=list)
    replaces: str | None = None
    front: Frontmatter = field(default_factory=Frontmatter)

    def text(self) -> str:
        """Return the file text: known fields set in ``front`` (order kept), then the body."""
        front = Frontmatter(list(self.front.entries))
        for key, value in (
            ("name", self.name), ("description", self.description), ("type", self.type),
            ("created", self.created), ("updated", self.updated),
            ("source", list(self.source)), ("witnesses", list(self.witnesses)),
        ):
            front.set(key, value)
        if self.replaces:
            front.set("replaces", self.replaces)
        else:
            front.remove("replaces")
        return frontmatter.dump(front, self.body)


def parse_memory(text: str) -> Memory:
    """Read a memory from its file text.

    Raises FormatError when the frontmatter is unreadable or lacks ``name``,
    ``description`` or ``type``, or a field has the wrong type.
    """
    front, body = frontmatter.parse(text)
    values = front.to_dict()
    for key in ("name", "description", "type"):
        if not isinstance(values.get(key), str) or not values[key]:
            raise FormatError(f"frontmatter field {key!r} is missing or not a string")
    return Memory(
        name=values["name"],
        description=values["description"],
        type=values["type"],
        body=body,
        created=text_value(values, "created"),
        updated=text_value(values, "updated"),
        source=list_value(values, "source"),
        witnesses=list_value(values, "witnesses"),
        replaces=text_value(values, "replaces") or None,
        front=front,
    )


def read_memory(path: Path) -> Memory:
    """Read the memory file at ``path``. Raises FormatError (naming the file) or OSError
    (among them a symbolic link or other non-regular file: see store.atomic.read_regular)."""
    try:
        return parse_memory(read_regular(path).decode("utf-8"))
    except UnicodeDecodeError:
        raise FormatError(f"{path} is not UTF-8") from None
    except FormatError as error:
        raise FormatError(f"{path}: {error}") from None


def fingerprint(path: Path) -> str | None:
    """Return the SHA-256 hex digest of a file's bytes, or None when it is gone."""
    import hashlib  # here: a remember never fingerprints, and the import cost it 1.3 ms (issue 29)

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def validate_fields(memory_type: str, name: str, description: str, body: str) -> None:
    """Check a new memory's fields before anything is written (docs/BANK-FORMAT.md).

    Raises InputError naming the field: an unknown type, an empty name,
    description or body, a name or description that is too long, a body over
    64 KiB (65,536 bytes of UTF-8, the final newline not counted), or text that UTF-8 cannot store (a lone
    surrogate, as ``json.loads('"\\ud800"')`` makes).
    """
    if memory_type not in MEMORY_TYPES:
        raise InputError(f"type {memory_type!r} is unknown; use one of {', '.join(MEMORY_TYPES)}")
    for label, value in (("name", name), ("description", description), ("body", body)):
        lone = _SURROGATE.search(value)
        if lone:
            raise InputError(f"memory {label} is not UTF-8 text: a lone surrogate at character {lone.start()}")
    if not body.strip():
        raise InputError("memory body is empty")
    for label, value, limit in (("name", name, NAME_MAX_CHARS), ("description", description, DESCRIPTION_MAX_CHARS)):
        if not value:
            raise InputError(f"memory {label} is empty")
        if len(value) > limit:
            raise InputError(f"memory {label} is {len(value)} characters; the limit is {limit}")
    size = len(body.rstrip("\n").encode("utf-8"))  # the newline sandman ends a file with is not the body's
    if size > config.MEMORY_BODY_MAX_BYTES:
        raise InputError(
            f"memory body is {size:,} bytes; the limit is {config.MEMORY_BODY_MAX_BYTES:,} (64 KiB)"
        )
