"""Seeded sweeps of hostile input and of kill -9 over sandman's entry points (issue 34).

Every case is a real ``sandman`` process under a throwaway home, as Claude Code
or a person would run it:

- ``fuzz``: hook payloads (take, recall, report), verb arguments and stdin
  (remember, search, trail append --data, breathe file, shift handoff,
  note, hooks install --settings with a hostile settings file, import
  claude-memory over hostile native files), transcripts taken by hand, and
  frames sent to one ``sandman mcp`` server. Counted: tracebacks (a
  ``Traceback`` on stderr), hangs (no exit within ``TIMEOUT_S``; an MCP
  request with an id left unanswered), hooks exiting non-zero.
- ``kills``: a writing verb (remember, trail append, note, take, import)
  killed with SIGKILL at a seeded moment, then the root examined: broken
  (HEAD does not resolve, a git lock left, the next write fails or leaves
  the tree unclean), or left showing uncommitted changes after the kill and
  after the next read (``recall``).

Every path a case names is inside the scratch folder: take moves the file a
payload names, so a payload never names a file outside it.

The suite runs a short sweep (tests/test_hostile_sweep.py); the long ones are
run by hand, their seeds in the command line:

    python tests/hostile_sweep.py --seed 34 --fuzz 2000 --kills 400

prints the counts and exits 1 when any traceback, hang or broken root was seen.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

TIMEOUT_S = 60.0
TRACEBACK = b"Traceback (most recent call last)"


def environment(home: Path) -> dict[str, str]:
    """An environment with everything sandman reads pointed inside ``home``."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("SANDMAN_", "CLAUDE_", "CODEX_", "GIT_")) and name != "CLAUDECODE"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), SANDMAN_ROOT=str(home / ".sandman"),
               CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex"),
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
               SANDMAN_GIT_NAME="Sandman Sweep", SANDMAN_GIT_EMAIL="sweep@sandman.invalid",
               SANDMAN_CLAUDE_BIN=str(home / "no-claude"))  # no mind ever runs
    return env


def run(env: dict[str, str], *args: str, stdin: bytes = b"") -> tuple[int | None, bytes, bytes]:
    """Run ``sandman args``; the exit code is None when it did not end within TIMEOUT_S. An
    argument goes as bytes (a lone surrogate as the bytes UTF-8 would give it: not UTF-8);
    a NUL, which no argument can hold, as ``\\0``."""
    argv = [arg.replace("\x00", "\\0").encode("utf-8", "surrogatepass") for arg in args]
    try:
        done = subprocess.run([sys.executable.encode(), b"-m", b"sandman", *argv], input=stdin, capture_output=True,
                              env=env, timeout=TIMEOUT_S, cwd=env["HOME"])
    except subprocess.TimeoutExpired as expired:
        return None, expired.stdout or b"", expired.stderr or b""
    return done.returncode, done.stdout, done.stderr


# --- hostile values -------------------------------------------------------------------------

TAGS = ["<private>", "</private>", "<PRIVATE>", "</Private>"]
ODD_TEXT = ["", " ", "..", "/", "a/b", "a\x00b", "\x1b[2J", "\u202e", "\ud800", "é" * 3, "\n\n", "-", "--help",
            "AKIAIOSFODNN7EXAMPLE", "x" * 5000]


def text(rng: random.Random, home: Path) -> str:
    """A short hostile string: odd characters, private tags, paths (inside ``home`` only)."""
    parts = []
    for _ in range(rng.randint(0, 6)):
        kind = rng.random()
        if kind < 0.3:
            parts.append(rng.choice(TAGS))
        elif kind < 0.5:
            parts.append(rng.choice(ODD_TEXT))
        elif kind < 0.6:
            parts.append(str(home / rng.choice(["proj", "nowhere", "a b", ".sandman", ".."])))
        else:
            parts.append("".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0xA0, 0x2FFF)]))
                                 for _ in range(rng.randint(1, 12))))
    return " ".join(parts)


def value(rng: random.Random, home: Path, depth: int = 0) -> object:
    """A JSON value of a random type, sometimes nested."""
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 2**63, 10**30, 7])
    if kind == 3:
        return rng.choice([1.5, -0.0, 1e308])
    if kind == 4:
        return text(rng, home)
    if kind == 5:
        return [value(rng, home, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["session_id", "cwd", "x", "name", "body"]): value(rng, home, depth + 1)
            for _ in range(rng.randint(0, 3))}


