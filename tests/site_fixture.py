"""A small, fixed memory root for the site's golden tree (tests/golden/site/).

Every clock sandman reads while building it is pinned, so the root, its commits
and the rendered site are the same bytes on every run. Regenerate the golden
tree after a deliberate change with ``python -m tests.regen_golden``.
"""

from __future__ import annotations

from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path
from unittest import mock

import pygit2

from sandman.banks.commit import bank_transaction, commit_memory
from sandman.banks.frontmatter import Frontmatter
from sandman.banks.memory import Memory
from sandman.layout import Layout
from sandman.pointers import write_pointer
from sandman.voyage import LogEntry, fingerprint, render_log_index

PROJECT = "/home/user/proj"
GOLDEN = Path(__file__).resolve().parent / "golden" / "site"
HOSTILE_BODY = (
    "Hostile text <script>window.__pwned = 1</script> stays text.\n\n"
    "<img src=x onerror=\"window.__pwned = 2\">\n\n"
    "[click me](javascript:window.__pwned=3) and [also](JaVaScRiPt:alert(1)) and <javascript:alert(1)>\n\n"
    "A right-to-left override: abc\u202edef, a bell \x07 and a form feed \x0c.\n"
)


class Clock:
    """A clock that moves one minute each time it is read."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 28, 9, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now

    def signature(self, repo) -> pygit2.Signature:
        return pygit2.Signature("Sandman Test", "test@sandman.invalid", int(self.now.timestamp()), 0)


def pinned() -> ExitStack:
    """Pin the clocks banks.commit and store.repo read; use as a context manager."""
    clock = Clock()
    stack = ExitStack()
    stack.enter_context(mock.patch("sandman.banks.commit.now_utc", clock))
    stack.enter_context(mock.patch("sandman.store.repo.signature", clock.signature))
    return stack


def _memory(name: str, body: str, type_: str = "project", **extra) -> Memory:
    return Memory(name=name, description=extra.pop("description", f"{name}."), type=type_, body=body, **extra)


def build(layout: Layout) -> None:
    """Fill ``layout`` with the fixed root: two banks, a replaced memory, a hostile one,
    an unreadable one, two voyage entries with INDEX.md, and two pointers."""
    with pinned():
        commit_memory(layout, _memory(
            "Tests run with pytest -rs",
            "Run the suite with `pytest -rs` so every skip prints its reason.\n\n"
            "- keep skips explained\n- never sleep in tests\n\nSee [the pytest docs](https://docs.pytest.org/).\n",
            "feedback", source=["9b0c1d2e"], witnesses=["fable", "sonnet"],
        ), directory=PROJECT, verb="dream", session="9b0c1d2e")
        first = commit_memory(layout, _memory("Build with make", "Run `make`, not cmake.\n"),
                              directory=PROJECT, verb="remember")
        commit_memory(layout, _memory("Build with make", "Run `make -j8`; the build is parallel-safe.\n"),
                      directory=PROJECT, verb="reflect", replaces=first.path.name)
        commit_memory(layout, _memory(
            "Hostile <b>name</b> & co", HOSTILE_BODY, description="<script>alert('description')</script>",
            front=Frontmatter.from_mapping({"confidence": "high"}),
        ), directory=PROJECT, verb="remember")
        commit_memory(layout, _memory("Prefers short answers", "Answer in two sentences or fewer.\n", "user"),
                      directory=None, verb="remember")
        with bank_transaction(layout, verb="remember", subject="a hand-edited file") as tx:
            tx.write_file(layout.bank("-home-user-proj") / "project_broken.md", "---\nname: [unclosed\n---\n\nBody.\n")
        for day, kind, title in (("2026-11-28", "landfall", "First memories of the proj bank"),
                                 ("2026-11-29", "refit", "The build memory was reworked")):
            entry = LogEntry(
                day=day, kind=kind, title=title, position=int(day[-2:]) - 27,
                body=f"What the engine lived through on {day}: *three* memories.\n",
                next="See whether the build memory holds.",
                fingerprint=fingerprint([(title, day)]), sources=["-home-user-proj/project_build_with_make.md"],
            )
            with bank_transaction(layout, verb="reflect", subject=f"voyage entry {day}") as tx:
                tx.write_file(layout.log_entry(day), entry.text())
                tx.write_file(layout.log_index, render_log_index(layout))
    write_pointer(layout, "5f1e2d3c", {
        "host": "claude", "cwd": PROJECT, "started": "2026-11-29T10:00:00Z", "ended": "2026-11-29T11:30:00Z",
        "title": "Fix the <flaky> upload test",
    })
    write_pointer(layout, "4e3d2c1b", {
        "host": "claude", "cwd": PROJECT, "ended": "2026-11-28T08:00:00Z", "title": "Already dreamed",
        "dreamed": "2026-11-28T09:00:00Z",
    })


def site_files(site: Path) -> dict[str, bytes]:
    """Return the rendered site's files (``.state/`` left out) by site-relative path."""
    return {
        path.relative_to(site).as_posix(): path.read_bytes()
        for path in sorted(site.rglob("*"))
        if path.is_file() and ".state" not in path.relative_to(site).parts
    }
