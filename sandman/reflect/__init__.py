"""The 24-hour pass's substance, one floor below ``sandman reflect`` (design, station ⑤; docs/reflect.md).

``entry``: the voyage entry of one day; ``sweep``: the pointer sweep;
``upkeep``: bank upkeep where due (its plan and merge contracts are
sandman/curators/upkeep_plan.py). The pass's order, lock and summary are the
verb's (sandman/verbs/reflect.py). Nothing here imports sandman.verbs or sandman.cli.
"""
