"""A verb run from a directory deleted under it names that directory (issue 20, fault 6).

It used to print only ``sandman: No such file or directory``: the error of
``os.getcwd()`` carries no file name.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest


@pytest.mark.parametrize("verb", [["remember", "a fact worth keeping"], ["recall"]])
def test_a_verb_run_from_a_deleted_directory_names_it(tmp_path, layout, verb):
    gone = tmp_path / "gone"
    gone.mkdir()
    argv = " ".join(shlex.quote(part) for part in [sys.executable, "-m", "sandman", *verb])
    # The shell sets PWD as it enters the folder, as an interactive shell does.
    done = subprocess.run(["sh", "-c", f'cd {shlex.quote(str(gone))} && rmdir "$PWD" && exec {argv}'],
                          capture_output=True, text=True, env=os.environ.copy())
    assert done.returncode == 1
    assert done.stderr == (f"sandman: the current directory {gone} no longer exists; cd to one that does "
                           "and run it again\n")
