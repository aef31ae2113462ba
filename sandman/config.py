"""Every environment variable sandman reads, and every default, in one place.

Standard library only: the hook entry points import this module.

Nothing here caches: each function reads the environment when it is called, so a
test (or a hook running under a different environment) always sees the current
value. The constants at the bottom are the design's numbers
(../shared/DESIGN.md, "Formats and constants"); they are constants, not settings.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from collections import namedtuple

from sandman.errors import ConfigError
from sandman.layout import Layout

# --- the data root -----------------------------------------------------------


def root() -> Path:
    """Return the memory root: ``$SANDMAN_ROOT``, else ``~/.sandman``.

    The one function that resolves the root (design, "Data root"). ``~`` is
    expanded. Raises ConfigError when ``$SANDMAN_ROOT`` is set but relative (a
    hook runs in the session's cwd, so a relative root would land anywhere),
    and when the root exists but is not a directory (a file: every verb would
    otherwise fail on some path beneath it with a bare "File exists").
    """
    value = os.environ.get("SANDMAN_ROOT", "")
    if not value:
        path = Path.home() / ".sandman"
        if os.path.lexists(path) and not os.path.isdir(path):
            raise ConfigError(f"the memory root {path} is not a directory; move it aside or set SANDMAN_ROOT "
                              "to a folder")
        return path
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise ConfigError(f"SANDMAN_ROOT={value!r} is relative; set it to an absolute path")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ConfigError(f"SANDMAN_ROOT={value} is not a directory; point it at a folder")
    return path


def deleted_cwd() -> str | None:
    """Return the current directory's name when it no longer exists (deleted under this
    process): ``$PWD``, the shell's name for it, else ``"."``; None when it exists."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return os.environ.get("PWD") or "."
    return None


# --- the host: Claude Code and Codex -----------------------------------------


def claude_config_dir() -> Path:
    """Return Claude Code's config dir: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    value = os.environ.get("CLAUDE_CONFIG_DIR", "")
    return Path(value).expanduser() if value else Path.home() / ".claude"


def claude_projects_dir() -> Path:
    """Return ``<config dir>/projects``, where Claude Code keeps session transcripts."""
    return claude_config_dir() / "projects"


def claude_project_dir() -> str | None:
    """Return ``$CLAUDE_PROJECT_DIR`` when it is an absolute path, else None.

    Claude Code sets it for every hook command it runs: the project's root
    directory (docs/recall.md, "The hook"; Claude Code's hooks
    reference). Used only when a hook payload carries no ``cwd``.
    """
    value = os.environ.get("CLAUDE_PROJECT_DIR", "")
    return value if os.path.isabs(value) else None


def claude_session_id() -> str | None:
    """Return ``$CLAUDE_CODE_SESSION_ID``: the session Claude Code runs this process for (it sets it
    for hooks, tools and MCP servers; docs/recall.md, "Which memories were used"), else None."""
    value = os.environ.get("CLAUDE_CODE_SESSION_ID", "")
    return value or None


def claude_jobs_dir() -> Path:
    """Return ``<config dir>/jobs``, where background jobs name resumable sessions."""
    return claude_config_dir() / "jobs"


def claude_settings_file() -> Path:
    """Return Claude Code's user settings file, ``<config dir>/settings.json``."""
    return claude_config_dir() / "settings.json"


def systemd_user_dir() -> Path:
    """Return the user's systemd unit folder: ``$XDG_CONFIG_HOME/systemd/user``, else ``~/.config/systemd/user``."""
    value = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(value) if value and os.path.isabs(value) else Path.home() / ".config"
    return base / "systemd" / "user"


def launch_agents_dir() -> Path:
    """Return the user's launchd agent folder, ``~/Library/LaunchAgents``."""
    return Path.home() / "Library" / "LaunchAgents"


def codex_home() -> Path:
    """Return Codex's home: ``$CODEX_HOME``, else ``~/.codex``."""
    value = os.environ.get("CODEX_HOME", "")
    return Path(value).expanduser() if value else Path.home() / ".codex"


def user_home() -> Path:
    """Return the user's home directory, where recall's ancestor walk stops."""
    return Path.home()


# --- switches ----------------------------------------------------------------


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def in_pipeline() -> bool:
    """True inside a mind (``CLAUDE_MEMORY_PIPELINE=1``): hooks stay silent there."""
    return os.environ.get(PIPELINE_ENV, "") == "1"


def claude_pid() -> int | None:
    """Return ``$CLAUDE_PID``, the Claude Code process a hook runs under (None: unset or not a pid)."""
    value = os.environ.get("CLAUDE_PID", "").strip()
    return int(value) if value.isdigit() and int(value) > 1 else None


def no_take() -> bool:
    """True when ``$SANDMAN_NO_TAKE`` is set: ``take --hook`` declines before reading."""
    return _flag("SANDMAN_NO_TAKE")


