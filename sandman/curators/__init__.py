"""Curators: a mind proposes changes to a bank, a person reviews them, apply commits the accepted.

The design is the dream curators' (seeds/dream-curator-architecture.txt),
in sandman's shape (docs/curate.md, docs/BANK-FORMAT.md "Proposal sets"):

- proposals.py: the proposal schema, a curator reply's validation (refused
  whole), the proposal set on disk (``curation/<set>/proposals.json`` and
  ``REPORT.md``);
- propose.py: a curator run (``rot``, ``merge``, ``split``, ``lint``): one
  mind per bank, plus lint's checks without a model; it writes a set and
  changes no memory;
- apply.py: ``apply <set>``, accepted proposals through one bank
  transaction, one commit per set;
- retired.py: the retired ledger (``curation/retired.jsonl``)
  and its tripwire on dream.
"""
