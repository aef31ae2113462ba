"""The dream reply contract: what a mind must answer (docs/BANK-FORMAT.md, "Dream replies").

The ``result`` text of a mind's output is one JSON object, optionally inside
one ```` ```json ```` fence::

    {"memories": [{"bank": "<absolute directory>" | "user",
                   "type": "user|feedback|project|reference",
                   "name": "...", "description": "...", "body": "..."}]}

``{"memories": []}`` is a valid answer: nothing worth keeping. A ``user``
memory names the user-wide bank as ``"bank": "user"``; every other type names
the session's cwd or one of its ancestors (up to the home directory, where
recall's walk stops).

A memory that cannot be used is **dropped** from the reply and the rest stands:
one carrying a secret (its number and the kinds of secret are returned for the
journal, never the value), and one with a defect: not an object, a missing or
non-string field, an unknown type, a bank not allowed for its type (``"/"``,
``".."``, a sibling directory), a field over its limit or not storable as
UTF-8 (its number and the defect are returned). The mind's other memories
still count, and a mind whose every memory was dropped has answered with
nothing. Only a reply that is not a proposal list at all (an echo, a refusal,
not JSON, not an object, no ``memories`` list, more than ``MAX_MEMORIES``) is
rejected whole, with a reason, and the mind abstains.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from sandman import config
from sandman.banks.memory import clean_body, one_line, validate_fields
from sandman.banks.names import MEMORY_TYPES, ancestors, normalize_directory
from sandman.banks.secrets import find_secrets
from sandman.errors import InputError, ReplyRejected

USER_BANK = "user"
MAX_MEMORIES = 50
FIELDS = ("bank", "type", "name", "description", "body")
# The opening of a reply's fence: ``` or ```json, alone on its line. Only the first
# MAX_OPENINGS are tried: a real reply has one to three, and each try decodes from it.
_OPENING = re.compile(r"```[ \t]*(?:json)?[ \t]*\n", re.IGNORECASE)
_SPACE = re.compile(r"\s*")
MAX_OPENINGS = 16
_REFUSAL = re.compile(
    r"^(i'm sorry|i am sorry|sorry|i can't|i cannot|i can not|i won't|i will not|"
    r"i'm not able|i am not able|i'm unable|i am unable)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Proposal:
    """One memory a mind proposed: ``bank`` is ``user`` or a normalized absolute directory."""

    mind: str
    bank: str
    type: str
    name: str
    description: str
    body: str

    @property
    def directory(self) -> str | None:
        """The directory whose bank gets it; None for the user-wide bank."""
        return None if self.bank == USER_BANK else self.bank


@dataclass
class Reply:
    """One mind's reply, parsed: its ``proposals``; the memories ``dropped`` for a secret as
    ``(number in the reply, counting from 1, sorted kinds of secret)``; the memories
    ``rejected`` for a defect as ``(number, what is wrong)``."""

    proposals: list[Proposal] = field(default_factory=list)
    dropped: list[tuple[int, list[str]]] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)


def allowed_banks(cwd: str) -> list[str]:
    """Return the directories a session in ``cwd`` may file memories under, nearest first.

    The cwd and its ancestors, up to the home directory when the cwd is under
    it (recall reads no bank above), else up to the one below ``/``: never
    ``/`` itself, whose bank recall would show in every directory outside the
    home. Raises InputError for a relative cwd.
    """
    return [str(path) for path in ancestors(cwd, config.user_home()) if path.parent != path]


def _fenced(text: str) -> list[object]:
    """Return the JSON values of ``text``'s fences: each opening (``_OPENING``) followed by
    one JSON value and then a closing ```` ``` ````. The value is decoded before the closing
    is looked for, so a backtick run inside one of its strings (a memory body holding a
    code fence, as real replies do) does not end the fence."""
    decoder = json.JSONDecoder()
    found = []
    for number, opening in enumerate(_OPENING.finditer(text)):
        if number == MAX_OPENINGS:
            break
        start = _SPACE.match(text, opening.end()).end()
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if text.startswith("```", _SPACE.match(text, end).end()):
            found.append(value)
    return found


