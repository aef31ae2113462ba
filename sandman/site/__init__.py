"""The static site of the memory root (docs/site.md): ``.site/``, rendered and served.

- ``gather``: phase one, the root read into a Snapshot (parse and history caches)
- ``pages``: the URL scheme and each page's context
- ``machine``: the machine's pages: trail, shifts, breaths, reports, proposals, score (with its charts)
- ``markup``: memory text made safe HTML (markdown-it ``js-default``, jinja2 autoescape)
- ``render``: ``render_site(layout)``, the two phases, incremental by page digest
- ``serve``: the standard-library HTTP server ``report serve`` runs
"""