DREAM_LOCK_FD_ENV = "SANDMAN_DREAM_LOCK_FD"


def inherited_dream_lock() -> int | None:
    """Return the descriptor of the dream lock take handed this process (``$SANDMAN_DREAM_LOCK_FD``,
    set by take on the detached dream it spawns), None when absent or not a descriptor number.

    The variable is removed from this process's environment as it is read: no
    mind or other child of the dream inherits it.
    """
    value = os.environ.pop(DREAM_LOCK_FD_ENV, "")
    return int(value) if value.isdigit() else None


# --- the minds ---------------------------------------------------------------

PIPELINE_ENV = "CLAUDE_MEMORY_PIPELINE"

# The three dream minds, strongest tier first: consensus takes its wording from
# the strongest agreeing mind. name -> (environment variable, default model id).
MINDS: dict[str, tuple[str, str]] = {
    "fable": ("SANDMAN_MIND_FABLE", "claude-fable-5-1"),
    "opus": ("SANDMAN_MIND_OPUS", "claude-opus-5"),
    "sonnet": ("SANDMAN_MIND_SONNET", "claude-sonnet-5"),
}
MIND_LOG = ("SANDMAN_MIND_LOG", "claude-opus-5")
MIND_UPKEEP = ("SANDMAN_MIND_UPKEEP", "claude-opus-5")
MIND_CURATE = ("SANDMAN_MIND_CURATE", "claude-opus-5")  # the curators (sandman curate)


def claude_bin() -> str:
    """Return the claude executable the minds run: ``$SANDMAN_CLAUDE_BIN``, else ``claude``."""
    return os.environ.get("SANDMAN_CLAUDE_BIN", "") or "claude"


def model(var_default: tuple[str, str]) -> str:
    """Return the model id for one ``(variable, default)`` pair of this module."""
    var, default = var_default
    return os.environ.get(var, "") or default


def mind_timeout() -> float:
    """Return seconds before a mind is killed: ``$SANDMAN_MIND_TIMEOUT``, default 300."""
    return _positive_float("SANDMAN_MIND_TIMEOUT", MIND_TIMEOUT_S)


# The day's spend cap has one spelling, ``[machine] budget_usd_day`` (day_budget_usd); this
# variable was dream's and reflect's own, and is read, when the setting is absent, for one release.
OLD_DAY_BUDGET_VARIABLE = "SANDMAN_DAILY_BUDGET_USD"


def old_daily_budget_usd() -> float | None:
    """Return ``$SANDMAN_DAILY_BUDGET_USD`` (the old spelling of ``[machine] budget_usd_day``) in US
    dollars, or None when unset. Raises ConfigError for a value that is not a finite number above 0."""
    if not os.environ.get(OLD_DAY_BUDGET_VARIABLE, ""):
        return None
    return _positive_float(OLD_DAY_BUDGET_VARIABLE, 0.0)


def _budget_usd_day(section: dict, where: Path) -> float | None:
    """``budget_usd_day`` of a ``[machine]`` table in US dollars; the old variable when the key is absent."""
    if "budget_usd_day" not in section:
        return old_daily_budget_usd()
    value = section["budget_usd_day"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ConfigError(f"{where}: machine.budget_usd_day must be a number above 0, finite (US dollars), "
                          f"not {value!r}")
    return float(value)


def day_budget_usd(layout: Layout) -> float | None:
    """The day's spend cap in US dollars, one for dream, reflect, shifts and research (docs/shift.md,
    "Configuration"): ``[machine] budget_usd_day`` of ``<root>/.settings.toml``; when that key is
    absent, the old spelling ``$SANDMAN_DAILY_BUDGET_USD`` (doctor says to move it); None: no cap.

    Reads only that key, so a mistake elsewhere in ``[machine]`` does not stop a dream. Raises
    ConfigError: the settings file is not TOML, or either spelling holds a bad value.
    """
    section = settings(layout).get("machine", {})
    return _budget_usd_day(section if isinstance(section, dict) else {}, layout.settings_file)


def dream_due_pointers() -> int:
    """Return how many due pointers make a dream due at once: ``$SANDMAN_DREAM_DUE_POINTERS``, default 10.

    Raises ConfigError for a value that is not a whole number from 1 up.
    """
    value = os.environ.get("SANDMAN_DREAM_DUE_POINTERS", "")
    if not value:
        return DREAM_DUE_POINTERS
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"SANDMAN_DREAM_DUE_POINTERS={value!r} is not a whole number") from None
    if number < 1:
        raise ConfigError(f"SANDMAN_DREAM_DUE_POINTERS={value!r} must be 1 or more")
    return number


