"""JSON without the ``json`` package, for the paths run under ``python -I -S`` (sandman/fasthook.py).

``import json`` imports ``re`` and costs about 0.9 x ``python -c pass`` (bench/statusline.py);
``_json``, the C accelerator ``json`` itself uses, is a built-in and costs nothing to import.
``parse`` reads what ``json.loads`` reads, with its defaults; ``string`` writes a JSON string as
``json.dumps`` does.
"""

from __future__ import annotations

import _json


_SPACE = " \t\n\r"


class _Context:
    """What ``_json.make_scanner`` reads from a ``json.JSONDecoder``: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
    memo: dict = {}


def loads(payload: bytes) -> object | None:
    """``json.loads(payload.decode("utf-8"))``, or None when that raises (None is also JSON's ``null``).

    A syntax error is a ``SystemError`` when ``json.decoder`` was never imported: ``_json``
    looks its ``JSONDecodeError`` up in ``sys.modules`` and, not finding it, fails without an
    exception of its own. That is what running without ``json`` means, so it is caught here too."""
    try:
        text = payload.decode("utf-8")
        start = len(text) - len(text.lstrip(_SPACE))
        value, end = _json.make_scanner(_Context())(text, start)
    except (UnicodeDecodeError, StopIteration, ValueError, RecursionError, SystemError):
        return None
    return None if text[end:].strip(_SPACE) else value


def parse(payload: bytes) -> dict | None:
    """``loads(payload)`` when that is an object, else None (any error)."""
    data = loads(payload)
    return data if isinstance(data, dict) else None


def string(text: str) -> str:
    """``text`` as a JSON string, non-ASCII kept (``json.dumps(text, ensure_ascii=False)``)."""
    return _json.encode_basestring(text)
