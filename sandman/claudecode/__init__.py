"""Claude Code as sandman meets it from outside a session: its settings files (``settings``) and its
native auto memory (``memory``, read and planned for ``sandman import claude-memory``).

Below the ``sandman hooks`` and ``sandman import`` verbs and doctor's checks; nothing here imports
sandman.verbs or sandman.cli.
"""