def dream_wait_s() -> float:
    """Return seconds a queued session waits before a dream is due for it however short the queue:
    ``$SANDMAN_DREAM_WAIT_HOURS`` (hours, default 12), in seconds. Raises ConfigError for a bad value."""
    return _positive_float("SANDMAN_DREAM_WAIT_HOURS", DREAM_WAIT_HOURS) * 3600


def _positive_float(name: str, default: float) -> float:
    value = os.environ.get(name, "")
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not a number") from None
    if not number > 0 or number == float("inf"):
        raise ConfigError(f"{name}={value!r} must be a finite number greater than 0")
    return number


# --- git identity ------------------------------------------------------------


def git_identity() -> tuple[str, str] | None:
    """Return ``($SANDMAN_GIT_NAME, $SANDMAN_GIT_EMAIL)`` when both are set, else None.

    When None, store/ falls back to git's own config (user.name, user.email),
    then to ``sandman <sandman@localhost>``.
    """
    name = os.environ.get("SANDMAN_GIT_NAME", "")
    email = os.environ.get("SANDMAN_GIT_EMAIL", "")
    return (name, email) if name and email else None


# --- the design's constants --------------------------------------------------

RECALL_BUDGET_UTF16 = 9_000  # UTF-16 code units: Claude Code caps hook context at 10,000 of them
# Claude Code 2.1.332 caps each hook's additionalContext on its own: up to 10,000 UTF-16 units
# arrive whole, one more and the model sees a 2 KB preview of a file (docs/live-tests.md, proven
# live by tests/test_live_claude_code.py). Two hooks' contexts are never summed.
HOOK_CONTEXT_MAX_UTF16 = 10_000
# The unread reports' digest (`report --hook`) is a SessionStart hook of its own beside recall's:
# the whole cap is its.
REPORT_DIGEST_UTF16 = HOOK_CONTEXT_MAX_UTF16
REPORT_MESSAGE_LINES = 20  # reports named in the person's systemMessage; past it, "and N more"
NOTE_MAX_CHARS = 2_000  # a note for the next session (sandman note): short, shown first, inside the recall budget
RECALL_POINTER_HOURS = 72
RECALL_MAX_POINTERS = 12
TOOL_INDEX_MAX_CHARS = 1_200
TAKE_LIVE_WINDOW_S = 120
BACKSTOP_LOOKBACK_S = 7 * 86_400  # the backstop takes missed endings this recent; older ones are take --all's
BACKSTOP_EVERY_S = 60  # session starts closer together than this start one backstop
# The backstop's check at a start trusts its kept scan of a project folder this long: a transcript
# taken (or older than the lookback) and written again since is found at the folder's next listing.
BACKSTOP_RESCAN_S = 3_600
TAKE_CLOCK_SLACK_S = 2  # a transcript written further in the future means a clock is off
DREAM_DUE_POINTERS = 10  # default of $SANDMAN_DREAM_DUE_POINTERS: a queue this deep is dreamt at once
DREAM_WAIT_HOURS = 12.0  # default of $SANDMAN_DREAM_WAIT_HOURS: a session queued this long is dreamt anyway
DREAM_POINTERS_PER_RUN = 20
DREAM_QUORUM = 2
DREAM_LOCK_STALE_S = 2 * 3600
DREAM_RETRY_MAX_S = 24 * 3600  # a pointer that failed waits 1 h, 2 h, 4 h... at most this
MIND_TIMEOUT_S = 300.0
MIND_OUTPUT_MAX_BYTES = 4 * 1024 * 1024  # a mind printing more abstains; a real reply is a few KB
SWEEP_AFTER_HOURS = 72
UPKEEP_DUE_FILES = 5
UPKEEP_DUE_HOURS = 20
UPKEEP_MAX_OPS = 6
TITLE_MAX_CHARS = 80
MIND_TRANSCRIPT_HEAD_CHARS = 20_000
MIND_TRANSCRIPT_TAIL_CHARS = 80_000
LOG_TITLE_MAX_CHARS = 60
LOG_BODY_MAX_CHARS = 1_000
MEMORY_BODY_MAX_BYTES = 64 * 1024
# What a hook reads of its stdin payload at most (sandman/hook.py); a larger payload is refused.
HOOK_PAYLOAD_MAX_BYTES = 1 << 20
# Linux's PATH_MAX (bytes, its NUL included): a hook payload's cwd or file path longer than this names no
# file the system could open, and walking its folders costs quadratic time (80,000 characters: 25 s, past
# Claude Code's hook timeouts), so every hook declines it at once (plainhook.too_long; docs/hooks.md).
PATH_MAX_BYTES = 4096
SESSION_ID_MAX_CHARS = 128
COMMIT_LOCK_TIMEOUT_S = 120.0
# A remember's flat commit leaves the git index behind HEAD (store.repo.commit_flat); while the index
# file is at most this many bytes (some 8,000 memories) it is caught up at once, so `git status` in the
# root stays clean after a remember, for a few milliseconds; a larger one is caught up by the `sandman
# remember` process's child (store.repo.catch_up_in_child; in process, at once).
INDEX_CATCH_UP_MAX_BYTES = 1 << 20
# How long a sandman write waits for a git lock file a running git holds (a `git status` holds
# index.lock for milliseconds) before it gives up with GitBusy (a `git commit` with its editor open).
GIT_LOCK_WAIT_S = 2.0

