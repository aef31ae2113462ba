"""Upkeep's contract with its minds: the bank listing, the plan, the merge (docs/BANK-FORMAT.md, "Upkeep plans").

The planning mind reads a listing of the bank (each live memory's file, type,
created, name, description and the first lines of its body), fenced as data,
and answers a plan of at most ``config.UPKEEP_MAX_OPS`` operations::

    {"operations": [{"op": "prune", "file": "<file>"},
                    {"op": "merge", "files": ["<file>", "<file>", ...], "type": "...",
                     "name": "...", "description": "..."},
                    {"op": "retitle", "file": "<file>", "name": "...", "description": "..."}]}

A plan is validated whole: any fault rejects it entire. Each merge's body then
comes from a second mind that reads the members whole and answers
``{"body": "..."}``. sandman.reflect.upkeep decides when and applies.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from sandman import config
from sandman.banks.index import memory_files
from sandman.banks.listing import bank_directory_of
from sandman.banks.memory import (
    DESCRIPTION_MAX_CHARS, NAME_MAX_CHARS, Memory, clean_body, one_line, parse_memory, validate_fields,
)
from sandman.banks.names import MEMORY_TYPES, USER_BANK
from sandman.banks.secrets import find_secrets
from sandman.errors import FormatError, InputError, ReplyRejected
from sandman.minds import prompts
from sandman.minds.reply import extract_json, reply_list
from sandman.store.atomic import read_regular

OPS = ("prune", "merge", "retitle")
_FILE = re.compile(r"(?:" + "|".join(MEMORY_TYPES) + r")_[^/\\\0\s]+\.md")


@dataclass(frozen=True)
class Listed:
    """One memory as the listing read it: its bytes' SHA-256, its parse and its text."""

    file: str
    fingerprint: str
    memory: Memory
    text: str


@dataclass(frozen=True)
class Operation:
    """One validated operation of a plan; ``files`` are bare file names of the bank."""

    op: str
    files: tuple[str, ...]
    type: str | None = None
    name: str | None = None
    description: str | None = None


def read_listing(folder: Path) -> dict[str, Listed]:
    """Read every live memory of ``folder`` once: file -> Listed (a file that cannot be parsed is left out)."""
    listed = {}
    for path in memory_files(folder):
        try:
            data = read_regular(path)
            text = data.decode("utf-8")
            memory = parse_memory(text)
        except (OSError, UnicodeDecodeError, FormatError):
            continue
        listed[path.name] = Listed(path.name, hashlib.sha256(data).hexdigest(), memory, text)
    return listed


def _head(body: str) -> list[str]:
    lines = [line.rstrip() for line in body.splitlines() if line.strip()][: config.UPKEEP_BODY_LINES]
    limit = config.UPKEEP_LINE_MAX_CHARS
    return [line if len(line) <= limit else line[: limit - 1] + "…" for line in lines]


def listing_text(listed: dict[str, Listed]) -> str:
    """Return the listing the planning mind reads: per memory its file, type, name, description, body head."""
    blocks = []
    for file, item in sorted(listed.items()):
        memory = item.memory
        head = "\n".join(f"    {line}" for line in _head(memory.body)) or "    (empty)"
        blocks.append(f"- file: {file}\n  type: {memory.type}\n  created: {memory.created or 'unknown'}\n"
                      f"  name: {one_line(memory.name)}\n  description: {one_line(memory.description)}\n"
                      f"  body, first lines:\n{head}")
    return "\n".join(blocks) or "(the bank is empty)"


def plan_prompt(folder: Path, listed: dict[str, Listed]) -> tuple[str, str]:
    """Return ``(prompt, nonce)``: prompts/upkeep.md filled for one bank. Raises FileNotFoundError."""
    listing = listing_text(listed)
    # A bank's directory is a session's cwd: third-party text, fenced like the listing.
    directory = bank_directory_of(folder) or "the user-wide bank (memories about the person)"
    nonce = prompts.new_nonce([listing, directory])
    user = folder.name == USER_BANK
    values = {
        "bank": prompts.fence("directory", directory, nonce),
        "count": str(len(listed)),
        "listing": prompts.fence("listing", listing, nonce),
        "nonce": nonce,
        "max_ops": str(config.UPKEEP_MAX_OPS),
        "types": "`user` only" if user else "`feedback`, `project` or `reference` (never `user`)",
    }
    return prompts.fill(prompts.load("upkeep"), values), nonce


def _check_text(label: str, value: object, limit: int, where) -> str:
    if not isinstance(value, str) or not one_line(value):
        raise where(f"{label} missing or not a string")
    text = one_line(value)
    if len(text) > limit:
        raise where(f"{label} over {limit} characters")
    return text


