"""Where the hosts keep a session: its live transcript, its companion folder, its jobs.

- Claude Code: ``<config dir>/projects/<project slug>/<session id>.jsonl``,
  with the session's subagent transcripts and tool outputs (2.1.x) in the
  companion folder ``<project slug>/<session id>/`` beside it.
- Codex: ``<codex home>/sessions/<yyyy>/<mm>/<dd>/rollout-<time>-<session id>.jsonl``.
- Claude Code's background jobs: ``<config dir>/jobs/<job id>/state.json``,
  an object whose ``resumeSessionId`` (else ``sessionId``) names the session
  the job would resume next. A job directory that still names a session says
  the conversation will be resumed (``claude respawn`` restarts a stopped
  job, so even a ``done``/``stopped`` state is live until ``claude rm``
  deletes the directory). Anything uncertain (no jobs folder, an unreadable
  ``state.json``, a field of the wrong type) reads as "no job".

Standard library only: take --hook imports this module.
"""

from __future__ import annotations

import json
import os
import re
from collections import namedtuple
from pathlib import Path

from sandman import config
from sandman.errors import InputError, TranscriptNotFound, UnrecognisedTranscript
from sandman.transcripts import sniff


class Source(namedtuple("Source", "host path relpath companion")):
    """A live transcript about to be taken: ``host`` (str), ``path`` (Path), ``relpath`` (str),
    ``companion`` (Path or None).

    ``relpath`` is its path relative to the host's sessions folder (POSIX
    separators): ``<project slug>/<session id>.jsonl`` for Claude Code,
    ``<yyyy>/<mm>/<dd>/rollout-….jsonl`` for Codex. A file outside those
    folders (taken by hand with --transcript) keeps its parent folder's name
    (Claude Code) or just its own name (Codex). ``companion`` is the Claude
    Code folder ``<session id>/`` beside it, when there is one.
    """

    __slots__ = ()


def host_folder(host: str) -> Path:
    """Return the folder a host keeps its live transcripts in."""
    return config.claude_projects_dir() if host == "claude" else config.codex_sessions_dir()


def _inside(path: Path, folder: Path) -> str | None:
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return None


def source(path: Path) -> Source:
    """Describe the transcript at ``path`` (absolute) for a take.

    The host is sniffed from the file; a file that matches neither host is
    still Claude Code's when it sits under ``<config dir>/projects`` (or
    Codex's under its sessions folder): its head may be damaged, and its bytes
    are archived all the same. Raises InputError when ``path`` is relative, holds
    ``..``, is a symbolic link or not a regular file, or sits in a folder that is
    a symbolic link (a linked project folder under Claude Code's projects folder), TranscriptNotFound when it does not
    exist (or vanishes while it is read), UnrecognisedTranscript when no host claims it, OSError when it
    cannot be read.
    """
    if not path.is_absolute():
        raise InputError(f"transcript path {str(path)!r} is not absolute")
    if ".." in path.parts:  # it would name the archive folder "<HHMMSS>-.."
        raise InputError(f"transcript path {str(path)!r} contains '..'; give it without")
    if path.is_symlink():
        raise InputError(f"transcript {path} is a symbolic link; pass the file it points to")
    if path.parent.is_symlink():
        # The same rule as for a linked transcript (docs/take.md, "Symbolic links"): the move
        # would take the file from wherever the link leads, often another filesystem.
        raise InputError(f"transcript {path} is in {path.parent}, a symbolic link; "
                         "pass the path of the folder it points to")
    if not path.exists():
        raise TranscriptNotFound(f"transcript {path} does not exist (already taken, or never written)")
    if not path.is_file():
        raise InputError(f"transcript {path} is not a regular file")
    inside = {host: _inside(path, host_folder(host)) for host in ("claude", "codex")}
    try:
        sniffed = sniff(path)
    except FileNotFoundError:  # moved between the check above and the read: another take won
        raise TranscriptNotFound(f"transcript {path} is already gone: another take archived it") from None
    host = sniffed or next((h for h, rel in inside.items() if rel is not None), None)
    if host is None:
        raise UnrecognisedTranscript(
            f"{path}: not a Claude Code transcript or a Codex rollout (its first lines match neither)"
        )
    relpath = inside[host]
    if relpath is None:
        relpath = f"{path.parent.name}/{path.name}" if host == "claude" and path.parent.name else path.name
    companion = path.with_suffix("") if host == "claude" else None
    if companion is not None and (companion.is_symlink() or not companion.is_dir()):
        companion = None
    return Source(host=host, path=path, relpath=relpath, companion=companion)


def _named(session_id: str) -> list[Path]:
    """Every path named as a transcript of ``session_id``, whatever it is (file, FIFO, folder...)."""
    found = []
    try:
        projects = sorted(os.scandir(config.claude_projects_dir()), key=lambda e: e.name)
    except OSError:
        projects = []
    for project in projects:
        candidate = Path(project.path) / f"{session_id}.jsonl"
        if project.is_dir(follow_symlinks=False) and os.path.lexists(candidate):
            found.append(candidate)
    sessions = config.codex_sessions_dir()
    if sessions.is_dir():
        # The glob alone would also match a suffix of another session's UUID.
        found += sorted(path for path in sessions.rglob(f"rollout-*-{session_id}.jsonl")
                        if (named := _ROLLOUT.fullmatch(path.name)) and named.group(1) == session_id)
    return found


