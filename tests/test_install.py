"""Installing sandman as anyone would type it (issue 28, "Install anyone can type")."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
CI = (REPO / ".ci" / "run").read_text(encoding="utf-8")
DISTRIBUTION = "sandman-memory"


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def first_command(title: str) -> str:
    """The one command line of the first ``sh`` block of a README section."""
    (line,) = re.search(r"```sh\n(.*?)```", section(title), re.S).group(1).strip().splitlines()
    return line


def test_pip_install_sandman_installs_an_unrelated_project_regression() -> None:
    """``sandman`` on PyPI is someone else's project (2014): the distribution is sandman-memory,
    the command and the import package stay ``sandman``, and nothing tells anyone to
    ``pip install sandman``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"] == {"sandman": "sandman.__main__:main"}
    install = section("Install and run")
    for command in (f"pipx install {DISTRIBUTION}", f"uv tool install {DISTRIBUTION}", "pipx install .",
                    "uv tool install .", f"python3 -m pip install {DISTRIBUTION}"):
        assert f"`{command}`" in install, command
    plugin_texts = [(REPO / "hooks" / "hooks.json").read_text(), (REPO / "hooks" / "sandman").read_text(),
                    *(path.read_text() for path in (REPO / ".claude-plugin").glob("*.json"))]
    for text in [README, *plugin_texts, *(path.read_text() for path in (REPO / "docs").glob("*.md"))]:
        assert not re.search(r"(?:pip|pipx|uv tool|uv pip) install sandman(?![-\w])", text)
    assert f"pipx install {DISTRIBUTION}" in json.loads((REPO / "hooks" / "hooks.json").read_text())["description"]


def test_the_readme_install_command_makes_a_virtual_environment_first() -> None:
    """A Python that protects its packages (PEP 668) refuses a bare ``pip install .``."""
    for title in ("Install and run", "Test"):
        assert first_command(title).startswith("python3 -m venv .venv && . .venv/bin/activate && python3 -m pip install ")


def test_ci_builds_checks_and_runs_the_wheel_then_the_readme_commands_verbatim() -> None:
    lines = [line.strip() for line in CI.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert lines[-1] == first_command("Test")
    assert first_command("Install and run") in lines
    order = [next(i for i, line in enumerate(lines) if needle in line) for needle in (
        "-m build --outdir .ci/dist", "-m twine check --strict .ci/dist/*", "pip install -q .ci/dist/*.whl",
        '"$sandman" --version', first_command("Install and run"))]
    assert order == sorted(order)
