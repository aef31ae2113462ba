"""The prompt hook's fast path: ``recall --prompt-hook`` without ``json``, ``re``, ``pathlib`` or ``sqlite3``'s package.

The UserPromptSubmit hook runs before every prompt reaches the model (issue 27 item 2),
and its target is 2.0 x ``python -c pass`` at 10,000 memories (issue 29). sandman's hook
path (sandman/recall/moments.py) costs about 2.7 x, almost all of it imports: ``json``
(which imports ``re``), ``re``, ``pathlib`` (layout.py, config.py), ``sqlite3``'s package
(``datetime``), ``site``. This module answers the usual prompt with none of them: the
payload is read by ``_json``'s C scanner, the index is asked through ``_sqlite3``, paths
are strings, and the reply is written with ``_json.encode_basestring``. It is run by
sandman/fasthook.py under ``python -I -S`` (no ``site``: the console script's wrapper
and ``site`` cost 0.3 x more).

It does exactly what ``moments.prompt_hook`` does (the same reply byte for byte, the same
ledger and journal lines; tests/test_recall_fast.py compares them) for the usual case
only, and answers ``None`` (``FALLBACK``) for anything else, before writing anything: a
payload that is not a UserPromptSubmit's with a session id and an absolute cwd, a root
given with ``~`` or not normalized, a ``.settings.toml`` (its switches need ``tomllib``),
a bank chain in a linked git worktree or with a name cut to length, an index missing,
stale, locked or unreadable (a memory found edited in place: ``edited``), a memory whose
text ``marks.visible`` would change, a
prompt whose terms cannot be read without ``re``, a prompt that may hold a private
span (``may_hide``: the full hook searches only the text outside its spans). The caller then runs the full hook
(sandman.hook), which journals and handles each of those.

The constants below are config.py's (``PROMPT_*``, ``MOMENT_MAX_MEMORIES``,
``HOOK_PAYLOAD_MAX_BYTES``), index.py's SQL and weights and ledger.py's session rule;
importing those modules costs what this one saves, so tests/test_recall_fast.py checks
each copy equals its source.
"""

from __future__ import annotations

import os
import time

import _json
import _sqlite3

from sandman import plainhook
from sandman.plainhook import utf16_units
from sandman.banks.query import corrections, enough, group, terms as meaningful, weight
from sandman.fastjson import parse

FALLBACK = None
EVENT = "UserPromptSubmit"
HEAD = "sandman: memories that match this prompt and were not given to this session yet:"
# config.py's
PIPELINE_ENV = "CLAUDE_MEMORY_PIPELINE"
HOOK_PAYLOAD_MAX_BYTES = 1 << 20
PROMPT_BUDGET_UTF16 = 1_500
MOMENT_MAX_MEMORIES = 3
PROMPT_CANDIDATES = 12
PROMPT_MAX_TERMS = 16
PROMPT_RANK_MAX_MATCHES = 1_000
PROMPT_MIN_SHARED = 1
PROMPT_MIN_COVERAGE = 0.3
PROMPT_MIN_RARITY = 0.7
# index.py's
WEIGHTS = "10.0, 4.0, 1.0"
BUSY_TIMEOUT_S = 0.25
RANK_WINDOW = 20
# banks/names.py's
USER_BANK, ROOT_BANK = "_user", "_root"


def bank_name(path: str) -> str | None:
    """banks.names.bank_name of a normalized absolute path; None when it would be cut to length."""
    return ROOT_BANK if path == "/" else plainhook.bank_name(path)


def chain(cwd: str) -> list[tuple[str, str]] | None:
    """``[(bank name, its label in the reply)]`` of moments.bank_chain for ``cwd``, or None when the
    chain is not the plain case (a linked git worktree, a home that is not plain, a name cut)."""
    directory = "/" + os.path.normpath(cwd).lstrip("/")
    folders = [directory]
    while folders[-1] != "/":
        folders.append(os.path.dirname(folders[-1]))
    for folder in folders:  # banks/worktrees.py: the nearest .git decides; a file may map the directory
        try:
            mode = os.lstat(folder.rstrip("/") + "/.git").st_mode
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if not (mode & 0o170000 == 0o040000):
            return None
        break
    home = os.path.expanduser("~")
    if not plainhook.plain(home):
        return None
    if home in folders:
        folders = folders[: folders.index(home) + 1]
    found = [(USER_BANK, "user-wide")]
    for folder in folders:
        name = bank_name(folder)
        if name is None:
            return None
        found.append((name, folder))
    return found


