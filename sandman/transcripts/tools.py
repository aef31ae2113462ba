"""Tool calls, host-neutral: the one-line summary a mind reads, and the session's own
``sandman remember`` calls (the pointer's highlights, design station ③).

A highlight is a body the session explicitly asked to keep. It is found in:

- a shell command (Claude Code's ``Bash``, Codex's ``exec_command``/``shell``)
  that runs ``sandman remember "<body>" [options]`` (also ``/path/to/sandman``
  and ``python -m sandman``), the body as the first positional argument, or
  ``-`` with a here-document (``<<'EOF' ... EOF``) holding it;
- a call of sandman's MCP ``remember`` tool (a tool name ending in
  ``__remember`` whose server name contains ``sandman``), its ``body`` input.

The reader keeps a body only when the call's result shows it was committed
(transcripts.model.Collector.settle): a remember the secrets ban refused must
not reach recall through the pointer.

A command that cannot be parsed (unbalanced quotes) gives no highlight: the
session's own memory is then still committed by remember itself; only the
pointer's hint is lost.

Standard library only: take --hook imports this package.
"""

from __future__ import annotations

import re
import shlex

from sandman.transcripts.model import cut, loads, one_line

SUMMARY_MAX_CHARS = 200
SHELL_TOOLS = frozenset({"Bash", "exec_command", "shell", "local_shell", "container.exec", "shell_command"})
# Input keys that say what a call does, most telling first.
_DETAIL_KEYS = (
    "command", "cmd", "file_path", "notebook_path", "pattern", "url", "query", "path",
    "description", "skill", "prompt", "subject", "body",
)
# sandman remember's options that take a value (docs/remember.md).
_VALUE_OPTIONS = frozenset({"--cwd", "--type", "--name", "--description", "--session"})
_SHELL_PUNCTUATION = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;", "|&", "\n"})
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1[^\n]*\n(.*?)\n[ \t]*\2[ \t]*(?:\n|$)", re.S)
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)
_MCP_REMEMBER = re.compile(r"mcp__.*sandman.*__remember")


def arguments(raw: object) -> object:
    """Return a tool call's input: Codex passes it as a JSON string, Claude Code as an object."""
    if isinstance(raw, str):
        try:
            return loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


def shell_command(value: object) -> str | None:
    """Return the command line of a shell tool's input (``command``/``cmd``, a string or an argv)."""
    if not isinstance(value, dict):
        return None
    command = value.get("command", value.get("cmd"))
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        # ["bash", "-lc", "<script>"]: the script is what ran.
        if len(command) >= 3 and command[-2] in ("-c", "-lc"):
            return command[-1]
        return shlex.join(command)
    return None


def summary(name: str, value: object) -> str:
    """Return one line saying what a tool call did: ``Bash: git status``, ``Read: /a/b.py``.

    At most 200 characters after the tool name; ``apply_patch`` lists the files it touched.
    """
    detail = ""
    if name == "apply_patch" or (isinstance(value, str) and value.startswith("*** Begin Patch")):
        files = [f"{op.lower()} {path.strip()}" for op, path in _PATCH_FILE.findall(value if isinstance(value, str) else str(value))]
        detail = ", ".join(files)
    if not detail:
        command = shell_command(value) if name in SHELL_TOOLS else None
        if command is not None:
            detail = command
        elif isinstance(value, dict):
            detail = next((v for k in _DETAIL_KEYS if isinstance(v := value.get(k), str) and v.strip()), "")
            if not detail:
                detail = next((v for v in value.values() if isinstance(v, str) and v.strip()), "")
        elif isinstance(value, str):
            detail = value
    detail = cut(one_line(detail), SUMMARY_MAX_CHARS)
    return f"{name}: {detail}" if detail else name


def remembered(name: str, value: object) -> list[str]:
    """Return the bodies a tool call asked sandman to remember (usually none)."""
    if _MCP_REMEMBER.fullmatch(name):
        body = value.get("body") if isinstance(value, dict) else None
        return [body.strip()] if isinstance(body, str) and body.strip() else []
    if name not in SHELL_TOOLS:
        return []
    command = shell_command(value)
    if command is None or "sandman" not in command or "remember" not in command:
        return []
    return remember_bodies(command)


def remember_bodies(command: str) -> list[str]:
    """Return the body of every ``sandman remember`` in a shell command line."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: nothing trustworthy to read
        return []
    heredocs = iter(match.group(3) for match in _HEREDOC.finditer(command))
    bodies = []
    for start in range(len(tokens) - 1):
        if tokens[start + 1] != "remember" or not _is_sandman(tokens, start):
            continue
        body = _first_positional(tokens[start + 2 :])
        if body == "-":
            body = next(heredocs, None)
        if body and body.strip():
            bodies.append(body.strip())
    return bodies


def _is_sandman(tokens: list[str], index: int) -> bool:
    word = tokens[index]
    if word == "sandman" and index >= 1 and tokens[index - 1] == "-m":
        return True
    return word == "sandman" or word.endswith("/sandman")


def _first_positional(tokens: list[str]) -> str | None:
    skip_value = False
    for token in tokens:
        if token in _SHELL_PUNCTUATION or token.startswith(("<", ">")):
            return None
        if skip_value:
            skip_value = False
            continue
        if token in _VALUE_OPTIONS:
            skip_value = True
            continue
        if token.startswith("--") or (token.startswith("-") and token != "-"):
            continue
        return token
    return None
