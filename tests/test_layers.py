"""The house's floors, read from the source: no import circles, and imports run downward only
(issue 33; the picture is docs/ARCHITECTURE.md).

The graph is every ``import sandman…`` and ``from sandman… import …`` of every module, at any
depth in the file: at module level, inside a function (a lazy import for import cost still
points somewhere), under ``if TYPE_CHECKING``. ``from sandman.x import y`` is an edge to
``sandman.x.y`` when that is a module, else to ``sandman.x``. A package's ``__init__`` is the
package's own name (``sandman.banks``); importing a submodule runs its parents' ``__init__``,
which is not counted as an edge (every submodule would otherwise import its package).

The floors, top to bottom. A module may import its own floor or any floor below it, never one
above; within a floor, no circles. A new module belongs to a floor before this test passes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sandman"

# 1. Entry points: what a person or Claude Code runs. They parse, route and print.
ENTRY = {
    "sandman.__main__",        # the `sandman` executable: hooks routed before anything heavy
    "sandman.cli",             # the typer app: the root app and one sub-app per family
    "sandman.dispatch",        # the thin dispatcher before typer (remember, search, mcp, help)
    "sandman.hook",            # SessionStart / SessionEnd hook entry points
    "sandman.fasthook",        # the hooks' `python -I -S` launcher
    "sandman.statusline",      # Claude Code's status line
    "sandman.mcp_handshake",   # `sandman mcp`'s early stage (loads sandman.mcp)
    "sandman.mcp",             # the MCP tool server over the SDK
}
# 2. The verbs: one module per command, over the packages below (sandman/verbs/).
VERBS = "sandman.verbs"
# 3. The packages, and the top-level modules that are rooms of the same floor: the substance.
PACKAGES = {
    "sandman.store",        # atomic writes, locks, the pygit2 repository, sync
    "sandman.transcripts",  # Claude Code and Codex transcripts into one model of a session
    "sandman.banks",        # memory files, commit_memory, MEMORY.md, the secrets ban
    "sandman.archive",      # take: the whole transcript archived, the pointer written
    "sandman.minds",        # `claude -p` minds in parallel, consensus
    "sandman.recall",       # what a session starts with: compose, budget, the fast paths
    "sandman.curators",     # upkeep's proposals and their apply
    "sandman.machine",      # the trail, shifts, proposals, score, breath, reports
    "sandman.site",         # the static site
    "sandman.pointers",     # memories/.recent/<session>.json
    "sandman.dreamqueue",   # which pointers a dream routes; is a dream running
    "sandman.voyage",       # the voyage log, log/<yyyy-mm-dd>.md
    "sandman.note",         # the per-directory note for the next session
    "sandman.dream",        # dream's run: the queue, the minds per pointer, the commits
    "sandman.reflect",      # the nightly reflect: the voyage entry, the sweep, upkeep
    "sandman.claudecode",   # Claude Code's own files: settings.json's hooks, its auto memory
    "sandman.schedule",     # the user's scheduler: reflect's, the tick's and the research jobs
    "sandman.doctor",       # doctor's checks and their report
    "sandman.forget",       # forgetting a session: every copy, every commit
    "sandman.sync",         # sync's run: fetch, merge, push (over sandman.store's pieces)
}
# 4. The base: names, settings, errors, the journal, and built-ins-only helpers of the fast paths.
BASE = {
    "sandman",              # the package's __init__ (__version__)
    "sandman.layout",       # every path under the root
    "sandman.config",       # every environment variable and default
    "sandman.errors",       # the exceptions
    "sandman.journal",      # .trace/<verb>-<date>.log
    "sandman.marks",        # control characters shown as marks
    "sandman.private",      # <private> spans
    "sandman.hookpayload",  # a SessionStart payload
    "sandman.plainhook",    # what the `python -I -S` paths share
    "sandman.fastjson",     # JSON without the json package
    "sandman.hookfork",     # the detached take's fork
    "sandman.procs",        # whether a pid runs, and when it started
    "sandman.mcp_wire",     # the MCP frames both stages of `sandman mcp` share
}
FLOORS = ("base", "packages", "verbs", "entry")  # bottom to top

def modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` (a folder), by dotted name; a package by its ``__init__``."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def graph(package: Path) -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}`` over the modules of ``package``."""
    known = modules(package)
    top = package.name

    def owner(name: str) -> str | None:  # the longest dotted prefix that is a module
        parts = name.split(".")
        while parts:
            if ".".join(parts) in known:
                return ".".join(parts)
            parts.pop()
        return None

    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        out = edges.setdefault(name, {})
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                if target == top or target.startswith(top + "."):
                    to = owner(target)
                    if to is not None and to != name:
                        out.setdefault(to, node.lineno)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """One circle per strongly connected component, as ``[a, b, …, a]`` (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_circle(edges, component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _circle(edges: dict[str, dict[str, int]], component: set[str]) -> list[str]:
    """A path through ``component`` from its first module back to it."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w == start:
                return paths[v] + [start]
            if w in component and w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    raise AssertionError(f"no circle in {component}")  # a component of two or more always has one


