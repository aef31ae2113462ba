"""Running minds: one ``claude -p`` process per mind, in parallel, bounded in time.

A mind is (design, station ④ "runner"; docs/dream.md, "Minds")::

    <claude> -p --model <id> --output-format json --session-id <fresh uuid>
             --settings '{"disableAllHooks": true}' [--no-session-persistence]

with the prompt on standard input, the working directory ``<root>/.dream``, and
``CLAUDE_MEMORY_PIPELINE=1`` in its environment. Two guards keep a mind out of
the hooks: the environment marker (sandman's own hooks stay silent under it)
and ``disableAllHooks`` (no hook of any tool runs at all). ``CLAUDECODE`` and
``CLAUDE_CODE_ENTRYPOINT`` are removed from its environment: a dream started
from inside a Claude Code session would otherwise be refused as a nested
session.

The prompt goes on stdin, never in argv: Linux refuses one argument over
131,071 bytes (``MAX_ARG_STRLEN``, E2BIG) and a dream prompt carries up to
100,000 characters of transcript, which is more bytes than that once it is
not ASCII; and argv is readable by every local user in ``ps``, stdin is not.
``claude -p`` with no prompt argument reads the prompt from stdin.

Each mind runs in its own process group and session; after ``timeout``
seconds the whole group gets SIGTERM, then SIGKILL after ``KILL_GRACE_S``, so
no tool process a mind started outlives it. Whatever happens, the outcome is a
MindResult: ``answered`` with the model's text, or ``abstained`` with a reason.
Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sandman import config
from sandman.errors import ClaudeNotFound, SandmanError
from sandman.layout import Layout
from sandman.store.atomic import move_no_replace
from sandman.store.capture import OVERFLOW, TIMEOUT, Capture

HOOKS_OFF = json.dumps({"disableAllHooks": True})
KILL_GRACE_S = 5.0
# Variables by which Claude Code recognises it runs inside another session.
NESTING_ENV = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")
# How much of the prompt's start must reappear in a reply for it to count as an echo.
ECHO_PROBE_CHARS = 200
ORPHANS = "orphans"


@dataclass
class MindResult:
    """What one mind did.

    ``status`` is ``answered`` (``text`` is the reply) or ``abstained``
    (``reason`` says why: ``timeout``, ``exit <n>``, ``signal <n>``,
    ``is_error``, ``subtype <s>``, ``unparseable output``, ``no result``,
    ``no model call``, ``echo``, ``refusal``, ``spawn failed``, ``output over
    <n> bytes``: more than ``config.MIND_OUTPUT_MAX_BYTES``). ``cost_usd``
    is what the CLI reported, None when it reported nothing (never 0 for
    unknown); ``tokens`` the numeric fields of its ``usage`` (None when
    absent); ``duration_s`` the wall time in seconds. ``detail`` is the last
    line the process wrote on stderr (at most 200 characters), for the
    journal. ``transcript`` is where the mind's own session transcript was
    kept, None when it was not moved.
    """

    mind: str
    model: str
    session_id: str
    status: str
    text: str | None
    reason: str | None
    cost_usd: float | None
    tokens: dict | None
    duration_s: float
    detail: str | None = None
    transcript: Path | None = None

    @property
    def answered(self) -> bool:
        return self.status == "answered"


def mind_argv(model: str, session_id: str, *, persist: bool = True) -> list[str]:
    """Return the argv of one mind (the prompt is not in it: it goes on stdin)."""
    argv = [config.claude_bin(), "-p", "--model", model, "--output-format", "json",
            "--session-id", session_id, "--settings", HOOKS_OFF]
    if not persist:
        argv.append("--no-session-persistence")
    return argv


def mind_env() -> dict[str, str]:
    """Return the environment of a mind: ours, marked as the pipeline, not nested."""
    env = {name: value for name, value in os.environ.items() if name not in NESTING_ENV}
    env[config.PIPELINE_ENV] = "1"
    return env


def project_slug(directory: Path) -> str:
    """Return Claude Code's project folder name for ``directory``: each non-alphanumeric character becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(directory))


def require_claude() -> str:
    """Return the path of the minds' claude binary (``config.claude_bin()``, looked up on PATH).

    Raises ClaudeNotFound when it is not an executable: a run checks this once,
    instead of letting every mind abstain with ``spawn failed``.
    """
    name = config.claude_bin()
    found = shutil.which(name)
    if found is None:
        raise ClaudeNotFound(f"claude not found ({name!r} is not an executable): install Claude Code "
                             "or set SANDMAN_CLAUDE_BIN")
    return found


