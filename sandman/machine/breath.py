"""The breath store: the research engine's feeds, breaths, passes and weights (docs/BANK-FORMAT.md § breath).

The seed's "ruach": ideas from outside (release notes, papers, other projects'
changelogs), read and judged in a Claude Code session, filed against one of the
owner's repositories, tried by a shift, and adopted or dropped. sandman holds
the store and composes the reading session's prompt; it calls no model and
no network. On disk, under ``breath/`` (versioned)::

    sources.toml              the feeds (the owner's file; ``init`` writes an example)
    weights.json              each source's current weight and clocks; reweight's last run
    breaths/<id>.json         one breath: filed -> spiked -> adopted | dropped
    passes/<id>/pass.json     one reading pass: its due sources, session, cost, close
    passes/<id>/prompt.md     the prompt the reading session follows (prompts/breathe.md)
    problems.md               open problems, written by ``shift brief``; read by ``pass``

Every change is one commit (``Verb: breathe``) carrying its trail event
(``breath.init``, ``breath.file``, ``breath.spike``, ``breath.adopt``,
``breath.drop``, ``breath.pass``, ``breath.attach``, ``breath.close``,
``breath.reweight``); a refused change writes nothing. Time is passed in
(``now``, timezone-aware) wherever it matters, so a year of reweights runs in a
test without sleeping.

The API for the other machine verbs: ``breaths_for(layout, repo)`` (what a
shift brief carries), ``load_sources``, ``list_breaths``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from sandman import config, journal
from sandman.errors import InputError, PassRefused, SecretRefused
from sandman.layout import Layout
from sandman.marks import refuse_controls
from sandman.machine import refs, trail

VERB = "breathe"
STATES = ("filed", "spiked", "adopted", "dropped")
# state -> the states it may move to; adopted and dropped are final.
MOVES = {"spike": ("spiked", ("filed",)), "adopt": ("adopted", ("filed", "spiked")),
         "drop": ("dropped", ("filed", "spiked"))}
SCORES = ("bearing", "novelty", "provenance")  # the judge's scores, each a number in [0, 1]
CADENCES = {"hourly": timedelta(hours=1), "daily": timedelta(days=1), "weekly": timedelta(weeks=1),
            "monthly": timedelta(days=30)}
ADOPTION_RAISE = 0.1  # reweight adds this to a source per adoption since its last run
SILENCE_PENALTY = 0.1  # ... and takes this per silent calendar month
TITLE_MAX_CHARS = 200
BODY_MAX_CHARS = 4000
PROBLEMS_MAX_CHARS = 20_000  # what of problems.md a pass prompt carries
# The reading runner's two passes (docs/breathe.md, "The runner"): the hourly skim reads the due
# sources whose cadence is hourly; the daily deep pass reads every due source.
DEPTHS = {"skim": ("hourly",), "deep": tuple(CADENCES)}
FIELDS = ("title", "address", "source", "repo", "scores", "body", "pass")
SOURCE_KEYS = ("name", "address", "kind", "cadence", "weight")
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_KIND = re.compile(r"[a-z][a-z0-9-]{0,31}")
_ADDRESS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
BREATH_ID = re.compile(r"b-[0-9]{8}-[0-9a-f]{10}")
PASS_ID = re.compile(r"p-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}")

EXAMPLE_SOURCES = '''\
# sandman breathe: the feeds a reading pass looks at (docs/BANK-FORMAT.md § breath).
# One [[source]] table per feed:
#   name     a short unique name: lower case, digits, ".", "_", "-"
#   address  where to read it (a URL)
#   kind     one word for what it is: feed, changelog, page, paper, ...
#   cadence  how often it is due: hourly, daily, weekly or monthly
#   weight   in [0, 1]: the starting weight; a pass reads due sources heaviest first.
#            `sandman breathe reweight` moves the current weight (kept in weights.json):
#            +0.1 per adoption, -0.1 per silent month. Change it here to reset it.
# These examples are public and general; replace them with what bears on your repositories.

[[source]]
name = "claude-code-changelog"
address = "https://github.com/anthropics/claude-code/blob/main/CHANGELOG.md"
kind = "changelog"
cadence = "daily"
weight = 0.6

[[source]]
name = "python-insider"
address = "https://blog.python.org/feeds/posts/default"
kind = "feed"
cadence = "weekly"
weight = 0.5

[[source]]
name = "arxiv-cs-se"
address = "https://rss.arxiv.org/rss/cs.SE"
kind = "feed"
cadence = "weekly"
weight = 0.3
'''


# --- records --------------------------------------------------------------------------------


@dataclass
class Source:
    """One feed of ``sources.toml``; ``weight`` is the starting weight the owner wrote, in [0, 1]."""

    name: str
    address: str
    kind: str
    cadence: str
    weight: float


@dataclass
class Breath:
    """One breath (docs/BANK-FORMAT.md § breath). Times are ``YYYY-MM-DDTHH:MM:SSZ``; ``repo`` is absolute;
    ``scores`` maps bearing, novelty and provenance to numbers in [0, 1]; ``history`` lists
    ``{"state", "at", "event"}``, the filing first."""

    id: str
    title: str
    address: str
    source: str
    repo: str
    scores: dict
    body: str
    state: str
    filed_at: str
    history: list = field(default_factory=list)
    pass_id: str | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        data["pass"] = data.pop("pass_id")
        return data

    @classmethod
    def from_json(cls, data: dict) -> Breath:
        data = dict(data)
        data["pass_id"] = data.pop("pass", None)
        return cls(**data)


@dataclass
class Pass:
    """One reading pass: ``sources`` the due feeds in weight order (name, address, kind, weight)."""

    id: str
    at: str
    sources: list
    problems: bool
    session: str | None = None
    closed_at: str | None = None
    cost_usd: float | None = None
    prompt: str = ""
    depth: str | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("prompt")
        if data["depth"] is None:
            data.pop("depth")
        return data


# --- reading --------------------------------------------------------------------------------


def _now(now: datetime | None) -> datetime:
    if now is None:
        return journal.now_utc()
    if now.tzinfo is None:
        raise InputError(f"time {now.isoformat()} has no time zone")
    return now.astimezone(timezone.utc).replace(microsecond=0)


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def load_sources(layout: Layout) -> list[Source]:
    """Read ``breath/sources.toml``: the feeds in file order.

    Raises InputError naming the file and what is wrong: missing (run ``breathe
    init``), not TOML, a source without a key or with an unknown one, a name used
    twice, a cadence not hourly/daily/weekly/monthly, a weight not a number in [0, 1].
    """
    import tomllib

    path = layout.breath_sources
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path} does not exist; `sandman breathe init` writes an example") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"{path} is not valid TOML ({error}); nothing changed") from None
    extra = set(data) - {"source"}
    if extra:
        raise InputError(f"{path}: unknown key(s) {sorted(extra)}; only [[source]] tables belong here")
    tables = data.get("source", [])
    if not isinstance(tables, list):
        raise InputError(f"{path}: source must be an array of tables ([[source]])")
    found: list[Source] = []
    for number, table in enumerate(tables, start=1):
        where = f"{path}: source {number}"
        if not isinstance(table, dict):
            raise InputError(f"{where} is not a table")
        missing = [key for key in SOURCE_KEYS if key not in table]
        unknown = sorted(set(table) - set(SOURCE_KEYS))
        if missing or unknown:
            raise InputError(f"{where}: missing {missing}, unknown {unknown}; a source has {list(SOURCE_KEYS)}")
        name, address, kind, cadence, weight = (table[key] for key in SOURCE_KEYS)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InputError(f"{where}: name {name!r} must be lower case letters, digits, '.', '_', '-'")
        where = f"{path}: source {name!r}"
        if any(source.name == name for source in found):
            raise InputError(f"{where} is named twice")
        if not isinstance(address, str) or not _ADDRESS.fullmatch(address):
            raise InputError(f"{where}: address {address!r} is not an address (https://...)")
        if not isinstance(kind, str) or not _KIND.fullmatch(kind):
            raise InputError(f"{where}: kind {kind!r} must be one lower-case word (feed, changelog, paper)")
        if cadence not in CADENCES:
            raise InputError(f"{where}: cadence {cadence!r} must be one of {', '.join(CADENCES)}")
        if not _number(weight) or not 0 <= weight <= 1:
            raise InputError(f"{where}: weight {weight!r} must be a number from 0 to 1")
        found.append(Source(name, address, kind, cadence, float(weight)))
    return found


def _weights(layout: Layout, sources: list[Source]) -> dict:
    """``weights.json`` with an entry for every source; a source whose ``sources.toml`` weight changed
    restarts at it (the owner's edit wins)."""
    path = layout.breath_weights
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise InputError(f"{path} is not JSON ({error}); restore it from git") from None
    if not isinstance(data, dict) or not isinstance(data.get("sources", {}), dict):
        raise InputError(f"{path} is not a weights file (docs/BANK-FORMAT.md § breath); restore it from git")
    kept = data.get("sources", {})
    table = {}
    for source in sources:
        entry = kept.get(source.name)
        if not isinstance(entry, dict) or entry.get("start") != source.weight or not _number(entry.get("weight")):
            entry = {"start": source.weight, "weight": source.weight, "first_read": None, "last_read": None,
                     "last_adopted": None, "silent_from": None}
        table[source.name] = entry
    return {"reweighted": data.get("reweighted"), "sources": table}


def _read_breath(path: Path) -> Breath:
    try:
        return Breath.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError, TypeError) as error:
        raise InputError(f"{path} is not a breath ({error}); restore it from git") from None


