"""Regenerate the site's golden tree: ``python -m tests.regen_golden`` from the repository's top.

Builds the fixed root of tests/site_fixture.py in a temporary folder, renders
it, and replaces tests/golden/site/ with the result. Review the diff with
``git diff tests/golden`` before committing it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from sandman.layout import Layout
from sandman.site.render import render_site
from tests.site_fixture import GOLDEN, build, site_files


def main() -> None:
    with tempfile.TemporaryDirectory() as temp:
        layout = Layout(Path(temp) / "root")
        build(layout)
        render_site(layout)
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for relpath, data in site_files(layout.site).items():
            target = GOLDEN / relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
