"""The typer app: one command per verb. A command parses its arguments, calls the
verb module's function, prints, and sets the exit status; the logic lives in
``sandman/verbs/``. Verb modules are imported inside the commands so that
``sandman --help`` stays fast.

Errors reach the user here as one line on stderr (``sandman: <what>``) and a
non-zero exit: 2 for bad input, 1 for everything else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Optional, TypeVar

import typer
import typer.core

from sandman import __version__, config
from sandman.errors import SandmanError
from sandman.layout import Layout
from sandman.marks import visible

app = typer.Typer(
    name="sandman",
    help="A memory engine for Claude Code sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals hold transcripts
    rich_markup_mode=None,
)

T = TypeVar("T")


class PlainUsage(typer.core.TyperCommand):
    """A command whose usage line shows a required argument as ``BODY``, not typer's ``{BODY}``."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        return [piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
                for piece in super().collect_usage_pieces(ctx)]


class BodyArgument(PlainUsage):
    """A command whose one argument is free text: a body such as ``- Use uv, not pip`` or
    ``--verbose must be passed`` is the argument, not an unknown option.

    Click reads any word that starts with ``-`` as an option; a markdown list item would be
    refused with "No such option". A word that starts with ``-`` but is not shaped like an
    option (``--name``, ``-x``, ``--name=value``) is moved behind a ``--``.
    """

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _body_behind_dashes(self, args))


def _body_behind_dashes(command: typer.core.TyperCommand, args: list[str]) -> list[str]:
    if "--" in args:
        return args
    import re

    takes_value = {opt for p in command.params if not getattr(p, "is_flag", False) for opt in p.opts}
    option_shaped = re.compile(r"--?[A-Za-z][A-Za-z0-9-]*(=.*)?", re.DOTALL)
    bodies, rest, after_option = [], [], False
    for arg in args:
        if not after_option and arg.startswith("-") and arg != "-" and not option_shaped.fullmatch(arg):
            bodies.append(arg)
        else:
            rest.append(arg)
        after_option = not after_option and arg in takes_value
    return [*rest, "--", *bodies] if bodies else args


def say(text: object, *, lines: bool = False, file=None, flush: bool = False) -> None:
    """Print one line of output made inert for a terminal (sandman/marks.py; ``lines``:
    a multi-line text). Verbs' output holds text sandman did not write: titles, cwds, paths."""
    print(visible(text, lines=lines), file=file, flush=flush)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``sandman: <message>`` on stderr (made inert, on one line) and return the Exit to raise."""
    print(f"sandman: {visible(message, lines=False)}", file=sys.stderr)
    return typer.Exit(code)


def run(action: Callable[[], T]) -> T:
    """Call ``action``; turn a SandmanError or OSError into one stderr line and an exit."""
    try:
        return action()
    except SandmanError as error:
        raise fail(str(error), error.exit_code) from None
    except OSError as error:
        from sandman.dispatch import os_error_message

        raise fail(os_error_message(error)) from None


def layout() -> Layout:
    """Return the Layout of the configured root (exits 2 on a bad $SANDMAN_ROOT)."""
    return run(lambda: Layout(config.root()))


def _version(value: bool) -> None:
    if value:
        print(f"sandman {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """A memory engine for Claude Code sessions: archive, dream by 2-of-3 consensus, recall."""


@app.command()
def init() -> None:
    """Create or adopt the memory root (a git repository)."""
    from sandman.verbs.init import init as run_init

    root = layout()
    changed = run(lambda: run_init(root))
    say(f"{'initialised' if changed else 'already set up'}: {root.root}")


@app.command(cls=BodyArgument)
def remember(
    body: Annotated[str, typer.Argument(metavar="BODY", help="The memory's text (markdown). '-' reads it from stdin.")],
    cwd: Annotated[Optional[str], typer.Option(metavar="DIR", help="Absolute directory whose bank gets it [default: current directory].")] = None,
    type_: Annotated[str, typer.Option("--type", metavar="TYPE", help="user, feedback, project or reference.")] = "project",
    name: Annotated[Optional[str], typer.Option(metavar="NAME", help="Short title [default: the body's first line].")] = None,
    description: Annotated[Optional[str], typer.Option(metavar="TEXT", help="One line [default: the body's first sentence].")] = None,
    session: Annotated[Optional[str], typer.Option(metavar="ID", help="Session id for the commit's Session: trailer.")] = None,
) -> None:
    """Commit one memory now: the in-session path."""
    from sandman.dispatch import remember_command

    status = remember_command(body, cwd, type_, name, description, session)
    if status:
        raise typer.Exit(status)


@app.command()
def take(
    session: Annotated[Optional[str], typer.Argument(metavar="SESSION", help="The session id to take.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Take it even if written in the last 120 s.")] = False,
    transcript: Annotated[
        Optional[str], typer.Option(help="The transcript file [default: found by session id].")
    ] = None,
    hook: Annotated[bool, typer.Option("--hook", help="Read Claude Code's SessionEnd payload on stdin.")] = False,
    detach: Annotated[bool, typer.Option(
        "--detach", help="With --hook: take in a detached process and return at once (the plugin's command: "
                         "Claude Code gives a plugin's SessionEnd hook about 1.5 s).")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Take every ended session the hosts keep (the backfill).")] = False,
    older_than: Annotated[Optional[str], typer.Option(
        "--older-than", metavar="DURATION",
        help="With --all: only transcripts last written longer ago than this: 90m, 12h, 2d, 1w [default: 2d].")] = None,
    project: Annotated[Optional[str], typer.Option(
        metavar="DIR", help="With --all: only sessions whose cwd is DIR or below.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="With --all or --missed: list what would be taken and why the rest is skipped; change nothing.")] = False,
    missed: Annotated[bool, typer.Option(
        "--missed", help="Take the recent sessions whose ending was missed (the backstop SessionStart runs).")] = False,
    except_: Annotated[Optional[str], typer.Option(
        "--except", metavar="SESSION", help="With --missed: never take this session (the one starting).")] = None,
    background: Annotated[bool, typer.Option(
        "--background", help="With --missed: as SessionStart runs it, report to the journal only.")] = False,
) -> None:
    """Archive a session by move and drop its pointer.

    --all takes every ended session the hosts keep (the backfill); --missed
    takes the recent ones whose SessionEnd never fired (the backstop).
    """
    from pathlib import Path

    if missed:
        if all_ or session is not None or force or transcript is not None or hook or older_than or project:
            raise fail("take --missed takes only --except, --dry-run and --background", 2)
        _take_missed(except_, dry_run, background)
        return
    if except_ is not None or background:
        raise fail("--except and --background go with --missed", 2)
    if all_:
        _take_all(session, force, transcript, hook or detach, older_than, project, dry_run)
        return
    if older_than is not None or project is not None or dry_run:
        raise fail("--older-than, --project and --dry-run go with --all", 2)
    if detach and not hook:
        raise fail("--detach goes with --hook", 2)
    if hook:
        if session is not None or force or transcript is not None:
            raise fail("take --hook reads its session from stdin; it takes no session id, --force or --transcript", 2)
        from sandman import hook as hook_entry

        if detach:
            from sandman.__main__ import _detach

            payload = hook_entry.read_payload()
            raise typer.Exit(0 if _detach() else hook_entry.main(["take", "--hook"], payload))
        raise typer.Exit(hook_entry.main(["take", "--hook"]))
    if session is None:
        raise fail("take needs a session id (or --hook, or --all)", 2)
    from sandman.verbs.take import take as run_take

    root = layout()
    taken = run(lambda: run_take(root, session, force=force, transcript=Path(transcript) if transcript else None))
    say(f"archived: {taken.archived}")
    if taken.companion is not None:
        say(f"archived: {taken.companion}")
    say(f"pointer: {taken.pointer}")
    for reclaimed in taken.reclaimed:
        say(f"reclaimed pending take: {reclaimed}")
    if taken.dream_pid is not None:
        say(f"dream started (pid {taken.dream_pid})")


def _take_missed(starting: str | None, dry_run: bool, background: bool) -> None:
    """``take --missed``: the backstop's wiring (sandman/verbs/take_missed.py)."""
    from sandman.verbs import take_all
    from sandman.verbs.take_missed import take_missed, take_missed_background

    root = layout()
    if background:
        take_missed_background(root, starting)
        return
    result = run(lambda: take_missed(root, starting=starting, dry_run=dry_run))
    for item in result.items:
        if item.reason is None:
            say(f"{'would take' if dry_run else 'taken'}  {item.session}  {item.cwd}  {item.title or ''}".rstrip())
    for line in take_all.listing(result):
        if not line.startswith("would take"):
            say(line)
    say(f"missed endings: {len(result.taken)} {'to take' if dry_run else 'taken'}, {len(result.skipped)} skipped")