# --- transcripts, take, hooks (issue 3) ---------------------------------------


def codex_sessions_dir() -> Path:
    """Return ``<codex home>/sessions``, where Codex keeps ``rollout-*.jsonl`` files."""
    return codex_home() / "sessions"


# A transcript line longer than this is skipped unparsed (counted "too long"):
# the reader's memory stays bounded whatever a file holds.
TRANSCRIPT_LINE_MAX_BYTES = 32 * 1024 * 1024
# sniff() decides the host from at most this many bytes at the head of a file.
SNIFF_MAX_BYTES = 1024 * 1024
# Seconds Claude Code may let each registered hook run (hooks install and the
# plugin manifest declare them: undeclared, SessionEnd gets about 1.5 s, and a
# plugin's declared SessionEnd timeout is not honoured: docs/hooks.md).
HOOK_TIMEOUT_TAKE_S = 30
HOOK_TIMEOUT_RECALL_S = 15
HOOK_TIMEOUT_REPORT_S = 10
HOOK_TIMEOUT_PROMPT_S = 5  # recall --prompt-hook: Claude Code waits for it before the model sees the prompt
HOOK_TIMEOUT_FILE_S = 5  # recall --file-hook: after each Read, Edit, Write of a file

# --- memory at each prompt and each file (sandman/recall/moments.py, docs/recall.md) ---
# Each hook's own budget: a few memories beside a prompt or a tool result, about 400 tokens,
# a sixth of the start surface's 9,000 (docs/recall.md, "Memory at each prompt").
PROMPT_BUDGET_UTF16 = 1_500
FILE_BUDGET_UTF16 = 1_500
MOMENT_MAX_MEMORIES = 3  # at most this many memories per prompt or per file
PROMPT_CANDIDATES = 12  # the best-ranked memories the relevance floor is checked on
PROMPT_MAX_TERMS = 16  # meaningful words of a prompt looked up, in their order (a pasted log has hundreds)
PROMPT_RANK_MAX_MATCHES = 1_000  # the rarest words rank, as many as together match at most this many memories
# The relevance floor (docs/recall.md, "The relevance floor"; bench/retrieval.py --floors measures it):
PROMPT_MIN_SHARED = 1  # a memory shares at least this many of the prompt's meaningful words...
PROMPT_MIN_COVERAGE = 0.3  # ...and at least this share of their weight (rarer words weigh more: query.weight);
PROMPT_MIN_RARITY = 0.7  # a one-word prompt's word weighs at least this share of a word one memory holds
FILE_CANDIDATES = 50  # memories holding the file's name words, checked for a real mention
# A take's intent record (.taking/) whose process still lives is left to it this many
# seconds; past them (or once the process is gone) a drain finishes the take itself.
TAKE_INTENT_STALE_S = 60
# --- recall (issue 5) ---------------------------------------------------------
# The voyage log's tail in recall: its newest entries, kept whole as the floor.
RECALL_LOG_ENTRIES = 3


# --- this machine's settings file: sync automation (issue 7) -------------------
#
# ``<root>/.settings.toml`` is dotted, so it is never versioned and never
# travels: each machine decides for itself whether it syncs after every commit
# or fetches at session start (docs/sync.md, "Automation"). Read with tomllib
# (imported lazily: the recall hook asks ``sync_fetch_at_start``).

SYNC_DEFAULT_REMOTE = "origin"
SYNC_CONNECT_TIMEOUT_S = 15.0  # libgit2 gives up connecting after this
SYNC_SERVER_TIMEOUT_S = 60.0  # ...and on a server that stops answering after this
CREDENTIAL_HELPER_TIMEOUT_S = 20.0  # a git credential helper that takes longer is skipped
CREDENTIAL_HELPER_MAX_BYTES = 64 * 1024  # ...and one that prints more
_SYNC_SETTINGS = {"after_commit": bool, "fetch_at_start": bool, "remote": str}


