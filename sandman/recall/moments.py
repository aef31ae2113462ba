"""Memory at each prompt and at each file: the UserPromptSubmit and PostToolUse hooks (docs/recall.md).

``sandman recall --prompt-hook`` (UserPromptSubmit) adds the few memories of the
cwd's bank chain that best match the prompt's words; ``sandman recall
--file-hook`` (PostToolUse of Read, Edit, Write, MultiEdit, NotebookEdit) adds
the memories of the file's bank chain that name the file or its directory. Both
skip what the session already holds (its deliveries ledger, sandman/recall/ledger.py:
the bodies its start recall, an earlier prompt or an earlier file gave it since
its last compaction), stay within their own budget (``config.PROMPT_BUDGET_UTF16``,
``config.FILE_BUDGET_UTF16``, UTF-16 code units), add nothing when nothing is
relevant enough, record what they add in the ledger and journal one line
(``.trace/recall-<date>.log``) per run.

They run on every prompt and every file read, so they read only the search index
(sandman/recall/index.py) and never build it, and import the standard library
and sandman's standard-library modules alone.
"""

from __future__ import annotations

import json
import os
import re

from sandman import config, hookpayload, journal, plainhook
from sandman.plainhook import utf16_units
from sandman.layout import Layout
from sandman.recall import index, ledger