def _take_all(session, force, transcript, hook, older_than, project, dry_run) -> None:
    """``take --all``: the backfill's wiring (sandman/verbs/take_all.py)."""
    if session is not None or force or transcript is not None or hook:
        raise fail("take --all takes no session id, --force, --transcript or --hook", 2)
    from rich.console import Console

    from sandman.verbs import take_all

    root = layout()
    options = {"older_than": older_than or take_all.DEFAULT_OLDER_THAN, "project": project, "dry_run": dry_run}
    if sys.stderr.isatty() and not dry_run:
        result = run(lambda: take_all.backfill_with_progress(root, **options))
    else:
        result = run(lambda: take_all.backfill(root, **options))
    for line in take_all.listing(result):
        say(line)
    Console().print(take_all.summary_table(result))
    for reclaimed in result.reclaimed:
        say(f"reclaimed pending take: {reclaimed}")
    if result.dry_run:
        say("dry run: nothing was taken; run again without --dry-run to take them")
    elif result.dream_pid is not None:
        say(f"dream started (pid {result.dream_pid}): {result.queued} session(s) queued, "
              f"{config.DREAM_POINTERS_PER_RUN} dreamt per run, three minds each")
    elif result.queued:
        say(f"{result.queued} session(s) queued for dream (sandman dream --now routes them)")


@app.command()
def dream(
    now: Annotated[bool, typer.Option("--now", help="Dream whatever is queued, even below the 10 that make a dream due.")] = False,
) -> None:
    """Three minds per queued session; commit what two agree."""
    from sandman.verbs.dream import dream as run_dream

    root = layout()
    summary = run(lambda: run_dream(root, now=now, interactive=sys.stderr.isatty()))
    if summary.stopped == "not due":
        say(f"dream: {summary.left} pointer(s) queued; a dream is due at "
            f"{config.dream_due_pointers()}, or once one has waited {config.dream_wait_s() / 3600:g} h "
            "(use --now to dream them anyway)")
    else:
        say(summary.text())


@app.command(cls=PlainUsage)
def forget(
    session: Annotated[Optional[str], typer.Argument(metavar="SESSION", help="The session id to destroy.")] = None,
    memories: Annotated[
        bool, typer.Option("--memories", help="Also delete the memories whose only source is this session.")
    ] = False,
    memory: Annotated[Optional[str], typer.Option(
        "--memory", metavar="FILE",
        help="Instead: forget this one memory (one commit, revocable; dream never learns it again).")] = None,
) -> None:
    """Destroy every copy of a session, or forget one memory.

    The live and archived transcripts, the pointer, a pending take, the minds' transcripts.
    """
    if memory is not None:
        if session is not None or memories:
            raise fail("--memory FILE forgets one memory; it takes no SESSION and no --memories", 2)
        _forget_memory(memory)
        return
    if session is None:
        raise fail("forget needs a SESSION id, or --memory FILE for one memory", 2)
    from sandman.verbs.forget import forget as run_forget

    root = layout()
    result = run(lambda: run_forget(root, session, memories=memories))
    for path in result.destroyed:
        say(f"destroyed: {path}")
    for path in result.scrubbed:
        say(f"journal lines removed: {path}")
    for path in result.memories:
        say(f"{'deleted' if result.deleted else 'cites only this session'}: {path}")
    for path in result.shared:
        say(f"kept (cites other sessions too): {path}")
    if result.memories and not result.deleted:
        say("pass --memories to delete the memories above")
    if result.site == "re-rendered":
        what = "the session and the memories deleted" if result.deleted else "the session (no memory was removed)"
        say(f"site re-rendered without {what}: {root.site}")
    elif result.site == "removed":
        say(f"site removed (it could not be re-rendered; `sandman site` makes it again): {root.site}")
    if not (result.destroyed or result.scrubbed or result.memories or result.shared):
        say(f"nothing held for session {session}")
    if result.memories or result.shared:
        say("git history still holds what was committed before; docs/forget.md says how to purge it")


def _forget_memory(memory: str) -> None:
    from sandman.verbs.forget_memory import forget_memory

    root = layout()
    result = run(lambda: forget_memory(root, memory))
    say(f"forgotten: {result.bank}/{result.file} ({result.name}), commit {(result.commit or '')[:12]}")
    say(f"retired: a dream that proposes it again is refused; undo with `sandman trail revoke {result.event} "
        f"--why \"...\"` then `sandman reconcile {result.event}`")


banks_app = typer.Typer(help="Work on whole banks.", no_args_is_help=True)
app.add_typer(banks_app, name="banks")


@banks_app.command("merge")
def banks_merge(
    source: Annotated[str, typer.Argument(metavar="FROM", help="The bank folded in: its name or its directory.")],
    target: Annotated[str, typer.Argument(metavar="INTO", help="The bank that keeps the memories: its name or directory.")],
) -> None:
    """Fold every memory of one bank into another, one commit (the old files go to _archive/)."""
    from sandman.verbs.banks import merge

    root = layout()
    merged = run(lambda: merge(root, source, target))
    for path in merged.written:
        say(f"merged: {path}")
    for name in merged.duplicates:
        say(f"already in {merged.target}: {name}")
    for name in merged.unreadable:
        say(f"left in place, unreadable: {name}")
    say(f"banks merge: {len(merged.moved)} moved, {len(merged.duplicates)} already there"
        + (f", commit {merged.commit[:12]}" if merged.commit else ", nothing to commit"))


