"""The dream's substance, one floor below the ``sandman dream`` verb (design, station ④).

``run``: the run over the queue (each pointer's material, the minds, consensus,
the commits, the stamps and the journal line). The queue itself (which pointers
are queued and due, whether a dream runs) is sandman/dreamqueue.py. Nothing here
imports sandman.verbs or sandman.cli.
"""
