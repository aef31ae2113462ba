"""Bank names and memory file names (docs/BANK-FORMAT.md, "Bank names", "File names").

A bank is the memory folder of one directory. Its name is a reversible encoding
of the directory's absolute path in Claude Code's project-slug style, so that
``/home/user/proj`` reads ``-home-user-proj`` in a listing, but unlike Claude
Code's slug no two directories share a name:

- ASCII letters, digits and ``.`` are kept;
- ``/`` becomes ``-``;
- ``-`` becomes ``_-`` and ``_`` becomes ``__``;
- any other character becomes ``_`` and two lowercase hex digits per UTF-8 byte.

The code is prefix-free, so the encoding is injective and ``bank_directory``
reverses it. The filesystem root ``/`` is the bank ``_root`` and the user-wide
bank (memories of the person, not of a directory) is ``_user``: encoded names
always begin with ``-``, so these never collide. A name longer than
``MAX_NAME_CHARS`` is cut and suffixed ``~`` and 16 hex digits of the path's
SHA-256 (no longer reversible; MEMORY.md records the directory either way).

Standard library only: the hook entry points import this module.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sandman.errors import InputError
from sandman.plainhook import _KEEP, MAX_NAME_CHARS, encode_name  # the one encoding, built-ins only

ROOT_BANK = "_root"
USER_BANK = "_user"
MEMORY_TYPES = ("user", "feedback", "project", "reference")
SLUG_MAX_CHARS = 60


def normalize_directory(directory: str | os.PathLike[str]) -> Path:
    """Return ``directory`` as a normalized absolute path (``..`` folded, no symlinks resolved).

    Raises InputError when it is relative or holds a NUL character.
    """
    text = os.fspath(directory)
    if "\0" in text:
        raise InputError(f"directory {text!r} contains a NUL character")
    if not os.path.isabs(text):
        raise InputError(f"directory {text!r} is relative; give an absolute path")
    # POSIX lets "//x" differ from "/x", so normpath keeps a leading "//"; on Linux and
    # macOS it is the same directory and must be the same bank.
    return Path("/" + os.path.normpath(text).lstrip("/"))


def bank_name(directory: str | os.PathLike[str] | None) -> str:
    """Return the bank name of an absolute directory, or of the user-wide bank for None.

    Raises InputError for a relative path (see normalize_directory).
    """
    if directory is None:
        return USER_BANK
    path = normalize_directory(directory)
    text = path.as_posix()
    if text == "/":
        return ROOT_BANK
    name = encode_name(text)
    if len(name) > MAX_NAME_CHARS:
        import hashlib  # rare; 2.6 ms the recall hook need not pay

        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = f"{name[: MAX_NAME_CHARS - 17]}~{digest}"
    return name


def bank_directory(name: str) -> Path | None:
    """Return the directory a bank name encodes, or None for the user-wide bank.

    Raises InputError for a name that is not an encoding (a hand-made folder, a
    name cut to length): read MEMORY.md's ``directory`` field instead.
    """
    if name == USER_BANK:
        return None
    if name == ROOT_BANK:
        return Path("/")
    if not name.startswith("-") or "~" in name:
        raise InputError(f"bank name {name!r} does not encode a directory")
    out = bytearray()
    i = 0
    while i < len(name):
        char = name[i]
        if char == "-":
            out += b"/"
            i += 1
        elif char == "_":
            nxt = name[i + 1 : i + 2]
            if nxt in ("-", "_"):
                out += nxt.encode()
                i += 2
            elif re.fullmatch(r"[0-9a-f]{2}", name[i + 1 : i + 3]):
                out.append(int(name[i + 1 : i + 3], 16))
                i += 3
            else:
                raise InputError(f"bank name {name!r} has a bad escape at character {i}")
        elif char in _KEEP:
            out += char.encode()
            i += 1
        else:
            raise InputError(f"bank name {name!r} has an unencoded character {char!r}")
    return Path(out.decode("utf-8", "surrogatepass"))


def ancestors(directory: str | os.PathLike[str], stop: Path | None) -> list[Path]:
    """Return ``directory`` and its ancestors, nearest first, ending at ``stop`` inclusive.

    When ``directory`` is not under ``stop`` (or ``stop`` is None) the walk goes
    to the filesystem root. Raises InputError for a relative directory.
    """
    path = normalize_directory(directory)
    chain = [path, *path.parents]
    if stop is not None and (path == stop or stop in path.parents):
        chain = chain[: chain.index(stop) + 1]
    return chain


def slug(name: str) -> str:
    """Return the file slug of a memory name (docs/BANK-FORMAT.md, "File names").

    Lowercased; every run of characters that are not letters or digits (Unicode
    aware) becomes one ``_``; ``_`` trimmed at both ends; cut at 60 characters
    (never bytes) and trimmed again. An empty result is ``memory``.
    """
    text = slug_words(name)
    text = text[:SLUG_MAX_CHARS].strip("_")
    return text or "memory"


def slug_words(text: str) -> str:
    """Return ``text`` as a slug before its cut: lowercased, every run of characters that are not letters or
    digits one ``_``, ``_`` trimmed at both ends (``slug`` then cuts it; the secrets ban finds a slug in it)."""
    return re.sub(r"[\W_]+", "_", text.lower()).strip("_")


def memory_filename(memory_type: str, name: str, suffix: int = 1) -> str:
    """Return ``<type>_<slug>.md``, or ``<type>_<slug>_<n>.md`` for collision suffix n >= 2."""
    stem = f"{memory_type}_{slug(name)}"
    return f"{stem}.md" if suffix < 2 else f"{stem}_{suffix}.md"