def deep(rng: random.Random) -> bytes:
    depth = rng.choice([1_000, 50_000, 200_000])
    return (b"[" * depth + b"]" * depth) if rng.random() < 0.5 else (b'{"a":' * depth + b"1" + b"}" * depth)


def payload(rng: random.Random, home: Path, event: str) -> bytes:
    """A hook payload: mostly the right shape with hostile values, sometimes not JSON at all."""
    roll = rng.random()
    if roll < 0.1:
        return deep(rng)
    if roll < 0.2:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    data: dict[str, object] = {"hook_event_name": event if rng.random() < 0.8 else value(rng, home)}
    for key in ("session_id", "transcript_path", "cwd", "reason", "source"):
        if rng.random() < 0.8:
            data[key] = value(rng, home)
    if rng.random() < 0.5:
        data["session_id"] = f"{rng.getrandbits(32):08x}-0000-4000-8000-000000000000"
    if rng.random() < 0.3:
        data["transcript_path"] = str(home / ".claude" / "projects" / "p" / f"{data.get('session_id')}.jsonl")
    raw = json.dumps(data, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    return raw[: rng.randint(0, len(raw))] if rng.random() < 0.1 else raw


def transcript(rng: random.Random, home: Path, sid: str) -> bytes:
    """A transcript of ``sid`` with hostile lines among real-looking ones."""
    lines = []
    for number in range(rng.randint(1, 8)):
        roll = rng.random()
        if roll < 0.15:
            lines.append(deep(rng))
        elif roll < 0.25:
            lines.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))))
        else:
            kind = rng.choice(["user", "assistant", "summary", "custom-title", value(rng, home)])
            content = value(rng, home) if rng.random() < 0.3 else text(rng, home)
            cwd = str(home / "proj") if rng.random() < 0.8 else value(rng, home)
            line = {"type": kind, "sessionId": sid, "cwd": cwd,
                    "timestamp": rng.choice(["2026-11-30T10:00:00Z", "not a time", None, "9999-99-99T99:99:99Z"]),
                    "uuid": f"u{number}", "message": {"role": kind, "content": content}}
            lines.append(json.dumps(line).encode("utf-8", "surrogatepass"))
    return b"\n".join(lines) + (b"\n" if rng.random() < 0.8 else b"")


# --- the fuzz ---------------------------------------------------------------------------------


