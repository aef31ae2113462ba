"""Benchmark ``sandman mcp``'s start: what every Claude Code session with it registered waits for
(issue 28, fault 3; docs/performance.md, "sandman mcp's start").

Rows, each a median of interleaved runs against a baseline measured in the same run:

- spawn → ``initialize`` answered: a real ``sandman mcp`` process is started, sent one
  ``initialize`` request, and timed until its answer's line arrives (then its stdin is
  closed, untimed), against ``python -c pass``; target 0.3 s;
- the official ``mcp`` SDK's import alone (``python -c "import mcp.server.mcpserver"``),
  against ``python -c pass``: the floor of any server built on the SDK;
- ``claude -p`` with sandman's server registered (``--mcp-config``) against the same run
  without it: the real, pinned Claude Code (tests/live_claude.py finds it: the binary in
  ``$SANDMAN_TEST_CLAUDE_CODE``, else ``.ci/claude-code/package/claude``, where ``.ci/run``
  installs it) against that module's fake Messages API on 127.0.0.1; target: within 0.3 s of
  the run without. Left out, with the reason on stderr, when the binary cannot be had.

    python bench/mcp_start.py [--quick] [--runs N]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from harness import (PYTHON_PASS, REPO, Row, Target, child_env, interleaved, progress, python_pass, run_timed,
                     sandman_argv, scratch, script)

RUNS = 15
QUICK = {"runs": 5}
TARGET = Target("< 0.3 s", seconds=0.3)
CLAUDE_TARGET = Target("≤ 0.3 s over the baseline", over=0.3)
INITIALIZE = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
              + "\n").encode()


def initialize_timed(env: dict[str, str]) -> float:
    """Start ``sandman mcp``, send ``initialize``; return the seconds until its answer arrived."""
    start = time.perf_counter()
    process = subprocess.Popen([*sandman_argv(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    process.stdin.write(INITIALIZE)
    process.stdin.flush()
    answer = process.stdout.readline()
    elapsed = time.perf_counter() - start
    process.stdin.close()
    process.wait()
    if b'"id":1' not in answer.replace(b" ", b""):
        raise SystemExit(f"sandman mcp did not answer initialize: {answer!r} {process.stderr.read()!r}")
    return elapsed


def claude_binary() -> Path | None:
    """The pinned Claude Code of the live suite, or None (the reason said on stderr)."""
    sys.path.insert(0, str(REPO / "tests"))
    import pytest
    from live_claude import claude_code

    try:
        return claude_code()
    except pytest.skip.Exception as skipped:
        progress(f"no claude -p rows: {skipped.msg}")
        return None


def claude_rows(base: Path, runs: int) -> list[Row]:
    """``claude -p`` with and without sandman's MCP server, against the live suite's fake API."""
    binary = claude_binary()
    if binary is None:
        return []
    from live_claude import FakeApi

    home, cwd = base / "claude-home", base / "claude-home" / "project"
    cwd.mkdir(parents=True)
    mcp = json.dumps({"mcpServers": {"sandman": {"command": sandman_argv()[0], "args": [*sandman_argv()[1:], "mcp"]}}})
    with FakeApi() as api:
        env = child_env(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), SANDMAN_ROOT=str(home / ".sandman"),
                        ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="dummy", DISABLE_TELEMETRY="1",
                        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1")
        bare = [str(binary), "-p", "hi"]

        def run(argv: list[str]) -> float:
            start = time.perf_counter()
            done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
            elapsed = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"claude -p exited {done.returncode}: {done.stderr.decode(errors='replace')}")
            return elapsed

        # What is timed is what it claims: the run with the server sends sandman's tools to the model.
        run([*bare, "--mcp-config", mcp])
        tools = [tool.get("name", "") for tool in api.messages()[-1].get("tools", [])]
        sent = json.dumps(api.messages()[-1])
        if "mcp__sandman__recall" not in tools and "mcp__sandman__recall" not in sent:
            raise SystemExit("claude -p with sandman's MCP server sent none of its tools: the server did not connect")
        progress(f"claude -p with and without sandman mcp: {runs} runs")
        without, with_mcp = interleaved([lambda: run(bare), lambda: run([*bare, "--mcp-config", mcp])], runs)
    return [Row("`claude -p` with `sandman mcp` registered", with_mcp, "the same `claude -p` without it", without,
                runs, CLAUDE_TARGET)]


def rows(runs: int = RUNS) -> list[Row]:
    """Return the rows: medians of ``runs`` interleaved runs against their baselines."""
    with scratch() as base:
        env = child_env(HOME=str(base / "home"), SANDMAN_ROOT=str(base / "home" / ".sandman"))
        progress(f"sandman mcp: spawn to initialize, {runs} runs")
        trials = [python_pass(env), lambda: initialize_timed(env),
                  lambda: run_timed([sys.executable, "-c", "import mcp.server.mcpserver"], env)]
        bare, initialize, sdk = interleaved(trials, runs)
        found = [Row("`sandman mcp`: spawn → `initialize` answered", initialize, PYTHON_PASS, bare, runs, TARGET),
                 Row("the `mcp` SDK's import alone (`import mcp.server.mcpserver`)", sdk, PYTHON_PASS, bare, runs)]
        return found + claude_rows(base, runs)


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
