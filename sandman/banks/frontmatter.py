"""The one frontmatter reader and writer (docs/BANK-FORMAT.md, "Frontmatter").

A memory file is ``---``, YAML frontmatter, ``---``, one blank line, the body.
The fences are whole lines. A leading BOM is stripped. Each top-level key with
its continuation lines is kept as raw text, so a read-write round trip preserves
every key sandman does not touch byte for byte, in its order; a key sandman sets
is re-dumped as one line. Values are loaded with a safe loader that keeps dates
as strings (``created: 2026-11-30T16:01:12Z`` reads as that string).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sandman.errors import FormatError

_FENCE = re.compile(r"---[ \t]*(\r?\n|$)")
_ENTRY_START = re.compile(r"[^\s#]")


@dataclass
class Frontmatter:
    """An ordered frontmatter: ``(key, raw text)`` pairs, raw text ending in a newline.

    A raw text of key ``None`` holds comments or blank lines before the first key.
    Values are loaded once, on first use, and again after a ``set``.
    """

    entries: list[tuple[str | None, str]] = field(default_factory=list)
    _values: dict[str, object] | None = field(default=None, compare=False, repr=False)

    def keys(self) -> list[str]:
        return [key for key, _ in self.entries if key is not None]

    def __contains__(self, key: str) -> bool:
        return key in self.keys()

    def _loaded(self) -> dict[str, object]:
        if self._values is None:
            self._values = {key: _load_entry(raw)[1] for key, raw in self.entries if key is not None}
        return self._values

    def get(self, key: str, default: object = None) -> object:
        """Return the loaded value of ``key`` (dates as strings), or ``default``."""
        return self._loaded().get(key, default)

    def set(self, key: str, value: object) -> None:
        """Set ``key`` to ``value`` as one line, in place, or appended when new.

        Raises FormatError for a value that cannot be one line (a mapping nested
        in a list, say).
        """
        raw = dump_entry(key, value)
        self._values = None
        for i, (entry_key, _) in enumerate(self.entries):
            if entry_key == key:
                self.entries[i] = (key, raw)
                return
        self.entries.append((key, raw))

    def remove(self, key: str) -> None:
        self._values = None
        self.entries = [(k, raw) for k, raw in self.entries if k != key]

    def to_dict(self) -> dict[str, object]:
        return dict(self._loaded())

    @classmethod
    def from_mapping(cls, mapping: dict[str, object]) -> "Frontmatter":
        front = cls()
        for key, value in mapping.items():
            front.set(key, value)
        return front


def dump_entry(key: str, value: object) -> str:
    """Return ``key: value`` as one YAML line ending in ``\\n``."""
    text = f"{_flow(key)}: {_flow(value)}\n"
    if text.count("\n") != 1:
        raise FormatError(f"frontmatter value of {key!r} cannot be written on one line")
    return text


def _flow(value: object) -> str:
    text = _known_flow(value)
    if text is not None:
        return text
    text = _dump(value, None)
    if "\n" in text:
        # A string with line breaks: double quotes escape them onto one line.
        text = _dump(value, '"')
    return text


# What PyYAML's emitter writes for the values a new memory has, found without importing yaml
# (issue 29: 14 ms of every remember). ``_known_flow`` answers only where the answer is certain and
# leaves the rest to yaml; tests/test_frontmatter.py holds it to yaml's output byte for byte. String
# tests, not regular expressions: compiling those cost every process start 2 ms.
# Marks that are never indicators inside a plain scalar; outside a flow collection, then inside one
# (without the flow indicators , ? [ ] { }).
_PLAIN_MARKS = frozenset(" _.,'()/+!?;&-")
_FLOW_PLAIN_MARKS = _PLAIN_MARKS - set(",?")
# An indicator as a scalar's first character: plain is never allowed.
_INDICATORS = frozenset("#,[]{}&*!|>'\"%@` ")
# The words YAML 1.1 reads as booleans or null: PyYAML quotes them.
_RESOLVED_WORDS = {word for base in ("yes", "no", "true", "false", "on", "off", "null")
                   for word in (base, base.capitalize(), base.upper())}


def _printable(value: str) -> bool:
    """True when both of PyYAML's emitters (its own and libyaml's) print every character of
    ``value`` as it is, no escape, no line break: ``str.isprintable`` (no control, format,
    separator other than the space, surrogate or private-use character) within the basic plane
    (libyaml escapes every character beyond it)."""
    return value.isprintable() and (value.isascii() or max(value) <= "\ufffd")


def _plain(value: str, marks: frozenset) -> bool:
    """True when PyYAML writes ``value`` plain for certain: a letter, ``_`` or ``/`` first (no
    implicit type starts so), then letters, digits and ``marks``, not ending in a space, and not
    a word YAML reads as a boolean or null."""
    first = value[0]
    return ((first.isalpha() or first in "_/") and value[-1] != " " and value not in _RESOLVED_WORDS
            and all(c.isalnum() or c in marks for c in value))


def _stamp(value: str) -> bool:
    """True for a time as sandman writes ``created`` and ``updated`` (``2026-12-05T13:15:44Z``):
    plain, since the dumper has no timestamp resolver."""
    return (len(value) == 20 and value[4] == value[7] == "-" and value[10] == "T" and value[13] == value[16] == ":"
            and value[19] == "Z" and (value[:4] + value[5:7] + value[8:10] + value[11:13] + value[14:16]
                                      + value[17:19]).isdigit() and value.isascii())


def _known_flow(value: object) -> str | None:
    """What ``_dump(value, None)`` returns, when it is certain without yaml: a one-line printable
    string (plain, or in single quotes where plain is never allowed), a list of plain words. Else None."""
    if isinstance(value, str):
        if not value or not _printable(value):
            return None
        if (value in _RESOLVED_WORDS or value[0] in _INDICATORS or value[-1] in " :" or ": " in value
                or " #" in value):
            return "'" + value.replace("'", "''") + "'"
        if _plain(value, _PLAIN_MARKS) or _stamp(value):
            return value
        return None
    if isinstance(value, list) and all(isinstance(item, str) and item and _printable(item)
                                       and _plain(item, _FLOW_PLAIN_MARKS) for item in value):
        return "[" + ", ".join(value) + "]"
    return None


def _dump(value: object, style: str | None) -> str:
    from sandman.banks import yaml_codec

    text = yaml_codec.dump(value, style)
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    return text.rstrip("\n")


def _load_entry(raw: str) -> tuple[str, object]:
    from sandman.banks import yaml_codec

    try:
        loaded = yaml_codec.load(raw)
    except yaml_codec.YAMLError as error:
        raise FormatError(f"frontmatter entry {raw.strip()[:80]!r} is not valid YAML: {error}") from None
    if not isinstance(loaded, dict) or len(loaded) != 1:
        raise FormatError(f"frontmatter entry {raw.strip()[:80]!r} is not one key: value")
    ((key, value),) = loaded.items()
    if not isinstance(key, str):
        raise FormatError(f"frontmatter key {key!r} is not a string")
    return key, value


def parse(text: str) -> tuple[Frontmatter, str]:
    """Split a memory file's text into its frontmatter and body.

    Raises FormatError when the text does not open with a ``---`` line, has no
    closing fence, holds invalid YAML, a non-mapping, or a key twice.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    opening = _FENCE.match(text)
    if not opening:
        raise FormatError("no frontmatter: the file does not start with a '---' line")
    lines = text[opening.end():].splitlines(keepends=True)
    entries: list[tuple[str | None, str]] = []
    seen: set[str] = set()
    for index, line in enumerate(lines):
        if _FENCE.fullmatch(line):
            body = "".join(lines[index + 1:])
            if body.startswith("\r\n"):
                body = body[2:]
            elif body.startswith("\n"):
                body = body[1:]
            return _keyed(entries, seen), body
        if _ENTRY_START.match(line) or not entries:
            entries.append((None, line))
        else:
            entries[-1] = (None, entries[-1][1] + line)
    raise FormatError("frontmatter is not closed by a '---' line")