def all_breaths(layout: Layout) -> list[Breath]:
    """Every breath, oldest filed first. Raises InputError on a file that is not a breath."""
    folder = layout.breath_breaths
    found = [_read_breath(path) for path in sorted(folder.glob("b-*.json"))] if folder.is_dir() else []
    return sorted(found, key=lambda breath: (breath.filed_at, breath.id))


def _repo_key(repo: str | os.PathLike[str]) -> str:
    return os.path.normpath(os.path.abspath(os.fspath(repo)))


def list_breaths(layout: Layout, *, repo: str | None = None, state: str | None = None,
                 source: str | None = None) -> list[Breath]:
    """Breaths matching every filter given, oldest filed first. Raises InputError (an unknown state,
    a relative ``repo``: breaths name their repository by absolute path)."""
    if state is not None and state not in STATES:
        raise InputError(f"state {state!r} is not one of {', '.join(STATES)}")
    if repo is not None and not os.path.isabs(repo):
        raise InputError(f"repo {repo!r} is not an absolute path to a repository")
    found = all_breaths(layout)
    if repo is not None:
        found = [breath for breath in found if breath.repo == _repo_key(repo)]
    if state is not None:
        found = [breath for breath in found if breath.state == state]
    if source is not None:
        found = [breath for breath in found if breath.source == source]
    return found


