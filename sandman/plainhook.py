"""What the hook paths run under ``python -I -S`` share: the root, session ids, the journal.

``import json`` imports ``re`` and ``pathlib`` costs as much again (issue 29): the
SessionStart launcher (sandman/fasthook.py, sandman/recall/served.py) and the backstop's
check (sandman/archive/missed.py) use these instead, built-in modules only (``os``,
``time``, ``_json``; JSON is sandman/fastjson.py's). Each does what the sandman function it
names does, in the plain case only; sandman/recall/fast.py (the prompt and file hooks) uses them too.
tests/test_recall_served.py checks them against their sources.
"""

from __future__ import annotations

import errno
import os
import time

import _json


# ledger.py's _SESSION: [A-Za-z0-9][A-Za-z0-9._:\-]{0,127}, no ".."
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_SESSION_CHARS = _ALNUM | frozenset("._:-")
# journal.py's _BARE: [A-Za-z0-9_.,:/@+\-~#%]+, and MAX_VALUE_CHARS
_BARE = _ALNUM | frozenset("_.,:/@+-~#%")
MAX_VALUE_CHARS = 500
# config.py's
PATH_MAX_BYTES = 4096


def too_long(path: object) -> bool:
    """True when ``path`` is a string of more than ``PATH_MAX_BYTES`` bytes as UTF-8 (config.PATH_MAX_BYTES:
    no path the system opens is longer); every hook declines such a cwd or file path at once."""
    return isinstance(path, str) and (len(path) > PATH_MAX_BYTES
                                      or len(path.encode("utf-8", "surrogatepass")) > PATH_MAX_BYTES)


# banks/names.py's _KEEP and MAX_NAME_CHARS
_KEEP = _ALNUM | frozenset(".")
MAX_NAME_CHARS = 200


