"""Claude Code's settings as sandman reads and edits them: its hooks, its status line, its plugins,
its native auto memory (docs/hooks.md).

``HOOKS`` are the command hooks sandman registers (``hook_command`` their
commands, ``executable()`` the absolute path of this installation);
``is_sandman_hook``, ``missing_executables`` and ``is_sandman_statusline``
recognise sandman's entries in any settings file; ``sandman_plugins`` the
enabled sandman plugins; ``auto_memory`` whether Claude Code's own memory is
on. ``load`` and ``save`` read a settings file and write it back atomically,
refusing a file that changed meanwhile. The ``sandman hooks`` verb
(sandman/verbs/hooks.py) installs and uninstalls over these, and journals.
Nothing here imports sandman.verbs or sandman.cli.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from sandman import config
from sandman.errors import ConfigError
from sandman.store.atomic import write_atomic

# The file tools the file hook follows (sandman/recall/moments.py FILE_TOOLS, not imported here).
FILE_MATCHER = "Read|Edit|Write|MultiEdit|NotebookEdit"


class Hook(NamedTuple):
    """One hook sandman registers: Claude Code's ``event``, the sandman ``verb`` and its ``flag``
    (``sandman <verb> <flag>``), the declared ``timeout`` in seconds, and the group's ``matcher``
    (None: every occurrence of the event)."""

    event: str
    verb: str
    flag: str
    timeout: int
    matcher: str | None = None


# In the order install adds them.
HOOKS = (
    Hook("SessionEnd", "take", "--hook", config.HOOK_TIMEOUT_TAKE_S),
    Hook("SessionStart", "recall", "--hook", config.HOOK_TIMEOUT_RECALL_S),
    Hook("SessionStart", "report", "--hook", config.HOOK_TIMEOUT_REPORT_S),
    Hook("UserPromptSubmit", "recall", "--prompt-hook", config.HOOK_TIMEOUT_PROMPT_S),
    Hook("PostToolUse", "recall", "--file-hook", config.HOOK_TIMEOUT_FILE_S, FILE_MATCHER),
)


@dataclass
class HooksChange:
    """What install or uninstall did to one settings file: ``added``, ``updated`` and
    ``removed`` list ``<event>: <command>`` entries; ``written`` is False when the file
    was already as asked."""

    settings: Path
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    written: bool = False


def executable() -> list[str]:
    """Return the argv prefix that runs this installation of sandman, absolute.

    In order: the ``sandman`` script installed beside this interpreter (a
    virtualenv's or pipx's ``bin/``); ``sys.argv[0]`` when it is a ``sandman``
    script; ``sandman`` on ``PATH``; else ``<this python> -m sandman``.
    """
    beside = Path(sys.executable).with_name("sandman")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "sandman" and argv0.is_file():
        return [str(argv0.resolve())]
    found = shutil.which("sandman")
    if found:
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "sandman"]


# The launcher of recall's prompt and SessionStart hooks (issue 29): run by this interpreter with
# ``-I -S``, it serves the usual prompt or start without site, json, re or pathlib, and runs the
# full hook for anything else.
FASTHOOK = Path(__file__).resolve().parent.parent / "fasthook.py"
FAST_FLAGS = ("--prompt-hook", "--hook")


def hook_command(verb: str, flag: str = "--hook") -> str:
    """Return the shell command Claude Code runs for ``verb``'s hook (``flag``: ``--hook``, or
    recall's ``--prompt-hook`` or ``--file-hook``). ``recall --prompt-hook`` and ``recall --hook`` run
    ``<this python> -I -S <sandman>/fasthook.py recall <flag>`` (docs/hooks.md)."""
    if verb == "recall" and flag in FAST_FLAGS:
        return shlex.join([sys.executable, "-I", "-S", str(FASTHOOK), verb, flag])
    return shlex.join([*executable(), verb, flag])


def statusline_command() -> str:
    """The ``statusLine`` command: ``<this python> -I -S <sandman>/fasthook.py statusline``."""
    return shlex.join([sys.executable, "-I", "-S", str(FASTHOOK), "statusline"])


def is_sandman_statusline(entry: object) -> bool:
    """True when a settings ``statusLine`` runs ``sandman statusline`` (any path to sandman)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    try:
        words = shlex.split(entry["command"])
    except ValueError:
        return False
    return any(_names_sandman(word) and words[n + 1:n + 2] == ["statusline"] for n, word in enumerate(words)) or \
        any(word == "-m" and words[n + 1:n + 3] == ["sandman", "statusline"] for n, word in enumerate(words))


def set_statusline(data: dict, change: HooksChange) -> None:
    """Point ``statusLine`` at sandman's, recording what changed; ConfigError for another one."""
    want = {"type": "command", "command": statusline_command(), "padding": 0}
    entry = data.get("statusLine")
    if entry is not None and not is_sandman_statusline(entry):
        shown = entry.get("command") if isinstance(entry, dict) else entry
        raise ConfigError(f"the settings already have a status line ({shown!r}); sandman's would replace it, and "
                          "nothing was changed: remove yours first, or run `sandman statusline` from it "
                          "(docs/statusline.md)")
    if entry is None:
        change.added.append(f"statusLine: {want['command']}")
    elif any(entry.get(key) != value for key, value in want.items()):
        change.updated.append(f"statusLine: {want['command']}")
    else:
        return
    data["statusLine"] = {**entry, **want} if isinstance(entry, dict) else want