def breaths_for(layout: Layout, repo: str | os.PathLike[str]) -> list[Breath]:
    """The breaths a shift brief for ``repo`` carries: those filed or spiked against it.

    Spiked ones first (a shift said it would try them), then filed ones by the
    judge's bearing, highest first, then oldest filed. ``repo`` is an absolute
    path (the repository's working tree as ``shift pick`` names it). Returns
    Breath records (docs/BANK-FORMAT.md § breath); an empty list when the store
    does not exist. Raises InputError on a breath file that is not a breath.
    """
    key = _repo_key(repo)
    found = [breath for breath in all_breaths(layout) if breath.repo == key and breath.state in ("filed", "spiked")]
    return sorted(found, key=lambda b: (b.state != "spiked", -float(b.scores.get("bearing", 0)), b.filed_at))


# --- writing --------------------------------------------------------------------------------


def _json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _commit(layout: Layout, event: trail.Event, files: dict[Path, str], check=None) -> str | None:
    """Write ``files`` and ``event``'s trail line in one commit (``Verb: breathe``); ``check`` (a
    callable raising InputError) runs first under ``.commit.lock``, so no concurrent change slips past it."""
    from sandman.banks.commit import bank_transaction

    with bank_transaction(layout, verb=VERB, subject=f"{event.kind}: {event.summary}"[:120],
                          trailers=trail.trailers(event)) as tx:
        if check is not None:
            check()
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            tx.write_file(path, text)
        trail.write(tx, event)
    journal.write(layout, VERB, event.kind, event=event.id, commit=(tx.commit or "")[:12])
    return tx.commit


