"""A curator run: propose changes to banks and write them as a proposal set; change no memory.

``rot`` asks whether each memory still matches what the recent sessions and
the voyage log say; ``merge`` whether two or more memories cover one thing;
``split`` whether one memory bundles unrelated concerns; ``lint`` whether the
bank is well formed. One mind (``$SANDMAN_MIND_CURATE``) answers per bank
(prompts/curate.md), its reply validated whole (curators.proposals). ``lint``
also runs checks that need no model (``lint_checks``): MEMORY.md and the files
agree, no two memories share a body, no file in ``_archive/`` is still live
and no memory file is unreadable. The set is committed as
``curate: <curator> proposals <set>`` (``Verb: curate``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from sandman import config, journal
from sandman.banks import index as bank_index
from sandman.banks.commit import bank_transaction
from sandman.banks.index import memory_files
from sandman.banks.listing import bank_directory_of, bank_folders, find_bank
from sandman.banks.memory import one_line
from sandman.banks.names import USER_BANK
from sandman.curators.proposals import ACTIONS, CURATORS, list_sets, parse_reply, report, set_json, set_paths
from sandman.errors import InputError, ProposalRefused, ReplyRejected
from sandman.journal import iso, now_utc
from sandman.layout import BANK_ARCHIVE, BANK_INDEX, Layout
from sandman.minds import budget, prompts
from sandman.minds.runner import run_mind
from sandman.pointers import list_pointers
from sandman.curators.upkeep_plan import Listed, read_listing

VERB = "curate"
LISTING_MAX_CHARS = 60_000
WORLD_MAX_CHARS = 12_000
QUESTIONS = {
    "rot": "For each memory: does it still match the current state of the world, as the recent sessions and "
           "the voyage log show it? Propose to modify what changed, archive what is no longer true, flag "
           "what you cannot judge. Its `reached:` line says how many sessions it reached and when last: a "
           "memory that never reached a session is a candidate (nothing needed it), one that reached many "
           "is in use.",
    "merge": "Do two or more memories cover the same thing, so that one would say it better? Propose to "
             "merge them; flag a boundary that is a judgment call.",
    "split": "Has one memory accreted two or more unrelated concerns? Propose to split it into memories of "
             "one concern each; flag a boundary that is a judgment call.",
    "lint": "Is the bank well formed and consistent with itself: no two memories saying the same thing, no "
            "contradictions, no memory filed under the wrong type, no reference to something the bank "
            "shows is gone? Propose to modify or archive, or flag.",
}
ACTION_HELP = {
    "modify": "- `modify`: one target; give the new `body` and, when they change, `name` and `description`. "
              "The old text moves to the bank's archive.",
    "archive": "- `archive`: one target that is no longer true or wholly said by another memory. It moves to "
               "the bank's archive; nothing is deleted.",
    "merge": "- `merge`: two or more targets that say one thing become one memory: give its `type`, `name`, "
             "`description` and `body` (the whole merged text). The members move to the archive.",
    "split": "- `split`: one target becomes two or more memories: give `results`, a list of objects with "
             "`type`, `name`, `description` and `body`. The original moves to the archive.",
    "flag": "- `flag`: one or more targets the owner should look at; nothing changes when it is accepted.",
}


@dataclass
class Run:
    """One curator run: the set written (None when nothing was), what each bank's mind did."""

    set_id: str | None
    curator: str
    proposals: int = 0
    banks: list[str] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)  # {"bank", "reason"}
    commit: str | None = None


def _banks(layout: Layout, bank: str | None) -> list[Path]:
    if bank is None:
        return [folder for folder in bank_folders(layout) if memory_files(folder)]
    found = find_bank(layout, bank)
    if found is None:
        raise InputError(f"no bank {bank!r} under {layout.memories}/; `sandman curate <curator>` without "
                         "--bank curates them all")
    return [found.folder]