def encode_name(path: str) -> str:
    """``path`` in the bank names' encoding (docs/BANK-FORMAT.md, "Bank names"): each character of
    _KEEP kept, ``/`` as ``-``, ``-`` as ``_-``, ``_`` as ``__``, any other as ``_<hex>`` of its
    UTF-8 bytes. banks.names.bank_name adds the special names and the cut to length."""
    parts = []
    for char in path:
        if char in _KEEP:
            parts.append(char)
        elif char == "/":
            parts.append("-")
        elif char == "-":
            parts.append("_-")
        elif char == "_":
            parts.append("__")
        else:
            parts.extend(f"_{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
    return "".join(parts)


def bank_name(path: str) -> str | None:
    """banks.names.bank_name of ``path`` without its special names (``/``, home): ``encode_name``,
    None when that is over MAX_NAME_CHARS (bank_name would cut it and add a hash)."""
    name = encode_name(path)
    return name if len(name) <= MAX_NAME_CHARS else None


def write_atomic(path: str, data: bytes) -> bool:
    """store.atomic.write_atomic with built-ins only: ``data`` into a sibling temp file (its folder
    made when missing), then ``os.replace``; False when it could not be written. Never raises."""
    folder = os.path.dirname(path)
    temp = os.path.join(folder, f".{os.path.basename(path)}.{os.urandom(16).hex()}.tmp")
    try:
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return False
    return True


# The caps of read_file, each well above what sandman writes there (a writer keeps nothing
# larger): a kept scan names each transcript with its inode (about 52 bytes: 1 MiB is some
# 20,000 transcripts, and _json parses it in a few ms), a kept start reply its recall and the
# stat of each input (some 150 bytes each), a .started record some 50 bytes, a session's
# delivered ledger some 90 bytes a memory given.
KEPT_SCAN_MAX_BYTES = 1 << 20
START_REPLY_MAX_BYTES = 4 << 20
STARTED_MAX_BYTES = 4096
LEDGER_MAX_BYTES = 16 << 20
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_TYPE, _REG = 0o170000, 0o100000


def read_file(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file at ``path``, at most ``limit`` bytes; None when it is absent.

    What every file a hook reads goes through: opened without blocking (a FIFO never hangs the
    hook) and without following a symbolic link (one to ``/dev/zero`` is never read), checked
    to be a regular file by ``fstat``, and never read past ``limit``. Raises OSError: ``ELOOP``
    for a symbolic link, ``EINVAL`` for a folder, FIFO, device or socket, ``EFBIG`` for a file
    over ``limit`` bytes, and any other open or read error (the caller treats each as a corrupt
    file)."""
    try:
        fd = os.open(path, _READ)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        st = os.fstat(fd)
        if st.st_mode & _TYPE != _REG:
            raise OSError(errno.EINVAL, "not a regular file", path)
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"over {limit} bytes", path)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # grown since the fstat
                raise OSError(errno.EFBIG, f"over {limit} bytes", path)
    finally:
        os.close(fd)


def utf16_units(text: str) -> int:
    """The UTF-16 code units of ``text``: its length as Claude Code counts it (a character outside
    the Basic Multilingual Plane, an emoji say, is two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fit(body: list[str], where: str, room: int) -> list[str] | None:
    """The lines of a memory's ``body`` a recall surface shows within ``room`` UTF-16 units (each
    line counts its newline): all of them when they fit, else the first that fit and then
    ``where`` (the line naming the file to read it whole in); None when not even ``where`` fits."""
    if sum(utf16_units(line) + 1 for line in body) <= room:
        return body
    room -= utf16_units(where) + 1
    kept = []
    for line in body:
        if utf16_units(line) + 1 > room:
            break
        kept.append(line)
        room -= utf16_units(line) + 1
    return None if room < 0 else [*kept, where]


def session_ok(session: object) -> bool:
    """ledger.usable_session: a session id that can name a file."""
    return (isinstance(session, str) and 0 < len(session) <= 128 and session[0] in _ALNUM
            and all(char in _SESSION_CHARS for char in session) and ".." not in session)


def plain(path: str) -> bool:
    """True when ``path`` is absolute and ``pathlib`` would print it as it is."""
    return path.startswith("/") and not path.startswith("//") and (path == "/" or os.path.normpath(path) == path)


def home() -> str | None:
    """config.user_home() as a string (``~`` expanded), or None when pathlib would print it otherwise."""
    path = os.path.expanduser("~")
    return path if plain(path) else None


def root() -> str | None:
    """config.root() as a string, or None when it is not the plain case (``~``, a path to normalize,
    ``/``, a root that is not a folder)."""
    value = os.environ.get("SANDMAN_ROOT", "")
    if not value:
        base = home()
        if base is None:
            return None
        path = base.rstrip("/") + "/.sandman"
    else:
        if not plain(value):
            return None
        path = value
    if path == "/" or os.path.lexists(path) and not os.path.isdir(path):
        return None
    return path


def now_iso() -> tuple[str, str]:
    """``(journal.iso(now), the day of the journal file)``: ``YYYY-MM-DDTHH:MM:SSZ``, ``YYYY-MM-DD``."""
    now = time.gmtime()
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", now), time.strftime("%Y-%m-%d", now)


def open_append(path: str) -> int:
    """A descriptor of ``path`` open for appending, the file and its folder made when missing.
    Opened without blocking and without following a symbolic link, and only a regular file:
    a FIFO or a link at ``path`` never hangs a hook nor takes its lines. Raises OSError
    (``EINVAL`` for what is not a regular file)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        if os.fstat(fd).st_mode & _TYPE != _REG:
            raise OSError(errno.EINVAL, "not a regular file", path)
    except OSError:
        os.close(fd)
        raise
    return fd


def append(path: str, data: bytes) -> bool:
    """One write on an O_APPEND descriptor of ``path``, its folder made on the first line; False
    when it could not be written. Never raises."""
    try:
        fd = open_append(path)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _value(value: object) -> str:
    """journal._value for None, bool, int and str."""
    if value is None:
        text = "-"
    elif value is True or value is False:
        return "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    else:
        text = value
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS] + "…"
    return text if text and all(char in _BARE for char in text) else _json.encode_basestring(text)


def journal(root: str, verb: str, decision: str, **facts: object) -> None:
    """journal.write(layout, verb, decision, **facts) for facts that are None, bool, int or str."""
    moment, day = now_iso()
    parts = [moment, verb, decision, *(f"{key}={_value(value)}" for key, value in facts.items())]
    append(f"{root}/.trace/{verb}-{day}.log", (" ".join(parts) + "\n").encode("utf-8", "backslashreplace"))