VERB = "recall"
# The tools whose input names one file: its path's key in ``tool_input``.
FILE_TOOLS = {"Read": "file_path", "Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
FILE_MATCHER = "|".join(FILE_TOOLS)
# Compiled where used (re caches them): a prompt that adds nothing never pays for them.
_CONTROL = r"[\x00-\x1f\x7f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
# A path-like run in a memory's text: what may name a file or a directory.
_PATHISH = r"[\w.~+@-]*(?:/[\w.~+@-]*)*/?"


def _one_line(text: str) -> str:
    from sandman.marks import visible

    return visible(" ".join(re.sub(_CONTROL, " ", text).split()), lines=False)


# --- what the hooks have in common ------------------------------------------------


def bank_chain(layout: Layout, directory: str) -> list[str]:
    """The bank folder names recall reads for ``directory`` (absolute): the user-wide bank, then
    ``directory``'s bank and its ancestors' up to the user's home (or ``/``), a linked git
    worktree mapped to its main worktree (banks/worktrees.py). Raises InputError for a relative one."""
    from sandman.banks.names import USER_BANK, ancestors, bank_name, normalize_directory
    from sandman.banks.worktrees import bank_directory

    mapped = bank_directory(layout, normalize_directory(directory))
    return [USER_BANK, *(bank_name(path) for path in ancestors(mapped, config.user_home()))]


def _label(bank: str) -> str:
    from sandman.banks.names import USER_BANK, bank_directory
    from sandman.errors import InputError

    if bank == USER_BANK:
        return "user-wide"
    try:
        return str(bank_directory(bank))
    except InputError:
        return bank


def render(layout: Layout, head: str, found: list[index.Found], budget: int) -> tuple[str, list[str]]:
    """The context for ``found`` within ``budget`` UTF-16 units: ``head``, then per memory its
    MEMORY.md-style line with its bank, and its body indented, as many whole body lines as fit (a
    cut body ends with a line naming its file). Returns ``(text, the <bank>/<file> paths shown)``;
    ``("", [])`` when not even one memory's line fits."""
    from sandman.marks import visible

    lines = [head]
    used = utf16_units(head) + 1
    shown: list[str] = []
    for memory in found:
        entry = (f"- [{_one_line(memory.name)}]({_one_line(memory.file)}) — {_one_line(memory.description)}"
                 f" · {_one_line(_label(memory.bank))}")
        cost = utf16_units(entry) + 1
        if used + cost > budget:
            continue
        body = ["  " + visible(line) if line.strip() else "" for line in memory.body.strip().splitlines()]
        where = f"  [cut; read it whole in {layout.memories / memory.bank / memory.file}]"
        kept = plainhook.fit(body, where, budget - used - cost)
        if kept is None:
            continue  # not even the line naming its file fits beside its entry
        lines += [entry, *kept]
        used += cost + sum(utf16_units(line) + 1 for line in kept)
        shown.append(memory.path)
    if not shown:
        return "", []
    return "\n".join(lines) + "\n", shown


def _reply(event: str, text: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                      ensure_ascii=False) + "\n"


def _start(layout: Layout, payload: bytes, event: str, switch: str) -> tuple[dict, str, str] | None:
    """``(payload, session, cwd)`` when the hook should look; else None after its journal line."""
    data = hookpayload.parse(payload)
    if data is None:
        journal.write(layout, VERB, "skipped", hook=True, event=event, reason="unreadable-payload", bytes=len(payload))
        return None
    session = data.get("session_id") if isinstance(data.get("session_id"), str) else None
    if data.get("hook_event_name") != event:
        shown = data.get("hook_event_name")
        journal.write(layout, VERB, "skipped", hook=True, event=event, reason="other-event",
                      got=None if shown is None else _one_line(str(shown))[:80], session=session)
        return None
    if not ledger.usable_session(session):
        journal.write(layout, VERB, "skipped", hook=True, event=event, reason="no-session")
        return None
    cwd = data.get("cwd")
    if cwd is None:
        cwd = config.claude_project_dir()
    if plainhook.too_long(cwd):  # its bank chain's walk is quadratic in its length
        journal.write(layout, VERB, "declined", hook=True, event=event, reason="path-too-long", session=session,
                      chars=len(cwd))
        return None
    if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\0" in cwd:
        journal.write(layout, VERB, "skipped", hook=True, event=event, reason="no-cwd", session=session)
        return None
    if not layout.memories.is_dir():
        journal.write(layout, VERB, "skipped", hook=True, event=event, reason="no-root", session=session)
        return None
    if not config.recall_switch(layout, switch):
        journal.write(layout, VERB, "skipped", hook=True, event=event, reason="off", session=session)
        return None
    return data, session, cwd


def _index(layout: Layout, banks: list[str], event: str, session: str):
    connection, reason = index.open_current(layout, banks)
    if connection is None:
        spawned = index.refresh_soon(layout) if reason != "index-locked" else None
        journal.write(layout, VERB, "nothing", hook=True, event=event, reason=reason, session=session,
                      refresh=spawned)
    return connection


def _give(layout: Layout, connection, session: str, event: str, channel: str, head: str, budget: int,
          match) -> tuple[list[index.Found], str | None, str, list[str]] | None:
    """The check (what the session holds) and the record (what this hook adds) as one, under the
    session's ledger lock, so a hook racing this one for the same session sees what this one gave
    (ledger.locked). ``match(held)`` returns the memories found, best first, and why none was;
    those that fit ``budget`` (UTF-16 units) are rendered under ``head`` and recorded on
    ``channel``. Returns ``(found, why, text, shown)``, or None when the index could not be read
    or a memory found was edited in place since it was indexed (fast.edited; its journal line
    written). Closes ``connection``."""
    import sqlite3

    with ledger.locked(layout, session):
        try:
            found, why = match(ledger.held(layout, session))
        except sqlite3.Error as error:
            journal.write(layout, VERB, "nothing", hook=True, event=event, reason="index-unreadable",
                          session=session, error=str(error))
            return None
        finally:
            connection.close()
        from sandman.recall.fast import edited

        if edited(str(layout.memories), found):  # edited in place since it was indexed: stale
            journal.write(layout, VERB, "nothing", hook=True, event=event, reason="index-stale", session=session,
                          refresh=index.refresh_soon(layout))
            return None
        text, shown = render(layout, head, found, budget)
        if shown:
            ledger.append(layout, session, channel, shown)
    return found, why, text, shown


# --- the prompt --------------------------------------------------------------------


def prompt_matches(connection, banks: list[str], prompt: str, held: set[str] | frozenset = frozenset(),
                   limit: int = config.MOMENT_MAX_MEMORIES) -> tuple[list[index.Found], int, str | None]:
    """The memories of ``banks`` relevant enough to ``prompt``, best first, at most ``limit``, none of
    ``held``; the prompt's count of meaningful words; and why none was found when none was
    (``no-words``, ``too-common``, ``below-floor``, ``held``) or None: sandman/recall/fast.py's
    ``matches`` (the one implementation), with config's floor (``config.PROMPT_MIN_SHARED``,
    ``config.PROMPT_MIN_COVERAGE``, ``config.PROMPT_MIN_RARITY``). Raises sqlite3.Error."""
    from sandman.recall.fast import matches

    found, terms, why = matches(connection, banks, prompt, held, limit,
                                (config.PROMPT_MIN_SHARED, config.PROMPT_MIN_COVERAGE, config.PROMPT_MIN_RARITY))
    return [index.Found(row) for row in found], terms, why


def prompt_hook(layout: Layout, payload: bytes) -> str | None:
    """Answer Claude Code's UserPromptSubmit hook: the memories relevant to the prompt that the
    session does not hold yet, as ``additionalContext``; None (nothing printed) when none is
    relevant enough or the hook declines (each with its journal line). Payload: ``{session_id,
    cwd, hook_event_name: "UserPromptSubmit", prompt, ...}``. Raises OSError on a broken root."""
    event = "UserPromptSubmit"
    started = _start(layout, payload, event, "prompt_hook")
    if started is None:
        return None
    data, session, cwd = started
    prompt = data.get("prompt")
    if isinstance(prompt, str):
        from sandman.private import outside

        prompt = outside(prompt)  # a private span's words never reach a search (README, "Trust")
    if not isinstance(prompt, str) or not prompt.strip():
        journal.write(layout, VERB, "nothing", hook=True, event=event, reason="no-prompt", session=session)
        return None
    banks = bank_chain(layout, cwd)
    connection = _index(layout, banks, event, session)
    if connection is None:
        return None
    head = "sandman: memories that match this prompt and were not given to this session yet:"
    terms = 0

    def match(held: set[str]) -> tuple[list[index.Found], str | None]:
        nonlocal terms
        found, terms, why = prompt_matches(connection, banks, prompt, held)
        return found, why

    given = _give(layout, connection, session, event, "prompt", head, config.PROMPT_BUDGET_UTF16, match)
    if given is None:
        return None
    found, why, text, shown = given
    if not shown:
        journal.write(layout, VERB, "nothing", hook=True, event=event, session=session, terms=terms,
                      reason=why or "budget")
        return None
    journal.write(layout, VERB, "prompt-added", hook=True, session=session, terms=terms, memories=",".join(shown),
                  units=utf16_units(text))
    return _reply(event, text)


# --- the file ----------------------------------------------------------------------


def _parts(path: str) -> list[str]:
    return [part for part in path.split("/") if part and part != "."]


def names(text: str, file: str) -> bool:
    """True when ``text`` names the file at the absolute path ``file`` or its directory.

    A mention is a path-like run of ``text``: the file's name (``search.py``), or
    a path ending in it whose folders are the file's last folders
    (``banks/search.py``, ``./sandman/banks/search.py``, the absolute path); or
    the directory's path ending in ``/`` (``banks/``, ``sandman/banks/``), or
    with two parts or more (``sandman/banks``), its folders again the
    directory's last ones. A bare folder name (``banks``) is a word, not a mention.
    """
    folders = _parts(os.path.dirname(file))
    base = os.path.basename(file)
    for match in re.finditer(_PATHISH, text):
        mention = match.group().rstrip(".,:;")
        if not mention or mention in ("/", ".", ".."):
            continue
        parts = _parts(mention.lstrip("~"))
        if not parts:
            continue
        if mention.endswith("/") or (len(parts) >= 2 and parts[-1] != base):
            if len(parts) <= len(folders) and folders[len(folders) - len(parts):] == parts:
                return True
            continue
        if parts[-1] == base and len(parts) - 1 <= len(folders) and (
                len(parts) == 1 or folders[len(folders) - len(parts) + 1:] == parts[:-1]):
            return True
    return False


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def file_matches(connection, banks: list[str], file: str, held: set[str] | frozenset = frozenset(),
                 limit: int = config.MOMENT_MAX_MEMORIES) -> tuple[list[index.Found], str | None]:
    """The memories of ``banks`` that name ``file`` (absolute) or its directory (``names``), best first,
    at most ``limit``, none of ``held``; and why none was found when none was (``none-names-it``, or
    ``held``: those that name it are all held already) or None. Raises sqlite3.Error."""
    phrases = []
    for part in (os.path.basename(file), os.path.basename(os.path.dirname(file))):
        words = _words(part)
        if words:
            phrases.append('"' + " ".join(words) + '"')
    # As for a prompt, the work is bounded: a phrase found in too many memories (a folder named
    # ``src`` or ``tests``) is not looked for.
    cap = config.PROMPT_RANK_MAX_MATCHES
    phrases = [phrase for phrase in dict.fromkeys(phrases)
               if 0 < index.count(connection, phrase, cap) <= cap]
    if not phrases:
        return [], "none-names-it"
    ranked = index.ranked(connection, " OR ".join(phrases), banks, config.FILE_CANDIDATES + len(held))
    naming = [memory for memory in ranked if names(f"{memory.name}\n{memory.description}\n{memory.body}", file)]
    found = [memory for memory in naming if memory.path not in held]
    if found:
        return found[:limit], None
    return [], "held" if naming else "none-names-it"


def file_hook(layout: Layout, payload: bytes) -> str | None:
    """Answer Claude Code's PostToolUse hook for a file tool: the memories that name the file (or
    its directory) that the session does not hold yet, as ``additionalContext``; None otherwise,
    with a journal line. Payload: ``{session_id, cwd, hook_event_name: "PostToolUse", tool_name,
    tool_input: {file_path | notebook_path}, ...}``. Raises OSError on a broken root."""
    event = "PostToolUse"
    started = _start(layout, payload, event, "file_hook")
    if started is None:
        return None
    data, session, _ = started
    tool = data.get("tool_name")
    key = FILE_TOOLS.get(tool) if isinstance(tool, str) else None
    tool_input = data.get("tool_input") if isinstance(data.get("tool_input"), dict) else {}
    file = tool_input.get(key) if key else None
    if plainhook.too_long(file):
        journal.write(layout, VERB, "declined", hook=True, event=event, reason="path-too-long", session=session,
                      chars=len(file))
        return None
    if not isinstance(file, str) or not os.path.isabs(file) or "\0" in file:
        journal.write(layout, VERB, "skipped", hook=True, event=event, reason="no-file",
                      tool=_one_line(str(tool))[:80], session=session)
        return None
    from sandman.private import outside

    if outside(file) != file:  # a private span's words never reach a search (README, "Trust")
        journal.write(layout, VERB, "skipped", hook=True, event=event, reason="private",
                      tool=_one_line(str(tool))[:80], session=session)
        return None
    file = os.path.normpath(file)
    banks = bank_chain(layout, os.path.dirname(file))
    connection = _index(layout, banks, event, session)
    if connection is None:
        return None
    head = f"sandman: memories that name {_one_line(file)} or its folder, not given to this session yet:"
    given = _give(layout, connection, session, event, "file", head, config.FILE_BUDGET_UTF16,
                  lambda held: file_matches(connection, banks, file, held))
    if given is None:
        return None
    found, why, text, shown = given
    if not shown:
        journal.write(layout, VERB, "nothing", hook=True, event=event, session=session, tool=tool,
                      file=file, reason="budget" if found else why)
        return None
    journal.write(layout, VERB, "file-added", hook=True, session=session, tool=tool, file=file,
                  memories=",".join(shown), units=utf16_units(text))
    return _reply(event, text)
