"""Benchmark the secrets ban: refusal and false refusals on the generated corpus, and time per memory.

The corpus is tests/secrets_corpus.py: one text per credential kind (provider
formats, key envelopes, URL and header forms, env and command-line forms,
hidden characters), each a memory-like sentence with a value generated from
its format, and harmless look-alikes (code references, placeholders, hashes,
ids). Prints, per detector, how many credential kinds it refuses and how many
look-alikes it refuses wrongly:

- ``sandman`` (sandman.banks.secrets.find_secrets: what the product calls);
- ``betterleaks`` alone (its default rule set, the base sandman builds on);
- ``sandman's rules`` alone (sandman.banks.secret_rules);
- ``detect-secrets`` and ``kingfisher``, when installed (``pip install
  detect-secrets kingfisher-bin``): the candidates issue 22 measured.

Then times, as medians per memory over the whole corpus, ``find_secrets`` on
one memory against betterleaks alone on the same memory (interleaved).

    python bench/secrets_ban.py [--quick] [--runs N]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness import REPO, Row, interleaved, progress, script

RUNS = 5
QUICK = {"runs": 1}


def _corpus() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from secrets_corpus import credentials, look_alikes
    finally:
        sys.path.remove(str(REPO / "tests"))
    return credentials(), look_alikes()


def _detect_secrets() -> Callable[[str], bool] | None:
    """detect-secrets as sandman ran it before issue 22: every plugin but the hex-entropy and IP ones,
    each line scanned as markdown (without sandman's own detectors of that time)."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    ignored = {"Hex High Entropy String", "Public IP (ipv4)"}

    def found(text: str) -> bool:
        with default_settings():
            plugins = [cls() for kind, cls in get_mapping_from_secret_type_to_class().items() if kind not in ignored]
            return any(True for number, line in enumerate(text.splitlines(), 1) for plugin in plugins
                       for _ in plugin.analyze_line(filename="memory.md", line=line, line_number=number))
    return found


def _kingfisher_rates(credentials, look_alikes) -> tuple[int, int, float] | None:
    """Run kingfisher once over one file per text; return (refused, false refusals, seconds per file)."""
    binary = shutil.which("kingfisher", path=str(Path(sys.executable).parent)) or shutil.which("kingfisher")
    if binary is None:
        return None
    cases = [(True, text) for _, text in credentials] + [(False, text) for _, text in look_alikes]
    with tempfile.TemporaryDirectory() as folder:
        for i, (_, text) in enumerate(cases):
            Path(folder, f"{i:04d}.md").write_text(text, encoding="utf-8")
        argv = [binary, "scan", folder, "--no-validate", "--no-update-check", "-f", "json", "--confidence", "low"]
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        whole = time.perf_counter() - start
        one = Path(folder, "0000.md")
        start = time.perf_counter()
        subprocess.run([*argv[:2], str(one), *argv[3:]], capture_output=True)
        single = time.perf_counter() - start
    first = done.stdout.splitlines()[0] if done.stdout else "{}"
    hit = {int(Path(f["finding"]["path"]).stem) for f in json.loads(first).get("findings", [])}
    refused = sum(1 for i, (secret, _) in enumerate(cases) if secret and i in hit)
    wrong = sum(1 for i, (secret, _) in enumerate(cases) if not secret and i in hit)
    progress(f"kingfisher: {whole:.1f} s for {len(cases)} files in one run")
    return refused, wrong, single


def _line(name: str, refused: int, wrong: int, credentials: list, look_alikes: list, per: str) -> str:
    return (f"| {name} | {refused}/{len(credentials)} ({100 * refused / len(credentials):.1f} %) | "
            f"{wrong}/{len(look_alikes)} ({100 * wrong / len(look_alikes):.1f} %) | {per} |")


def rows(runs: int = RUNS) -> list[Row]:
    """Print the rates table; return the time-per-memory row, medians in seconds."""
    import betterleaks

    from sandman.banks import secret_rules
    from sandman.banks.secrets import find_secrets, normalise

    credentials, look_alikes = _corpus()
    texts = [text for _, text in credentials + look_alikes]
    detectors: dict[str, Callable[[str], bool]] = {
        "sandman (find_secrets)": lambda text: bool(find_secrets(text)),
        "betterleaks 2.0 alone": lambda text: bool(betterleaks.scan_string(text)),
        "sandman's rules alone": lambda text: any(True for _ in secret_rules.findings(normalise(text))),
    }
    detect_secrets = _detect_secrets()
    if detect_secrets is not None:
        detectors["detect-secrets 1.5 (as sandman ran it)"] = detect_secrets
    else:
        progress("detect-secrets is not installed: its row is left out (pip install detect-secrets)")
    for detect in detectors.values():
        detect("warm up")
    print("| detector | credential kinds refused | look-alikes refused | time per memory |")
    print("|---|--:|--:|--:|")
    for name, detect in detectors.items():
        start = time.perf_counter()
        refused = sum(detect(text) for _, text in credentials)
        wrong = sum(detect(text) for _, text in look_alikes)
        per = (time.perf_counter() - start) / len(texts)
        print(_line(name, refused, wrong, credentials, look_alikes, f"{per * 1000:.2f} ms"))
        if name.startswith("sandman (") and (missed := [k for k, t in credentials if not detect(t)]):
            progress("sandman misses: " + ", ".join(missed))
    kingfisher = _kingfisher_rates(credentials, look_alikes)
    if kingfisher is None:
        progress("kingfisher is not installed: its row is left out (pip install kingfisher-bin)")
    else:
        refused, wrong, single = kingfisher
        print(_line("kingfisher 2.14 (subprocess)", refused, wrong, credentials, look_alikes,
                    f"{single * 1000:.0f} ms (one process per memory)"))
    print()

    progress(f"secrets ban: {runs} passes over {len(texts)} texts")

    def per_memory(scan: Callable[[str], object]) -> Callable[[], float]:
        def trial() -> float:
            start = time.perf_counter()
            for text in texts:
                scan(text)
            return (time.perf_counter() - start) / len(texts)
        return trial

    ours, base = interleaved([per_memory(find_secrets), per_memory(betterleaks.scan_string)], runs)
    return [Row(f"`find_secrets` per memory ({len(texts)} corpus texts)", ours,
                "betterleaks `scan_string` alone", base, runs)]


def main() -> None:
    script(__doc__, rows, QUICK, runs=RUNS)


if __name__ == "__main__":
    main()
