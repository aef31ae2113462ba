"""What reaches a session: its start recall, and memories at each prompt and at each file.

- ``surfaces``, ``budget``, ``compose``: the start recall (``sandman recall``, the SessionStart
  hook): what it reads, its 9,000-unit budget and the trimming that fits one into the other;
- ``ledger``: which memories each session was given (``.delivered/``), and how often each memory
  reached a session;
- ``index``: the few memories of a bank chain that best match some words, read from the search
  index (``.search.sqlite``) with sqlite3 alone;
- ``moments``: the UserPromptSubmit hook (``sandman recall --prompt-hook``) and the file hook
  (``sandman recall --file-hook``, PostToolUse of Read, Edit, Write, MultiEdit, NotebookEdit).

Standard library only, like the rest of the hook paths (docs/recall.md, "Speed"); nothing is
imported here, so each hook pays only for what it uses.
"""
