"""Running minds: one ``claude -p`` process per mind, in parallel, bounded in time.

A mind is (design, station ④ "runner"; docs/dream.md, "Minds")::

    <claude> -p --model <id> --output-format json --session-id <fresh uuid>
             --settings '{"disableAllHooks": true, "autoMemoryEnabled": false,
                          "includeGitInstructions": false}'
             --tools "" --strict-mcp-config --disable-slash-commands
             [--no-session-persistence]

with the prompt on standard input and the working directory ``<root>/.dream``.

A mind is blind: it sees the transcript and the prompt sandman gives it, and
nothing else, and it writes nothing. A ``claude -p`` process otherwise carries
native auto memory (a memory section in its system prompt, writes into the
native memory folder allowed), the recent commit subjects of its cwd's git
repository (the memory root: memory names) and the user's CLAUDE.md files.
``mind_env`` switches those off (``CLAUDE_CODE_DISABLE_AUTO_MEMORY``,
``CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS``, ``CLAUDE_CODE_DISABLE_CLAUDE_MDS``),
the settings repeat the first two, ``--tools ""`` leaves it no tool, and
``--strict-mcp-config`` (with no ``--mcp-config``) no MCP server either;
``--disable-slash-commands`` keeps skills out (docs/dream.md, "Minds", cites
Claude Code's documentation for each).

Two guards keep a mind out of the hooks: ``CLAUDE_MEMORY_PIPELINE=1`` (sandman's
own hooks stay silent under it) and ``disableAllHooks``. A dream spawned from a
SessionEnd hook inherits that session's variables (its id, pid, env file,
messaging socket and token, the plugin's folders); ``mind_env`` keeps only an
allow-list of the ``CLAUDE_CODE_*`` variables authentication and the provider
need and drops the session's own, as Claude Code does for a fresh child.

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

# The settings a mind runs with: no hooks, no auto memory, no git instructions.
MIND_SETTINGS = json.dumps({"disableAllHooks": True, "autoMemoryEnabled": False,
                            "includeGitInstructions": False})
# No tool, no MCP server (none is given after --strict-mcp-config), no skill.
BLIND_FLAGS = ("--tools", "", "--strict-mcp-config", "--disable-slash-commands")
# Set in every mind: what keeps the session's context out of its system prompt.
BLIND_ENV = {
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS": "1",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
}
# The CLAUDE_CODE_* variables a mind keeps: authentication, the provider and the
# network path to it. Every other CLAUDE_CODE_* variable is dropped: the ones a
# Claude Code session sets for its hooks and children name that session.
CLAUDE_CODE_ALLOWED = frozenset({
    "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_API_KEY_HELPER_TTL_MS",
    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
    "CLAUDE_CODE_SKIP_BEDROCK_AUTH", "CLAUDE_CODE_SKIP_VERTEX_AUTH", "CLAUDE_CODE_SKIP_FOUNDRY_AUTH",
    "CLAUDE_CODE_CLIENT_CERT", "CLAUDE_CODE_CLIENT_KEY", "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_MAX_RETRIES",
})
# Variables outside CLAUDE_CODE_* that a session's hook process carries and a mind must not.
SESSION_ENV = frozenset({
    "CLAUDECODE", "CLAUDE_PID", "CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE", "CLAUDE_SESSION_ID",
    "AI_AGENT", "TRACEPARENT", "TRACESTATE",
})
SESSION_ENV_PREFIXES = ("CLAUDE_PLUGIN_",)
KILL_GRACE_S = 5.0
# How much of the prompt's start must reappear in a reply for it to count as an echo.
ECHO_PROBE_CHARS = 200
ORPHANS = "orphans"


@dataclass
class MindResult:
    """What one mind did.

    ``status`` is ``answered`` (``text`` is the reply) or ``abstained``
    (``reason`` says why: ``timeout``, ``exit <n>``, ``signal <n>``,
    ``is_error``, ``subtype <s>`` (either followed by ``: <detail>`` from the
    error envelope's ``errors``, ``api_error_status`` and ``terminal_reason``),
    ``unparseable output``, ``no result``, ``no model call``, ``echo``,
    ``refusal``, ``spawn failed``, ``output over <n> bytes``: more than
    ``config.MIND_OUTPUT_MAX_BYTES``). ``cost_usd`` is what the CLI reported, None when it reported nothing (never 0 for
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
    """Return the argv of one blind mind (the prompt is not in it: it goes on stdin)."""
    argv = [config.claude_bin(), "-p", "--model", model, "--output-format", "json",
            "--session-id", session_id, "--settings", MIND_SETTINGS, *BLIND_FLAGS]
    if not persist:
        argv.append("--no-session-persistence")
    return argv


def is_session_variable(name: str) -> bool:
    """True when ``name`` belongs to the Claude Code session sandman runs under, not to the user.

    Every ``CLAUDE_CODE_*`` variable outside ``CLAUDE_CODE_ALLOWED``, the hook
    process's own (``CLAUDE_PID``, ``CLAUDE_ENV_FILE``, ...) and the plugin's
    ``CLAUDE_PLUGIN_*``.
    """
    if name.startswith("CLAUDE_CODE_"):
        return name not in CLAUDE_CODE_ALLOWED
    return name in SESSION_ENV or name.startswith(SESSION_ENV_PREFIXES)


def mind_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Return a mind's environment: ``environ`` (default ours) without the session's variables,
    marked as the pipeline, with auto memory, git instructions and CLAUDE.md files off."""
    source = os.environ if environ is None else environ
    env = {name: value for name, value in source.items() if not is_session_variable(name)}
    env.update(BLIND_ENV)
    env[config.PIPELINE_ENV] = "1"
    return env


SLUG_MAX = 200  # Claude Code cuts a longer project folder name here and appends "-<hash>"


def project_slug(directory: Path) -> str:
    """Return Claude Code's project folder name for ``directory``, or its fixed part.

    Each UTF-16 code unit that is not an ASCII letter or digit becomes ``-`` (a
    character outside the BMP is two units, so two dashes). A name of at most
    200 units is the folder's name; a longer one is cut at 200 and Claude Code
    appends ``-<hash of the path>``, a hash that depends on the runtime that
    built the CLI: find those folders with ``project_folders``.
    """
    return _sanitized(directory)[:SLUG_MAX]


def _sanitized(directory: Path) -> str:
    return "".join(c if c.isascii() and c.isalnum() else ("--" if ord(c) > 0xFFFF else "-")
                   for c in str(directory))


def project_folders(projects: Path, directory: Path) -> list[Path]:
    """Return the folders under ``projects`` Claude Code may keep ``directory``'s sessions in.

    The one folder named ``project_slug(directory)`` when the name is at most
    200 characters; else every folder named ``<first 200>-<hash>``, as Claude
    Code itself looks them up. Never raises: an unreadable ``projects`` has none.
    """
    full = _sanitized(directory)
    if len(full) <= SLUG_MAX:
        return [projects / full]
    prefix = full[:SLUG_MAX] + "-"
    try:
        return sorted(entry for entry in projects.iterdir() if entry.name.startswith(prefix))
    except OSError:
        return []


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
    except (UnicodeDecodeError, ValueError, RecursionError):
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
        return abstain(_with_detail("is_error", envelope))
    if envelope.get("subtype", "success") != "success":
        return abstain(_with_detail(f"subtype {envelope.get('subtype')}", envelope))
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


def _with_detail(reason: str, envelope: dict) -> str:
    """``reason`` sharpened by what the error envelope says: its ``errors``
    (Agent SDK ``SDKResultMessage``), else its ``result`` text, its
    ``api_error_status`` and a ``terminal_reason`` other than ``completed``;
    ``reason`` alone when it says none of these. At most 200 characters."""
    parts = []
    errors = [e.strip() for e in envelope.get("errors") or [] if isinstance(e, str) and e.strip()]
    if isinstance(envelope.get("errors"), list) and errors:
        parts.append(errors[0] + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""))
    elif isinstance(envelope.get("result"), str) and envelope["result"].strip():
        parts.append(envelope["result"].strip())
    status = envelope.get("api_error_status")
    if isinstance(status, (str, int)) and not isinstance(status, bool) and str(status).strip():
        parts.append(f"api status {status}")
    terminal = envelope.get("terminal_reason")
    if isinstance(terminal, str) and terminal.strip() and terminal != "completed":
        parts.append(f"terminal_reason {terminal}")
    if not parts:
        return reason
    detail = " ".join("; ".join(parts).split())
    return f"{reason}: {detail}"[:200]


def is_echo(text: str, prompt: str) -> bool:
    """True when ``text`` reproduces the start of ``prompt`` (the CLI echoed, no model spoke)."""
    probe = prompt.strip()[:ECHO_PROBE_CHARS]
    return len(probe) >= 40 and probe in text


def keep_transcript(cwd: Path, session_id: str, layout: Layout, project: str) -> Path | None:
    """Move the mind's transcript into ``.dream/<project>/``; return its new path, None on failure.

    Claude Code writes ``<projects dir>/<slug of cwd>/<session id>.jsonl``; the
    slug (``project_folders``: over 200 characters, any ``<cut>-<hash>`` folder)
    is taken of both the given and the resolved cwd, then any project
    folder is searched (the session id is a fresh uuid, so a match is ours).
    Best effort: every error is swallowed, because keeping a transcript must
    never change what the mind is counted as.
    """
    if "/" in project or "\0" in project or project in ("", ".", ".."):
        project = ORPHANS
    projects = config.claude_projects_dir()
    name = f"{session_id}.jsonl"
    folders = project_folders(projects, cwd) + project_folders(projects, cwd.resolve())
    candidates = [folder / name for folder in folders]
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

    ``<projects dir>/<slug of cwd>/`` (of the cwd as given and resolved; every
    ``<cut>-<hash>`` folder of a slug over 200 characters) holds
    only the minds' own sessions, each moved out by ``keep_transcript`` when
    its mind ends; what is still there when a dream run starts (under the
    dream lock, before any mind) was left by a dream killed mid-run, its minds
    outliving it. Each entry, transcript or companion folder, moves to
    ``layout.dream_orphan(name)``, ``<stem>-2``, ``-3``... when that is taken.
    Best effort: returns ``(entry, where it went or None, error or None)`` for
    each entry, for the journal; never raises.
    """
    projects = config.claude_projects_dir()
    folders = dict.fromkeys(project_folders(projects, cwd) + project_folders(projects, cwd.resolve()))
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
