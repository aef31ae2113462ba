"""Minds for the hardening tests: replies computed from the prompt, run by tests/fakes/claude.

A fixture rule ``{"program": [<this file>, "dream", ...]}`` makes the fake
claude print what ``python3 hardening_minds.py dream ...`` prints given the
prompt on stdin. The tests import the same functions to know what was proposed.

- ``dream [--claims N] [--loner]``: every mind given the same arguments proposes
  the same N memories for the session (so two such minds agree on all of
  them); ``--loner`` adds one memory no other mind proposes (forgotten).
- ``upkeep [--max N]``: a plan for the listing it is shown (two merges, two
  retitles, two prunes, as far as the listing goes and at most N operations),
  every file named from the listing.
- ``merge``: a merged body.
- ``quote``: one memory quoting what the prompt fenced: the title as its name,
  the head of the transcript as its body (bad input carried into the banks).

``--jitter S`` waits a random 0 to S seconds first. With ``$HARDENING_SIGNAL``
naming a FIFO, a mind writes one short line to it just before it answers: the
crash tests wait on that, not on the clock, to know the minds have spoken.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
import time

_SESSION = re.compile(r"^- Session id: (\S+)$", re.MULTILINE)
_LISTED = re.compile(r"^- file: (\S+)$", re.MULTILINE)
MERGED_BODY = "The members said one thing; here it is once.\n"


def _words(seed: str) -> list[str]:
    digest = hashlib.sha256(seed.encode()).hexdigest()
    return [f"w{digest[i:i + 6]}" for i in range(0, 24, 6)]


def claim(session: str, cwd: str, k: int) -> dict:
    """The k-th memory every agreeing mind proposes for ``session``: words no other claim shares."""
    words = " ".join(_words(f"{session}/{k}"))
    return {"bank": cwd, "type": "project", "name": f"Fact {words}", "description": f"Recorded as {words}",
            "body": f"Session {session} settled {words}.\n"}


def loner(session: str, cwd: str) -> dict:
    """The memory only a ``--loner`` mind proposes: one witness, never committed."""
    words = " ".join(_words(f"{session}/loner"))
    return {"bank": cwd, "type": "project", "name": f"Lonely {words}", "description": f"Only one mind saw {words}",
            "body": f"Nobody else saw {words}.\n"}


def dream(prompt: str, claims: int, alone: bool) -> dict:
    session = _SESSION.search(prompt).group(1)
    cwd = fenced(prompt, "cwd")
    memories = [claim(session, cwd, k) for k in range(claims)]
    return {"memories": memories + ([loner(session, cwd)] if alone else [])}


def fenced(prompt: str, label: str) -> str | None:
    """The text the prompt fenced under ``label`` (None when there is no such fence)."""
    found = re.search(r'<data-([0-9a-f]{16}) label="' + label + r'">\n(.*?)\n</data-\1>', prompt, re.DOTALL)
    return found.group(2) if found else None


def quote(prompt: str) -> dict:
    session = _SESSION.search(prompt).group(1)
    cwd = fenced(prompt, "cwd")
    title = fenced(prompt, "title") or ""
    body = (fenced(prompt, "transcript") or "")[:3000]
    return {"memories": [{"bank": cwd, "type": "project", "name": f"Quoted {title}"[:120],
                          "description": f"What session {session} said", "body": body or "(empty)"}]}


def _tag(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def upkeep(prompt: str, limit: int = 6) -> dict:
    files = sorted(set(_LISTED.findall(prompt)))
    operations = []
    for _ in range(2):
        if len(files) >= 2:
            pair, files = files[:2], files[2:]
            operations.append({"op": "merge", "files": pair, "type": "project", "name": f"Merged {_tag(''.join(pair))}",
                               "description": f"Two memories said one thing ({_tag(''.join(pair))})"})
    for op in ("retitle", "retitle", "prune", "prune"):
        if not files:
            break
        file, files = files[0], files[1:]
        if op == "prune":
            operations.append({"op": "prune", "file": file, "reason": "obsolete"})
        else:
            operations.append({"op": "retitle", "file": file, "name": f"Retitled {_tag(file)}",
                               "description": f"A clearer title for {_tag(file)}"})
    return {"operations": operations[:limit]}


def _option(argv: list[str], name: str, default: float) -> float:
    return float(argv[argv.index(name) + 1]) if name in argv else default


def _signal(what: str) -> None:
    fifo = os.environ.get("HARDENING_SIGNAL")
    if not fifo:
        return
    try:  # non-blocking: a mind outliving its killed dream must not hang on a FIFO nobody reads
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.write(fd, f"{what}\n".encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def main(argv: list[str]) -> None:
    prompt = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    time.sleep(random.uniform(0, _option(argv, "--jitter", 0)))
    if argv[0] == "dream":
        reply = dream(prompt, int(_option(argv, "--claims", 1)), "--loner" in argv)
    elif argv[0] == "quote":
        reply = quote(prompt)
    elif argv[0] == "upkeep":
        reply = upkeep(prompt, int(_option(argv, "--max", 6)))
    else:
        reply = {"body": MERGED_BODY}
    _signal(argv[0])
    sys.stdout.write(json.dumps(reply))


if __name__ == "__main__":
    main(sys.argv[1:])