def init(layout: Layout, *, now: datetime | None = None) -> Path:
    """Write the example ``breath/sources.toml``; return its path. Raises InputError when it exists."""
    path = layout.breath_sources
    if path.exists():
        raise InputError(f"{path} already exists; edit it (`sandman breathe sources` checks it)")
    event = trail.new_event("breath.init", "wrote the example sources.toml", now=_now(now))
    _commit(layout, event, {path: EXAMPLE_SOURCES})
    return path


def sources(layout: Layout, *, now: datetime | None = None) -> list[dict]:
    """Each source with its current weight, clocks and whether a pass would read it now."""
    now = _now(now)
    found = load_sources(layout)
    weights = _weights(layout, found)["sources"]
    rows = []
    for source in found:
        entry = weights[source.name]
        rows.append({**asdict(source), "start": source.weight, "weight": entry["weight"],
                     "due": _due(source, entry, now), "last_read": entry["last_read"],
                     "last_adopted": entry["last_adopted"]})
    return rows


def _normal_address(address: str) -> str:
    """The address as deduplication compares it: scheme and host lower-cased, no trailing '/'.

    The fragment is kept: a changelog's ``#2.1`` and ``#2.2`` are two entries."""
    parts = urlsplit(address.strip())
    path = parts.path.rstrip("/") if parts.netloc else parts.path
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, parts.fragment))


def _check_repo(layout: Layout, repo: object) -> str:
    if not isinstance(repo, str) or not repo or not os.path.isabs(repo):
        raise InputError(f"repo {repo!r} is not an absolute path to a repository")
    roots = config.machine_roots(layout)
    if not roots:
        raise InputError(f"repo {repo} cannot be checked: machine.roots is not set in {layout.settings_file}")
    real = Path(os.path.realpath(repo))
    if not any(real == Path(os.path.realpath(root)) or real.is_relative_to(os.path.realpath(root))
               for root in roots):
        raise InputError(f"repo {repo} is not under the machine's roots ({', '.join(map(str, roots))})")
    if not real.is_dir():
        raise InputError(f"repo {repo} is not a directory")
    return _repo_key(repo)


def _check_document(layout: Layout, document: object, names: set[str]) -> dict:
    if not isinstance(document, dict):
        raise InputError("a breath is a JSON object with title, address, source, repo, scores, body")
    unknown = sorted(set(document) - set(FIELDS))
    missing = [key for key in FIELDS if key not in document and key != "pass"]
    if unknown or missing:
        raise InputError(f"breath: missing {missing}, unknown {unknown}")
    title, address, source, body = (document[key] for key in ("title", "address", "source", "body"))
    if not isinstance(title, str) or not title.strip() or "\n" in title.strip() or len(title) > TITLE_MAX_CHARS:
        raise InputError(f"breath title must be one line of 1 to {TITLE_MAX_CHARS} characters")
    if not isinstance(address, str) or not _ADDRESS.fullmatch(address.strip()):
        raise InputError(f"breath address {address!r} is not an address (https://...)")
    if source not in names:
        raise InputError(f"breath source {source!r} is not in sources.toml ({', '.join(sorted(names)) or 'none'})")
    if not isinstance(body, str) or not body.strip() or len(body) > BODY_MAX_CHARS:
        raise InputError(f"breath body must be text of 1 to {BODY_MAX_CHARS:,} characters")
    refuse_controls(title.strip(), "the breath's title", lines=False)
    refuse_controls(address.strip(), "the breath's address", lines=False)
    refuse_controls(body.strip().replace("\r\n", "\n"), "the breath's body", lines=True)
    scores = document["scores"]
    if not isinstance(scores, dict):
        raise InputError(f"breath scores must be an object with {', '.join(SCORES)}")
    missing = [key for key in SCORES if key not in scores]
    unknown = sorted(set(scores) - set(SCORES))
    if missing or unknown:
        raise InputError(f"breath scores: missing {missing}, unknown {unknown}; the judge gives {', '.join(SCORES)}")
    for key in SCORES:
        if not _number(scores[key]) or not 0 <= scores[key] <= 1:
            raise InputError(f"breath score {key} {scores[key]!r} must be a number from 0 to 1")
    pass_id = document.get("pass")
    if pass_id is not None and (not isinstance(pass_id, str) or not layout.breath_pass(_check_pass_id(pass_id)).is_dir()):
        raise InputError(f"breath pass {pass_id!r} is not a pass of this store")
    repo = _check_repo(layout, document["repo"])
    try:
        from sandman.banks.secrets import refuse_secrets

        refuse_secrets(title, address, body)
    except SecretRefused as error:
        raise InputError(f"breath refused: it contains a secret ({', '.join(error.kinds)}); "
                         "file the idea without the credential") from None
    return {"title": title.strip(), "address": address.strip(), "source": source, "repo": repo,
            "scores": {key: float(scores[key]) for key in SCORES}, "body": body.strip() + "\n", "pass": pass_id}


