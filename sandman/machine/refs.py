"""Naming a machine record by a unique suffix of its id: one resolver for proposals and breaths.

A person types the tail of an id they read in a listing (``sandman report
proposals``, ``sandman breathe list``): ``a3f9`` for ``ev-20261201T031500Z-…a3f9``
or ``9c2e`` for ``b-20261201-…9c2e``. ``resolve`` takes the whole id or any
suffix of at least ``SUFFIX_MIN_CHARS`` letters, digits and dashes that ends
exactly one candidate. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sandman.errors import InputError

SUFFIX_MIN_CHARS = 4  # the shortest id suffix a verb takes
_REF = re.compile(r"[A-Za-z0-9-]+")


class NoMatch(InputError):
    """No candidate id ends with the reference (an InputError: the CLI prints it, exit 2)."""


def check(ref: str, what: str, listing: str) -> str:
    """Return ``ref`` stripped; raise InputError when it cannot be an id or a suffix of one
    (``what`` names the record, ``listing`` the command that lists them)."""
    ref = (ref or "").strip()
    if not _REF.fullmatch(ref) or len(ref) < SUFFIX_MIN_CHARS:
        raise InputError(f"{what} {ref!r} is not an id or an id suffix of at least "
                         f"{SUFFIX_MIN_CHARS} letters and digits ({listing} lists them)")
    return ref


def resolve(ref: str, ids: Iterable[str], *, what: str, listing: str) -> str:
    """The one id of ``ids`` that is ``ref`` or ends with it.

    Raises InputError: a malformed or too short ``ref`` (``check``), an
    ambiguous one (it ends several ids; up to three are named); NoMatch when
    it ends none.
    """
    ref = check(ref, what, listing)
    found = sorted({ident for ident in ids if ident.endswith(ref)})
    if not found:
        raise NoMatch(f"no {what} {ref} ({listing} lists them)")
    if len(found) > 1:
        raise InputError(f"{what} {ref} is ambiguous: it ends {len(found)} {what}s ({', '.join(found[:3])}); "
                         "give more of the id")
    return found[0]
