"""The research runner: one bounded reading session per scheduled pass (docs/breathe.md, "The runner").

``sandman breathe run skim|deep`` is what the scheduler calls (``schedule install``:
the skim hourly, the deep pass daily). Under ``breath/.run.lock`` (a run that finds it
held starts nothing), in order:

1. start nothing, and say why in the journal (``breathe skipped reason=…``), when the
   machine is off (the breaths it files name repositories under ``[machine] roots``) or
   ``claude`` is not found;
2. compose the pass (breath.compose_pass with the depth: the skim reads the due hourly
   sources, the deep pass every due source); a refusal (nothing due, the day's budget
   spent) is a skip;
3. attach a new session id to the pass and run ``claude -p`` on its prompt, in the
   memory root, bounded: ``--max-turns`` and a wall clock (BOUNDS), and, when
   ``budget_usd_day`` is set, ``--max-budget-usd`` at what the day has left; the profile
   is a shift's sandbox with the network of the sources' hosts and the guard in its
   reading mode (machine.profile.reading), so its only writes are ``breathe file`` and
   ``breathe close``; its output goes to ``passes/<id>/.session.log``;
4. settle the pass (breath.settle): close it with the session's ``total_cost_usd`` when
   the session did not, or record the cost on a ``breath.cost`` event; either way the
   cost is on the trail, where the day's budget counts it;
5. a session that failed (a non-zero exit, an ``is_error`` result, killed at its bound)
   leaves its sources due: their clocks go back to what they were before the pass
   (breath.unread), the journal says ``breathe failed``, and the Reading's ``failed``
   says why (the CLI exits 1 with it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import uuid
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from sandman import config, journal
from sandman.errors import PassRefused
from sandman.layout import Layout
from sandman.machine import breath
from sandman.store.runlock import RunLock

VERB = "breathe"
# depth -> (seconds the session may run, turns it may take)
BOUNDS = {"skim": (15 * 60, 20), "deep": (60 * 60, 80)}


@dataclass
class Reading:
    """What one run did: ``ran`` (``pass_id``, the breaths ``filed``, ``cost_usd``, ``exit``
    the session's exit code or None when killed at its bound, ``failed`` why the session
    failed or "") or ``skipped`` (``reason``)."""

    decision: str
    reason: str = ""
    pass_id: str | None = None
    filed: int = 0
    cost_usd: float | None = None
    exit: int | None = None
    failed: str = ""


def failure(code: int | None, result: dict | None, seconds: int) -> str:
    """Why a reading session failed, "" when it did not: killed at its bound (``code`` None),
    a non-zero exit, or a result whose ``is_error`` is true."""
    if code is None:
        return f"killed at its {seconds} s bound"
    if code != 0:
        return f"exit {code}"
    if result is not None and result.get("is_error") is True:
        said = " ".join(str(result.get("result") or result.get("subtype") or "").split())[:120]
        return f"is_error: {said}" if said else "is_error"
    return ""


def _skip(layout: Layout, depth: str, reason: str) -> Reading:
    journal.write(layout, VERB, "skipped", depth=depth, reason=reason)
    return Reading("skipped", reason)


def command(layout: Layout, made: breath.Pass, session: str, depth: str, left_usd: float | None) -> tuple[list, dict]:
    """``(argv, environment additions)`` of the reading session of pass ``made``."""
    from sandman.machine import profile as profiles

    hosts = [urlsplit(source["address"]).hostname or "" for source in made.sources]
    profile = profiles.reading(layout, made.id, hosts)
    argv = [config.claude_bin(), "-p", "--output-format", "json", "--session-id", session,
            "--permission-mode", profile["permission_mode"], "--settings", json.dumps(profile["settings"]),
            "--max-turns", str(BOUNDS[depth][1])]
    if left_usd is not None:
        argv += ["--max-budget-usd", f"{left_usd:.2f}"]
    if profile["model"]:
        argv += ["--model", profile["model"]]
    return argv, profile["env"]


def run(layout: Layout, depth: str, *, now: datetime | None = None) -> Reading:
    """One scheduled pass of ``depth`` (``skim`` or ``deep``); see the module docstring. Raises
    InputError (an unknown depth, a bad sources.toml), ConfigError; every other reason not to read
    is a skipped Reading with its journal line."""
    if depth not in BOUNDS:
        from sandman.errors import InputError

        raise InputError(f"depth {depth!r} is not one of {', '.join(BOUNDS)}")
    settings = config.machine(layout)
    if not settings.on:
        return _skip(layout, depth, "the machine is off: no [machine] roots")
    held = RunLock(layout.breath_run_lock)
    if not held.acquire():
        return _skip(layout, depth, "another reading session holds breath/.run.lock")
    try:
        if shutil.which(config.claude_bin()) is None:
            return _skip(layout, depth, f"claude not found: {config.claude_bin()} (install Claude Code or set "
                                        "SANDMAN_CLAUDE_BIN)")
        try:
            before = breath.clocks(layout)
            made = breath.compose_pass(layout, now=now, depth=depth)
        except PassRefused as refused:
            return _skip(layout, depth, str(refused))
        left = None
        if settings.budget_usd_day is not None:
            left = max(0.0, settings.budget_usd_day - breath.spent_on_day(layout, now or journal.now_utc())[1])
        session = str(uuid.uuid4())
        breath.attach(layout, made.id, session, now=now)
        argv, extra = command(layout, made, session, depth, left)
        env = dict(os.environ)
        env.update(extra)
        env.pop(config.SHIFT_ENV, None)
        log = layout.breath_session_log(made.id)
        seconds = BOUNDS[depth][0]
        journal.write(layout, VERB, "reading", depth=depth, pass_id=made.id, session=session)
        with open(log, "ab") as out:
            process = subprocess.Popen(argv, cwd=layout.root, env=env, stdin=subprocess.PIPE, stdout=out,
                                       stderr=out, start_new_session=True, close_fds=True)
            try:
                process.communicate(made.prompt.encode("utf-8"), timeout=seconds)
                code = process.returncode
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                code = None
        from sandman.machine.shift import result_cost, result_of

        result = result_of(log.read_text(encoding="utf-8", errors="replace"))
        settled = breath.settle(layout, made.id, result_cost(result), now=now)
        filed = sum(1 for found in breath.all_breaths(layout) if found.pass_id == made.id)
        failed = failure(code, result, seconds)
        if failed:
            breath.unread(layout, made.id, before, failed, now=now)
        journal.write(layout, VERB, "failed" if failed else "read", depth=depth, pass_id=made.id, filed=filed,
                      cost_usd=settled.get("cost_usd"), exit="killed" if code is None else code,
                      **({"why": failed} if failed else {}))
        return Reading("ran", "", made.id, filed, settled.get("cost_usd"), code, failed)
    finally:
        held.release()