schedule_app = typer.Typer(help="Schedule the nightly reflect and the site service.",
                           no_args_is_help=True)
app.add_typer(schedule_app, name="schedule")
_KIND = typer.Option("--kind", metavar="systemd|launchd|cron", help="The scheduler [default: this platform's].")


def _print_schedule(change) -> None:
    for path in change.written:
        say(f"written: {path}")
    for path in change.removed:
        say(f"removed: {path}")
    for path in change.unchanged:
        say(f"installed: {path}")
    for path in change.missing:
        say(f"not installed: {path}")
    for note in change.notes:
        say(note)
    if getattr(change, "failed", None):
        raise typer.Exit(1)  # a scheduler command failed: the notes say which and what to run


@schedule_app.command("install")
def schedule_install(
    kind: Annotated[Optional[str], _KIND] = None,
    at: Annotated[str, typer.Option(metavar="HH:MM", help="When reflect runs, local time.")] = "03:30",
    no_enable: Annotated[bool, typer.Option("--no-enable", help="Write the files; do not ask the scheduler to load them.")] = False,
) -> None:
    """Write the nightly reflect and the report serve service for the user's scheduler (idempotent)."""
    from sandman.verbs import schedule

    root = layout()
    _print_schedule(run(lambda: schedule.install(root, kind=kind, at=at, enable=not no_enable)))


@schedule_app.command("uninstall")
def schedule_uninstall(
    kind: Annotated[Optional[str], _KIND] = None,
    no_enable: Annotated[bool, typer.Option("--no-enable", help="Remove the files; do not ask the scheduler first.")] = False,
) -> None:
    """Disable and remove exactly the files schedule install writes."""
    from sandman.verbs import schedule

    root = layout()
    _print_schedule(run(lambda: schedule.uninstall(root, kind=kind, enable=not no_enable)))


@schedule_app.command("show")
def schedule_show(kind: Annotated[Optional[str], _KIND] = None) -> None:
    """List the schedule's files and whether each is installed."""
    from sandman.verbs import schedule

    root = layout()
    _print_schedule(run(lambda: schedule.show(root, kind=kind)))


import_app = typer.Typer(help="Bring memories kept by another system into the banks.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@import_app.command("claude-memory")
def import_claude_memory(
    project: Annotated[Optional[str], typer.Option(
        metavar="DIR", help="Only the auto memory of this directory's project folder (and it names the bank).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be imported; write nothing.")] = False,
) -> None:
    """Import Claude Code's native auto memory into the matching banks (idempotent)."""
    from sandman.verbs import import_memory

    root = layout()
    result = run(lambda: import_memory.import_claude_memory(root, project=project, dry_run=dry_run))
    for line in import_memory.lines(result):
        say(line)
    if result.commit:
        say(f"commit: {result.commit[:12]}")


hooks_app = typer.Typer(help="Register sandman's hooks in Claude Code's settings.", no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")


def _print_hooks_change(change) -> None:
    for line in change.added:
        say(f"added: {line}")
    for line in change.updated:
        say(f"updated: {line}")
    for line in change.removed:
        say(f"removed: {line}")
    say(f"{'written' if change.written else 'unchanged'}: {change.settings}")


@hooks_app.command("install")
def hooks_install(
    settings: Annotated[
        Optional[str], typer.Option(help="Settings file [default: <Claude config dir>/settings.json].")
    ] = None,
    auto_memory: Annotated[Optional[str], typer.Option(
        "--auto-memory", metavar="on|off",
        help="Also turn Claude Code's native auto memory off (autoMemoryEnabled: false) or back on.")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Register them even while the sandman plugin is enabled (each hook then runs twice).")] = False,
    statusline: Annotated[bool, typer.Option(
        "--statusline", help="Also show the live shift in Claude Code's status line (sandman statusline).")] = False,
) -> None:
    """Register take --hook on SessionEnd, recall --hook and report --hook on SessionStart (idempotent)."""
    from pathlib import Path

    from sandman.verbs import hooks as verb

    if auto_memory not in (None, "on", "off"):
        raise fail(f"--auto-memory {auto_memory!r}: give on or off", 2)
    path = Path(settings) if settings else None
    _print_hooks_change(run(lambda: verb.install(path, force=force, statusline=statusline)))
    if auto_memory is not None:
        written = run(lambda: verb.set_auto_memory(auto_memory == "on", path))
        state = "off (autoMemoryEnabled: false)" if auto_memory == "off" else "back to its default, on"
        say(f"Claude Code's native auto memory: {state}{'' if written else ', already so'}")
    enabled, why = run(lambda: verb.auto_memory(path))
    if enabled:
        say(f"Claude Code's native auto memory is also on ({why}): sessions start with both memories. "
            "To keep sandman's alone: `sandman import claude-memory`, then "
            "`sandman hooks install --auto-memory off`.")


@hooks_app.command("uninstall")
def hooks_uninstall(
    settings: Annotated[
        Optional[str], typer.Option(help="Settings file [default: <Claude config dir>/settings.json].")
    ] = None,
) -> None:
    """Remove sandman's hooks from Claude Code's settings, keeping everything else."""
    from pathlib import Path

    from sandman.verbs.hooks import uninstall

    _print_hooks_change(run(lambda: uninstall(Path(settings) if settings else None)))


@hooks_app.command("statusline")
def hooks_statusline(
    settings: Annotated[
        Optional[str], typer.Option(help="Settings file [default: <Claude config dir>/settings.json].")
    ] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Take sandman's status line away.")] = False,
) -> None:
    """Set Claude Code's status line to sandman's (the live shift), hooks untouched."""
    from pathlib import Path

    from sandman.verbs import hooks as verb

    _print_hooks_change(run(lambda: verb.statusline(Path(settings) if settings else None, remove=remove)))


@app.command("statusline")
def statusline_command() -> None:
    """Show the live shift in Claude Code's status line."""
    from sandman import statusline

    data = sys.stdin.buffer.read(1 << 20) if sys.stdin is not None and not sys.stdin.isatty() else b""
    sys.stdout.write(statusline.main(data))


@app.command()
def recall(
    cwd: Annotated[Optional[str], typer.Option(help="Absolute directory to recall for [default: current directory].")] = None,
    budget: Annotated[Optional[int], typer.Option(help="UTF-16 code units the surface may take (an emoji is two) [default: 9000].")] = None,
    hook: Annotated[bool, typer.Option("--hook", help="Read a SessionStart payload on stdin; print Claude Code's JSON.")] = False,
    prompt_hook: Annotated[bool, typer.Option("--prompt-hook", help="Read a UserPromptSubmit payload on stdin; print the memories matching the prompt.")] = False,
    file_hook: Annotated[bool, typer.Option("--file-hook", help="Read a PostToolUse payload of a file tool on stdin; print the memories naming the file.")] = False,
) -> None:
    """Print the memory surface a session starts with."""
    flags = [flag for flag, on in (("--hook", hook), ("--prompt-hook", prompt_hook), ("--file-hook", file_hook)) if on]
    if len(flags) > 1:
        raise fail(f"recall takes one of --hook, --prompt-hook and --file-hook, not {' and '.join(flags)}", 2)
    if flags:
        if cwd is not None or budget is not None:
            raise fail(f"recall {flags[0]} reads its cwd from stdin; it takes no --cwd or --budget", 2)
        from sandman import hook as hooks

        raise typer.Exit(hooks.main(["recall", flags[0]]))
    import os

    from sandman.verbs.recall import recall_by_hand

    root = layout()
    recalled = run(lambda: recall_by_hand(root, cwd or os.getcwd(), budget))
    sys.stdout.write(visible(recalled.text))


@app.command(cls=PlainUsage)
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Words to find; \"a phrase\" in double quotes.")],
    bank: Annotated[Optional[str], typer.Option(metavar="BANK", help="Only this bank (its name or absolute directory).")] = None,
    type_: Annotated[Optional[str], typer.Option("--type", metavar="TYPE", help="Only memories of this type.")] = None,
    limit: Annotated[int, typer.Option(metavar="N", help="At most N memories.")] = 20,
    json_: Annotated[bool, typer.Option("--json", help="Print a JSON array instead of lines.")] = False,
    reindex: Annotated[bool, typer.Option("--reindex", help="Rebuild the index from the banks first.")] = False,
) -> None:
    """Find memories by words, best first (a full-text index)."""
    from sandman.verbs import search as verb

    root = layout()
    hits = run(lambda: verb.search(root, query, bank=bank, memory_type=type_, limit=limit, reindex=reindex))
    if json_:
        say(verb.to_json(root, hits), lines=True)
        return
    if not hits:
        say(verb.no_match(query))
        raise typer.Exit(1)
    for line in verb.lines(root, hits):
        say(line)