def file_breath(layout: Layout, document: dict, *, now: datetime | None = None) -> Breath:
    """File one breath from ``document`` (keys: title, address, source, repo, scores, body, and
    optionally pass); return it, in state ``filed``, with its ``breath.file`` event.

    Raises InputError naming the bad field (docs/BANK-FORMAT.md § breath): a
    missing or unknown key, scores missing or outside [0, 1], a source not in
    sources.toml, a repo not under ``machine.roots``, a body over 4,000
    characters or carrying a secret, an address already filed. Nothing is
    written then.
    """
    now = _now(now)
    names = {source.name for source in load_sources(layout)}
    clean = _check_document(layout, document, names)
    normal = _normal_address(clean["address"])

    def unique() -> None:
        for breath in all_breaths(layout):
            if _normal_address(breath.address) == normal:
                raise InputError(f"breath address {clean['address']} is already filed as {breath.id} "
                                 f"({breath.state})")

    unique()
    breath_id = f"b-{now:%Y%m%d}-{hashlib.sha256(normal.encode()).hexdigest()[:10]}"
    event = trail.new_event("breath.file", f"filed {clean['title']}", repo=clean["repo"], now=now,
                            data={"breath": breath_id, "source": clean["source"], "scores": clean["scores"]})
    breath = Breath(breath_id, clean["title"], clean["address"], clean["source"], clean["repo"], clean["scores"],
                    clean["body"], "filed", event.at, [{"state": "filed", "at": event.at, "event": event.id}],
                    clean["pass"])
    _commit(layout, event, {layout.breath_record(breath_id): _json(breath.to_json())}, check=unique)
    return breath


def resolve_breath_id(layout: Layout, ref: str) -> str:
    """The id of the breath ``ref`` names: its whole id or a unique suffix of at least 4 characters
    (machine.refs, as proposal ids). Raises InputError: a malformed, unknown or ambiguous ref."""
    folder = layout.breath_breaths
    ids = [path.stem for path in folder.glob("b-*.json") if BREATH_ID.fullmatch(path.stem)] if folder.is_dir() else []
    return refs.resolve(ref, ids, what="breath", listing="`sandman breathe list`")


def move(layout: Layout, breath_id: str, action: str, *, why: str | None = None,
         shift: str | None = None, now: datetime | None = None) -> Breath:
    """``spike``, ``adopt`` or ``drop`` a breath: its state moves and a ``breath.<action>`` event is committed.

    ``breath_id`` is the whole id or a unique suffix of it (``resolve_breath_id``). Raises
    InputError: an unknown, ambiguous or malformed id, or a move its state does not allow
    (adopted and dropped are final; spike only from filed).
    """
    to, allowed = MOVES[action]
    breath_id = resolve_breath_id(layout, breath_id)
    path = layout.breath_record(breath_id)
    breath = _read_breath(path)
    if breath.state not in allowed:
        raise InputError(f"breath {breath_id} is {breath.state}; {action} needs it {' or '.join(allowed)}")
    summary = f"{action} {breath.title}" + (f" — {why}" if why else "")
    event = trail.new_event(f"breath.{action}", summary, repo=breath.repo, shift=shift, now=_now(now),
                            data={"breath": breath.id, "source": breath.source, "from": breath.state, "to": to})
    breath.history.append({"state": to, "at": event.at, "event": event.id})
    breath.state = to
    _commit(layout, event, {path: _json(breath.to_json())})
    return breath


# --- passes ---------------------------------------------------------------------------------


def _due(source: Source, entry: dict, now: datetime) -> bool:
    last = _time(entry.get("last_read"))
    return last is None or last + CADENCES[source.cadence] <= now