def reached_line(usage) -> str:
    """The ``reached:`` evidence of one memory (a sandman.recall.ledger.Usage, or None): how many sessions
    it reached and when last, or that it never reached one on this machine."""
    if usage is None:
        return "reached: never (no session on this machine was given it)"
    sessions = f"{usage.sessions} session" + ("" if usage.sessions == 1 else "s")
    return f"reached: {sessions}, last {usage.last}"


def _listing(listed: dict[str, Listed], reached: dict | None = None, bank: str = "") -> str:
    """The bank's memories as the curator's prompt shows them; with ``reached`` (sandman.recall.ledger.usage,
    for ``rot``) each memory says how often it reached a session."""
    blocks = []
    for file, item in sorted(listed.items()):
        m = item.memory
        used = "" if reached is None else reached_line(reached.get(f"{bank}/{file}")) + "\n"
        blocks.append(f"### {file}\ntype: {m.type}\ncreated: {m.created or 'unknown'}\n{used}"
                      f"name: {one_line(m.name)}\ndescription: {one_line(m.description)}\n\n{m.body.rstrip()}")
    text = "\n\n".join(blocks) or "(the bank is empty)"
    if len(text) > LISTING_MAX_CHARS:
        text = text[:LISTING_MAX_CHARS] + "\n\n[... the rest of the bank is cut here ...]"
    return text


def _world(layout: Layout, folder: Path) -> str:
    directory = bank_directory_of(folder)
    lines = []
    for pointer in sorted(list_pointers(layout), key=lambda p: str(p.data.get("ended") or ""), reverse=True):
        if directory is not None and pointer.data.get("cwd") != directory:
            continue
        title = one_line(str(pointer.data.get("title") or "untitled"))
        lines.append(f"- session {pointer.data.get('ended') or '?'}: {title}")
        lines += [f"  - {one_line(str(h))[:300]}" for h in pointer.data.get("highlights") or [] if isinstance(h, str)]
    if layout.log.is_dir():
        for entry in sorted(layout.log.glob("????-??-??.md"), reverse=True)[:3]:
            try:
                lines.append(f"- voyage log {entry.stem}:\n{entry.read_text(encoding='utf-8').strip()[:3000]}")
            except (OSError, UnicodeDecodeError):
                continue
    text = "\n".join(lines) or "(no recent session or voyage log entry)"
    return text[:WORLD_MAX_CHARS]


def curator_prompt(layout: Layout, curator: str, folder: Path, listed: dict[str, Listed]) -> tuple[str, str]:
    """Return ``(prompt, nonce)``: prompts/curate.md filled for one bank. Raises FileNotFoundError."""
    reached = None
    if curator == "rot":
        from sandman.recall.ledger import usage

        reached = usage(layout)
    listing, world = _listing(listed, reached, folder.name), _world(layout, folder)
    directory = bank_directory_of(folder) or "the user-wide bank (memories about the person)"
    nonce = prompts.new_nonce([listing, world, directory])
    values = {
        "curator": curator, "question": QUESTIONS[curator],
        "bank": prompts.fence("directory", directory, nonce),
        "listing": prompts.fence("listing", listing, nonce),
        "world": prompts.fence("world", world, nonce),
        "nonce": nonce,
        "actions": "\n".join(ACTION_HELP[action] for action in ACTIONS[curator]),
        "types": "`user` only" if folder.name == USER_BANK else "`feedback`, `project` or `reference`",
    }
    return prompts.fill(prompts.load("curate"), values), nonce


_ARCHIVED = re.compile(r"\d{8}T\d{6}(?:-\d+)?_(.+\.md)")