_NOTE_TEXT = Annotated[str, typer.Argument(metavar="NOTE", help="What the next session should know or do. '-' reads it from stdin.")]
_NOTE_CWD = Annotated[Optional[str], typer.Option(metavar="DIR", help="Absolute directory whose next session gets it [default: current directory].")]
_NOTE_ONCE = Annotated[bool, typer.Option("--once", help="Show it to the next session only [default: until replaced].")]
_NOTE_SESSION = Annotated[Optional[str], typer.Option(metavar="ID", help="The session leaving it.")]


@app.command(cls=BodyArgument)
def note(note: _NOTE_TEXT, cwd: _NOTE_CWD = None, once: _NOTE_ONCE = False, session: _NOTE_SESSION = None) -> None:
    """Leave a note the next session here reads first."""
    import os

    from sandman.verbs.note import leave

    if note == "-":
        data = sys.stdin.buffer.read(4 * config.NOTE_MAX_CHARS + 1)
        note = data.decode("utf-8", "surrogateescape")
    root = layout()
    written = run(lambda: leave(root, note, cwd=cwd or os.getcwd(), once=once, session=session))
    say(f"note for {written.data['directory']}: {written.path}"
        + (" (shown once)" if once else " (shown until replaced)"))


@app.command("handoff", cls=BodyArgument, hidden=True)
def handoff(note_: _NOTE_TEXT, cwd: _NOTE_CWD = None, once: _NOTE_ONCE = False, session: _NOTE_SESSION = None) -> None:
    """The old name of `sandman note` (issue 33), kept for one release."""
    say("sandman: `sandman handoff` is now `sandman note` (a handoff is a shift's); "
        "the old name goes in the next release", file=sys.stderr)
    note(note_, cwd=cwd, once=once, session=session)