def spent_on_day(layout: Layout, now: datetime) -> tuple[str, float]:
    """The local day of ``now`` (``machine.time_zone``, else the system's zone) and the US dollars the
    trail's events of that day cost (every event's ``cost_usd``: shifts and research share one cap; a
    revoked event counts nothing)."""
    local = now.astimezone(config.machine(layout).zone())
    start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    end = start + timedelta(days=1)
    since = (start.astimezone(timezone.utc) - timedelta(days=1)).strftime("%Y-%m-%d")
    spent = 0.0
    whole = trail.read(layout, since=since)
    for event in whole.events:
        moment = _time(event.at)
        if event.cost_usd and start <= moment < end and whole.revoked_by(event) is None:
            spent += event.cost_usd
    return start.strftime("%Y-%m-%d"), spent


def compose_pass(layout: Layout, *, now: datetime | None = None, depth: str | None = None) -> Pass:
    """Compose a reading pass: ``passes/<id>/{pass.json,prompt.md}`` from ``prompts/breathe.md``,
    the due sources heaviest first and ``problems.md`` when it exists; marks those sources read.
    ``depth`` (``skim`` or ``deep``, DEPTHS; None: every due source, as ``deep``) keeps only the due
    sources of its cadences and is recorded in ``pass.json``.

    Raises PassRefused (nothing written) when no source (of ``depth``) is due, or when
    ``machine.budget_usd_day`` is set and the day's events already cost that
    much; InputError on a bad sources.toml; ConfigError on bad settings.
    """
    from sandman.minds import prompts

    if depth is not None and depth not in DEPTHS:
        raise InputError(f"depth {depth!r} is not one of {', '.join(DEPTHS)}")
    now = _now(now)
    every = load_sources(layout)
    found = [source for source in every if depth is None or source.cadence in DEPTHS[depth]]
    weights = _weights(layout, every)
    table = weights["sources"]
    due = sorted((s for s in found if _due(s, table[s.name], now)), key=lambda s: (-table[s.name]["weight"], s.name))
    if not due:
        if not found:
            kinds = f" with a cadence of {' or '.join(DEPTHS[depth])} (a {depth} pass)" if depth else ""
            raise PassRefused(f"no source is due: {layout.breath_sources} lists none{kinds}")
        soonest = min(found, key=lambda s: _time(table[s.name]["last_read"]) + CADENCES[s.cadence])
        at = _time(table[soonest.name]["last_read"]) + CADENCES[soonest.cadence]
        raise PassRefused(f"no source is due; the next is {soonest.name} at {journal.iso(at)}")
    budget = config.machine(layout).budget_usd_day
    if budget is not None:
        day, spent = spent_on_day(layout, now)
        if spent >= budget:
            raise PassRefused(f"the day's budget is spent: ${spent:.2f} of machine.budget_usd_day ${budget:.2f} "
                              f"on {day}")
    problems = ""
    if layout.breath_problems.is_file():
        problems = layout.breath_problems.read_text(encoding="utf-8", errors="replace")[:PROBLEMS_MAX_CHARS]
    pass_id = f"p-{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    listed = [{"name": s.name, "address": s.address, "kind": s.kind, "weight": table[s.name]["weight"]}
              for s in due]
    feed_lines = "\n".join(f"- {s['name']} (weight {s['weight']:.2f}, {s['kind']}): {s['address']}" for s in listed)
    nonce = prompts.new_nonce([feed_lines, problems])
    prompt = prompts.fill(prompts.load("breathe"), {
        "pass_id": pass_id,
        "sources": prompts.fence("sources", feed_lines, nonce),
        "problems": prompts.fence("problems", problems.strip() or "(no open problems recorded)", nonce),
        "nonce": nonce,
    })
    record = Pass(pass_id, journal.iso(now), listed, bool(problems.strip()), prompt=prompt, depth=depth)
    stamp = journal.iso(now)
    for source in due:
        entry = table[source.name]
        entry["first_read"] = entry["first_read"] or stamp
        entry["silent_from"] = entry["silent_from"] or stamp
        entry["last_read"] = stamp
    event = trail.new_event("breath.pass", f"{depth + ' ' if depth else ''}pass {pass_id}: {len(due)} source(s) due",
                            now=now, data={"pass": pass_id, "sources": [s.name for s in due],
                                           **({"depth": depth} if depth else {})})
    folder = layout.breath_pass(pass_id)
    _commit(layout, event, {folder / "pass.json": _json(record.to_json()), folder / "prompt.md": prompt,
                            layout.breath_weights: _json(weights)})
    return record


