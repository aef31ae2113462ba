"""Benchmark ``sandman recall --hook``: the hook every session start waits for.

Builds a throwaway root with 1,000 memories across 5 ancestor banks (written
through bank_transaction, the one writer, as one commit), 40 pointers and 30
voyage log entries, then prints the median wall time of

- ``<python> -c pass``: the bare interpreter, the baseline;
- ``<python> -c "import sandman.hook, sandman.verbs.recall"``: the imports alone;
- ``sandman recall --hook`` (the installed console script, a real subprocess);

and the ratio of the last to the first. Then it files 10,000 fake sessions
under ``.archive/`` and measures again: recall never reads the archive, so the
ratio must not grow. Target: median under 80 ms.

Python's bytecode cache is allowed (``PYTHONDONTWRITEBYTECODE`` is dropped from
the children's environment, and warm-up runs write it), as on an installed
sandman. Usage: ``python bench/recall.py [--runs N]``.
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
from datetime import datetime, timedelta, timezone
from pathlib import Path

CHAIN = ("code", "org", "repo", "pkg")  # home and four levels below: five ancestor banks
MEMORIES = 1_000
POINTERS = 40
LOG_ENTRIES = 30
ARCHIVED = 10_000
CORPUS_PAYLOAD = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "hooks" / "session-start.startup.full.json"


def build(home: Path, root: Path) -> Path:
    """Fill ``root``; return the cwd whose chain holds the five banks."""
    from sandman.banks.commit import bank_transaction
    from sandman.banks.memory import Memory
    from sandman.banks.names import bank_name
    from sandman.layout import Layout
    from sandman.pointers import write_pointer

    layout = Layout(root)
    dirs = [home]
    for part in CHAIN:
        dirs.append(dirs[-1] / part)
    with bank_transaction(layout, verb="bench", subject="1,000 memories") as tx:
        for i in range(MEMORIES):
            directory = dirs[i % len(dirs)]
            body = f"Memory {i} of the bench: the module number {i} keeps its own conventions.\n" * (1 + i % 4)
            tx.write_memory(
                bank_name(directory),
                Memory(name=f"Bench fact {i}", description=f"The module number {i} keeps its conventions.",
                       type=("project", "feedback", "reference")[i % 3], body=body, source=["bench"]),
                directory=str(directory),
            )
    now = datetime.now(timezone.utc)
    for i in range(POINTERS):
        ended = now - timedelta(hours=i * 2.5)
        write_pointer(layout, f"bench-{i:03d}", {
            "host": "claude", "cwd": str(dirs[i % len(dirs)]), "ended": ended.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "title": f"Bench session {i}", "highlights": [f"Highlight of session {i}"],
        })
    layout.log.mkdir(parents=True, exist_ok=True)
    for i in range(LOG_ENTRIES):
        day = (now - timedelta(days=i + 1)).strftime("%Y-%m-%d")
        layout.log_entry(day).write_text(
            f"---\nday: {day}\ntitle: Day {i} of the bench\nkind: voyage\n---\n\n" + "The banks grew. " * 30 + "\n"
        )
    return dirs[-1]


def archive(root: Path) -> None:
    for i in range(ARCHIVED):
        day = root / ".archive" / "claude" / "2026" / f"{1 + i % 12:02d}" / f"{1 + i % 28:02d}"
        folder = day / f"{i % 86400:06d}-project-{i % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"session-{i:05d}.jsonl").write_text('{"type":"user","message":"archived"}\n')


def medians_ms(commands: list[tuple[list[str], bytes]], env: dict[str, str], runs: int) -> list[float]:
    """Median wall time of each command, in milliseconds, the commands interleaved run by run
    so that a busy neighbour slows them all alike."""
    for argv, stdin in commands:  # warm up: bytecode written, page cache filled
        for _ in range(3):
            subprocess.run(argv, input=stdin, env=env, capture_output=True, check=True)
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for i, (argv, stdin) in enumerate(commands):
            start = time.perf_counter()
            done = subprocess.run(argv, input=stdin, env=env, capture_output=True)
            times[i].append((time.perf_counter() - start) * 1000)
            if done.returncode != 0:
                raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    return [statistics.median(t) for t in times]


def measure(label: str, sandman: str, env: dict[str, str], payload: bytes, runs: int) -> float:
    python = sys.executable
    bare, imports, hook = medians_ms([
        ([python, "-c", "pass"], b""),
        ([python, "-c", "import sandman.hook, sandman.verbs.recall"], b""),
        ([sandman, "recall", "--hook"], payload),
    ], env, runs)
    print(f"{label}:")
    print(f"  python -c pass                  {bare:7.1f} ms")
    print(f"  python -c 'import sandman...'   {imports:7.1f} ms")
    print(f"  sandman recall --hook           {hook:7.1f} ms   (target < 80 ms)")
    print(f"  ratio hook / python -c pass     {hook / bare:7.2f}")
    return hook / bare


def importtime(sandman: str, env: dict[str, str], payload: bytes) -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", sandman, "recall", "--hook"],
                          input=payload, env=env, capture_output=True)
    rows = []
    for line in done.stderr.decode().splitlines():
        parts = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[0].strip().isdigit():
            rows.append((int(parts[0]), int(parts[1]), parts[2].strip()))
    rows.sort(reverse=True)
    print(f"  imports, -X importtime: {sum(row[0] for row in rows) / 1000:.1f} ms in all; the costliest by self time:")
    for self_us, cumulative, name in rows[:8]:
        print(f"    {self_us / 1000:6.2f} ms self {cumulative / 1000:6.2f} ms cumulative  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    sandman = shutil.which("sandman", path=str(Path(sys.executable).parent)) or shutil.which("sandman")
    if sandman is None:
        raise SystemExit("no sandman console script next to this python or on PATH; pip install the project")
    base = Path(tempfile.mkdtemp(prefix="sandman-bench-"))
    try:
        home, root = base / "home", base / "home" / ".sandman"
        home.mkdir()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SANDMAN_", "CLAUDE_", "GIT_")) and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(HOME=str(home), SANDMAN_ROOT=str(root), SANDMAN_GIT_NAME="bench",
                   SANDMAN_GIT_EMAIL="bench@sandman.invalid", GIT_CONFIG_NOSYSTEM="1")
        os.environ.update({k: env[k] for k in ("HOME", "SANDMAN_ROOT", "SANDMAN_GIT_NAME", "SANDMAN_GIT_EMAIL")})
        started = time.perf_counter()
        cwd = build(home, root)
        print(f"built {MEMORIES} memories in 5 banks, {POINTERS} pointers, {LOG_ENTRIES} log entries "
              f"in {time.perf_counter() - started:.1f} s; cwd {cwd}")
        data = json.loads(CORPUS_PAYLOAD.read_text()) if CORPUS_PAYLOAD.is_file() else {
            "session_id": "bench", "hook_event_name": "SessionStart", "source": "startup"}
        data["cwd"] = str(cwd)
        payload = json.dumps(data).encode()
        reply = subprocess.run([sandman, "recall", "--hook"], input=payload, env=env, capture_output=True)
        context = json.loads(reply.stdout)["hookSpecificOutput"]["additionalContext"]
        print(f"payload: {len(context):,} characters; last line: {context.splitlines()[-1][:160]}")
        print(f"runs per figure: {args.runs} (median)")
        before = measure("root without an archive", sandman, env, payload, args.runs)
        importtime(sandman, env, payload)
        archive(root)
        after = measure(f"the same root with {ARCHIVED:,} archived sessions", sandman, env, payload, args.runs)
        print(f"ratio change with the archive: {after / before:.2f}x")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