def settings(layout: Layout) -> dict:
    """Return ``<root>/.settings.toml`` as a dict; ``{}`` when the file does not exist.

    Raises ConfigError naming the file
    when it is not valid TOML or a known key has the wrong type (``[sync]``:
    ``after_commit`` and ``fetch_at_start`` booleans, ``remote`` a string).
    """
    path = layout.settings_file
    if not path.exists():  # the common case, asked on the SessionStart hook path
        return {}
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path} is not readable TOML ({error}); fix or remove it") from None
    section = data.get("sync", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [sync] must be a table")
    for key, kind in _SYNC_SETTINGS.items():
        if key in section and not isinstance(section[key], kind):
            raise ConfigError(f"{path}: sync.{key} must be a {kind.__name__}, not {section[key]!r}")
    recall = data.get("recall", {})
    if not isinstance(recall, dict):
        raise ConfigError(f"{path}: [recall] must be a table")
    for key in RECALL_SWITCHES:
        if key in recall and not isinstance(recall[key], bool):
            raise ConfigError(f"{path}: recall.{key} must be true or false, not {recall[key]!r}")
    banks = data.get("banks", {})
    if not isinstance(banks, dict):
        raise ConfigError(f"{path}: [banks] must be a table")
    if "share_worktrees" in banks and not isinstance(banks["share_worktrees"], bool):
        raise ConfigError(f"{path}: banks.share_worktrees must be a bool, not {banks['share_worktrees']!r}")
    return data


RECALL_SWITCHES = ("prompt_hook", "file_hook")


def recall_switch(layout: Layout, key: str) -> bool:
    """``[recall] prompt_hook`` or ``file_hook`` (both default true): whether ``recall --prompt-hook``
    or ``recall --file-hook`` adds memories. A settings file that cannot be read leaves the
    default, on (sync and doctor report the file); never raises."""
    try:
        return settings(layout).get("recall", {}).get(key, True)
    except ConfigError:
        return True


def upkeep_review(layout: Layout) -> bool:
    """True when ``upkeep.review`` is on: reflect's upkeep writes a proposal set (``sandman curate
    review``) instead of applying its plan. Raises ConfigError."""
    section = settings(layout).get("upkeep", {})
    value = section.get("review", False) if isinstance(section, dict) else None
    if not isinstance(value, bool):
        raise ConfigError(f"{layout.settings_file}: upkeep.review must be true or false, not {value!r}")
    return value


def share_worktrees(layout: Layout) -> bool:
    """``[banks] share_worktrees`` (default true): a linked git worktree uses its main worktree's banks
    (banks/worktrees.py). Raises ConfigError for a bad settings file."""
    return settings(layout).get("banks", {}).get("share_worktrees", True)


def _sync_setting(layout: Layout, key: str, default):
    return settings(layout).get("sync", {}).get(key, default)


def sync_after_commit(layout: Layout) -> bool:
    """True when ``sync.after_commit`` is on: dream and reflect sync after they commit. Raises ConfigError."""
    return _sync_setting(layout, "after_commit", False)


def sync_fetch_at_start(layout: Layout) -> bool:
    """True when ``sync.fetch_at_start`` is on: SessionStart spawns a background sync. Raises ConfigError."""
    return _sync_setting(layout, "fetch_at_start", False)


def sync_remote(layout: Layout) -> str:
    """Return the remote sync uses when none is given: ``sync.remote``, else ``origin``. Raises ConfigError."""
    return _sync_setting(layout, "remote", SYNC_DEFAULT_REMOTE) or SYNC_DEFAULT_REMOTE


# --- the machine (sandman.machine; docs/BANK-FORMAT.md § trail, § reconcile) ---

SHIFT_ENV = "SANDMAN_SHIFT"  # the shift a session works in: trail append's default --shift


def current_shift() -> str | None:
    """Return ``$SANDMAN_SHIFT`` (the shift id a shift session runs under), or None when unset."""
    return os.environ.get(SHIFT_ENV, "").strip() or None


def machine_roots(layout: Layout) -> list[Path]:
    """Return ``[machine] roots`` of ``<root>/.settings.toml``: folders whose git repositories the
    machine may work (reconcile scans them). Empty when unset (the machine is off).

    ``~`` is expanded. Raises ConfigError when it is not a list of absolute paths.
    """
    return machine(layout).roots


# The spine (seed, "The spine"): weekday -> theme, Sunday first, for the default rest day
# (Saturday). The order is the point (find, restructure, polish, measure, multiply, finish,
# rest): another rest_day moves the whole order with it (week_themes). A theme names its prompt
# file under prompts/ only on the rest day (prompts/sabbath.md); every other day fills
# prompts/shift.md with the theme and its job.
WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
# Each job names only what its brief supplies (the Context slots of prompts/shift.md) and what the
# shift's profile allows (no push, so no CI run: the tests run locally).
WEEK_THEMES = {
    "Sunday": ("Hunt", "sweep the repository for real defects, root-cause the confirmed ones, ship each repro "
                       "as a regression test"),
    "Monday": ("Redesign", "execute the owner's approved proposals under Context first, then rebuild the "
                           "structure the open findings and the plan indict, as an always-green staged migration"),
    "Tuesday": ("Refactor", "drive the module the open findings, the plan or your own reading show to be the "
                            "worst (tests as much as source) to its best form, behaviour preserved: the fewest "
                            "statements, functions, branches and lines"),
    "Wednesday": ("Measure", "run the performance and coverage passes, count statements, functions, branches "
                             "and lines, and record each number with `sandman trail append shift.measure "
                             "\"<name>: <value>\" --parent <the start event>`: the rest day reads the week's trail"),
    "Thursday": ("Harden", "bring coverage up first, then close security findings and land dependency updates "
                           "with their tests"),
    "Friday": ("Ship", "GO/NO-GO on this week's shift branches of this repository (listed under Context): run "
                       "the repository's tests on each, say in the handoff which are ready to merge and why; "
                       "never push (the owner merges)"),
    "Saturday": ("Rest", "the self-pass: no code commits; score the week, plan next week's targets"),
}
MACHINE_NIGHT = "21:00-07:00"
MACHINE_SHIFT_HOURS = 5.0
# The most one trail event's cost_usd may say (US dollars): no session or mind costs this much, and a
# bigger figure (1e308) would spend every later day's budget and fill `sandman score` with digits.
EVENT_COST_MAX_USD = 1_000.0
MACHINE_MIN_WINDOW_MINUTES = 60
WINDOW_FILE_MAX_BYTES = 64 * 1024  # a usage window file is ~100 bytes; a bigger one (or /dev/zero) is not one
MACHINE_REST_DAY = "Saturday"
SHIFT_BRIEF_MAX_CHARS = 24_000  # a brief over this shrinks its slots; passed as the prompt of claude -p
SHIFT_HANDOFF_MAX_CHARS = 2_000
SHIFT_PERMISSION_MODE = "dontAsk"
MACHINE_SHIFT_BUDGET_USD = 10.0  # one shift session's cost cap (docs/shift.md, "Cost cap")
# The most shifts one night holds, one after another (docs/shift.md, "Whole nights"). Three: the
# default night (ten hours) holds two five-hour shifts that run their full length and a third when
# one ends early; six working nights of three cover eighteen repositories a week; and a night
# without budget_usd_day costs at most three times shift_budget_usd. The clock and the day's
# budget usually stop a night first; this cap is for an owner who set neither.
MACHINE_SHIFTS_PER_NIGHT = 3
MACHINE_CHECK_TIMEOUT_SECONDS = 60  # `[machine] check` is stopped after this; a timed-out check weighs nothing
SHIFT_HANDOFF_LEAD_MINUTES = 15  # a session is stopped this long before the usage window resets
# What a running session has spent is estimated from its transcript's token counts at these list
# prices (US dollars per million tokens: input, output, cache write, cache read), by the first
# family name found in the model id; an unknown model is priced as the dearest. `claude -p`
# reports its real cost only when it exits; that figure replaces the estimate when there is one.
SHIFT_PRICES_USD_PER_MTOK = {
    "opus": (15.0, 75.0, 18.75, 1.5),
    "sonnet": (3.0, 15.0, 3.75, 0.3),
    "haiku": (1.0, 5.0, 1.25, 0.1),
}


def week_themes(rest_day: str) -> dict[str, tuple[str, str]]:
    """The seed's spine laid on the week so that its Rest falls on ``rest_day`` (a weekday,
    ``Sunday``…``Saturday``) and the days after it follow in the seed's order: weekday ->
    ``(theme, job)``. ``"Saturday"`` gives WEEK_THEMES as they are; ``"Sunday"`` gives Monday
    Hunt … Saturday Ship, Sunday Rest (docs/shift.md, "The week"). Raises ValueError on a
    name that is not a weekday."""
    moved = WEEKDAYS.index(rest_day) - WEEKDAYS.index(MACHINE_REST_DAY)
    return {WEEKDAYS[(index + moved) % 7]: WEEK_THEMES[day] for index, day in enumerate(WEEKDAYS)}


# A namedtuple, not typing.NamedTuple: the hook entry points import this module, and typing is slow to load.
class Machine(namedtuple("Machine", "roots exclude time_zone night shift_hours min_window_minutes window_file "
                                   "model week rest_day budget_usd_day shift_budget_usd shifts_per_night "
                                   "check check_timeout_seconds")):
    """``[machine]`` of ``<root>/.settings.toml``, checked (docs/shift.md, "Configuration").

    ``roots``, ``exclude``: absolute Paths; ``time_zone``: an IANA name or None (the
    system's local zone); ``night``: ``(start, end)`` minutes after midnight in that zone
    (the window crosses midnight when end <= start); ``shift_hours``: float hours;
    ``min_window_minutes``: int; ``window_file``: Path or None; ``model``: str or None;
    ``week``: weekday (``Sunday``…) -> ``(theme, job)``, the spine moved to ``rest_day`` (week_themes)
    with ``[machine.week]`` over it; ``rest_day``: a weekday;
    ``budget_usd_day``: US dollars or None (no cap), the day's one cap (day_budget_usd: the old
    ``$SANDMAN_DAILY_BUDGET_USD`` when the key is absent); ``shift_budget_usd``: US dollars one shift
    session may spend before the tick stops it (``MACHINE_SHIFT_BUDGET_USD`` unless set);
    ``shifts_per_night``: int, the most shifts the tick opens in one night, one after another
    (``MACHINE_SHIFTS_PER_NIGHT`` unless set; the rest day holds one whatever it says);
    ``check``: a shell command or None, run by ``shift pick`` in each pickable repository (a
    failing one weighs it up); ``check_timeout_seconds``: float seconds before that command is
    stopped (``MACHINE_CHECK_TIMEOUT_SECONDS`` unless set).
    """

    __slots__ = ()

    @property
    def on(self) -> bool:
        """True when ``roots`` is set: without roots the machine is off."""
        return bool(self.roots)

    def zone(self):
        """The ``tzinfo`` of days, weeks and the night window. Raises ConfigError (checked at read)."""
        from zoneinfo import ZoneInfo

        if self.time_zone is None:
            from datetime import datetime

            return datetime.now().astimezone().tzinfo
        return ZoneInfo(self.time_zone)


def _clock_minutes(text: str, where: str) -> int:
    try:
        hours, minutes = text.strip().split(":")
        value = int(hours) * 60 + int(minutes)
        if not (0 <= int(hours) <= 23 and 0 <= int(minutes) <= 59):
            raise ValueError
    except ValueError:
        raise ConfigError(f"{where} holds {text!r}, which is not HH:MM") from None
    return value


def machine(layout: Layout) -> Machine:
    """Return the checked ``[machine]`` table (defaults where unset). Raises ConfigError naming
    the file and the key: a relative path, a zone ``zoneinfo`` does not know, a night that is not
    ``HH:MM-HH:MM``, a number out of range, a weekday that is not one, an unknown key."""
    where = layout.settings_file
    section = settings(layout).get("machine", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: [machine] must be a table")
    known = set(Machine._fields)  # the one table of keys: a key the tuple has is never left out of `known:`
    unknown = sorted(set(section) - known)
    if unknown:
        raise ConfigError(f"{where}: [machine] has unknown key(s) {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(known))}")

    def folders(key: str) -> list[Path]:
        value = section.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where}: machine.{key} must be a list of folders, not {value!r}")
        paths = [Path(item).expanduser() for item in value]
        for path in paths:
            if not path.is_absolute():
                raise ConfigError(f"{where}: machine.{key} holds {str(path)!r}, which is relative; "
                                  "give absolute folders")
        return paths

    def text(key: str) -> str | None:
        value = section.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{where}: machine.{key} must be a non-empty string, not {value!r}")
        return value.strip() if value is not None else None

    def number(key: str, default: float | None, low: float, high: float) -> float | None:
        value = section.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not (low < value <= high):
            most = f"and at most {high:g}" if math.isfinite(high) else "and finite"
            raise ConfigError(f"{where}: machine.{key} must be a number above {low:g} {most}, "
                              f"not {value!r}")
        return float(value)

    zone = text("time_zone")
    if zone is not None:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"{where}: machine.time_zone {zone!r} is not an IANA zone "
                              "(America/New_York, Europe/Paris, UTC)") from None
    night_text = text("night") or MACHINE_NIGHT
    if night_text.count("-") != 1:
        raise ConfigError(f"{where}: machine.night holds {night_text!r}; give HH:MM-HH:MM, such as 21:00-07:00")
    start, end = (_clock_minutes(part, f"{where}: machine.night") for part in night_text.split("-"))
    if start == end:
        raise ConfigError(f"{where}: machine.night {night_text!r} is empty; give a start and a different end")
    window = text("window_file")
    window_path = Path(window).expanduser() if window else None
    if window_path is not None and not window_path.is_absolute():
        raise ConfigError(f"{where}: machine.window_file {window!r} is relative; give an absolute file")
    rest = (text("rest_day") or MACHINE_REST_DAY).capitalize()
    if rest not in WEEKDAYS:
        raise ConfigError(f"{where}: machine.rest_day {rest!r} is not a weekday (Sunday…Saturday)")
    week = week_themes(rest)
    given = section.get("week", {})
    if not isinstance(given, dict):
        raise ConfigError(f"{where}: machine.week must be a table of weekday = \"theme\" "
                          "or weekday = {theme, job}")
    for day, value in given.items():
        name = day.capitalize() if isinstance(day, str) else day
        if name not in WEEKDAYS:
            raise ConfigError(f"{where}: machine.week has {day!r}, which is not a weekday (Sunday…Saturday)")
        extra = sorted(set(value) - {"theme", "job"}) if isinstance(value, dict) else []
        if extra:
            raise ConfigError(f"{where}: machine.week.{day} has unknown key(s) {', '.join(map(str, extra))}; "
                              "known: job, theme")
        if isinstance(value, str) and value.strip():
            week[name] = (value.strip(), "")
        elif isinstance(value, dict) and isinstance(value.get("theme"), str) and value["theme"].strip() \
                and isinstance(value.get("job", ""), str):
            week[name] = (value["theme"].strip(), value.get("job", "").strip())
        else:
            raise ConfigError(f"{where}: machine.week.{day} must be a theme or {{theme, job}}, not {value!r}")
    minutes = number("min_window_minutes", MACHINE_MIN_WINDOW_MINUTES, 0, 24 * 60)
    per_night = section.get("shifts_per_night", MACHINE_SHIFTS_PER_NIGHT)
    if isinstance(per_night, bool) or not isinstance(per_night, int) or not 1 <= per_night <= 48:
        raise ConfigError(f"{where}: machine.shifts_per_night must be a whole number from 1 to 48, "
                          f"not {per_night!r}")
    return Machine(
        roots=folders("roots"), exclude=folders("exclude"), time_zone=zone, night=(start, end),
        shift_hours=number("shift_hours", MACHINE_SHIFT_HOURS, 0, 24), min_window_minutes=int(minutes),
        window_file=window_path, model=text("model"), week=week, rest_day=rest,
        budget_usd_day=_budget_usd_day(section, where),
        shift_budget_usd=number("shift_budget_usd", MACHINE_SHIFT_BUDGET_USD, 0, float("inf")),
        shifts_per_night=per_night, check=text("check"),
        check_timeout_seconds=number("check_timeout_seconds", MACHINE_CHECK_TIMEOUT_SECONDS, 0, 3600),
    )