def _names_sandman(word: str) -> bool:
    """True for a word that runs sandman: a ``sandman`` script or ``-m sandman``, or the fast launcher."""
    path = Path(word)
    return path.name == "sandman" or (path.name == FASTHOOK.name and path.parent.name == "sandman")


def is_sandman_hook(entry: object, verb: str, flag: str = "--hook") -> bool:
    """True when a settings hook entry runs ``sandman <verb> <flag>`` (any path to sandman)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    try:
        words = shlex.split(entry["command"])
    except ValueError:
        return False
    args = entry.get("args")  # the exec form: command plus an argument list
    if isinstance(args, list):
        words += [str(arg) for arg in args]
    # ".../bin/sandman take --hook" and "python -m sandman take --hook" alike
    return any(
        _names_sandman(word) and words[index + 1] == verb and flag in words[index + 2 :]
        for index, word in enumerate(words[:-2])
    )


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def missing_executables(entry: object) -> list[str]:
    """Return the absolute paths a sandman hook entry runs that are not executable files.

    Checked: the program (the exec form's ``command``; the shell form's first
    word after any ``NAME=value``) and the word naming sandman. Only absolute
    paths (``~`` expanded in the shell form) are checked: a bare name is found
    on the PATH Claude Code runs the hook with, and a relative path from the
    session's folder, neither of which is this process's to see; a word
    holding ``$`` (a plugin's ``${CLAUDE_PLUGIN_ROOT}``) is left alone too.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return []
    args = entry.get("args")
    if isinstance(args, list):  # the exec form: the command is the program itself, run without a shell
        words = [entry["command"], *(str(arg) for arg in args)]
    else:
        try:
            words = [os.path.expanduser(word) for word in shlex.split(entry["command"])]
        except ValueError:
            return []
        while words and _ASSIGNMENT.match(words[0]):
            words.pop(0)
    checked = words[:1] + [word for word in words[1:] if Path(word).name == "sandman"]
    launchers = [word for word in words[1:] if _names_sandman(word) and Path(word).name != "sandman"]
    return [word for word in dict.fromkeys(checked)
            if os.path.isabs(word) and "$" not in word and not (os.path.isfile(word) and os.access(word, os.X_OK))] + [
        word for word in dict.fromkeys(launchers) if os.path.isabs(word) and not os.path.isfile(word)]


def settings_path(text: str) -> Path:
    """The settings file a ``--settings`` option names, as a Path. Raises ConfigError when ``text``
    ends in a ``/`` or names a directory: a settings path names a file (``Path`` drops a trailing
    ``/``, and sandman would then write a file where a folder was meant)."""
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        raise ConfigError(f"--settings {text}: names a directory; give the settings file's path "
                          f"(such as {os.path.join(text, 'settings.json')})")
    return Path(text)


def load(path: Path) -> tuple[bytes | None, dict]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as error:
        raise ConfigError(f"cannot read Claude Code settings {path}: {error.strerror}") from None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigError(f"Claude Code settings {path} is not UTF-8; fix it by hand, nothing was changed") from None
    except RecursionError:
        raise ConfigError(f"Claude Code settings {path} is JSON nested too deeply to read; fix it by hand, "
                          "nothing was changed") from None
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"Claude Code settings {path} is not valid JSON (line {error.lineno}, column {error.colno}: "
            f"{error.msg}); fix it by hand, nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"Claude Code settings {path} is not a JSON object; nothing was changed")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"\"hooks\" in {path} is not an object; nothing was changed")
    for event in dict.fromkeys(hook.event for hook in HOOKS):
        if not isinstance(hooks.get(event, []), list):
            raise ConfigError(f"\"hooks.{event}\" in {path} is not a list; nothing was changed")
    return raw, data


