"""Benchmark ``sandman take --hook``: median wall time against ``python3 -c pass``.

Each run copies a real corpus transcript into a throwaway Claude config dir
and memory root, pipes a SessionEnd payload to the installed ``sandman``
executable (a real subprocess, as Claude Code runs it), and times it. The
baseline, a bare interpreter start, is timed in the same run, interleaved, so
the ratio holds on any machine. Target: take --hook under 60 ms.

    python bench/take.py [--runs N] [--transcript PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "transcripts" / "claude"
DEFAULTS = [CORPUS / "spotter" / "short.jsonl", CORPUS / "agentlogs" / "images.jsonl"]
SESSION = "00893aaf-19fa-41d2-8238-13269b9b3ca0"  # for a transcript that names no session


def own_session(transcript: Path) -> str:
    """The session the transcript's lines name: take refuses a payload naming another."""
    from sandman.transcripts import summarize

    return summarize(transcript).session_id or SESSION


def sandman_argv() -> list[str]:
    script = Path(sys.executable).with_name("sandman")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sandman"]


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, input=stdin, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    return elapsed


def one_take(transcript: Path, scratch: Path) -> float:
    home = Path(tempfile.mkdtemp(dir=scratch))
    config_dir = home / ".claude"
    project = config_dir / "projects" / "-home-user-my-project"
    project.mkdir(parents=True)
    session = own_session(transcript)
    target = project / f"{session}.jsonl"
    shutil.copyfile(transcript, target)
    env = {**os.environ, "HOME": str(home), "SANDMAN_ROOT": str(home / ".sandman"),
           "CLAUDE_CONFIG_DIR": str(config_dir)}
    for name in ("CLAUDE_MEMORY_PIPELINE", "SANDMAN_NO_TAKE", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)  # an installed sandman runs from compiled bytecode
    payload = json.dumps({"session_id": session, "transcript_path": str(target), "cwd": "/home/user/my-project",
                          "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}).encode()
    elapsed = timed([*sandman_argv(), "take", "--hook"], payload, env)
    if target.exists() or not (home / ".sandman" / "memories" / ".recent" / f"{session}.json").exists():
        raise SystemExit(f"take --hook did not archive {transcript}")
    shutil.rmtree(home)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--transcript", type=Path, action="append")
    args = parser.parse_args()
    transcripts = args.transcript or [p for p in DEFAULTS if p.exists()]
    if not transcripts:
        raise SystemExit(f"no transcript to take: the corpus is not at {CORPUS}; pass --transcript")
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as scratch:
        one_take(transcripts[0], Path(scratch))  # warm-up: writes the bytecode caches
        for transcript in transcripts:
            takes, baseline = [], []
            for _ in range(args.runs):
                baseline.append(timed([sys.executable, "-c", "pass"], b"", base_env))
                takes.append(one_take(transcript, Path(scratch)))
            take_ms = statistics.median(takes) * 1000
            base_ms = statistics.median(baseline) * 1000
            print(f"{transcript.name} ({transcript.stat().st_size:,} bytes), {args.runs} runs:")
            print(f"  take --hook      median {take_ms:6.1f} ms")
            print(f"  python3 -c pass  median {base_ms:6.1f} ms")
            print(f"  ratio            {take_ms / base_ms:6.2f}x   (target: take --hook under 60 ms)")


if __name__ == "__main__":
    main()
