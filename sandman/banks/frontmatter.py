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

import yaml

from sandman.errors import FormatError

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _without_timestamps(resolvers: dict) -> dict:
    return {
        first: [(tag, regexp) for tag, regexp in entries if tag != "tag:yaml.org,2002:timestamp"]
        for first, entries in resolvers.items()
    }


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    yaml_implicit_resolvers = _without_timestamps(_BaseLoader.yaml_implicit_resolvers)


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    yaml_implicit_resolvers = _without_timestamps(_BaseDumper.yaml_implicit_resolvers)


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
    text = _dump(value, None)
    if "\n" in text:
        # A string with line breaks: double quotes escape them onto one line.
        text = _dump(value, '"')
    return text


def _dump(value: object, style: str | None) -> str:
    text = yaml.dump(
        value, Dumper=_Dumper, default_flow_style=True, width=2**31 - 1,
        allow_unicode=True, sort_keys=False, default_style=style,
    )
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    return text.rstrip("\n")


def _load_entry(raw: str) -> tuple[str, object]:
    try:
        loaded = yaml.load(raw, Loader=_Loader)
    except yaml.YAMLError as error:
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
    try:
        values = yaml.load(block, Loader=_Loader) if block else {}
    except yaml.YAMLError as error:
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
