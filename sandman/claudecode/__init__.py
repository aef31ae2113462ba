"""Claude Code as sandman meets it from outside a session: its settings files (``settings``).

Below the ``sandman hooks`` verb and doctor's checks; nothing here imports
sandman.verbs or sandman.cli.
"""
