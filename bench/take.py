"""Benchmark ``sandman take --hook``: median wall time against ``python -c pass``.

Each run copies a real corpus transcript into a throwaway Claude config dir
and memory root, pipes a SessionEnd payload to the installed ``sandman``
executable (a real subprocess, as Claude Code runs it), and times it; the
copying is not timed. The baseline, a bare interpreter start, is timed in the
same run, interleaved. Target (issue 3): take --hook under 60 ms.

    python bench/take.py [--quick] [--runs N] [--transcript PATH] [--importtime]
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from take_budget import run_detached
from harness import (CORPUS, PYTHON_PASS, REPO, Row, Target, child_env, import_profile, interleaved, progress,
                     python_pass, run_timed, sandman_argv, scratch, script)

RUNS = 30
QUICK = {"runs": 7}
TRANSCRIPTS = (CORPUS / "transcripts" / "claude" / "spotter" / "short.jsonl",
               CORPUS / "transcripts" / "claude" / "agentlogs" / "images.jsonl")
SESSION = "00893aaf-19fa-41d2-8238-13269b9b3ca0"  # for a transcript that names no session
TARGET = Target("< 60 ms", seconds=0.060)
DETACH_TARGET = Target("≤ 1.8× python -c pass (issue 18)", ratio=1.8)
PLUGIN_TARGET = Target("≤ 1.0× python -c pass (issue 29)", ratio=1.0)
LAUNCHER = REPO / "hooks" / "sandman"


def own_session(transcript: Path) -> str:
    """The session the transcript's lines name: take refuses a payload naming another."""
    from sandman.transcripts import summarize

    return summarize(transcript).session_id or SESSION


def trial(transcript: Path, folder: Path, importtime: bool = False, detach: bool | str = False) -> float:
    """Take a fresh copy of ``transcript`` through ``take --hook``; return the seconds the hook took.

    With ``importtime``, run it under ``-X importtime`` instead and report the costliest imports.
    With ``detach``, run ``sandman take --hook --detach`` and time it until the hook process
    exits (what Claude Code waits for); the detached child is waited for, untimed. With
    ``detach="plugin"``, the same through the plugin's launcher, hooks/sandman (issue 29).
    """
    home = folder / "home"
    root = folder / "root"  # a set-up root, kept across trials: the hook's steady state
    shutil.rmtree(home, ignore_errors=True)
    config_dir = home / ".claude"
    project = config_dir / "projects" / "-home-user-my-project"
    project.mkdir(parents=True)
    session = own_session(transcript)
    target = project / f"{session}.jsonl"
    shutil.copyfile(transcript, target)
    env = child_env(HOME=str(home), SANDMAN_ROOT=str(root), CLAUDE_CONFIG_DIR=str(config_dir))
    if not (root / ".git").exists():
        # The very first take also makes the root a repository (pygit2, once): not what every hook pays.
        run_timed([*sandman_argv(), "init"], env)
    # One session taken again and again: clear what the last trial archived (names carry the second).
    (root / "memories" / ".recent" / f"{session}.json").unlink(missing_ok=True)
    (root / ".takes" / f"{session}.json").unlink(missing_ok=True)
    shutil.rmtree(root / ".archive", ignore_errors=True)
    payload = json.dumps({"session_id": session, "transcript_path": str(target), "cwd": "/home/user/my-project",
                          "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}).encode()
    if importtime:
        for line in import_profile(["-m", "sandman", "take", "--hook"], env, payload):
            progress(line)
        elapsed = 0.0
    elif detach == "plugin":
        # What hooks/hooks.json runs: the launcher finds sandman on PATH and execs fasthook.py under -I -S.
        env.update(PATH=f"{Path(sandman_argv()[0]).parent}:{env.get('PATH', '/usr/bin:/bin')}",
                   CLAUDE_PLUGIN_DATA=str(folder / "plugin-data"))
        elapsed = run_detached(["sh", str(LAUNCHER), "take", "--hook", "--detach"], env, payload)
    elif detach:
        elapsed = run_detached([*sandman_argv(), "take", "--hook", "--detach"], env, payload)
    else:
        elapsed = run_timed([*sandman_argv(), "take", "--hook"], env, payload)
    # Taken: Claude Code's name stays, a second name of the archived file (docs/take.md, "Resume after a take").
    if target.stat().st_nlink != 2 or not (root / "memories" / ".recent" / f"{session}.json").exists():
        raise SystemExit(f"take --hook did not archive {transcript}")
    return elapsed


def rows(runs: int = RUNS, transcripts: list[Path] | None = None, importtime: bool = False) -> list[Row]:
    """Return one row per transcript (default: two of the corpus): ``take --hook`` against
    ``python -c pass``, medians in seconds over ``runs`` interleaved runs. With
    ``importtime``, also report the hook's costliest imports on stderr.

    Raises SystemExit when no transcript is found or a take fails.
    """
    chosen = transcripts or [path for path in TRANSCRIPTS if path.exists()]
    if not chosen:
        raise SystemExit(f"no transcript to take: the corpus is not at {CORPUS}; pass --transcript")
    found = []
    with scratch() as folder:
        baseline = python_pass(child_env())
        for transcript in chosen:
            take, bare = interleaved([lambda: trial(transcript, folder), baseline], runs)
            name = f"`take --hook` ({transcript.name}, {transcript.stat().st_size // 1024:,} KiB)"
            found.append(Row(name, take, PYTHON_PASS, bare, runs, TARGET))
        detached, plugin, bare = interleaved([lambda: trial(chosen[0], folder, detach=True),
                                              lambda: trial(chosen[0], folder, detach="plugin"), baseline], runs)
        name = f"`sandman take --hook --detach` ({chosen[0].name}), until the hook exits"
        found.append(Row(name, detached, PYTHON_PASS, bare, runs, DETACH_TARGET))
        name = (f"the plugin's `sh hooks/sandman take --hook --detach` ({chosen[0].name}), until the hook exits "
                "(what Claude Code waits on)")
        found.append(Row(name, plugin, PYTHON_PASS, bare, runs, PLUGIN_TARGET))
        if importtime:  # after the runs: the bytecode caches are written
            trial(chosen[0], folder, importtime=True)
    return found


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--transcript", dest="transcripts", type=Path, action="append",
                        help="a Claude Code transcript to take (repeatable; default: two of the corpus)")
    parser.add_argument("--importtime", action="store_true", default=None,
                        help="also report the hook's costliest imports (python -X importtime)")


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS, arguments=arguments)


if __name__ == "__main__":
    main()