curate_app = typer.Typer(
    help="Propose bank changes with evidence; review; apply.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(curate_app, name="curate")
_BANK_HELP = "Only this bank (its name or absolute directory) [default: every bank]."


def _curate(curator: str, bank: Optional[str], model: bool = True) -> None:
    from sandman.verbs import curate as verb

    root = layout()
    result = run(lambda: verb.curate(root, curator, bank=bank, model=model))
    for line in verb.run_lines(result):
        say(line)


@curate_app.command("rot")
def curate_rot(bank: Annotated[Optional[str], typer.Option(metavar="BANK", help=_BANK_HELP)] = None) -> None:
    """Propose fixes for memories that are no longer true."""
    _curate("rot", bank)


@curate_app.command("merge")
def curate_merge(bank: Annotated[Optional[str], typer.Option(metavar="BANK", help=_BANK_HELP)] = None) -> None:
    """Propose merging memories that say one thing."""
    _curate("merge", bank)


@curate_app.command("split")
def curate_split(bank: Annotated[Optional[str], typer.Option(metavar="BANK", help=_BANK_HELP)] = None) -> None:
    """Propose splitting memories that bundle concerns."""
    _curate("split", bank)


@curate_app.command("lint")
def curate_lint(
    bank: Annotated[Optional[str], typer.Option(metavar="BANK", help=_BANK_HELP)] = None,
    model: Annotated[bool, typer.Option("--model/--no-model", help="Also ask a mind [default: yes]; --no-model runs the checks alone.")] = True,
) -> None:
    """Check index, duplicates, archives (and ask a mind)."""
    _curate("lint", bank, model)


@curate_app.command("review")
def curate_review(
    set_id: Annotated[Optional[str], typer.Argument(metavar="SET", help="A proposal set [default: list the sets].")] = None,
) -> None:
    """List the sets, or one set's proposals and evidence."""
    from sandman.verbs import curate as verb

    root = layout()
    for line in run(lambda: verb.review(root, set_id)):
        say(line)


@curate_app.command("apply")
def curate_apply(
    set_id: Annotated[str, typer.Argument(metavar="SET", help="The proposal set to apply.")],
    accept: Annotated[Optional[list[str]], typer.Option(metavar="IDS", help="Also accept these proposals (p1,p2).")] = None,
    reject: Annotated[Optional[list[str]], typer.Option(metavar="IDS", help="Reject these proposals, high confidence or not.")] = None,
) -> None:
    """Commit a set's accepted proposals as one commit."""
    from sandman.verbs import curate as verb

    root = layout()
    result = run(lambda: verb.apply(root, set_id, accept=accept, reject=reject))
    for line in verb.applied_lines(result):
        say(line)


@app.command()
def mcp() -> None:
    """Serve recall, remember, search, note over stdio (MCP)."""
    from sandman.mcp_handshake import serve

    root = layout()
    run(lambda: serve(root))


@app.command()
def sync(
    remote: Annotated[Optional[str], typer.Option(help="The git remote [default: sync.remote in <root>/.settings.toml, else origin].")] = None,
    push: Annotated[bool, typer.Option("--push/--no-push", help="Push after fetching and merging.")] = True,
    setup: Annotated[Optional[str], typer.Option("--setup", metavar="URL", help="Add the remote at URL (a private repository) and make the first push.")] = None,
    background: Annotated[bool, typer.Option("--background", help="As the SessionStart fetch runs it: no push, give up at once if busy, report to the journal only.")] = False,
) -> None:
    """Carry memory to and from a git remote (never forced)."""
    from sandman.verbs import sync as verb

    root = layout()
    if background:
        verb.background_sync(root)
        return
    if setup is not None:
        result = run(lambda: verb.setup(root, setup, remote=remote))
    else:
        result = run(lambda: verb.sync(root, remote=remote, push=push))
    for line in result.lines():
        say(line)


@app.command()
def doctor(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object (with a schema_version) instead of lines.")] = False,
) -> None:
    """Check root, hooks, minds, queue, journal and remote."""
    from sandman.verbs.doctor import doctor as run_doctor

    report = run_doctor()
    if json_:
        say(report.to_json(), lines=True)
    else:
        for line in report.lines():
            say(line)
    raise typer.Exit(report.exit_code)


# --- the static site: `sandman site` and `sandman report serve` ---


@app.command()
def site() -> None:
    """Render the memory root as a static site (.site/)."""
    from sandman.verbs.site import site as run_site

    root = layout()
    stats = run(lambda: run_site(root))
    say(
        f"rendered {stats.site}: {stats.pages} pages, {stats.written} written, "
        f"{stats.removed} removed ({stats.seconds:.2f} s)"
    )
    if stats.unreadable:
        say(f"{stats.unreadable} files could not be read; their pages show the error")
    say(f"open {stats.site / 'index.html'}")


report_app = typer.Typer(
    help="The shifts' reports, unread first; the site.",
    invoke_without_command=True,
    rich_markup_mode=None,
)
app.add_typer(report_app, name="report")


@report_app.callback()
def report_list(
    ctx: typer.Context,
    json_: Annotated[bool, typer.Option("--json", help="Print the reports as one JSON array.")] = False,
    hook: Annotated[bool, typer.Option("--hook", help="Read a SessionStart payload on stdin; print the digest of unread reports once.")] = False,
) -> None:
    """List the shifts' reports, unread first (then newest first)."""
    if ctx.invoked_subcommand is not None:
        if json_ or hook:
            raise fail(f"--json and --hook go with `sandman report` alone, not with {ctx.invoked_subcommand}", 2)
        return
    if hook:
        if json_:
            raise fail("report --hook reads its session from stdin; it takes no --json", 2)
        from sandman import hook as hooks

        raise typer.Exit(hooks.main(["report", "--hook"]))
    import json

    from sandman.verbs.report import list_line, report_list as listed

    root = layout()
    infos = run(lambda: listed(root))
    if json_:
        print(json.dumps([info.as_json() for info in infos], ensure_ascii=False, indent=1))
        return
    if not infos:
        say("no reports yet: a shift writes one when it closes (sandman shift)")
        return
    for info in infos:
        say(list_line(info))
    fresh = sum(1 for info in infos if not info.read)
    say(f"{len(infos)} report{'' if len(infos) == 1 else 's'}, {fresh} unread; read one: sandman report show <shift>")


@report_app.command("show", cls=PlainUsage)
def report_show(
    shift: Annotated[str, typer.Argument(metavar="SHIFT", help="A shift id, s-<yyyymmddTHHMM[SS]>Z.")],
) -> None:
    """Print one shift's report.md and mark it read."""
    from sandman.verbs.report import show

    root = layout()
    say(run(lambda: show(root, shift)).rstrip("\n"), lines=True)


@report_app.command("serve")
def report_serve(
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port; 0 picks a free one.")] = config.SITE_PORT,
    host: Annotated[str, typer.Option(help="Address to bind; loopback only unless --public.")] = config.SITE_HOST,
    public: Annotated[bool, typer.Option("--public", help="Allow a non-loopback address: anyone who can reach it reads every memory.")] = False,
) -> None:
    """Serve the rendered site, re-rendering it first if stale."""
    from sandman.site.serve import url
    from sandman.verbs.report import open_server

    root = layout()
    server, stats = run(lambda: open_server(root, host=host, port=port, public=public))
    say(f"site: {stats.written} pages re-rendered" if stats.written else "site: up to date")
    say(f"serving {url(server)} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


# --- reflect: the 24-hour pass (issue 6) ---


@app.command()
def reflect(
    day: Annotated[Optional[str], typer.Option("--day", metavar="YYYY-MM-DD", help="Write that UTC day's voyage entry and nothing else: no drain, sweep or upkeep.")] = None,
) -> None:
    """The nightly pass: voyage log, sweep, upkeep, site."""
    from sandman.verbs.reflect import reflect as run_reflect

    root = layout()
    summary = run(lambda: run_reflect(root, day=day))
    for line in summary.lines():
        say(line)
    for error in summary.errors:
        say(f"sandman: {error}", file=sys.stderr)
    if summary.errors:
        raise typer.Exit(1)


# --- score: the week's numbers (issue 15) ---


@app.command()
def score(
    week: Annotated[Optional[str], typer.Option("--week", metavar="yyyy-Www", help="The ISO week [default: this week in machine.time_zone].")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the JSON document (the same numbers) instead of the page.")] = False,
) -> None:
    """The week's numbers against their targets, worst first."""
    from sandman.verbs.score import score as run_score

    root = layout()
    text, _ = run(lambda: run_score(root, week, json_=json_))
    say(text.rstrip("\n"), lines=True)


# --- the machine: the trail and reconcile (issue 13) ---

trail_app = typer.Typer(
    help="The event log of machine decisions.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(trail_app, name="trail")


def _print_skipped(skipped: list[str]) -> None:
    if skipped:
        shown = ", ".join(skipped[:5]) + (", …" if len(skipped) > 5 else "")
        say(f"sandman: {len(skipped)} trail line(s) skipped, not events: {shown}", file=sys.stderr)


@trail_app.command("append", cls=PlainUsage)
def trail_append(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="<family>.<what>: shift.commit, breath.file, …")],
    summary: Annotated[str, typer.Argument(metavar="SUMMARY", help="One line: what was decided.")],
    parent: Annotated[Optional[str], typer.Option(metavar="ID", help="The event this one follows from.")] = None,
    shift: Annotated[Optional[str], typer.Option(metavar="SHIFT", help="The shift id [default: $SANDMAN_SHIFT].")] = None,
    repo: Annotated[Optional[str], typer.Option(metavar="DIR", help="The repository it touched (absolute).")] = None,
    model: Annotated[Optional[str], typer.Option(metavar="MODEL", help="The model that decided.")] = None,
    cost: Annotated[Optional[float], typer.Option("--cost", metavar="USD", help="What it cost, in US dollars.")] = None,
    data: Annotated[Optional[str], typer.Option(metavar="JSON", help="A JSON object of further facts.")] = None,
) -> None:
    """Append one event, commit it, and print its id."""
    from sandman.verbs import trail as verb

    root = layout()
    event = run(lambda: verb.append(root, kind, summary, parent=parent, shift=shift, repo=repo, model=model,
                                    cost_usd=cost, data=data))
    say(event.id)


def _print_events(found, whole, json_: bool) -> None:
    from sandman.verbs import trail as verb

    for event in found.events:
        if json_:
            say(verb.as_json(event, whole))
        else:
            say(verb.line(event, whole))
    _print_skipped(found.skipped)


@trail_app.command("log")
def trail_log(
    since: Annotated[Optional[str], typer.Option(metavar="YYYY-MM-DD", help="Only events of that UTC day and later.")] = None,
    kind: Annotated[Optional[str], typer.Option(metavar="KIND", help="Only this kind, or family (dream, dream.commit).")] = None,
    repo: Annotated[Optional[str], typer.Option(metavar="DIR", help="Only events naming this repository.")] = None,
    shift: Annotated[Optional[str], typer.Option(metavar="SHIFT", help="Only events of this shift.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List events, oldest first, revoked ones marked."""
    from sandman.verbs import trail as verb

    root = layout()
    found, whole = run(lambda: verb.log(root, since=since, kind=kind, repo=repo, shift=shift))
    _print_events(found, whole, json_)


@trail_app.command("show", cls=PlainUsage)
def trail_show(
    event_id: Annotated[str, typer.Argument(metavar="ID", help="The event id.")],
    json_: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Show an event, its descendants, revocation and commits."""
    import json

    from sandman.verbs import trail as verb

    root = layout()
    shown = run(lambda: verb.show(root, event_id))
    if json_:
        say(json.dumps({
            "event": shown.event.to_json(),
            "revoked_by": shown.revoked_by.id if shown.revoked_by else None,
            "descendants": [event.to_json() for event in shown.descendants],
            "commits": [{"repo": repo, "commit": commit, "subject": subject}
                        for repo, commit, subject in shown.commits],
            "unreadable": [{"repo": repo, "error": why} for repo, why in shown.unreadable],
        }, ensure_ascii=False, indent=2), lines=True)
        return
    say(shown.event.line())
    say(f"revoked: by {shown.revoked_by.id} ({shown.revoked_by.summary})" if shown.revoked_by else "revoked: no")
    for event in shown.descendants:
        say(f"descendant: {event.id} {event.kind} — {event.summary}")
    for repo, commit, subject in shown.commits:
        say(f"commit: {repo} {commit[:12]} {subject}")
    if not shown.commits:
        say("commit: none found in the known repositories")
    for repo, why in shown.unreadable:
        say(f"unreadable: {repo}: {why}")


@trail_app.command("today")
def trail_today(
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List today's events (the machine's day, in its time zone)."""
    from sandman.verbs import trail as verb

    root = layout()
    found, whole = run(lambda: verb.today(root))
    _print_events(found, whole, json_)


@trail_app.command("trailers", cls=PlainUsage)
def trail_trailers(
    event_id: Annotated[str, typer.Argument(metavar="ID", help="The event id.")],
) -> None:
    """Print the trailer lines to hand to git commit --trailer."""
    from sandman.verbs import trail as verb

    root = layout()
    for text in run(lambda: verb.trailers(root, event_id)):
        say(text)


@trail_app.command("revoke", cls=PlainUsage)
def trail_revoke(
    target: Annotated[str, typer.Argument(metavar="ID|SHIFT", help="The event id or shift id to revoke.")],
    why: Annotated[str, typer.Option("--why", metavar="TEXT", help="One line: what was wrong.")],
) -> None:
    """Revoke an event or a shift: append a revoke event."""
    from sandman.verbs import trail as verb

    root = layout()
    event, appended = run(lambda: verb.revoke(root, target, why))
    say(event.id if appended else f"{target} is already revoked by {event.id}")
    say(f"next: sandman reconcile {target} --dry-run")


@app.command(cls=PlainUsage)
def reconcile(
    target: Annotated[str, typer.Argument(metavar="EVENT|SHIFT", help="A revoked event id or shift id.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be reverted; change nothing.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Revert the commits of a revoked decision, on a branch."""
    import json

    from sandman.verbs import reconcile as verb

    root = layout()
    result = run(lambda: verb.reconcile(root, target, dry_run=dry_run))
    if json_:
        say(json.dumps(result.to_json(), ensure_ascii=False, indent=2), lines=True)
    else:
        for text in verb.lines(result):
            say(text)
    if result.failed:
        # The report above is the output; each failure is also the error, on stderr.
        for repo in result.repos:
            if repo.status == "failed":
                say(f"sandman: reconcile {target} failed in {repo.path}: {repo.error}", file=sys.stderr)
        raise typer.Exit(1)


# --- the machine: the breath store (issue 16) ---

breathe_app = typer.Typer(
    help="The research store: feeds, breaths, reading passes and weights.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(breathe_app, name="breathe")

_AT_HELP = "The time to act as of, ISO with a zone, not in the future [default: now]."


@breathe_app.command("init")
def breathe_init() -> None:
    """Write an example breath/sources.toml."""
    from sandman.machine import breath

    root = layout()
    say(run(lambda: breath.init(root)))


@breathe_app.command("sources")
def breathe_sources(
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Check sources.toml and list the feeds with their weights."""
    import json

    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    for row in run(lambda: breath.sources(root)):
        say(json.dumps(row, ensure_ascii=False) if json_ else verb.source_line(row))


@breathe_app.command("file")
def breathe_file(
    title: Annotated[Optional[str], typer.Option(metavar="TEXT", help="One line naming the idea.")] = None,
    address: Annotated[Optional[str], typer.Option(metavar="URL", help="Where the idea was read.")] = None,
    source: Annotated[Optional[str], typer.Option(metavar="NAME", help="The source of sources.toml it came from.")] = None,
    repo: Annotated[Optional[str], typer.Option(metavar="DIR", help="The repository it bears on (absolute).")] = None,
    bearing: Annotated[Optional[float], typer.Option(metavar="0..1", help="The judge's bearing score.")] = None,
    novelty: Annotated[Optional[float], typer.Option(metavar="0..1", help="The judge's novelty score.")] = None,
    provenance: Annotated[Optional[float], typer.Option(metavar="0..1", help="The judge's provenance score.")] = None,
    body: Annotated[Optional[str], typer.Option(metavar="TEXT", help="What it is and how a shift could try it.")] = None,
    pass_: Annotated[Optional[str], typer.Option("--pass", metavar="PASS", help="The pass it was read in.")] = None,
) -> None:
    """File a breath from flags or a JSON document on stdin."""
    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    flags = {"title": title, "address": address, "source": source, "repo": repo, "bearing": bearing,
             "novelty": novelty, "provenance": provenance, "body": body, "pass": pass_}
    stdin_text = None
    if not any(value is not None for value in flags.values()):
        stdin_text = run(lambda: sys.stdin.read())
    filed = run(lambda: breath.file_breath(root, verb.document(flags, stdin_text)))
    say(filed.id)


@breathe_app.command("list")
def breathe_list(
    repo: Annotated[Optional[str], typer.Option(metavar="DIR", help="Only breaths bearing on this repository.")] = None,
    state: Annotated[Optional[str], typer.Option(metavar="STATE", help="Only filed, spiked, adopted or dropped.")] = None,
    source: Annotated[Optional[str], typer.Option(metavar="NAME", help="Only breaths from this source.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List breaths, oldest filed first."""
    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    for found in run(lambda: breath.list_breaths(root, repo=repo, state=state, source=source)):
        say(verb.as_json(found) if json_ else verb.line(found))


def _move(action: str, breath_id: str, why: str | None) -> None:
    from sandman.machine import breath

    root = layout()
    moved = run(lambda: breath.move(root, breath_id, action, why=why, shift=config.current_shift()))
    say(f"{moved.id} {moved.state}")


_WHY = Annotated[Optional[str], typer.Option("--why", metavar="TEXT", help="One line: why.")]
_BREATH = Annotated[str, typer.Argument(metavar="BREATH", help="The breath id, or a unique suffix of it (4+ characters).")]


@breathe_app.command("spike", cls=PlainUsage)
def breathe_spike(breath_id: _BREATH, why: _WHY = None) -> None:
    """Mark a breath spiked: a shift will try it."""
    _move("spike", breath_id, why)


@breathe_app.command("adopt", cls=PlainUsage)
def breathe_adopt(breath_id: _BREATH, why: _WHY = None) -> None:
    """Mark a breath adopted: its source rises on the next reweight."""
    _move("adopt", breath_id, why)


@breathe_app.command("drop", cls=PlainUsage)
def breathe_drop(breath_id: _BREATH, why: _WHY = None) -> None:
    """Mark a breath dropped."""
    _move("drop", breath_id, why)


@breathe_app.command("pass")
def breathe_pass(
    at: Annotated[Optional[str], typer.Option("--at", metavar="TIME", help=_AT_HELP)] = None,
) -> None:
    """Compose the prompt of a reading pass from the due sources."""
    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    made = run(lambda: breath.compose_pass(root, now=verb.parse_time(at)))
    say(made.id)
    say(root.breath_pass(made.id) / "prompt.md")


@breathe_app.command("attach", cls=PlainUsage)
def breathe_attach(
    pass_id: Annotated[str, typer.Argument(metavar="PASS", help="The pass id.")],
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The reading session's id.")],
) -> None:
    """Record the session a pass runs in."""
    from sandman.machine import breath

    root = layout()
    run(lambda: breath.attach(root, pass_id, session))
    say(f"{pass_id} attached to {session}")


@breathe_app.command("close", cls=PlainUsage)
def breathe_close(
    pass_id: Annotated[str, typer.Argument(metavar="PASS", help="The pass id.")],
    cost: Annotated[Optional[float], typer.Option("--cost", metavar="USD", help="What the pass cost, in US dollars.")] = None,
) -> None:
    """Close a pass, with what it cost."""
    from sandman.machine import breath

    root = layout()
    data = run(lambda: breath.close(root, pass_id, cost_usd=cost))
    say(f"{pass_id} closed at {data['closed_at']}")


@breathe_app.command("run", cls=PlainUsage)
def breathe_run(
    depth: Annotated[str, typer.Argument(metavar="skim|deep", help="The skim reads the due hourly sources; "
                                         "the deep pass every due source.")],
) -> None:
    """Run one bounded reading session on a new pass (the scheduler's job)."""
    from sandman.machine import reading

    root = layout()
    done = run(lambda: reading.run(root, depth))
    if done.decision == "skipped":
        say(f"skipped: {done.reason}")
        return
    cost = "unknown" if done.cost_usd is None else f"${done.cost_usd:.4f}"
    ended = "killed at its bound" if done.exit is None else f"exit {done.exit}"
    say(f"{done.pass_id}: {done.filed} breath(s) filed, cost {cost}, session {ended}")


@breathe_app.command("reweight")
def breathe_reweight(
    at: Annotated[Optional[str], typer.Option("--at", metavar="TIME", help=_AT_HELP)] = None,
) -> None:
    """Raise sources by adoption, lower them by silence."""
    from sandman.machine import breath
    from sandman.verbs import breathe as verb

    root = layout()
    moved = run(lambda: breath.reweight(root, now=verb.parse_time(at)))
    for name, (old, new) in moved.items():
        say(f"{name} {old:.2f} -> {new:.2f}")
    if not moved:
        say("no source moved")
# --- the machine: shifts (issue 14) ---

shift_app = typer.Typer(
    help="Unattended night sessions on picked repositories.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(shift_app, name="shift")


def _text_or_stdin(text: str, what: str) -> str:
    if text != "-":
        return text
    data = sys.stdin.buffer.read(256 * 1024 + 1)
    if len(data) > 256 * 1024:
        raise fail(f"the {what} on stdin is over 256 KiB", 2)
    return data.decode("utf-8", "replace")


@shift_app.command("pick")
def shift_pick(
    path: Annotated[bool, typer.Option("--path", help="Print only the picked repository's path.")] = False,
    untrusted: Annotated[bool, typer.Option("--untrusted", help="List the repositories Claude Code does not trust.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print a JSON array of candidates.")] = False,
) -> None:
    """Show the rotation: the repository the next shift works, and why."""
    import json

    from sandman.verbs import shift as verb

    root = layout()
    found = run(lambda: verb.pick(root, untrusted=untrusted))
    if json_:
        say(json.dumps([c.to_json() for c in found], ensure_ascii=False, indent=2), lines=True)
        return
    if path:
        chosen = next((c for c in found if c.pickable and not untrusted), None)
        if chosen is None:
            raise fail("no repository to pick (`sandman shift pick` says why)", 1)
        say(chosen.path)
        return
    if not found:
        say("no repositories" + (" Claude Code does not trust" if untrusted else " under machine.roots"))
    for n, item in enumerate(found, 1):
        mark = "pick" if n == 1 and item.pickable and not untrusted else ("ok  " if item.pickable else "no  ")
        weight = f" (weight {item.weight:g})" if item.weight is not None else ""
        say(f"{mark} {item.path}{weight} — {'; '.join(item.reasons)}")


@shift_app.command("brief")
def shift_brief(
    path: Annotated[Optional[str], typer.Option(metavar="DIR", help="Work this repository instead of the pick.")] = None,
) -> None:
    """Open a shift: write its brief, meta and shift.start; print the brief's path."""
    from sandman.verbs import shift as verb

    root = layout()
    opened, worktree = run(lambda: verb.brief(root, path=path))
    say(opened.folder / "brief.md")
    if worktree:
        say(f"worktree: {worktree} (branch shift/{opened.id}); start a session there with SANDMAN_SHIFT={opened.id}, "
            "then `sandman shift attach <session>`")
    say(f"shift {opened.id} on {opened.repo}: {opened.characters:,} characters"
        + (f", cut: {', '.join(f'{k} {v:,}' for k, v in opened.cuts.items())}" if opened.cuts else ""))


@shift_app.command("attach", cls=PlainUsage)
def shift_attach(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The Claude Code session id working the shift.")],
) -> None:
    """Record the session id of the open shift."""
    from sandman.verbs import shift as verb

    root = layout()
    say(f"attached {session} to {run(lambda: verb.attach(root, session))}")


@shift_app.command("status")
def shift_status(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Show the open shift and the latest ones."""
    import json

    from sandman.verbs import shift as verb

    root = layout()
    found = run(lambda: verb.status(root))
    if json_:
        say(json.dumps(found, ensure_ascii=False, indent=2), lines=True)
        return
    def word(value: object, missing: str = "-") -> str:
        return value if isinstance(value, str) and value else missing

    current = found["current"]
    if current and current.get("state") == "broken":
        say("open: unreadable: shifts/.current.json is not JSON or not an object")
    elif current:
        say(f"open: {word(current.get('shift'))} ({word(current.get('state'))}) on {word(current.get('repo'))}; "
            f"session {word(current.get('session'), 'not attached')}; "
            f"{'running' if found['alive'] else 'no live process'}")
    else:
        say("no shift is open")
    if found["paused"]:
        say("paused: shifts/PAUSE exists")
    for item in found["recent"]:
        if item["problem"]:
            say(f"{item['id']} unreadable: {item['problem']}")
        else:
            say(f"{item['id']} {word(item['repo'])} {word(item['theme'])} {word(item['outcome'], 'open')}"
                + (f" REVOKED by {item['revoked']}" if item.get("revoked") else ""))


@shift_app.command("clock")
def shift_clock(
    check: Annotated[bool, typer.Option("--check", help="Exit 1 when under machine.min_window_minutes remain.")] = False,
) -> None:
    """How long the model's usage window has left (exit 3: unreadable window file)."""
    from sandman import config as cfg
    from sandman.verbs import shift as verb

    root = layout()
    found = run(lambda: verb.clock(root))
    say(found.note)
    if check:
        minimum = run(lambda: cfg.machine(root)).min_window_minutes
        if not found.room(minimum):
            raise typer.Exit(1)


@shift_app.command("handoff", cls=BodyArgument)
def shift_handoff(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The handoff (at most 2,000 characters); '-' reads stdin.")] = "",
    abandoned: Annotated[bool, typer.Option("--abandoned", help="Record a shift that died without a handoff.")] = False,
    truncate: Annotated[bool, typer.Option("--truncate", help="Cut a handoff over 2,000 characters instead of refusing.")] = False,
) -> None:
    """Close the open shift: handoff.md, report.md, the outcome, shift.handoff."""
    from sandman.verbs import shift as verb

    root = layout()
    body = _text_or_stdin(text, "handoff")
    closed = run(lambda: verb.handoff(root, body, abandoned=abandoned, truncate=truncate))
    say(f"{closed.id} {closed.outcome}: {len(closed.commits)} commit(s), {len(closed.findings)} finding(s); "
        f"report: {root.shift_dir(closed.id) / 'report.md'}")
    for finding in closed.findings:
        say(f"finding: {finding}")


@shift_app.command("profile")
def shift_profile(
    shift: Annotated[Optional[str], typer.Argument(
        metavar="SHIFT", help="A shift's id: its profile as `shift run` passes it [default: a shift on no repository].")] = None,
) -> None:
    """Print the Claude Code settings and environment a shift session runs with (JSON)."""
    import json

    from sandman.verbs import shift as verb

    root = layout()
    say(json.dumps(run(lambda: verb.profile(root, shift)), ensure_ascii=False, indent=2), lines=True)


@shift_app.command("run")
def shift_run(
    force: Annotated[bool, typer.Option("--force", help="Start a shift now, even outside the night window or "
                                        "past machine.shifts_per_night.")] = False,
) -> None:
    """The tick: close a finished shift, then start one if the night allows."""
    from sandman.verbs import shift as verb

    root = layout()
    done = run(lambda: verb.run(root, force=force))
    if done.closed:
        say(f"closed {done.closed}")
    if done.decision == "started":
        say(f"started {done.shift}: {done.reason}")
    else:
        say(f"{done.decision}: {done.reason}")
    if done.decision == "failed":
        raise typer.Exit(1)


@shift_app.command("targets", cls=BodyArgument)
def shift_targets(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Markdown, one '## <repository>' each; '-' reads stdin.")],
) -> None:
    """Write next week's targets (the rest day's self-pass only)."""
    from sandman.verbs import shift as verb

    root = layout()
    say(run(lambda: verb.targets(root, _text_or_stdin(text, "targets"))))


@shift_app.command("voyage", cls=BodyArgument)
def shift_voyage(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Markdown: a '# <title>' line, then the body; '-' reads stdin.")],
) -> None:
    """Write the week's voyage entry (the rest day's self-pass only)."""
    from sandman.verbs import shift as verb

    root = layout()
    say(run(lambda: verb.voyage(root, _text_or_stdin(text, "voyage"))))


# --- proposals: `sandman report propose|approve|decline|proposals` (issue 15) ---


@report_app.command("propose")
def report_propose(
    title: Annotated[str, typer.Option("--title", metavar="TEXT", help="One line naming the work (at most 200 characters).")],
    body: Annotated[Optional[str], typer.Option("--body", metavar="TEXT", help="What and why (at most 4,000 characters).")] = None,
    body_file: Annotated[Optional[str], typer.Option("--body-file", metavar="FILE", help="Read the body from FILE; '-' reads stdin.")] = None,
    repo: Annotated[Optional[str], typer.Option("--repo", metavar="DIR", help="The repository it bears on [default: the shift's].")] = None,
) -> None:
    """File a proposal: work too large for tonight (from a night's session only)."""
    from sandman.machine import proposals
    from sandman.verbs import report as verb

    root = layout()
    text = run(lambda: verb.proposal_body(body, body_file, sys.stdin.buffer))
    filed = run(lambda: proposals.propose(root, title, text, repo=repo))
    say(filed.id)


_PROPOSAL = Annotated[str, typer.Argument(metavar="PROPOSAL", help="The proposal's event id, or a suffix of it (4 or more characters).")]
_DECISION_WHY = Annotated[Optional[str], typer.Option("--why", metavar="TEXT", help="One line: why.")]


@report_app.command("approve", cls=PlainUsage)
def report_approve(proposal: _PROPOSAL, why: _DECISION_WHY = None) -> None:
    """Approve a proposal: the next night works its repository first."""
    from sandman.machine import proposals

    root = layout()
    done = run(lambda: proposals.approve(root, proposal, why))
    say(f"{done.id} approved: {done.title}")


@report_app.command("decline", cls=PlainUsage)
def report_decline(proposal: _PROPOSAL, why: _DECISION_WHY = None) -> None:
    """Decline a proposal: no night takes it."""
    from sandman.machine import proposals

    root = layout()
    done = run(lambda: proposals.decline(root, proposal, why))
    say(f"{done.id} declined: {done.title}")


@report_app.command("proposals")
def report_proposals(
    state: Annotated[Optional[str], typer.Option("--state", metavar="STATE", help="Only open, approved, declined or taken.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List the proposals, oldest first."""
    import json

    from sandman.machine import proposals

    if state is not None and state not in proposals.STATES:
        raise fail(f"--state {state!r} is not one of {', '.join(proposals.STATES)}", 2)
    root = layout()
    found = [item for item in run(lambda: proposals.proposals(root)) if state is None or item.state == state]
    for item in found:
        say(json.dumps(item.to_json(), ensure_ascii=False) if json_ else proposals.line(item))
    if not found and not json_:
        say("no proposals" + (f" {state}" if state else ""))