def run_mind(
    prompt: str,
    *,
    mind: str,
    model: str,
    cwd: Path,
    timeout: float,
    persist: bool = True,
    keep: tuple[Layout, str] | None = None,
) -> MindResult:
    """Run one mind on ``prompt`` and return what it did; never raises for the mind's sake.

    ``cwd`` is created if missing (the dream uses ``layout.dream_dir``);
    ``timeout`` is in seconds. When ``persist`` and ``keep = (layout,
    claude project)`` are given, the transcript Claude Code wrote for the
    mind's session is moved, best effort and on every outcome, to
    ``layout.mind_transcript(project, session id)`` (design, "kept
    transcripts"); a failed move never changes the outcome. Raises OSError only
    when ``cwd`` cannot be created.
    """
    session_id = str(uuid.uuid4())
    cwd.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    outcome = _spawn(prompt, mind_argv(model, session_id, persist=persist), cwd, timeout)
    status, text, reason, cost, tokens = _judge(outcome, prompt)
    result = MindResult(
        mind=mind, model=model, session_id=session_id, status=status, text=text,
        reason=reason, cost_usd=cost, tokens=tokens, duration_s=time.monotonic() - started,
        detail=_last_line(outcome.stderr),
    )
    if persist and keep is not None:
        result.transcript = keep_transcript(cwd, session_id, *keep)
    return result


def run_minds(
    jobs: list[tuple[str, str, str]],
    *,
    cwd: Path,
    timeout: float,
    persist: bool = True,
    keep: tuple[Layout, str] | None = None,
) -> list[MindResult]:
    """Run ``(mind, model, prompt)`` jobs at the same time; return their results in job order.

    Each job is a ``run_mind`` of its own, so the wall time is that of the
    slowest mind (at most ``timeout`` plus the kill grace). Raises OSError only
    when ``cwd`` cannot be created.
    """
    if not jobs:
        return []
    cwd.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [
            pool.submit(run_mind, prompt, mind=mind, model=model, cwd=cwd, timeout=timeout,
                        persist=persist, keep=keep)
            for mind, model, prompt in jobs
        ]
        return [future.result() for future in futures]


@dataclass
class _Outcome:
    stdout: bytes
    stderr: bytes
    returncode: int | None  # None: killed at the timeout
    spawn_error: str | None = None
    oversized: bool = False  # stdout went over config.MIND_OUTPUT_MAX_BYTES


def _spawn(prompt: str, argv: list[str], cwd: Path, timeout: float) -> _Outcome:
    # A transcript's JSON may carry lone surrogates ("\ud800"): they are not UTF-8, so "?" stands in.
    data = prompt.encode("utf-8", "replace")
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=mind_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as error:
        return _Outcome(b"", b"", None, spawn_error=f"spawn failed: {error.strerror or error}")
    # At most MIND_OUTPUT_MAX_BYTES of stdout is held: a mind printing more abstains.
    capture = Capture(proc, data, config.MIND_OUTPUT_MAX_BYTES)
    timed_out = False
    try:
        ended = capture.until(timeout)
        if ended == TIMEOUT:
            # The leader may have finished while a child it left still holds stdout
            # open; then its answer stands and only the straggler is killed.
            timed_out = proc.poll() is None
            _kill_group(proc)
            capture.until(KILL_GRACE_S)
        elif ended == OVERFLOW:
            _kill_group(proc)
    finally:
        capture.close()
        _signal_group(proc.pid, signal.SIGKILL)
    if ended == OVERFLOW:
        return _Outcome(b"", capture.stderr, proc.returncode, oversized=True)
    return _Outcome(capture.stdout, capture.stderr, None if timed_out else proc.returncode)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the mind's process group, SIGKILL it after the grace, reap the leader."""
    if _signal_group(proc.pid, signal.SIGTERM):
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def parse_output(stdout: bytes) -> dict | None:
    """Return the ``type: result`` object of ``claude -p --output-format json`` output.

    The output is one JSON object, or (with ``--verbose``) a JSON array of
    messages whose last ``type: result`` element is the result. Returns None
    for anything else: empty, not UTF-8, not JSON, no result element.
    """
    try:
        data = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if isinstance(data, list):
        results = [item for item in data if isinstance(item, dict) and item.get("type") == "result"]
        return results[-1] if results else None
    if isinstance(data, dict) and data.get("type", "result") == "result":
        return data
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _tokens(envelope: dict) -> dict | None:
    usage = envelope.get("usage")
    if not isinstance(usage, dict):
        return None
    counts = {key: value for key, value in usage.items()
              if isinstance(value, int) and not isinstance(value, bool)}
    return counts or None