def lint_checks(folder: Path, listed: dict[str, Listed]) -> list[dict]:
    """Return lint's findings that need no model, as proposals (``check`` names the check).

    ``index``: MEMORY.md is not what the files make it (a ``flag``: applying it
    regenerates the index); ``duplicate``: a memory whose type and body another,
    earlier one has (``archive``, high confidence); ``archive``: a live file
    whose bytes are also in ``_archive/`` (a copy, not a move) or an
    ``_archive/`` name that is not ``<stamp>_<file>`` (``flag``);
    ``unreadable``: a memory file that does not parse (``flag``).
    """
    found: list[dict] = []
    bank = folder.name

    def add(action: str, targets: list[str], check: str, reasoning: str, evidence: list[str],
            confidence: str = "medium") -> None:
        found.append({"bank": bank, "action": action, "targets": targets, "check": check,
                      "reasoning": reasoning, "evidence": evidence, "confidence": confidence})

    index = folder / BANK_INDEX
    current = index.read_text(encoding="utf-8", errors="replace") if index.is_file() else None
    if current != bank_index.render_index(folder):
        listed_files = {entry for entry in bank_index.current_lines(folder)} if current is not None else set()
        files = {path.name for path in memory_files(folder)}
        evidence = [f"MEMORY.md lists {name}, which is not a memory file" for name in sorted(listed_files - files)]
        evidence += [f"{name} is not listed in MEMORY.md" for name in sorted(files - listed_files)]
        add("flag", [BANK_INDEX], "index", "MEMORY.md does not match the memory files; applying this "
            "regenerates it.", evidence or ["MEMORY.md differs from what the files make it"], "high")
    seen: dict[tuple[str, str], str] = {}
    for file, item in sorted(listed.items(), key=lambda kv: (kv[1].memory.created or "", kv[0])):
        key = (item.memory.type, item.memory.body.strip())
        if key in seen:
            add("archive", [file], "duplicate", f"Its type and body are those of {seen[key]}, which is older.",
                [f"{file} and {seen[key]} have the same body"], "high")
        else:
            seen[key] = file
    unreadable = sorted(path.name for path in memory_files(folder) if path.name not in listed)
    for file in unreadable:
        add("flag", [file], "unreadable", "The file does not parse as a memory; recall shows its index line only.",
            [f"{file} has no valid frontmatter"])
    archive = folder / BANK_ARCHIVE
    if archive.is_dir():
        live = {hashlib.sha256(item.text.encode("utf-8")).hexdigest(): file for file, item in listed.items()}
        for path in sorted(archive.iterdir()):
            match = _ARCHIVED.fullmatch(path.name)
            if not match:
                add("flag", [BANK_ARCHIVE + "/" + path.name], "archive",
                    "An archive entry is not named <stamp>_<file>: something other than sandman put it there.",
                    [f"{BANK_ARCHIVE}/{path.name}"])
                continue
            try:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                continue
            if digest in live and live[digest] == match.group(1):
                add("flag", [live[digest]], "archive", "The file is archived and still live: a half-finished "
                    "archive (a copy, not a move).", [f"{BANK_ARCHIVE}/{path.name} has the same bytes"])
    return found


def _set_id(layout: Layout, curator: str) -> str:
    stamp = now_utc().strftime("%Y%m%dT%H%M%SZ")
    taken = set(list_sets(layout))
    set_id, n = f"{stamp}-{curator}", 2
    while set_id in taken or layout.proposal_set(set_id).exists():
        set_id, n = f"{stamp}-{curator}-{n}", n + 1
    return set_id