def floor(module: str) -> str | None:
    """The floor of ``module``, None when it is on none yet."""
    if any(module == entry or module.startswith(entry + ".") for entry in ENTRY):
        return "entry"
    if module == VERBS or module.startswith(VERBS + "."):
        return "verbs"
    if any(module == p or module.startswith(p + ".") for p in PACKAGES):
        return "packages"
    if module in BASE:
        return "base"
    return None


def upward(edges: dict[str, dict[str, int]]) -> dict[tuple[str, str], int]:
    """Every import from a floor to a higher one: ``{(importer, imported): line}``."""
    return {(a, b): line for a, out in edges.items() for b, line in out.items()
            if FLOORS.index(floor(b)) > FLOORS.index(floor(a))}


EDGES = graph(PACKAGE)


def test_the_graph_is_read_at_every_depth() -> None:
    # Module level, a lazy import in a function, and `from sandman import <module>`.
    assert "sandman.layout" in EDGES["sandman.journal"]
    assert "sandman.hookfork" in EDGES["sandman.__main__"]  # imported inside main()
    assert "sandman.verbs.init" in EDGES["sandman.cli"]


def test_every_module_is_on_a_floor() -> None:
    lost = sorted(m for m in EDGES if floor(m) is None)
    assert not lost, f"put these on a floor in tests/test_layers.py (and docs/ARCHITECTURE.md): {lost}"


def test_no_import_circles() -> None:
    found = cycles(EDGES)
    assert not found, "import circles (move the shared piece down): " + "; ".join(
        " -> ".join(circle) for circle in found)


def test_imports_run_downward_only() -> None:
    wrong = upward(EDGES)
    assert not wrong, "imports up a floor (move the shared piece down): " + "; ".join(
        f"{a} (line {line}, {floor(a)}) -> {b} ({floor(b)})" for (a, b), line in sorted(wrong.items()))


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root / "sandman"


@pytest.mark.parametrize("how", ["module", "lazy", "relative"])
def test_a_circle_is_found_however_it_is_imported(tmp_path: Path, how: str) -> None:
    back = {"module": "from sandman.low import a\n",
            "lazy": "def f():\n    import sandman.low.a\n",
            "relative": "from ..low import a\n"}[how]
    package = _write(tmp_path, {"sandman/__init__.py": "", "sandman/low/__init__.py": "",
                                "sandman/low/a.py": "from sandman.high import b\n",
                                "sandman/high/__init__.py": "", "sandman/high/b.py": back})
    assert cycles(graph(package)) == [["sandman.high.b", "sandman.low.a", "sandman.high.b"]]


def test_a_package_init_importing_its_submodules_is_no_circle(tmp_path: Path) -> None:
    package = _write(tmp_path, {"sandman/__init__.py": "",
                                "sandman/t/__init__.py": "from sandman.t.model import Session\n",
                                "sandman/t/model.py": "from sandman.t import tools\n",
                                "sandman/t/tools.py": ""})
    assert cycles(graph(package)) == []
    assert graph(package)["sandman.t.model"] == {"sandman.t.tools": 1}
