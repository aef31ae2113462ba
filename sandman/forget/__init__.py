"""The privacy ending's substance (docs/forget.md): every copy of one session destroyed (``session``),
below the ``sandman forget`` verb."""
