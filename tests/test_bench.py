"""The benchmarks cannot rot silently: bench/run.py starts, and every bench module imports
and exposes its rows function. Nothing here is timed (bench/ prints figures; tests never
assert on them)."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
# compare, site_incremental_ab: two installs side by side, not run.py benchmarks; secrets_vectors_extract
# writes bench/secrets_vectors.json.gz from fetched mirrors
HELPERS = ("harness", "run", "compare", "site_incremental_ab", "secrets_vectors_extract")
MODULES = sorted(path.stem for path in BENCH.glob("*.py") if path.stem not in HELPERS)


@pytest.fixture
def bench_path(monkeypatch: pytest.MonkeyPatch):
    """Import bench modules as their scripts do (bench/ first on sys.path), then forget them."""
    monkeypatch.syspath_prepend(str(BENCH))
    before = set(sys.modules)
    yield importlib.import_module
    for name in set(sys.modules) - before:
        if name in (*MODULES, *HELPERS):
            del sys.modules[name]


def test_run_help_works() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "run.py"), "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "--quick" in done.stdout


def test_there_are_benchmarks() -> None:
    assert {"take", "recall", "remember", "consensus", "dream", "site_render"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_bench_module_exposes_rows_and_quick_options(bench_path, name: str) -> None:
    module = bench_path(name)
    assert callable(module.rows) and callable(module.main)
    # Every --quick option is one rows() accepts, and every option has a default (run.py passes none).
    signature = inspect.signature(module.rows)
    signature.bind(**module.QUICK)
    assert all(p.default is not inspect.Parameter.empty for p in signature.parameters.values())


def test_run_covers_every_bench_module(bench_path) -> None:
    run = bench_path("run")
    assert sorted(module.__name__ for module in run.MODULES) == MODULES


def test_rows_print_ratio_target_and_mark(bench_path) -> None:
    harness = bench_path("harness")
    fast = harness.Row("take", 0.050, "python -c pass", 0.010, 5, harness.Target("< 60 ms", seconds=0.060))
    slow = harness.Row("recall", 0.090, "python -c pass", 0.010, 5, harness.Target("< 80 ms", seconds=0.080))
    steady = harness.Row("archive", 1.2, "none", 1.0, 5, harness.Target("ratio < 1.10", ratio=1.10))
    plain = harness.Row("consensus", 2.5, "tokens", 0.5, 5)
    text = harness.table([fast, slow, steady, plain])
    assert "| take | 50.0 ms | python -c pass | 10.0 ms | 5.00 | 5 | < 60 ms | pass |" in text
    assert "| recall | 90.0 ms | python -c pass | 10.0 ms | 9.00 | 5 | < 80 ms | **miss** |" in text
    assert "| archive | 1.20 s | none | 1.00 s | 1.20 | 5 | ratio < 1.10 | **miss** |" in text
    assert "| consensus | 2.50 s | tokens | 500.0 ms | 5.00 | 5 |  |  |" in text


def test_children_write_bytecode_and_keep_no_developer_root(bench_path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = bench_path("harness")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("SANDMAN_ROOT", "/somewhere/real")
    env = harness.child_env(HOME="/tmp/x")
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert "SANDMAN_ROOT" not in env and env["HOME"] == "/tmp/x"


def test_run_survives_a_failing_module_and_prints_rows_as_measured(bench_path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture) -> None:
    """bench/run.py once printed its table only at its end, and a benchmark that exited (dream's
    check) lost every row measured before it (issue 29)."""
    run, harness = bench_path("run"), bench_path("harness")
    seen = []

    class Module:
        QUICK: dict = {}

        def __init__(self, name, fail=False):
            self.__name__, self.fail = name, fail

        def rows(self):
            if self.fail:
                raise SystemExit("the dream did not route all 20")
            # What was printed before this module ran: the rows of the modules before it.
            seen.append(capsys.readouterr().out)
            return [harness.Row(f"row of {self.__name__}", 0.02, "python -c pass", 0.01, 3)]

    monkeypatch.setattr(run, "MODULES", (Module("first"), Module("dream", fail=True), Module("last")))
    with pytest.raises(SystemExit) as exited:
        run.main([])
    assert exited.value.code == 1
    out = "".join(seen) + capsys.readouterr().out
    assert "| row of first | 20.0 ms | python -c pass | 10.0 ms | 2.00 | 3 |" in seen[1]
    assert "| row of last |" in out
    assert "FAILED: bench/dream.py: SystemExit: the dream did not route all 20" in out
