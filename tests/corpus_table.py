"""The real transcripts of ../shared/corpus/transcripts and what reading each must give.

Each entry: the file (relative to the transcripts folder), its host, session
id, cwd, end time and title, as the corpus README describes the files. Tests
place a file where its host keeps it (``place``) and take or read it.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    file: str
    host: str
    session: str
    cwd: str
    ended: str
    title: str
    companion: str | None = None  # Claude Code's <session id>/ folder beside it, in the corpus

    @property
    def id(self) -> str:
        return self.file.rsplit("/", 1)[-1][:40]


CASES = [
    Case("claude/spotter/short.jsonl", "claude", "55604662-cf2a-4331-851a-ec234028f8ca",
         "/home/user/projects/spotter", "2026-02-10T21:16:12Z", "mix phx.server doesnt seem to start"),
    Case("claude/spotter/tool_heavy.jsonl", "claude", "d6e0bada-1959-4eec-a9d2-0bfade768d8f",
         "/home/user/projects/spotter", "2026-02-10T22:59:46Z", "start phoenix in background"),
    Case("claude/spotter/subagent.jsonl", "claude", "491e126e-1e71-469c-ade2-fcc8af567c74",
         "/home/user/projects/spotter", "2026-02-10T22:03:51Z",
         "/handgemacht:create-beads websearch to learn how to fastest setup credo…"),
    Case("claude/spotter/compact-window/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", "claude",
         "4d5611e5-241a-462a-8d15-5122611a9569", "/home/USER/projects/spotter-worktrees/spotter-dov",
         "2026-02-12T20:31:36Z", "The user asked to work on bead `spotter-dov`, a P1 epic titled \"Unified…",
         companion="claude/spotter/compact-window/4d5611e5-241a-462a-8d15-5122611a9569"),
    Case("claude/spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl", "claude",
         "258c7280-ae70-4798-800f-63464d01a85d", "/home/USER/projects/spotter-worktrees/spotter-gqc",
         "2026-02-11T21:24:52Z", "What is the output contract for Claude Code hooks, specifically for…"),
    Case("claude/agentlogs/compact.jsonl", "claude", "0e26ec2f-937e-482c-b889-bc126f996913",
         "/Users/user/dev/studio", "2025-10-10T21:57:52Z", "how are you doing"),
    Case("claude/agentlogs/images.jsonl", "claude", "794b4c5f-6354-422a-9e6d-c9f18e89e427",
         "/Users/user/dev/vibeinsights", "2026-01-10T15:02:45Z",
         "go to google.com, make a screenshoot, look at it, and tell me what you think"),
    Case("claude/agentlogs/subagent.jsonl", "claude", "609efeca-2f51-4118-b077-e91c9fe63f73",
         "/Users/user/dev/studio", "2025-10-10T21:55:20Z", "ask a subagent how he's doing"),
    Case("codex/agentlogs/crud.jsonl", "codex", "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b",
         "/Users/user/dev/agentlogs/fixtures", "2026-01-25T10:32:11Z",
         "create a file `JOKE.md` with a random joke with a title and a footer with some…"),
    Case("codex/agentlogs/images.jsonl", "codex", "019c16bd-a0fc-7293-855d-2948ce5dc471",
         "/Users/user/dev/agentlogs", "2026-02-01T01:09:28Z",
         "why does the claude code label break here on the /team dashboard? [Image #1]"),
    Case("codex/claude-code-log/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
         "codex", "11111111-1111-4111-8111-111111111111", "/workspace/synthetic-project",
         "2026-01-02T03:04:16Z", "List the synthetic files."),
]


def project_slug(cwd: str) -> str:
    """Claude Code's project folder name for a cwd: every non-alphanumeric character a ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def place(case: Case, corpus: Path, claude_dir: Path, codex_home: Path) -> Path:
    """Copy a corpus transcript (and its companion folder) where its host keeps it; return the copy."""
    source = corpus / "transcripts" / case.file
    if case.host == "claude":
        target = claude_dir / "projects" / project_slug(case.cwd) / f"{case.session}.jsonl"
    else:
        day = case.ended[:10].replace("-", "/")
        stamp = case.ended[:19].replace(":", "-")
        target = codex_home / "sessions" / day / f"rollout-{stamp}-{case.session}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    if case.companion:
        shutil.copytree(corpus / "transcripts" / case.companion, target.with_suffix(""))
    return target