def _check_file(value: object, where) -> str:
    if not isinstance(value, str) or not _FILE.fullmatch(value):
        raise where(f"file {str(value)[:80]!r} is not a memory file name")
    return value


def _operation(item: object, number: int, bank: str, listed: dict[str, Listed]) -> Operation:
    def where(what: str) -> ReplyRejected:
        return ReplyRejected(f"operation {number}: {what}")

    if not isinstance(item, dict):
        raise where("not an object")
    op = item.get("op")
    if op not in OPS:
        raise where(f"unknown op {str(op)[:40]!r}")
    if op == "merge":
        files = item.get("files")
        if not isinstance(files, list) or len(files) < 2:
            raise where("a merge needs a files list of two or more")
        files = tuple(_check_file(file, where) for file in files)
        if len(set(files)) != len(files):
            raise where("a merge names a file twice")
        memory_type = item.get("type")
        allowed = ("user",) if bank == USER_BANK else tuple(t for t in MEMORY_TYPES if t != "user")
        if memory_type not in allowed:
            raise where(f"type {str(memory_type)[:40]!r} is not allowed in this bank")
    else:
        files, memory_type = (_check_file(item.get("file"), where),), None
    if op == "prune":
        return Operation(op, files)
    name = _check_text("name", item.get("name"), NAME_MAX_CHARS, where)
    description = _check_text("description", item.get("description"), DESCRIPTION_MAX_CHARS, where)
    kinds = find_secrets(name, description)
    if kinds:
        raise where("secret (" + ", ".join(kinds) + ")")
    current = listed.get(files[0])
    if op == "retitle" and current is not None and (
            one_line(current.memory.name), one_line(current.memory.description)) == (name, description):
        raise where("a retitle that changes nothing")
    return Operation(op, files, memory_type, name, description)


def parse_plan(text: str, *, nonce: str, bank: str, listed: dict[str, Listed]) -> list[Operation]:
    """Return the operations of a planning mind's reply, or raise ReplyRejected with the reason.

    The whole plan is refused for any fault: ``echo``, ``refusal``,
    ``unparseable``, ``not an object``, ``no operations list``, ``too many
    operations``, ``operation <n>: <what>`` (not an object, an unknown op, a
    bad file name, a merge of fewer than two files, a type the bank cannot
    hold, a missing or over-long name or description, a secret, a retitle that
    changes nothing, a file another operation already names). A file the
    listing does not hold is not a fault here: that operation is skipped as a
    conflict when the plan is applied.
    """
    items = reply_list(text, "operations", config.UPKEEP_MAX_OPS, nonce)
    plan, seen = [], set()
    for number, item in enumerate(items, 1):
        operation = _operation(item, number, bank, listed)
        shared = seen.intersection(operation.files)
        if shared:
            raise ReplyRejected(f"operation {number}: {sorted(shared)[0]} is in another operation")
        seen.update(operation.files)
        plan.append(operation)
    # Every op is net-non-increasing by its shape (prune -1, merge -(n-1), retitle 0): the bank never grows.
    return plan


# --- merges: the second call ----------------------------------------------------


def merge_prompt(folder: Path, op: Operation, listed: dict[str, Listed]) -> tuple[str, str]:
    """Return ``(prompt, nonce)``: prompts/merge.md with every member's file whole, fenced."""
    members = "\n\n".join(f"### {file}\n{listed[file].text.rstrip()}" for file in op.files)
    directory = bank_directory_of(folder) or "the user-wide bank"
    nonce = prompts.new_nonce([members, op.name or "", op.description or "", directory])
    values = {
        "bank": prompts.fence("directory", directory, nonce),
        "type": op.type or "",
        "name": prompts.fence("name", op.name or "", nonce),
        "description": prompts.fence("description", op.description or "", nonce),
        "members": prompts.fence("members", members, nonce),
        "nonce": nonce,
    }
    return prompts.fill(prompts.load("merge"), values), nonce


def parse_merge(text: str, *, nonce: str, op: Operation) -> str:
    """Return the merged body of a merge mind's reply ``{"body": "..."}``, or raise ReplyRejected.

    Reasons: ``echo``, ``refusal``, ``unparseable``, ``not an object``, ``body
    missing or not a string``, a field check's message, ``secret (<kinds>)``.
    """
    if nonce in text:
        raise ReplyRejected("echo")
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ReplyRejected("not an object")
    if not isinstance(data.get("body"), str):
        raise ReplyRejected("body missing or not a string")
    body = clean_body(data["body"]) if data["body"].strip() else ""
    try:
        validate_fields(op.type or "", op.name or "", op.description or "", body)
    except InputError as error:
        raise ReplyRejected(str(error)) from None
    kinds = find_secrets(body)
    if kinds:
        raise ReplyRejected("secret (" + ", ".join(kinds) + ")")
    return body
