"""Proposals and proposal sets (docs/BANK-FORMAT.md, "Proposal sets").

A curator mind answers ``{"proposals": [...]}``, each proposal::

    {"action": "archive" | "modify" | "merge" | "split" | "flag",
     "targets": ["<memory file of the bank>", ...],
     "reasoning": "<why>", "evidence": ["<what shows it>", ...], "confidence": "high" | "medium" | "low",
     # modify: "body" and/or "name", "description"
     # merge: "type", "name", "description", "body"
     # split: "results": [{"type", "name", "description", "body"}, ...]   (two or more)
    }

The reply is validated whole: one bad proposal refuses the reply, with the
reason (``parse_reply``). A set is ``curation/<set id>/``: ``proposals.json``
(what apply reads) and ``REPORT.md`` (what a person reads), committed when the
run ends; ``apply`` adds the ``decisions`` and commits again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sandman.banks.memory import DESCRIPTION_MAX_CHARS, NAME_MAX_CHARS, clean_body, one_line, validate_fields
from sandman.banks.names import MEMORY_TYPES, USER_BANK
from sandman.banks.secrets import find_secrets
from sandman.errors import FormatError, InputError, ReplyRejected
from sandman.layout import Layout
from sandman.minds.reply import reply_list
from sandman.store.atomic import read_regular

CURATORS = ("rot", "merge", "split", "lint")
ACTIONS = {
    "rot": ("modify", "archive", "flag"),
    "merge": ("merge", "flag"),
    "split": ("split", "flag"),
    "lint": ("modify", "archive", "flag"),
}
CONFIDENCES = ("high", "medium", "low")
MAX_PROPOSALS = 12
EVIDENCE_MAX_ITEMS = 10
TEXT_MAX_CHARS = 2_000
SET_ID = re.compile(r"\d{8}T\d{6}Z-(?:rot|merge|split|lint|upkeep)(?:-\d+)?")  # upkeep: its review gate


def _refuse(number: int, what: str) -> ReplyRejected:
    return ReplyRejected(f"proposal {number}: {what}")


def _text(number: int, label: str, value: object, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _refuse(number, f"{label} missing or not a string")
    if len(value) > limit:
        raise _refuse(number, f"{label} over {limit:,} characters")
    return value.strip()


def _memory_fields(number: int, item: dict, bank: str, *, need_type: bool) -> dict:
    allowed = ("user",) if bank == USER_BANK else tuple(t for t in MEMORY_TYPES if t != "user")
    fields = {}
    if need_type:
        if item.get("type") not in allowed:
            raise _refuse(number, f"type {str(item.get('type'))[:40]!r} is not allowed in this bank")
        fields["type"] = item["type"]
    fields["name"] = one_line(_text(number, "name", item.get("name"), NAME_MAX_CHARS))
    fields["description"] = one_line(_text(number, "description", item.get("description"), DESCRIPTION_MAX_CHARS))
    fields["body"] = clean_body(_text(number, "body", item.get("body"), 64 * 1024))
    try:
        validate_fields(fields.get("type", allowed[0]), fields["name"], fields["description"], fields["body"])
    except InputError as error:
        raise _refuse(number, str(error)) from None
    return fields


def check_proposal(item: object, number: int, *, curator: str, bank: str, files: set[str]) -> dict:
    """Return one proposal of a reply, checked, as it is stored (``id`` ``p<number>``, ``bank``).

    Raises ReplyRejected (``proposal <n>: <what>``): not an object, an action
    the curator does not have, no targets or a target outside the bank,
    empty evidence, an unknown confidence, missing or bad fields, a secret.
    """
    if not isinstance(item, dict):
        raise _refuse(number, "not an object")
    action = item.get("action")
    if action not in ACTIONS[curator]:
        raise _refuse(number, f"unknown action {str(action)[:40]!r} for the {curator} curator "
                              f"(one of {', '.join(ACTIONS[curator])})")
    targets = item.get("targets")
    if not isinstance(targets, list) or not targets or not all(isinstance(t, str) for t in targets):
        raise _refuse(number, "targets missing or not a list of file names")
    outside = [t for t in targets if t not in files]
    if outside:
        raise _refuse(number, f"target {outside[0][:80]!r} is not a live memory of bank {bank}")
    if len(set(targets)) != len(targets):
        raise _refuse(number, "a target is named twice")
    wanted = {"merge": 2, "archive": 1, "modify": 1, "split": 1}.get(action)
    if action == "merge" and len(targets) < 2:
        raise _refuse(number, "a merge needs two or more targets")
    if action in ("archive", "modify", "split") and len(targets) != wanted:
        raise _refuse(number, f"{action} takes exactly one target")
    evidence = item.get("evidence")
    if (not isinstance(evidence, list) or not evidence or len(evidence) > EVIDENCE_MAX_ITEMS
            or not all(isinstance(e, str) and e.strip() for e in evidence)):
        raise _refuse(number, f"evidence must be a list of 1 to {EVIDENCE_MAX_ITEMS} non-empty strings")
    if item.get("confidence") not in CONFIDENCES:
        raise _refuse(number, f"confidence {str(item.get('confidence'))[:40]!r} is not one of "
                              f"{', '.join(CONFIDENCES)}")
    stored = {"id": f"p{number}", "bank": bank, "action": action, "targets": list(targets),
              "reasoning": _text(number, "reasoning", item.get("reasoning"), TEXT_MAX_CHARS),
              "evidence": [e.strip()[:TEXT_MAX_CHARS] for e in evidence], "confidence": item["confidence"]}
    if action == "merge":
        stored.update(_memory_fields(number, item, bank, need_type=True))
    elif action == "modify":
        if not any(isinstance(item.get(key), str) and item[key].strip() for key in ("name", "description", "body")):
            raise _refuse(number, "a modify changes none of name, description, body")
        for key, limit in (("name", NAME_MAX_CHARS), ("description", DESCRIPTION_MAX_CHARS), ("body", 64 * 1024)):
            if item.get(key) is not None:
                value = _text(number, key, item[key], limit)
                stored[key] = clean_body(value) if key == "body" else one_line(value)
    elif action == "split":
        results = item.get("results")
        if not isinstance(results, list) or len(results) < 2:
            raise _refuse(number, "a split needs a results list of two or more memories")
        stored["results"] = [_memory_fields(number, r if isinstance(r, dict) else {}, bank, need_type=True)
                             for r in results]
    kinds = find_secrets(json.dumps(stored, ensure_ascii=False))
    if kinds:
        raise _refuse(number, "secret (" + ", ".join(kinds) + ")")
    return stored


def parse_reply(text: str, *, curator: str, bank: str, files: set[str], nonce: str | None,
                first: int = 1) -> list[dict]:
    """Return the checked proposals of a curator mind's reply, numbered from ``first``.

    Raises ReplyRejected for the reply whole: ``echo``, ``refusal``,
    ``unparseable`` (not JSON), ``not an object``, ``no proposals list``,
    ``too many proposals``, ``proposal <n>: <what>`` (check_proposal), and a
    file named by two proposals.
    """
    items = reply_list(text, "proposals", MAX_PROPOSALS, nonce)
    checked, seen = [], set()
    for offset, item in enumerate(items):
        proposal = check_proposal(item, first + offset, curator=curator, bank=bank, files=files)
        if proposal["action"] != "flag":
            shared = seen.intersection(proposal["targets"])
            if shared:
                raise _refuse(first + offset, f"{sorted(shared)[0]} is in another proposal")
            seen.update(proposal["targets"])
        checked.append(proposal)
    return checked


# --- the set on disk ------------------------------------------------------------


def check_set_id(set_id: str) -> str:
    """Return ``set_id`` when it names a set (``<YYYYMMDDTHHMMSSZ>-<curator>[-n]``); raise InputError."""
    if not isinstance(set_id, str) or not SET_ID.fullmatch(set_id):
        raise InputError(f"{str(set_id)[:80]!r} is not a proposal set id (like 20261201T220000Z-rot); "
                         "`sandman curate review` lists them")
    return set_id


def read_set(layout: Layout, set_id: str) -> dict:
    """Return ``proposals.json`` of a set. Raises InputError (bad id, no such set), FormatError."""
    path = layout.proposal_set(check_set_id(set_id)) / "proposals.json"
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except FileNotFoundError:
        raise InputError(f"no proposal set {set_id} under {layout.curation}/; "
                         "`sandman curate review` lists them") from None
    except (OSError, ValueError, RecursionError, UnicodeDecodeError) as error:
        raise FormatError(f"{path} is not readable JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("proposals"), list):
        raise FormatError(f"{path} is not a proposal set (no proposals list)")
    return data


def list_sets(layout: Layout) -> list[str]:
    """Return the ids of every proposal set, newest first."""
    if not layout.curation.is_dir():
        return []
    return sorted((p.name for p in layout.curation.iterdir() if SET_ID.fullmatch(p.name) and p.is_dir()),
                  reverse=True)


def set_json(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _quote(text: str) -> list[str]:
    return ["    " + line for line in text.splitlines()] or ["    (empty)"]


def report(data: dict) -> str:
    """Return ``REPORT.md``: the set's proposals for a person, with their decisions once applied."""
    decisions = data.get("decisions") or {}
    lines = [f"# Proposal set {data['set']} ({data['curator']})", "",
             f"Created {data['created']} over {', '.join(data.get('banks') or []) or 'no bank'}; "
             f"{len(data['proposals'])} proposal(s).", ""]
    if data.get("refused"):
        lines += ["Refused replies (nothing of them is proposed):", ""]
        lines += [f"- {item['bank']}: {item['reason']}" for item in data["refused"]] + [""]
    if not data["proposals"]:
        lines.append("Nothing to propose.")
    for proposal in data["proposals"]:
        decided = decisions.get(proposal["id"], {}).get("decision")
        title = f"## {proposal['id']}: {proposal['action']} {', '.join(proposal['targets'])}"
        lines += [title + (f" — {decided}" if decided else ""), "",
                  f"- bank: {proposal['bank']}", f"- confidence: {proposal['confidence']}"
                  + (" (accepted by default)" if proposal["confidence"] == "high" else ""),
                  *([f"- check: {proposal['check']}"] if proposal.get("check") else []),
                  f"- reasoning: {one_line(proposal['reasoning'])}", "- evidence:",
                  *[f"  - {one_line(item)}" for item in proposal["evidence"]]]
        for key in ("type", "name", "description"):
            if key in proposal:
                lines.append(f"- new {key}: {proposal[key]}")
        if "body" in proposal:
            lines += ["- new body:", *_quote(proposal["body"])]
        for number, result in enumerate(proposal.get("results", []), 1):
            lines += [f"- result {number}: {result['type']} · {result['name']} — {result['description']}",
                      *_quote(result["body"])]
        lines.append("")
    lines += ["Apply: `sandman curate apply " + data["set"] + "` (high confidence only), or with "
              "`--accept p1,p2` and `--reject p3`.", ""]
    return "\n".join(lines)


def set_paths(layout: Layout, set_id: str) -> tuple[Path, Path]:
    folder = layout.proposal_set(set_id)
    return folder / "proposals.json", folder / "REPORT.md"