def _one_line(text: str) -> str | None:
    """moments._one_line for a text ``marks.visible`` leaves alone; None for any other."""
    return " ".join(text.split()) if text.isprintable() else None


def render(memories_dir: str, found: list, labels: dict, budget: int) -> tuple[str, list[str]] | None:
    """moments.render, or None when a memory's text holds what ``marks.visible`` marks."""
    lines = [HEAD]
    used = utf16_units(HEAD) + 1
    shown = []
    for _id, path, bank, file, name, description, body, _score, *_stat in found:
        fields = [_one_line(name), _one_line(file), _one_line(description), _one_line(labels[bank])]
        body_lines = body.strip().splitlines()
        if None in fields or "/" in file or not all(line.isprintable() for line in body_lines):
            return None
        entry = f"- [{fields[0]}]({fields[1]}) — {fields[2]} · {fields[3]}"
        cost = utf16_units(entry) + 1
        if used + cost > budget:
            continue
        body = ["  " + line if line.strip() else "" for line in body_lines]
        where = f"  [cut; read it whole in {memories_dir}/{bank}/{file}]"
        kept = plainhook.fit(body, where, budget - used - cost)
        if kept is None:
            continue  # not even the line naming its file fits beside its entry
        lines += [entry, *kept]
        used += cost + sum(utf16_units(line) + 1 for line in kept)
        shown.append(path)
    if not shown:
        return "", []
    return "\n".join(lines) + "\n", shown


def matches(connection, banks: list[str], prompt: str, held: set[str] | frozenset = frozenset(),
            limit: int = MOMENT_MAX_MEMORIES,
            floor: tuple[int, float, float] = (PROMPT_MIN_SHARED, PROMPT_MIN_COVERAGE, PROMPT_MIN_RARITY),
            ) -> tuple[list, int, str | None]:
    """The memories of ``banks`` relevant enough to ``prompt``, best first, at most ``limit``, none of
    ``held``, each as its index row ``(id, path, bank, file, name, description, body, score,
    mtime_ns, size)`` (what index.Found reads); the prompt's count of meaningful words; and why none was found when
    none was (``no-words``, ``too-common``, ``below-floor``, ``held``) or None. The one
    implementation of the prompt's match: moments.prompt_matches is this on a ``sqlite3``
    connection, the fast path on a ``_sqlite3`` one (both only ``execute``).

    The prompt's meaningful words (banks/query.py ``terms``, at most PROMPT_MAX_TERMS), a word no
    memory holds corrected to the nearest the index holds (``corrections``), each with its
    forms and related words (``group``), are counted in the index; only the rarest, as many as
    together match at most PROMPT_RANK_MAX_MATCHES memories, rank the candidates by bm25 (a
    prompt whose rarest word alone matches more says too little: ``too-common``). A candidate
    is relevant when it clears ``floor`` (query.enough: ``(shared terms at least, weighted
    share at least, a lone term's rarity at least)``; docs/recall.md, "The relevance floor").
    A one-word prompt must find its word in a memory's name or description. Raises
    sqlite3.Error (or ``_sqlite3``'s)."""
    words = meaningful(prompt, PROMPT_MAX_TERMS)
    if not words:
        return [], 0, "no-words"
    corrected = corrections(connection, words)
    groups = [group(term, corrected) for term in words]
    if len(words) == 1:
        groups = ["{name description} : (" + groups[0] + ")"]
    cap = PROMPT_RANK_MAX_MATCHES

    def count(expression: str) -> int:
        return connection.execute("SELECT count(*) FROM (SELECT 1 FROM memories WHERE memories MATCH ? LIMIT ?)",
                                  [expression, cap + 1]).fetchone()[0]

    holding_each = [count(expression) for expression in groups]
    counts = sorted((found, n) for n, found in enumerate(holding_each))
    chosen, total = [], 0
    for found, n in counts:
        if found and total + found > cap:
            break
        total += found
        if found:
            chosen.append(groups[n])
    if not chosen:
        return [], len(words), "too-common" if counts[-1][0] else "below-floor"
    marks = ",".join("?" * len(banks))
    window = PROMPT_CANDIDATES + len(held)
    ranked = connection.execute(
        f"WITH best AS (SELECT rowid AS id, bm25(memories, {WEIGHTS}) AS score FROM memories"
        " WHERE memories MATCH ? ORDER BY score LIMIT ?)"
        " SELECT f.id, f.path, f.bank, f.file, m.name, m.description, m.body, best.score, f.mtime_ns, f.size"
        f" FROM best JOIN files f ON f.id = best.id JOIN memories m ON m.rowid = best.id"
        f" WHERE f.bank IN ({marks}) ORDER BY best.score, f.path LIMIT ?",
        [" OR ".join(f"({group})" for group in chosen), RANK_WINDOW * window, *banks, window]).fetchall()
    candidates = [row for row in ranked if row[1] not in held][:PROMPT_CANDIDATES]
    holding = [row for row in ranked if row[1] in held]
    ids = [row[0] for row in candidates + holding]
    memories = connection.execute("SELECT count(*) FROM files").fetchone()[0]
    weights = [weight(found, memories) for found in holding_each]
    shared = {row: [0, 0.0] for row in ids}
    if ids:
        id_marks = ",".join("?" * len(ids))
        for n, expression in enumerate(groups):
            for (row,) in connection.execute(
                    f"SELECT rowid FROM memories WHERE memories MATCH ? AND rowid IN ({id_marks})",
                    [expression, *ids]):
                shared[row][0] += 1
                shared[row][1] += weights[n]
    whole = sum(weights)

    def clears(row) -> bool:
        return enough(shared[row[0]][0], shared[row[0]][1], len(words), whole, memories, floor)

    relevant = [row for row in candidates if clears(row)][:limit]
    if relevant:
        return relevant, len(words), None
    # Nothing new: "held" when a memory the session holds clears the floor (the prompt repeated).
    return [], len(words), "held" if any(clears(row) for row in holding) else "below-floor"