def _check_pass_id(pass_id: str) -> str:
    if not isinstance(pass_id, str) or not PASS_ID.fullmatch(pass_id):
        raise InputError(f"pass id {pass_id!r} is not p-YYYYMMDDTHHMMSSZ-xxxx")
    return pass_id


def _read_pass(layout: Layout, pass_id: str) -> tuple[Path, dict]:
    path = layout.breath_pass(_check_pass_id(pass_id)) / "pass.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"pass {pass_id} does not exist") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise InputError(f"{path} is not JSON ({error}); restore it from git") from None
    return path, data


def attach(layout: Layout, pass_id: str, session: str, *, now: datetime | None = None) -> dict:
    """Record the reading session a pass runs in; return pass.json's data.

    Raises InputError: an unknown pass, a bad session id, a closed pass, a pass
    already attached to another session.
    """
    from sandman.pointers import check_session_id

    session = check_session_id(session)
    path, data = _read_pass(layout, pass_id)
    if data.get("closed_at"):
        raise InputError(f"pass {pass_id} is closed")
    if data.get("session") and data["session"] != session:
        raise InputError(f"pass {pass_id} is already attached to session {data['session']}")
    data["session"] = session
    event = trail.new_event("breath.attach", f"pass {pass_id} runs in session {session}", now=_now(now),
                            data={"pass": pass_id, "session": session})
    _commit(layout, event, {path: _json(data)})
    return data


def close(layout: Layout, pass_id: str, *, cost_usd: float | None = None, now: datetime | None = None) -> dict:
    """Close a pass; ``cost_usd`` (what the reading session cost) goes on the ``breath.close`` event, where
    the day's budget counts it. Raises InputError: an unknown or closed pass, a negative cost."""
    path, data = _read_pass(layout, pass_id)
    if data.get("closed_at"):
        raise InputError(f"pass {pass_id} is already closed")
    filed = sum(1 for breath in all_breaths(layout) if breath.pass_id == pass_id)
    event = trail.new_event("breath.close", f"pass {pass_id} closed: {filed} breath(s) filed", now=_now(now),
                            cost_usd=cost_usd, data={"pass": pass_id, "filed": filed})
    data["closed_at"] = event.at
    data["cost_usd"] = event.cost_usd
    _commit(layout, event, {path: _json(data)})
    return data


CLOCKS = ("first_read", "silent_from", "last_read")  # what composing a pass sets on each of its sources


def clocks(layout: Layout) -> dict[str, dict]:
    """Each source's reading clocks in ``weights.json``: ``{name: {first_read, silent_from, last_read}}``
    (ISO UTC strings or None), what ``unread`` puts back. Raises InputError on a bad sources.toml or weights.json."""
    table = _weights(layout, load_sources(layout))["sources"]
    return {name: {key: entry.get(key) for key in CLOCKS} for name, entry in table.items()}


def unread(layout: Layout, pass_id: str, before: dict[str, dict], why: str, *, now: datetime | None = None) -> list[str]:
    """Leave the sources of a pass whose reading session failed due: put their clocks back to
    ``before`` (``clocks(layout)`` taken before the pass was composed), in one commit with a
    ``breath.unread`` event (``data`` ``{"pass", "sources", "why"}``; docs/BANK-FORMAT.md § breath).
    Returns the sources put back. Raises InputError on an unknown pass."""
    _, data = _read_pass(layout, pass_id)
    weights = _weights(layout, load_sources(layout))
    table = weights["sources"]
    names = [source["name"] for source in data.get("sources", []) if isinstance(source, dict)
             and source.get("name") in table and source.get("name") in before]
    for name in names:
        table[name].update({key: before[name].get(key) for key in CLOCKS})
    event = trail.new_event("breath.unread", f"pass {pass_id} failed ({why}): {len(names)} source(s) left due",
                            now=_now(now), data={"pass": pass_id, "sources": names, "why": why})
    _commit(layout, event, {layout.breath_weights: _json(weights)})
    return names