def live_transcripts(session_id: str) -> list[Path]:
    """Return every live transcript of ``session_id``: Claude Code's first, then Codex's."""
    return [path for path in _named(session_id) if path.is_file()]


def find(session_id: str) -> Path:
    """Return the one live transcript of ``session_id``.

    Raises TranscriptNotFound when there is none, InputError when two hosts or
    projects hold one (pass --transcript to pick), or when the only path named
    as its transcript is not a regular file (a FIFO, a folder).
    """
    named = _named(session_id)
    found = [path for path in named if path.is_file()]
    if not found and named:
        raise InputError(f"transcript {named[0]} is not a regular file (a FIFO, device, socket or folder); "
                         "nothing was taken")
    if not found:
        raise TranscriptNotFound(
            f"no live transcript of session {session_id} under {config.claude_projects_dir()} "
            f"or {config.codex_sessions_dir()} (already taken, or pass --transcript PATH)"
        )
    if len(found) > 1:
        raise InputError(
            f"session {session_id} has {len(found)} transcripts ({', '.join(map(str, found))}); "
            "pass --transcript PATH to pick one"
        )
    return found[0]


# A Codex rollout is named rollout-<local time>-<session id>.jsonl.
_ROLLOUT = re.compile(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(.+)\.jsonl")
# Claude Code names a session, and its companion folder, by a UUID.
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        return sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []


def session_files() -> list[Path]:
    """Return every file a host keeps as a session transcript, Claude Code's first, then Codex's.

    Claude Code: each ``<projects>/<project>/*.jsonl`` (the top level of a
    project folder only: companion folders are part of their session).
    Codex: every ``<codex sessions>/**/rollout-*.jsonl``. Symbolic links are
    listed too (``source`` refuses them, so a caller can say why). A folder
    that cannot be listed lists nothing.
    """
    found = []
    for project in _entries(config.claude_projects_dir()):
        if project.is_dir(follow_symlinks=False):
            found += [Path(e.path) for e in _entries(Path(project.path))
                      if e.name.endswith(".jsonl") and not e.is_dir(follow_symlinks=False)]
    sessions = config.codex_sessions_dir()
    if sessions.is_dir():
        found += sorted(p for p in sessions.rglob("rollout-*.jsonl") if not p.is_dir())
    return found


def orphan_companions() -> list[Path]:
    """Return Claude Code session folders (``<project>/<uuid>/``) with no ``<uuid>.jsonl`` beside them.

    Such a folder holds a session's subagent transcripts or tool outputs
    whose own transcript is gone; no take moves it (a take follows a transcript).
    """
    found = []
    for project in _entries(config.claude_projects_dir()):
        if not project.is_dir(follow_symlinks=False):
            continue
        for entry in _entries(Path(project.path)):
            if (_UUID.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
                    and not os.path.lexists(os.path.join(project.path, entry.name + ".jsonl"))):
                found.append(Path(entry.path))
    return found


def session_id_of(path: Path) -> str | None:
    """Return the session id a transcript's name carries, or None when it carries none.

    A Codex rollout under the sessions folder: the id after its time,
    ``rollout-<time>-<id>.jsonl``; any other file: its name without
    ``.jsonl`` (Claude Code names a transcript by its session id). The id is
    not checked: ``pointers.check_session_id`` does that.
    """
    if _inside(path, config.codex_sessions_dir()) is not None:
        match = _ROLLOUT.fullmatch(path.name)
        return match.group(1) if match else None
    return path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else None


def live_job(session_id: str) -> str | None:
    """Return the id (folder name) of a Claude Code job that would resume ``session_id``, or None."""
    try:
        entries = list(os.scandir(config.claude_jobs_dir()))
    except OSError:
        return None
    for entry in sorted(entries, key=lambda e: e.name):
        try:
            if not entry.is_dir():
                continue
            state = json.loads((Path(entry.path) / "state.json").read_bytes())
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(state, dict):
            continue
        resume = state.get("resumeSessionId")
        if resume is not None and not isinstance(resume, str):
            continue
        target = resume or state.get("sessionId")
        if isinstance(target, str) and target == session_id:
            return entry.name
    return None


# Claude Code's other per-session files under its config dir (forget destroys them too):
# file edit backups, todo lists, debug logs, the session's shell environment.
# A todo list is `<sid>-agent-<agent id>.json`: `<sid>-*` would also match a session whose id
# merely starts with `<sid>-`.
_CLAUDE_SESSION_FILES = ("file-history/{sid}", "todos/{sid}-agent-*.json", "todos/{sid}.json",
                         "debug/{sid}.txt", "session-env/{sid}")


def host_leftovers(session_id: str) -> list[Path]:
    """Return Claude Code's other files of ``session_id`` that exist (backups, todos, debug logs)."""
    config_dir = config.claude_config_dir()
    found: list[Path] = []
    for pattern in _CLAUDE_SESSION_FILES:
        found += sorted(config_dir.glob(pattern.format(sid=session_id)))
    return found
