"""The minds: ``claude -p`` processes sandman runs, their prompts, and consensus over their replies.

- ``runner``: run one mind or several in parallel (``run_mind``, ``run_minds``, ``MindResult``).
- ``prompts``: load a prompt template, fill its slots in one pass, fence third-party text as data.
- ``reply``: the dream reply contract (docs/BANK-FORMAT.md, "Dream replies").
- ``consensus``: 2-of-3 agreement and dedupe, pure Python.
- ``budget``: the day's recorded spend, read back from the journal.
"""

from sandman.minds.runner import MindResult, run_mind, run_minds

__all__ = ["MindResult", "run_mind", "run_minds"]