def extract_json(text: str, *, storable: bool = True) -> object:
    """Return the JSON value of a reply: the whole text, or the content of its one fence.

    Raises ReplyRejected(``refusal``, ``unparseable``, or, when ``storable``,
    ``lone surrogate``: a string holding ``"\\ud800"`` or the like, which JSON
    allows but no UTF-8 file can store).
    """
    stripped = text.strip()
    fenced = [] if stripped.startswith("{") else _fenced(stripped)
    if len(fenced) == 1:
        data = fenced[0]
    else:
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            raise ReplyRejected("refusal" if _REFUSAL.match(stripped) else "unparseable") from None
    if not storable:
        return data
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ReplyRejected("lone surrogate") from None
    return data


def reply_list(text: str, key: str, limit: int, nonce: str | None, *, storable: bool = True) -> list:
    """Return the list under ``key`` of a mind's JSON reply (``{"<key>": [...]}``).

    Raises ReplyRejected: ``echo`` (the text holds the prompt's ``nonce``), the
    reasons of extract_json (``storable`` is passed on), ``not an object``, ``no
    <key> list``, ``too many <key>`` (more than ``limit`` items).
    """
    if nonce and nonce in text:
        raise ReplyRejected("echo")
    data = extract_json(text, storable=storable)
    if not isinstance(data, dict):
        raise ReplyRejected("not an object")
    items = data.get(key)
    if not isinstance(items, list):
        raise ReplyRejected(f"no {key} list")
    if len(items) > limit:
        raise ReplyRejected(f"too many {key}")
    return items


def parse_reply(text: str, *, mind: str, cwd: str, nonce: str | None = None) -> Reply:
    """Return one mind's reply parsed (docs/BANK-FORMAT.md, "Dream replies"), or raise
    ReplyRejected with the reason when it is not a proposal list.

    ``cwd`` is the dreamt session's directory; ``nonce`` the prompt's fence
    nonce: a reply that carries it reproduced the prompt (``echo``). A memory
    with a defect (not an object, a missing or non-string field, an unknown
    type, a bank not allowed for its type, a field over its limit or not
    storable as UTF-8) is left out of ``proposals`` and listed in
    ``rejected``; a sound memory whose name, description or body holds a
    secret is left out and listed in ``dropped``. Reasons for the whole reply:
    ``echo``, ``refusal``, ``unparseable``, ``not an object``, ``no memories
    list``, ``too many memories``, ``the session has no absolute cwd``.
    """
    memories = reply_list(text, "memories", MAX_MEMORIES, nonce, storable=False)
    try:
        banks = allowed_banks(cwd)
    except InputError:
        raise ReplyRejected("the session has no absolute cwd") from None
    parsed = Reply()
    for number, item in enumerate(memories, 1):
        try:
            proposal = _proposal(item, mind, banks)
        except ReplyRejected as defect:
            parsed.rejected.append((number, defect.reason))
            continue
        # The bank is a directory the memory is filed under: a secret there is one in the memory's path.
        kinds = find_secrets(proposal.name, proposal.description, proposal.body, proposal.bank)
        if kinds:
            parsed.dropped.append((number, kinds))
        else:
            parsed.proposals.append(proposal)
    return parsed


def _proposal(item: object, mind: str, banks: list[str]) -> Proposal:
    """Return one reply item as a Proposal; raise ReplyRejected saying what is wrong with it."""
    reject = ReplyRejected
    if not isinstance(item, dict):
        raise reject("not an object")
    for key in FIELDS:
        if not isinstance(item.get(key), str):
            raise reject(f"{key} missing or not a string")
        try:
            item[key].encode("utf-8")
        except UnicodeEncodeError:  # "\ud83d": JSON allows it, no UTF-8 file can store it
            raise reject(f"{key} holds a lone surrogate") from None
    memory_type = item["type"]
    if memory_type not in MEMORY_TYPES:
        raise reject(f"unknown type {memory_type[:40]!r}")
    bank = _bank(item["bank"], memory_type, banks)
    if bank is None:
        raise reject(f"bank {item['bank'][:80]!r} is not allowed for a {memory_type} memory")
    name, description = one_line(item["name"]), one_line(item["description"])
    body = clean_body(item["body"]) if item["body"].strip() else ""
    try:
        validate_fields(memory_type, name, description, body)
    except InputError as error:
        raise reject(str(error)) from None
    return Proposal(mind=mind, bank=bank, type=memory_type, name=name, description=description, body=body)


def _bank(value: str, memory_type: str, banks: list[str]) -> str | None:
    """Return the normalized bank of a proposal, None when it is not allowed."""
    if memory_type == "user":
        return USER_BANK if value == USER_BANK else None
    try:
        directory = str(normalize_directory(value))
    except InputError:
        return None
    return directory if directory in banks else None