def fuzz(home: Path, seed: int, cases: int) -> Counter:
    """Run ``cases`` hostile cases drawn from ``seed``; return the counts (``cases``,
    ``tracebacks``, ``hangs``, ``hook-failures``, and ``first:<kind>`` examples)."""
    rng = random.Random(seed)
    env = environment(home)
    (home / "proj").mkdir(parents=True, exist_ok=True)
    counts: Counter = Counter()
    run(env, "init")
    run(env, "remember", "The build uses make", "--cwd", str(home / "proj"))
    kinds = ["take-hook", "recall-hook", "report-hook", "remember", "search", "trail", "breathe", "note",
             "shift-handoff", "settings", "take", "import"]
    for number in range(cases):
        kind = rng.choice(kinds)
        code, _, err = fuzz_case(rng, home, env, kind, number)
        counts["cases"] += 1
        bad = None
        if code is None:
            bad = "hangs"
        elif TRACEBACK in err:
            bad = "tracebacks"
        elif kind.endswith("-hook") and code != 0:
            bad = "hook-failures"
        if bad:
            counts[bad] += 1
            counts.setdefault(f"first:{bad}", f"case {number} ({kind}): {err[-300:]!r}")
    for key, count in mcp_fuzz(home, env, rng, max(cases // 10, 5)).items():
        if isinstance(count, int):
            counts[key] += count
        else:
            counts.setdefault(key, count)
    return counts


def fuzz_case(rng: random.Random, home: Path, env: dict[str, str], kind: str,
              number: int) -> tuple[int | None, bytes, bytes]:
    if kind.endswith("-hook"):
        verb = kind.removesuffix("-hook")
        event = "SessionEnd" if verb == "take" else "SessionStart"
        return run(env, verb, "--hook", stdin=payload(rng, home, event))
    if kind == "remember":
        cwd = rng.choice([str(home / "proj"), "relative", "/", str(home / "proj" / "sub"), text(rng, home)])
        return run(env, "remember", "--cwd", cwd, "--", text(rng, home) or "x")
    if kind == "search":
        query = text(rng, home) * rng.choice([1, 1, 50, 2000])
        return run(env, "search", "--", query[:100_000] or "x")
    if kind == "trail":
        data = rng.choice([json.dumps(value(rng, home)), deep(rng)[:40_000].decode(), text(rng, home)])
        return run(env, "trail", "append", rng.choice(["shift.commit", "x", text(rng, home) or "y"]),
                   text(rng, home)[:200] or "s", "--data", data)
    if kind == "breathe":
        stdin = rng.choice([json.dumps(value(rng, home)).encode("utf-8", "surrogatepass"), deep(rng),
                            text(rng, home).encode("utf-8", "surrogatepass")])
        return run(env, "breathe", "file", stdin=stdin)
    if kind == "note":
        return run(env, "note", "--cwd", str(home / "proj"), "--", text(rng, home) or "x")
    if kind == "shift-handoff":
        return run(env, "shift", "handoff", *rng.choice([[], ["-"]]),
                   stdin=text(rng, home).encode("utf-8", "surrogatepass"))
    if kind == "settings":
        settings = home / "settings" / f"{number}.json"
        settings.parent.mkdir(exist_ok=True)
        settings.write_bytes(rng.choice([deep(rng), json.dumps(value(rng, home)).encode("utf-8", "surrogatepass"),
                                         bytes(rng.randrange(256) for _ in range(50))]))
        return run(env, "hooks", rng.choice(["install", "uninstall"]), "--settings", str(settings))
    if kind == "take":
        sid = f"{rng.getrandbits(32):08x}-1111-4000-8000-000000000000"
        path = home / ".claude" / "projects" / "p" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(transcript(rng, home, sid))
        return run(env, "take", sid, "--force", "--transcript", str(path))
    native = home / ".claude" / "projects" / "-x" / "memory"
    native.mkdir(parents=True, exist_ok=True)
    body = rng.choice(["x\n", "word " * 14_000, text(rng, home)])
    (native / f"project_{number}.md").write_bytes(
        f"---\nname: {text(rng, home)[:40] or 'n'}\ndescription: d\ntype: {rng.choice(['project', 'x'])}\n---\n\n{body}"
        .encode("utf-8", "surrogatepass"))
    return run(env, "import", "claude-memory", "--project", str(home / "proj"), *rng.choice([[], ["--dry-run"]]))


def mcp_fuzz(home: Path, env: dict[str, str], rng: random.Random, frames: int) -> Counter:
    """Send ``frames`` hostile frames to one ``sandman mcp``; every request with an id must be answered."""
    counts: Counter = Counter()
    server = subprocess.Popen([sys.executable, "-m", "sandman", "mcp"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    pending = b""

    def ask(ident: int, line: bytes) -> bool:
        nonlocal pending
        server.stdin.write(line + b"\n")
        server.stdin.flush()
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            while b"\n" in pending:
                reply, pending = pending.split(b"\n", 1)
                try:
                    if json.loads(reply).get("id") == ident:
                        return True
                except ValueError:
                    continue
            ready, _, _ = select.select([server.stdout], [], [], 1)
            if ready:
                chunk = os.read(server.stdout.fileno(), 1 << 16)
                if not chunk:
                    return False
                pending += chunk
        return False

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sweep", "version": "1"}}
        ask(0, json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode())
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for ident in range(1, frames + 1):
            method = rng.choice(["tools/call", "tools/list", "ping", "nope"])
            roll = rng.random()
            if roll < 0.3:
                params: object = value(rng, home)
            elif roll < 0.4:
                params = None
            else:
                params = {"name": rng.choice(["recall", "remember", "search", "banks", "note", "x"]),
                          "arguments": value(rng, home)}
            frame = {"jsonrpc": "2.0", "id": ident, "method": method}
            if params is not None:
                frame["params"] = params
            line = json.dumps(frame).encode("utf-8", "surrogatepass")
            if rng.random() < 0.1:  # still JSON, nested deeper than a reader's stack
                depth = rng.choice([1_500, 5_000])
                line = line[:-1] + b',"x":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
            counts["mcp-frames"] += 1
            if not ask(ident, line):
                counts["hangs"] += 1
                counts.setdefault("first:hangs", f"mcp frame {ident}: {line[:200]!r}")
                break
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            counts["hangs"] += 1
        err = server.stderr.read()
        if TRACEBACK in err:
            counts["tracebacks"] += 1
            counts.setdefault("first:tracebacks", f"mcp: {err[-300:]!r}")
    return counts


# --- the kills --------------------------------------------------------------------------------


def git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def dirty(root: Path) -> bool:
    return bool(git(root, "status", "--porcelain").stdout.strip())


def locks(root: Path) -> list[str]:
    return [str(path) for path in (root / ".git").rglob("*.lock")]


def kills(home: Path, seed: int, count: int) -> Counter:
    """Kill ``count`` writing verbs at moments drawn from ``seed``; return the counts (``kills``,
    ``broken``, ``dirty-after-kill``, ``dirty-after-read``, ``first:<kind>`` examples)."""
    rng = random.Random(seed)
    env = environment(home)
    proj = home / "proj"
    proj.mkdir(parents=True, exist_ok=True)
    root = home / ".sandman"
    run(env, "init")
    native = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(proj)) / "memory"
    native.mkdir(parents=True, exist_ok=True)
    counts: Counter = Counter()
    for number in range(count):
        kind = rng.choice(["remember", "trail", "note", "take", "import"])
        if kind == "remember":
            args = ["remember", f"Fact number {number} about the build", "--cwd", str(proj)]
        elif kind == "trail":
            args = ["trail", "append", "shift.commit", f"decision {number}"]
        elif kind == "note":
            args = ["note", f"note {number}", "--cwd", str(proj)]
        elif kind == "take":
            sid = f"{number:08x}-2222-4000-8000-000000000000"
            path = home / ".claude" / "projects" / "p" / f"{sid}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(json.dumps({"type": "user", "sessionId": sid, "cwd": str(proj),
                                         "timestamp": "2026-11-30T10:00:00Z", "uuid": "u1",
                                         "message": {"role": "user", "content": f"prompt {number}"}}).encode() + b"\n")
            args = ["take", sid, "--force", "--transcript", str(path)]
        else:
            (native / f"project_{number}.md").write_text(
                f"---\nname: native {number}\ndescription: d {number}\ntype: project\n---\n\nbody {number}\n")
            args = ["import", "claude-memory", "--project", str(proj)]
        process = subprocess.Popen([sys.executable, "-m", "sandman", *args], env=env, cwd=str(home),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 1.0))
        process.send_signal(signal.SIGKILL)
        process.wait()
        counts["kills"] += 1
        if dirty(root):
            counts["dirty-after-kill"] += 1
        run(env, "recall", "--cwd", str(proj))
        if dirty(root):
            counts["dirty-after-read"] += 1
            status = git(root, "status", "--porcelain").stdout[:300]
            counts.setdefault("first:dirty-after-read", f"kill {number} ({kind}): {status}")
        code, _, err = run(env, "remember", f"After kill {number}", "--cwd", str(proj))
        problem = None
        if git(root, "rev-parse", "--verify", "HEAD").returncode != 0:
            problem = "HEAD does not resolve"
        elif code != 0:
            problem = f"the next write failed: {err[-300:]!r}"
        elif dirty(root):
            problem = f"still uncommitted after the next write: {git(root, 'status', '--porcelain').stdout[:300]}"
        elif locks(root):
            problem = f"locks left: {locks(root)}"
        if problem:
            counts["broken"] += 1
            counts.setdefault("first:broken", f"kill {number} ({kind}): {problem}")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--fuzz", type=int, default=500, help="hostile cases (the MCP frames are a tenth of it)")
    parser.add_argument("--kills", type=int, default=100)
    options = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="sandman-sweep-") as scratch:
        for name, sweep, size in (("fuzz", fuzz, options.fuzz), ("kills", kills, options.kills)):
            if not size:
                continue
            counts = sweep(Path(scratch) / name, options.seed, size)
            print(f"{name} (seed {options.seed}):")
            shown = ("cases", "mcp-frames", "tracebacks", "hangs", "hook-failures") if name == "fuzz" else (
                "kills", "broken", "dirty-after-kill", "dirty-after-read")
            for key in [*shown, *sorted(key for key in counts if key not in shown)]:
                print(f"  {key}: {counts[key]}")
            failed = failed or any(counts[key] for key in ("tracebacks", "hangs", "broken", "hook-failures"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
