"""``sandman shift pick|brief|attach|status|clock|handoff|profile|run|targets`` (docs/shift.md).

Thin over sandman.machine.shift (the record), .pick (the rotation), .brief (the
template), .tick (``run``): parse, call, journal (the machine journals its own
decisions under the verb ``shift``).
"""

from __future__ import annotations

from sandman.layout import Layout
from sandman.machine import pick as picking
from sandman.machine import shift as shifts
from sandman.machine import tick
from sandman.machine import trail as trails


def pick(layout: Layout, *, untrusted: bool = False) -> list[picking.Candidate]:
    """The candidates in rotation order (pickable first), each weighed by its signals (machine.pick:
    ``[machine] check`` may run); with ``untrusted``, only those Claude Code does not trust (for the
    owner to trust or exclude; nothing weighed)."""
    found = picking.candidates(layout, trails.read(layout), signals=not untrusted)
    if untrusted:
        return [c for c in found if not c.trusted]
    return found


def brief(layout: Layout, *, path: str | None = None) -> tuple[shifts.Opened, str | None]:
    """Open a shift by hand (the tick does it at night) and add its worktree; return the shift and
    the worktree (None on the rest day). Start a session there yourself, then ``shift attach``.
    Raises LockBusy while a tick runs; RepositoryError when the worktree cannot be added (the
    shift is then closed as abandoned)."""
    from sandman.errors import RepositoryError

    held = shifts.lock(layout)
    try:
        shifts.recover(layout)
        opened = shifts.open_shift(layout, path=path)
        try:
            worktree = tick.add_worktree(layout, opened)
        except RepositoryError as error:
            shifts.handoff(layout, f"(the worktree could not be added: {error})", abandoned=True,
                           shift_id=opened.id)
            raise
        if worktree is not None:
            shifts.update_meta(layout, opened.id, {"worktree": str(worktree)}, f"worktree of {opened.id}")
            current = shifts.read_current(layout) or {}
            shifts.write_current(layout, {**current, "worktree": str(worktree)})
        return opened, str(worktree) if worktree else None
    finally:
        held.release()


def handoff(layout: Layout, text: str, *, abandoned: bool = False, truncate: bool = False) -> shifts.Closed:
    """Close the open shift with the session's handoff ``text`` (machine.shift.handoff). Raises
    InputError for a handoff holding a control character other than newline and tab (it would be
    kept raw in handoff.md and the next shift's brief), SecretRefused for one holding a credential,
    and what machine.shift.handoff raises."""
    from sandman.marks import refuse_controls

    from sandman.banks.secrets import refuse_secrets
    from sandman.errors import SecretRefused

    refuse_controls((text or "").replace("\r\n", "\n"), "the handoff", lines=True)
    try:
        # handoff.md and report.md are versioned, and the next brief copies the handoff (docs/secrets.md).
        refuse_secrets(text or "")
    except SecretRefused as error:
        raise SecretRefused(error.kinds, "it contains", what="handoff") from None
    return shifts.handoff(layout, text, abandoned=abandoned, truncate=truncate)


def run(layout: Layout, *, force: bool = False) -> tick.Tick:
    """One tick (machine.tick.run); ``force`` opens a shift now whatever the night window and
    ``shifts_per_night`` say."""
    return tick.run(layout, force=force)


attach = shifts.attach
status = shifts.status
clock = shifts.clock
targets = shifts.write_targets
voyage = shifts.write_voyage


def profile(layout: Layout, shift_id: str | None = None) -> dict:
    """``{permission_mode, model, settings, env}`` a shift session runs with (machine.shift.profile):
    shift ``shift_id``'s exactly as ``shift run`` passes it, or, without one, a shift's on no
    repository. InputError: ``shift_id`` is not a shift id or has no readable ``meta.json``."""
    from sandman.errors import InputError

    if shift_id is not None and (not trails.is_shift_id(shift_id) or shifts.read_meta(layout, shift_id) is None):
        raise InputError(f"no shift {shift_id!r}: give the id of a shift in {layout.root / 'shifts'} "
                         "(`sandman shift status` lists them)")
    return shifts.profile(layout, shift_id)