def edited(memories_dir: str, found) -> bool:
    """True when a memory of ``found`` (index rows, ``matches``'s) is not the file the index read:
    its ``lstat`` modification time (nanoseconds) or size (bytes) differs from the row's, or it is
    gone. A hand edit written in place (``cat new > file``) leaves its bank folder's time alone,
    so the folder check misses it; the memories about to be shown are checked here (a few
    ``lstat`` calls, not one per memory: docs/recall.md, "The index's freshness")."""
    for row in found:
        try:
            stat = os.lstat(f"{memories_dir}/{row[1]}")
        except OSError:
            return True
        if (stat.st_mtime_ns, stat.st_size) != (row[8], row[9]):
            return True
    return False


def may_hide(text: str) -> bool:
    """True when ``text`` may hold a private span's opener (``<private>`` as sandman/private.py's
    TAG matches it, case-insensitively), read without ``re``: a superset of TAG's openers
    (``str.lower`` keeps the dotless ``ı`` and writes ``İ`` as ``i`` and a combining dot, both of
    which TAG matches as ``i``). Such a prompt goes to the full hook, which searches only the
    text outside its spans (README, "Trust")."""
    return "<private>" in text.lower().replace("\u0131", "i").replace("i\u0307", "i")


def journal(root: str, decision: str, **facts: object) -> None:
    """journal.write(layout, "recall", decision, hook=True, **facts)."""
    plainhook.journal(root, "recall", decision, hook=True, **facts)


def held(root: str, session: str) -> set[str]:
    """ledger.held (its ledger read by plainhook.read_file, as ledger._lines reads it)."""
    try:
        data = plainhook.read_file(f"{root}/.delivered/{session}.tsv", plainhook.LEDGER_MAX_BYTES)
    except OSError:
        return set()
    text = (data or b"").decode("utf-8", "surrogateescape")
    found: set[str] = set()
    for line in text.split("\n"):
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        if parts[1] == "compact":
            found.clear()
        elif parts[1] in ("recall", "prompt", "file"):
            found.add(parts[2])
    return found