def settle(layout: Layout, pass_id: str, cost_usd: float | None, *, now: datetime | None = None) -> dict:
    """The runner's end of a pass (docs/breathe.md, "The runner"): close it with ``cost_usd`` when the
    reading session did not; when the session closed it without a cost, record the cost on a
    ``breath.cost`` event (the day's budget counts every event's ``cost_usd``) and in ``pass.json``.
    Returns pass.json's data. Raises InputError on an unknown pass."""
    path, data = _read_pass(layout, pass_id)
    if not data.get("closed_at"):
        return close(layout, pass_id, cost_usd=cost_usd, now=now)
    if cost_usd is None or data.get("cost_usd") is not None:
        return data
    event = trail.new_event("breath.cost", f"pass {pass_id} cost ${cost_usd:.4f}", now=_now(now),
                            cost_usd=cost_usd, data={"pass": pass_id, "closed_at": data["closed_at"]})
    data["cost_usd"] = event.cost_usd
    _commit(layout, event, {path: _json(data)})
    return data


# --- reweight -------------------------------------------------------------------------------


def add_months(moment: datetime, months: int) -> datetime:
    """``moment`` plus whole calendar months, the day clamped to the month's last (31 Jan + 1 = 28 Feb)."""
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    following = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=moment.tzinfo)
    last_day = (following - timedelta(days=1)).day
    return moment.replace(year=year, month=month, day=min(moment.day, last_day))


def months_between(start: datetime, end: datetime) -> int:
    """Whole calendar months from ``start`` to ``end`` (0 when ``end`` is earlier)."""
    count = (end.year - start.year) * 12 + end.month - start.month
    while count > 0 and add_months(start, count) > end:
        count -= 1
    return max(count, 0)


def reweight(layout: Layout, *, now: datetime | None = None) -> dict:
    """Move each source's weight as of ``now`` and remember the run; return ``{name: (old, new)}`` of
    the sources that moved.

    Each adoption since the last run (``weights.json`` ``reweighted``) raises
    its source by 0.1 and restarts its silence; then a source loses 0.1 per
    whole calendar month of silence, measured from its first read or last
    adoption and restarting after each penalty. Weights stay within [0, 1]. A
    source never read is not silent. Commits ``breath.reweight`` even when
    nothing moved. Raises InputError when ``now`` is before the last run.
    """
    now = _now(now)
    found = load_sources(layout)
    weights = _weights(layout, found)
    last = _time(weights.get("reweighted"))
    if last is not None and now < last:
        raise InputError(f"reweight at {journal.iso(now)} is before its last run {weights['reweighted']}")
    adoptions: dict[str, list[datetime]] = {}
    for breath in all_breaths(layout):
        for step in breath.history:
            at = _time(step["at"])
            if step["state"] == "adopted" and (last is None or at > last) and at <= now:
                adoptions.setdefault(breath.source, []).append(at)
    moved = {}
    for source in found:
        entry = weights["sources"][source.name]
        old = weight = entry["weight"]
        if source.name in adoptions:
            weight += ADOPTION_RAISE * len(adoptions[source.name])
            entry["last_adopted"] = journal.iso(max(adoptions[source.name]))
            entry["silent_from"] = entry["last_adopted"]
            entry["first_read"] = entry["first_read"] or entry["last_adopted"]
        anchor = _time(entry["silent_from"] or entry["first_read"])
        if anchor is not None:
            months = months_between(anchor, now)
            if months:
                weight -= SILENCE_PENALTY * months
                entry["silent_from"] = journal.iso(add_months(anchor, months))
        entry["weight"] = round(min(1.0, max(0.0, weight)), 2)
        if entry["weight"] != old:
            moved[source.name] = (old, entry["weight"])
    weights["reweighted"] = journal.iso(now)
    summary = ", ".join(f"{name} {old:.2f}->{new:.2f}" for name, (old, new) in moved.items()) or "no source moved"
    event = trail.new_event("breath.reweight", f"reweight: {summary}", now=now,
                            data={"moved": {name: list(pair) for name, pair in moved.items()}})
    _commit(layout, event, {layout.breath_weights: _json(weights)})
    return moved


def read_document(text: str) -> dict:
    """Parse a breath from JSON text (``breathe file`` on stdin). Raises InputError when it is not JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError("the breath on stdin is JSON nested too deeply to read; a breath is one flat "
                         "object (docs/breathe.md)") from None
    except ValueError as error:
        raise InputError(f"the breath on stdin is not JSON ({error})") from None