def curate(layout: Layout, curator: str, *, bank: str | None = None, model: bool = True,
           timeout: float | None = None) -> Run:
    """Run one curator over one bank (``bank``: a name or directory) or every bank; write the set.

    ``model`` False runs lint's checks alone (lint only). Returns the Run; its
    ``set_id`` is None when there was no bank to curate or nothing to propose
    (then nothing is written). Raises InputError (an
    unknown curator or bank, ``model`` False for another curator),
    ProposalRefused (every mind's reply was refused or abstained: no set),
    LockBusy, RepositoryError.
    """
    if curator not in CURATORS:
        raise InputError(f"unknown curator {curator!r}; use one of {', '.join(CURATORS)}")
    if not model and curator != "lint":
        raise InputError(f"--no-model runs lint's own checks; the {curator} curator needs a mind")
    folders = _banks(layout, bank)
    run = Run(set_id=None, curator=curator, banks=[folder.name for folder in folders])
    if not folders:
        return run
    timeout = timeout if timeout is not None else config.mind_timeout()
    proposals: list[dict] = []
    fingerprints: dict[str, str] = {}
    asked = 0
    for folder in folders:
        listed = read_listing(folder)
        fingerprints.update({f"{folder.name}/{file}": item.fingerprint for file, item in listed.items()})
        if curator == "lint":
            proposals += lint_checks(folder, listed)
        if not model or not listed:
            continue
        asked += 1
        prompt, nonce = curator_prompt(layout, curator, folder, listed)
        result = run_mind(prompt, mind=VERB, model=config.model(config.MIND_CURATE), cwd=layout.dream_dir,
                          timeout=timeout, persist=False)
        cost = {f"{budget.COST_PREFIX}{VERB}": budget.cost_fact(result.cost_usd)}
        if not result.answered:
            run.refused.append({"bank": folder.name, "reason": f"the mind abstained ({result.reason})"})
            journal.write(layout, VERB, "abstained", curator=curator, bank=folder.name, reason=result.reason, **cost)
            continue
        try:
            found = parse_reply(result.text or "", curator=curator, bank=folder.name, files=set(listed),
                                nonce=nonce, first=len(proposals) + 1)
        except ReplyRejected as rejected:
            run.refused.append({"bank": folder.name, "reason": f"reply refused: {rejected.reason}"})
            journal.write(layout, VERB, "refused", curator=curator, bank=folder.name, reason=rejected.reason, **cost)
            continue
        journal.write(layout, VERB, "proposed", curator=curator, bank=folder.name, proposals=len(found), **cost)
        proposals += found
    if asked and len(run.refused) == asked and not proposals:
        raise ProposalRefused(f"curate {curator}: nothing proposed; " + "; ".join(
            f"{item['bank']}: {item['reason']}" for item in run.refused))
    if not proposals and not run.refused:
        journal.write(layout, VERB, "nothing", curator=curator, banks=len(folders))
        return run  # a bank in order: no set, no commit
    written = write_set(layout, curator, run.banks, proposals, fingerprints, refused=run.refused,
                        model=config.model(config.MIND_CURATE) if model else None)
    run.set_id, run.proposals, run.commit = written[0], len(proposals), written[1]
    return run


def write_set(layout: Layout, curator: str, banks: list[str], proposals: list[dict], fingerprints: dict[str, str],
              *, refused: list[dict] | None = None, model: str | None = None,
              also: dict[Path, str] | None = None, trailers: dict[str, str] | None = None) -> tuple[str, str | None]:
    """Number ``proposals`` and commit them as a new set (with ``also``: more versioned files in the
    same commit); return ``(set id, commit id)``. Raises LockBusy, RepositoryError."""
    for number, proposal in enumerate(proposals, 1):
        proposal["id"] = f"p{number}"
    set_id = _set_id(layout, curator)
    data = {"set": set_id, "curator": curator, "created": iso(now_utc()), "banks": banks, "model": model,
            "fingerprints": fingerprints,
            "proposals": [{"id": p["id"], **{k: v for k, v in p.items() if k != "id"}} for p in proposals],
            "refused": refused or [], "decisions": {}}
    json_path, report_path = set_paths(layout, set_id)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    with bank_transaction(layout, verb=VERB, subject=f"{curator} proposals {set_id}",
                          trailers={"Set": set_id, **(trailers or {})}) as tx:
        tx.write_file(json_path, set_json(data))
        tx.write_file(report_path, report(data))
        for path, text in (also or {}).items():
            tx.write_file(path, text)
    journal.write(layout, VERB, "set-written", curator=curator, set=set_id, proposals=len(proposals),
                  refused=len(refused or []) or None, commit=(tx.commit or "")[:12])
    return set_id, tx.commit
