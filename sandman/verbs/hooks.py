"""``sandman hooks install|uninstall``: register sandman's hooks in Claude Code's settings.

Five command hooks go into the user settings file (``<config dir>/settings.json``,
or ``--settings PATH``):

- ``SessionEnd``: ``<sandman> take --hook``, timeout ``config.HOOK_TIMEOUT_TAKE_S``;
- ``SessionStart``: ``<python> -I -S <sandman>/fasthook.py recall --hook`` (the launcher serves the
  reply the full hook kept, issue 29), timeout ``config.HOOK_TIMEOUT_RECALL_S``;
- ``SessionStart``: ``<sandman> report --hook`` (the unread shift reports' digest, docs/report.md),
  timeout ``config.HOOK_TIMEOUT_REPORT_S``, in a group of its own next to recall's;
- ``UserPromptSubmit``: ``<python> -I -S <sandman>/fasthook.py recall --prompt-hook`` (memory at
  each prompt, docs/recall.md; the launcher of its fast path, issue 29), timeout
  ``config.HOOK_TIMEOUT_PROMPT_S``;
- ``PostToolUse``, matcher ``Read|Edit|Write|MultiEdit|NotebookEdit``: ``<sandman> recall
  --file-hook`` (memory at each file), timeout ``config.HOOK_TIMEOUT_FILE_S``.

``<sandman>`` is the absolute path of the running installation's executable
(``executable()``), so the hooks keep working when ``PATH`` differs inside
Claude Code. Each hook is declared with a timeout: without one Claude Code
gives SessionEnd hooks about 1.5 s.

With ``statusline`` (``hooks install --statusline``, or ``hooks statusline`` alone, which a
plugin user runs), the settings' ``statusLine`` becomes ``<python> -I -S <sandman>/fasthook.py
statusline`` (docs/statusline.md): opt-in, and refused when the file already has a status line
that is not sandman's. ``uninstall`` removes sandman's status line with its hooks.

Install is idempotent: an existing sandman hook (any command that runs
``sandman <verb> --hook``) is updated in place, duplicates are removed, and an
unchanged file is not rewritten. Every other key and hook is preserved. The
write is atomic (through a symlinked settings file to its target, its mode
kept) and is refused if the file changed while it was being edited. A file
that is not a JSON object is refused and left untouched. So is an install while
a sandman plugin is enabled (``sandman_plugins``): the plugin's hooks already run,
and both would run every hook twice (docs/hooks.md, "The plugin and hooks install
together"); ``force`` registers them anyway.
"""

from __future__ import annotations

from pathlib import Path

from sandman import config
from sandman.claudecode.settings import (
    AUTO_MEMORY_KEY, FASTHOOK, HOOKS, HooksChange, auto_memory, executable, hook_command, is_sandman_hook,
    is_sandman_statusline, missing_executables, sandman_plugins, statusline_command)
from sandman.claudecode.settings import load as _load
from sandman.claudecode.settings import ours as _ours
from sandman.claudecode.settings import remove as _remove
from sandman.claudecode.settings import save as _save
from sandman.claudecode.settings import set_statusline as _set_statusline
from sandman.errors import ConfigError

# The substance is sandman/claudecode/settings.py; these names keep their old path here.
__all__ = ["AUTO_MEMORY_KEY", "FASTHOOK", "HOOKS", "HooksChange", "auto_memory", "executable", "hook_command",
           "install", "is_sandman_hook", "is_sandman_statusline", "missing_executables", "sandman_plugins",
           "set_auto_memory", "statusline", "statusline_command", "uninstall"]


def statusline(settings: Path | None = None, *, remove: bool = False) -> HooksChange:
    """Set (or with ``remove``, take away) sandman's ``statusLine`` in ``settings`` alone, hooks
    untouched: what the plugin's ``/sandman:statusline`` runs. Raises ConfigError (another status
    line is set; unreadable settings), OSError."""
    path = settings or config.claude_settings_file()
    change = HooksChange(settings=path)
    raw, data = _load(path)
    if remove:
        if is_sandman_statusline(data.get("statusLine")):
            change.removed.append(f"statusLine: {data.pop('statusLine')['command']}")
    else:
        _set_statusline(data, change)
    if change.added or change.updated or change.removed:
        _save(path, raw, data)
        change.written = True
    _journal("statusline", change)
    return change