def save(path: Path, raw: bytes | None, data: dict) -> None:
    target = path.resolve() if path.is_symlink() else path
    try:
        current = target.read_bytes()
    except FileNotFoundError:
        current = None
    if current != raw:
        raise ConfigError(f"Claude Code settings {path} changed while sandman was editing it; run again")
    mode = stat.S_IMODE(target.stat().st_mode) if current is not None else 0o600
    if current is not None and not mode & stat.S_IWUSR:
        # The atomic rename would replace it regardless: a read-only file is the owner's "hands off".
        raise ConfigError(f"Claude Code settings {path} is read-only; nothing was changed "
                          f"(make it writable, chmod u+w {path}, to let sandman edit it)")
    write_atomic(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n", mode=mode)


def ours(groups: list, verb: str, flag: str = "--hook"):
    """Yield (group, index) of every sandman ``verb`` ``flag`` hook in an event's groups."""
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            for index, entry in enumerate(group["hooks"]):
                if is_sandman_hook(entry, verb, flag):
                    yield group, index


def remove(event: str, groups: list, found: list, change: HooksChange) -> None:
    """Delete the hook entries ``found`` in ``groups``, and the groups that leaves empty."""
    for group, index in reversed(found):
        change.removed.append(f"{event}: {group['hooks'][index].get('command')}")
        del group["hooks"][index]
        if not group["hooks"]:
            groups[:] = [g for g in groups if g is not group]


# Where a plugin enabled at project or local scope is switched on: <project>/.claude/<file>.
_SCOPE_SETTINGS = {"project": "settings.json", "local": "settings.local.json"}


def _enabled(settings: object, name: str) -> bool:
    enabled = settings.get("enabledPlugins", {}) if isinstance(settings, dict) else {}
    return isinstance(enabled, dict) and enabled.get(name) is True


def sandman_plugins(settings: dict) -> list[tuple[str, str | None]]:
    """Return ``(label, install path or None)`` for each enabled sandman plugin, at every scope
    (docs/hooks.md, "The plugin and hooks install together"); the label is ``plugin <name@marketplace>``,
    with the scope and project for a project or local one.

    User scope: enabled in the user settings (``settings``). Project and local
    scope: an ``installed_plugins.json`` record with that ``scope`` and a
    ``projectPath`` whose ``.claude/settings.json`` (project) or
    ``.claude/settings.local.json`` (local) enables it.
    """
    try:
        installed = _read_json(config.claude_installed_plugins_file())
    except (OSError, ValueError, RecursionError):
        installed = {}
    records = installed.get("plugins", installed) if isinstance(installed, dict) else {}
    records = records if isinstance(records, dict) else {}
    enabled = settings.get("enabledPlugins", {})
    names = [name for name, on in (enabled.items() if isinstance(enabled, dict) else [])
             if on is True and name.split("@", 1)[0] == "sandman"]
    found: list[tuple[str, str | None]] = []
    for name in names:
        entries = records.get(name, [])
        entries = [e for e in (entries if isinstance(entries, list) else [entries])
                   if isinstance(e, dict) and e.get("scope", "user") == "user"]
        paths = [e["installPath"] for e in entries if isinstance(e.get("installPath"), str)]
        found += [(f"plugin {name}", path) for path in paths] or [(f"plugin {name}", None)]
    for name, entries in records.items():
        if not isinstance(name, str) or name.split("@", 1)[0] != "sandman":
            continue
        for entry in entries if isinstance(entries, list) else [entries]:
            scope = entry.get("scope") if isinstance(entry, dict) else None
            project = entry.get("projectPath") if isinstance(entry, dict) else None
            if scope not in _SCOPE_SETTINGS or not isinstance(project, str):
                continue
            try:
                on = _enabled(_read_json(Path(project) / ".claude" / _SCOPE_SETTINGS[scope]), name)
            except (OSError, ValueError, RecursionError):
                on = False
            if on:
                path = entry.get("installPath")
                found.append((f"plugin {name} ({scope} scope, {project})", path if isinstance(path, str) else None))
    return found


def _read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


# Claude Code's native auto memory (docs/hooks.md, "Claude Code's own auto memory"): the
# environment variable wins over the settings key, and both default to on.
AUTO_MEMORY_ENV = "CLAUDE_CODE_DISABLE_AUTO_MEMORY"
AUTO_MEMORY_KEY = "autoMemoryEnabled"
_TRUTHY = ("1", "true", "yes", "on")
_FALSY = ("0", "false", "no", "off")


def auto_memory(settings: Path | None = None) -> tuple[bool, str]:
    """Return whether Claude Code's native auto memory is on for the user, and why.

    In Claude Code's order: ``$CLAUDE_CODE_DISABLE_AUTO_MEMORY`` (this
    process's environment, then the settings file's ``env`` block) when set
    to a true or false word; then ``autoMemoryEnabled`` in the user settings;
    else on. Raises ConfigError for a settings file that cannot be read.
    """
    path = settings or config.claude_settings_file()
    _, data = load(path)
    block = data.get("env") if isinstance(data.get("env"), dict) else {}
    for where, value in (("the environment", os.environ.get(AUTO_MEMORY_ENV)),
                         (f"the env block of {path}", block.get(AUTO_MEMORY_ENV))):
        text = str(value).strip().lower() if value is not None else ""
        if text in _TRUTHY:
            return False, f"{AUTO_MEMORY_ENV}={value} in {where}"
        if text in _FALSY:
            return True, f"{AUTO_MEMORY_ENV}={value} in {where}"
    if data.get(AUTO_MEMORY_KEY) is False:
        return False, f"{AUTO_MEMORY_KEY}: false in {path}"
    if data.get(AUTO_MEMORY_KEY) is True:
        return True, f"{AUTO_MEMORY_KEY}: true in {path}"
    return True, "Claude Code's default"