_PLAIN_KEY = re.compile(r"([A-Za-z_][\w.\-]*)[ \t]*:(?:[ \t]|\r?\n|$)")


def _keyed(chunks: list[tuple[str | None, str]], seen: set[str]) -> Frontmatter:
    keyed: list[tuple[str | None, str]] = []
    for _, raw in chunks:
        if not _ENTRY_START.match(raw):  # leading comments or blank lines
            keyed.append((None, raw))
            continue
        if not raw.endswith("\n"):
            raw += "\n"
        plain = _PLAIN_KEY.match(raw)
        key = plain.group(1) if plain else _load_entry(raw)[0]
        if key in seen:
            raise FormatError(f"frontmatter key {key!r} appears twice")
        seen.add(key)
        keyed.append((key, raw))
    # One YAML load for the whole block; it must agree with the keys read above.
    block = "".join(raw for key, raw in keyed if key is not None)
    from sandman.banks import yaml_codec

    try:
        values = yaml_codec.load(block) if block else {}
    except yaml_codec.YAMLError as error:
        raise FormatError(f"frontmatter is not valid YAML: {error}") from None
    if not isinstance(values, dict) or list(values) != [key for key, _ in keyed if key is not None]:
        # A key the fast reader misread: load entry by entry for the exact error.
        values = {key: _load_entry(raw)[1] for key, raw in keyed if key is not None}
    return Frontmatter(keyed, values)


def text_value(values: dict, key: str) -> str:
    """Return ``values[key]`` as a string ("" when absent). Raises FormatError for a list or mapping."""
    value = values.get(key)
    if value is None:
        return ""
    if not isinstance(value, (str, int, float)):
        raise FormatError(f"frontmatter field {key!r} is not a single value")
    return str(value)


def list_value(values: dict, key: str) -> list[str]:
    """Return ``values[key]`` as a list of strings ([] when absent; a lone string is a list of one).

    Raises FormatError for anything else.
    """
    value = values.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(item, (str, int)) for item in value):
        raise FormatError(f"frontmatter field {key!r} is not a list of strings")
    return [str(item) for item in value]


def dump(front: Frontmatter, body: str) -> str:
    """Return the file text of ``front`` and ``body``: fences, one blank line, body."""
    return "---\n" + "".join(raw for _, raw in front.entries) + "---\n\n" + body