def install(settings: Path | None = None, force: bool = False, statusline: bool = False) -> HooksChange:
    """Register sandman's hooks (``HOOKS``) in ``settings``
    (default: Claude Code's user settings); an install that predates a hook gains it. With
    ``statusline``, also sandman's ``statusLine`` (ConfigError when another one is set).

    Refused (ConfigError, nothing changed) while a sandman plugin is enabled (``sandman_plugins``:
    ``enabledPlugins`` in ``settings``, or a project's, with Claude Code's ``installed_plugins.json``):
    its hooks already run, and both would run every hook twice (docs/hooks.md, "The plugin and hooks
    install together"), unless ``force``. Raises ConfigError (that, or unreadable or invalid settings:
    nothing is changed), OSError."""
    path = settings or config.claude_settings_file()
    change = HooksChange(settings=path)
    raw, data = _load(path)
    plugins = list(dict.fromkeys(label for label, _ in sandman_plugins(data)))
    if plugins and not force:
        raise ConfigError(
            f"the sandman {plugins[0]} is enabled and already runs sandman's hooks; installing them too would run "
            f"each twice (every session start recalls twice); nothing was changed. Keep the plugin (nothing to "
            f"install), or keep these hooks: `claude plugin disable {plugins[0].split()[1]}`, then run "
            f"`sandman hooks install` again (--force registers both)")
    if statusline:
        _set_statusline(data, change)
    hooks = data.setdefault("hooks", {})
    for event, verb, flag, timeout, matcher in HOOKS:
        want = {"type": "command", "command": hook_command(verb, flag), "timeout": timeout}
        groups = hooks.setdefault(event, [])
        found = list(_ours(groups, verb, flag))
        if not found:
            groups.append({"matcher": matcher, "hooks": [want]} if matcher else {"hooks": [want]})
            change.added.append(f"{event}: {want['command']}")
            continue
        (group, index), duplicates = found[0], found[1:]
        entry = group["hooks"][index]
        if any(entry.get(key) != value for key, value in want.items()) or "args" in entry:
            group["hooks"][index] = {**{k: v for k, v in entry.items() if k != "args"}, **want}
            change.updated.append(f"{event}: {want['command']}")
        if matcher and len(group["hooks"]) == 1 and group.get("matcher") != matcher:
            group["matcher"] = matcher  # a group of its own: the file tools it follows are sandman's to name
            change.updated.append(f"{event}: {want['command']} (matcher {matcher})")
        _remove(event, groups, duplicates, change)
    if change.added or change.updated or change.removed:
        _save(path, raw, data)
        change.written = True
    _journal("installed", change)
    return change


def set_auto_memory(enabled: bool, settings: Path | None = None) -> bool:
    """Turn Claude Code's native auto memory off (``autoMemoryEnabled: false``) or back to its default
    (the key removed) in ``settings``; return whether the file was written. Raises ConfigError, OSError."""
    path = settings or config.claude_settings_file()
    raw, data = _load(path)
    if enabled:
        if AUTO_MEMORY_KEY not in data:
            return False
        del data[AUTO_MEMORY_KEY]
    else:
        if data.get(AUTO_MEMORY_KEY) is False:
            return False
        data[AUTO_MEMORY_KEY] = False
    _save(path, raw, data)
    from sandman import journal
    from sandman.layout import Layout

    try:
        layout = Layout(config.root())
    except ConfigError:
        return True
    if layout.root.is_dir():
        journal.write(layout, "hooks", "auto-memory", settings=str(path), enabled=enabled)
    return True


def uninstall(settings: Path | None = None) -> HooksChange:
    """Remove every sandman hook (and sandman's ``statusLine``) from ``settings``, leaving everything
    else as it was. Raises ConfigError, OSError."""
    path = settings or config.claude_settings_file()
    change = HooksChange(settings=path)
    raw, data = _load(path)
    if raw is None:
        return change
    if is_sandman_statusline(data.get("statusLine")):
        change.removed.append(f"statusLine: {data.pop('statusLine')['command']}")
    hooks = data.get("hooks", {})
    for event, verb, flag, _, _ in HOOKS:
        groups = hooks.get(event)
        if not groups:
            continue
        _remove(event, groups, list(_ours(groups, verb, flag)), change)
        if not groups:
            del hooks[event]
    if change.removed:
        if not hooks:
            data.pop("hooks", None)
        _save(path, raw, data)
        change.written = True
    _journal("uninstalled", change)
    return change


def _journal(decision: str, change: HooksChange) -> None:
    """One line in ``.trace/hooks-<date>.log`` when the memory root exists (hooks never create it)."""
    from sandman import journal
    from sandman.layout import Layout

    try:
        layout = Layout(config.root())
    except ConfigError:
        return
    if layout.root.is_dir():
        journal.write(layout, "hooks", decision, settings=str(change.settings), written=change.written,
                      added=len(change.added), updated=len(change.updated), removed=len(change.removed))
