"""The machine: what sandman decides and commits on nobody's typed word (../MACHINE.md).

- ``trail``: the append-only event log (``trail/<yyyy>/<mm>/<dd>.jsonl``), event
  ids, the ``Event:`` trailer and revocation state (docs/BANK-FORMAT.md § trail).
- ``reconcile``: finding the commits of revoked events in every repository and
  reverting them on ``reconcile/<id>`` (in the memory root: on its trunk)
  (docs/BANK-FORMAT.md § reconcile).
- ``repos``: the git repositories the machine knows (the memory root, those the
  trail names, those under ``[machine] roots``), their trunks and trailers.
- ``score``: the week's numbers against their targets, worst three first, from the
  journals, the trail, the shifts and the breath store (docs/BANK-FORMAT.md § score).

Verb modules (sandman/verbs/trail.py, reconcile.py, score.py) stay thin over these.
"""
