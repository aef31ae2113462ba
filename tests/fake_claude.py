"""FakeClaude: drive tests/fakes/claude from a test (tests/fakes/README.md).

Use the ``fake_claude`` fixture (tests/conftest.py): it points
``$SANDMAN_CLAUDE_BIN`` at the fake, gives it a fixture folder and an
invocation log in the test's tmp_path, and returns this object.
"""

from __future__ import annotations

import json
from pathlib import Path

FAKE = Path(__file__).resolve().parent / "fakes" / "claude"


class FakeClaude:
    """Fixture files and the invocation log of one test's fake claude."""

    def __init__(self, folder: Path):
        self.fixtures = folder / "fixtures"
        self.log = folder / "calls.jsonl"
        self.fixtures.mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        """The environment variables that select this fake."""
        return {
            "SANDMAN_CLAUDE_BIN": str(FAKE),
            "FAKE_CLAUDE_FIXTURES": str(self.fixtures),
            "FAKE_CLAUDE_LOG": str(self.log),
        }

    def rules(self, model: str, rules: list[dict] | dict) -> None:
        """Write the fixture file of ``model`` (``default`` for every other model)."""
        (self.fixtures / f"{model}.json").write_text(json.dumps(rules), encoding="utf-8")

    def answer(self, model: str, result: object, **spec: object) -> None:
        """Make ``model`` answer ``result`` (a string, or JSON such as ``{"memories": [...]}``)."""
        self.rules(model, {"result": result, **spec})

    def mode(self, model: str, mode: str, **spec: object) -> None:
        """Make ``model`` behave as ``mode`` (fail, hang, garbage, echo, ...)."""
        self.rules(model, {"mode": mode, **spec})

    def kill_leftovers(self) -> list[int]:
        """SIGKILL every fake (and its hanging child) this test started that still runs; return
        their pids. A test that ends while a session hangs (a tick that opened the night's next
        shift) would leave it sleeping for an hour."""
        import os
        import signal

        alive = []
        for call in self.calls():
            for pid in (call.get("pid"), call.get("child_pid")):
                if isinstance(pid, int) and not pid_dead(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                        alive.append(pid)
                    except ProcessLookupError:
                        pass
        return alive

    def calls(self) -> list[dict]:
        """Every invocation so far, in order of arrival."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line]


def pid_dead(pid: int) -> bool:
    """True when ``pid`` is gone or a zombie (killed, not yet reaped by its new parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")