def _judge(outcome: _Outcome, prompt: str):
    """Return ``(status, text, reason, cost, tokens)`` for one finished process."""
    if outcome.spawn_error:
        return "abstained", None, outcome.spawn_error, None, None
    if outcome.oversized:
        return "abstained", None, f"output over {config.MIND_OUTPUT_MAX_BYTES:,} bytes", None, None
    envelope = parse_output(outcome.stdout)
    cost = _number(envelope.get("total_cost_usd")) if envelope else None
    tokens = _tokens(envelope) if envelope else None

    def abstain(reason: str):
        return "abstained", None, reason, cost, tokens

    if outcome.returncode is None:
        return abstain("timeout")
    if outcome.returncode < 0:
        return abstain(f"signal {-outcome.returncode}")
    if outcome.returncode != 0:
        return abstain(f"exit {outcome.returncode}")
    if envelope is None:
        return abstain("unparseable output")
    if envelope.get("is_error") is True:
        return abstain("is_error")
    if envelope.get("subtype", "success") != "success":
        return abstain(f"subtype {envelope.get('subtype')}")
    text = envelope.get("result")
    if not isinstance(text, str) or not text.strip():
        return abstain("no result")
    # subtype "success" does not mean the model answered (corpus/cli, unknown-skill).
    if envelope.get("duration_api_ms") == 0 or (tokens is not None and tokens.get("output_tokens") == 0):
        return abstain("no model call")
    if envelope.get("stop_reason") == "refusal":
        return abstain("refusal")
    if is_echo(text, prompt):
        return abstain("echo")
    return "answered", text, None, cost, tokens


def is_echo(text: str, prompt: str) -> bool:
    """True when ``text`` reproduces the start of ``prompt`` (the CLI echoed, no model spoke)."""
    probe = prompt.strip()[:ECHO_PROBE_CHARS]
    return len(probe) >= 40 and probe in text


def keep_transcript(cwd: Path, session_id: str, layout: Layout, project: str) -> Path | None:
    """Move the mind's transcript into ``.dream/<project>/``; return its new path, None on failure.

    Claude Code writes ``<projects dir>/<slug of cwd>/<session id>.jsonl``; the
    slug is taken of both the given and the resolved cwd, then any project
    folder is searched (the session id is a fresh uuid, so a match is ours).
    Best effort: every error is swallowed, because keeping a transcript must
    never change what the mind is counted as.
    """
    if "/" in project or "\0" in project or project in ("", ".", ".."):
        project = ORPHANS
    projects = config.claude_projects_dir()
    name = f"{session_id}.jsonl"
    candidates = [projects / project_slug(cwd) / name, projects / project_slug(cwd.resolve()) / name]
    try:
        source = next((path for path in candidates if path.is_file()), None)
        if source is None:
            source = next(iter(projects.glob(f"*/{name}")), None)
        if source is None:
            return None
        target = layout.mind_transcript(project, session_id)
        move_no_replace(source, target)
        return target
    except (OSError, ValueError, SandmanError):
        return None


def sweep_leftovers(layout: Layout, cwd: Path) -> list[tuple[Path, Path | None, str | None]]:
    """Move everything Claude Code keeps for sessions run in ``cwd`` into ``.dream/orphans/``.

    ``<projects dir>/<slug of cwd>/`` (of the cwd as given and resolved) holds
    only the minds' own sessions, each moved out by ``keep_transcript`` when
    its mind ends; what is still there when a dream run starts (under the
    dream lock, before any mind) was left by a dream killed mid-run, its minds
    outliving it. Each entry, transcript or companion folder, moves to
    ``layout.dream_orphan(name)``, ``<stem>-2``, ``-3``... when that is taken.
    Best effort: returns ``(entry, where it went or None, error or None)`` for
    each entry, for the journal; never raises.
    """
    projects = config.claude_projects_dir()
    folders = dict.fromkeys([projects / project_slug(cwd), projects / project_slug(cwd.resolve())])
    moved: list[tuple[Path, Path | None, str | None]] = []
    for folder in folders:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            try:
                moved.append((entry, _to_orphans(layout, entry), None))
            except (OSError, SandmanError) as error:
                moved.append((entry, None, str(error)))
        try:
            folder.rmdir()
        except OSError:
            pass  # not empty (a move failed) or already gone
    return moved


def _to_orphans(layout: Layout, entry: Path) -> Path:
    stem, suffix = (entry.stem, entry.suffix) if entry.is_file() else (entry.name, "")
    for number in range(1, 100):
        target = layout.dream_orphan(entry.name if number == 1 else f"{stem}-{number}{suffix}")
        try:
            move_no_replace(entry, target)
            return target
        except FileExistsError:
            continue
    raise FileExistsError(f"{layout.dream_orphan(entry.name)} and 98 other names are taken")


def _last_line(data: bytes) -> str | None:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1][:200] if lines else None