def claude_global_config_file() -> Path:
    """Return Claude Code's global config (per-project trust lives there):
    ``$CLAUDE_CONFIG_DIR/.claude.json`` when that variable is set, else ``~/.claude.json``."""
    value = os.environ.get("CLAUDE_CONFIG_DIR", "")
    return Path(value).expanduser() / ".claude.json" if value else Path.home() / ".claude.json"


def ssh_agent_socket() -> str:
    """Return ``$SSH_AUTH_SOCK`` (the running SSH agent's socket), or "" when no agent is running."""
    return os.environ.get("SSH_AUTH_SOCK", "")


# Where git keeps its credential helpers (git-credential-store, -cache,
# -osxkeychain, -libsecret) when they are not on PATH: $GIT_EXEC_PATH, then
# the usual install locations. sync runs a helper itself, never `git`.
GIT_EXEC_DIRS = (
    "/usr/lib/git-core",
    "/usr/libexec/git-core",
    "/usr/local/libexec/git-core",
    "/opt/homebrew/libexec/git-core",
    "/Library/Developer/CommandLineTools/usr/libexec/git-core",
    "/Applications/Xcode.app/Contents/Developer/usr/libexec/git-core",
)


def git_exec_dirs() -> list[Path]:
    """Return the folders searched for ``git-credential-<name>``: ``$GIT_EXEC_PATH`` first."""
    value = os.environ.get("GIT_EXEC_PATH", "")
    return [Path(d) for d in ([value] if value else []) + list(GIT_EXEC_DIRS)]


