"""Fuzz the readers with thousands of mutated corpus lines: they never raise, and take
still archives the exact bytes. Seeded, so a failure reproduces; a few seconds long."""

from __future__ import annotations

import hashlib
import os
import json
import random
from pathlib import Path

import pytest

from sandman.layout import Layout
from sandman.transcripts import mind_text, read_session, sniff, summarize
from sandman.verbs.take import take

SEED = 20261130
FILES = 40
LINES_PER_FILE = 100
ODD_VALUES = (None, 0, -1, 1.5, True, "", "x", [], {}, [None], {"type": "text"}, {"type": "tool_use"},
              "2026-13-45T99:99:99Z", "\u202e\x00", [{"type": "image"}], {"content": [1, 2]})


def _corpus_lines(corpus: Path) -> dict[str, list[bytes]]:
    lines: dict[str, list[bytes]] = {"claude": [], "codex": []}
    for path in sorted((corpus / "transcripts").rglob("*.jsonl")):
        host = path.relative_to(corpus / "transcripts").parts[0]
        lines[host] += path.read_bytes().splitlines()
    return lines


def _json_mutate(rng: random.Random, line: bytes) -> bytes:
    value = json.loads(line)
    node = value
    for _ in range(rng.randint(0, 4)):  # walk down to a random container
        children = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else []
        children = [c for c in children if isinstance(c, (dict, list)) and c]
        if not children:
            break
        node = rng.choice(children)
    if isinstance(node, dict) and node:
        node[rng.choice(list(node))] = rng.choice(ODD_VALUES)
    elif isinstance(node, list) and node:
        node[rng.randrange(len(node))] = rng.choice(ODD_VALUES)
    return json.dumps(value).encode()


def _mutate(rng: random.Random, line: bytes) -> bytes:
    kind = rng.randrange(7)
    if kind == 0:  # truncation
        return line[: rng.randrange(len(line) + 1)]
    if kind == 1:  # bit flips
        data = bytearray(line)
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data)
    if kind == 2:  # random bytes
        return rng.randbytes(rng.randint(0, 300))
    if kind == 3:  # random bytes spliced in
        at = rng.randrange(len(line) + 1)
        return line[:at] + rng.randbytes(rng.randint(1, 20)) + line[at:]
    if kind == 4:  # a value of the wrong type somewhere
        return _json_mutate(rng, line)
    if kind == 5:  # two lines run together
        return line + line[: len(line) // 2]
    return line  # unchanged


def _mutated_files(corpus: Path, folder: Path) -> list[tuple[str, Path]]:
    rng = random.Random(SEED)
    lines = _corpus_lines(corpus)
    files = []
    for index in range(FILES):
        host = "claude" if index % 4 else "codex"
        pool = lines[host]
        chosen = [_mutate(rng, rng.choice(pool)) for _ in range(LINES_PER_FILE)]
        path = folder / f"{host}-{index}.jsonl"
        path.write_bytes(b"\n".join(chosen) + rng.choice([b"\n", b""]))
        files.append((host, path))
    return files


def test_mutated_corpus_lines_never_raise_out_of_the_readers(corpus: Path, tmp_path: Path):
    total = 0
    for host, path in _mutated_files(corpus, tmp_path):
        assert sniff(path) in ("claude", "codex", None)
        full = read_session(path, host)
        lean = summarize(path, host)
        mind_text(full)
        assert full.lines >= LINES_PER_FILE  # random bytes may hold newlines
        assert lean.title is None or len(lean.title) <= 80
        total += full.lines
    assert total >= 4000


def test_a_fifty_megabyte_line_is_skipped_not_fatal(tmp_path: Path):
    path = tmp_path / "huge.jsonl"
    first = {"type": "user", "sessionId": "s-1", "cwd": "/w", "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": "before the flood"}}
    with open(path, "wb") as stream:
        stream.write(json.dumps(first).encode() + b"\n")
        stream.write(b'{"type":"user","message":{"role":"user","content":"' + b"x" * (50 << 20) + b'"}}\n')
        stream.write(json.dumps({**first, "timestamp": "2026-01-01T00:05:00Z"}).encode() + b"\n")
    for reader in (read_session, summarize):
        session = reader(path)
        assert session.skipped == {"too long": 1}
        assert (session.title, session.ended) == ("before the flood", "2026-01-01T00:05:00Z")


def test_take_archives_the_exact_bytes_of_mutated_transcripts(corpus: Path, tmp_path: Path, layout: Layout):
    projects = Path(tmp_path / "home" / ".claude" / "projects" / "-fuzz")
    projects.mkdir(parents=True)
    for index, (_, path) in enumerate(_mutated_files(corpus, tmp_path)[:12]):
        session = f"fuzz-{index}"
        live = projects / f"{session}.jsonl"
        live.write_bytes(path.read_bytes())
        digest = hashlib.sha256(live.read_bytes()).hexdigest()
        taken = take(layout, session, force=True)
        assert os.path.samefile(live, taken.archived)
        assert hashlib.sha256(taken.archived.read_bytes()).hexdigest() == digest
        assert json.loads(taken.pointer.read_text())["session"] == session


@pytest.mark.parametrize("content", [b"", b"\xff" * 64, b"{" * 5000])
def test_take_archives_even_an_unreadable_transcript_in_the_projects_folder(tmp_path: Path, layout: Layout,
                                                                          content: bytes):
    live = tmp_path / "home" / ".claude" / "projects" / "-w" / "s-odd.jsonl"
    live.parent.mkdir(parents=True)
    live.write_bytes(content)
    taken = take(layout, "s-odd", force=True)
    assert taken.archived.read_bytes() == content
    pointer = json.loads(taken.pointer.read_text())
    assert pointer["title"] is None and pointer["ended"]