def prompt_hook(payload: bytes) -> str | None:
    """The reply of ``recall --prompt-hook`` to ``payload`` (``""``: nothing to add, its journal line
    written), or FALLBACK (None) when this is not the usual case: run the full hook then."""
    if os.environ.get(PIPELINE_ENV, "") == "1":
        return ""
    base = plainhook.root()
    if base is None or len(payload) > HOOK_PAYLOAD_MAX_BYTES:
        return FALLBACK
    data = parse(payload)
    if data is None or data.get("hook_event_name") != EVENT:
        return FALLBACK
    session, cwd, prompt = data.get("session_id"), data.get("cwd"), data.get("prompt")
    if plainhook.session_ok(session) and plainhook.too_long(cwd):  # moments._start's decline, before any walk
        journal(base, "declined", event=EVENT, reason="path-too-long", session=session, chars=len(cwd))
        return ""
    if (not plainhook.session_ok(session) or not isinstance(cwd, str) or not cwd.startswith("/") or "\0" in cwd
            or not isinstance(prompt, str) or not prompt.strip() or may_hide(prompt)):
        return FALLBACK
    memories = base + "/memories"
    if not os.path.isdir(memories) or os.path.lexists(base + "/.settings.toml"):
        return FALLBACK
    banks = chain(cwd)
    index = base + "/.search.sqlite"
    if banks is None or not os.path.isfile(index):
        return FALLBACK
    # ledger.locked's rule: the check of what the session holds and the record of what is added
    # run under an exclusive flock of its ledger, so two prompts racing never add one memory twice.
    # Released before a FALLBACK, whose full hook takes the same lock in this process.
    lock = _lock(f"{base}/.delivered/{session}.tsv")
    try:
        return _prompt_reply(base, session, prompt, banks, memories, index)
    finally:
        if lock >= 0:
            os.close(lock)


def _lock(path: str) -> int:
    """An exclusive flock on the ledger at ``path`` (created empty when missing); its descriptor,
    or -1 when it cannot be had (the block then runs unlocked, as ledger.locked does)."""
    import fcntl

    fd = -1
    try:
        fd = plainhook.open_append(path)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd
    except OSError:
        if fd >= 0:
            os.close(fd)
        return -1


def _prompt_reply(base: str, session: str, prompt: str, banks: list, memories: str, index: str) -> str | None:
    """prompt_hook's work once the session's ledger is locked: its returns."""
    labels = dict(banks)
    names = [name for name, _ in banks]
    connection = None
    try:
        connection = _sqlite3.connect(index, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        marks = ",".join("?" * len(names))
        recorded = dict(connection.execute(f"SELECT name, mtime_ns FROM banks WHERE name IN ({marks})", names))
        for name in names:
            try:
                mtime = os.stat(f"{memories}/{name}").st_mtime_ns
            except OSError:
                mtime = None
            if recorded.get(name) != mtime:
                return FALLBACK  # stale: the full hook journals it and starts the refresh
        found, count, why = matches(connection, names, prompt, held(base, session))
        if edited(memories, found):
            return FALLBACK  # a memory edited in place: the full hook journals it and starts the refresh
    except _sqlite3.Error:
        return FALLBACK
    finally:
        if connection is not None:
            connection.close()
    rendered = render(memories, found, labels, PROMPT_BUDGET_UTF16)
    if rendered is None:
        return FALLBACK
    text, shown = rendered
    if not shown:
        journal(base, "nothing", event=EVENT, session=session, terms=count, reason=why or "budget")
        return ""
    stamp, _ = plainhook.now_iso()
    rows = "".join(f"{stamp}\tprompt\t{path}\n" for path in shown if "\n" not in path and "\t" not in path)
    plainhook.append(f"{base}/.delivered/{session}.tsv", rows.encode("utf-8", "surrogateescape"))
    journal(base, "prompt-added", session=session, terms=count, memories=",".join(shown), units=utf16_units(text))
    return ('{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": '
            + _json.encode_basestring(text) + "}}\n")