# --- doctor (issue 7) ----------------------------------------------------------


def claude_installed_plugins_file() -> Path:
    """Return ``<config dir>/plugins/installed_plugins.json``: Claude Code's record of installed plugins."""
    return claude_config_dir() / "plugins" / "installed_plugins.json"


DOCTOR_ERRORS_WINDOW_HOURS = 24  # journal errors counted over this window
DOCTOR_PENDING_STALE_HOURS = 24  # a pending take older than this is worth a look
DOCTOR_DREAM_LATE_HOURS = 24  # a due queue and no dream for this long: the trigger is not firing
DOCTOR_REFLECT_LATE_HOURS = 48  # reflect is the 24-hour pass; two missed days warn
DOCTOR_UNPUSHED_LATE_HOURS = 24  # local commits unpushed this long after the last sync warn

# --- the static site (sandman.site, `sandman site`, `sandman report serve`) ---

SITE_HOST = "127.0.0.1"
SITE_PORT = 1705
SITE_RENDER_LOCK_TIMEOUT_S = 300.0
SITE_SERVE_REFRESH_S = 30.0  # report serve re-renders at least this often (seconds) when pages are asked for
SITE_HOME_LOG_ENTRIES = 7  # the newest voyage entries the home page shows

# --- reflect: the voyage log and bank upkeep (issue 6) --------------------------

REFLECT_LOG_CONTEXT_ENTRIES = 5  # the entries the log mind reads whole, the newest before the day
UPKEEP_BODY_LINES = 3  # lines of each memory's body the planning mind sees
UPKEEP_LINE_MAX_CHARS = 200  # ...each cut at this many characters
