"""The typer app: one command per verb. A command parses its arguments, calls the
verb module's function, prints, and sets the exit status; the logic lives in
``sandman/verbs/``. Verb modules are imported inside the commands so that
``sandman --help`` stays fast. The verbs with subcommands are typer sub-apps, one
module per family (banks, schedule, imports, hooks, curate, report, trail, breathe,
shift), added here in the order ``--help`` lists them; what they share is common.py.

Errors reach the user here as one line on stderr (``sandman: <what>``) and a
non-zero exit: 2 for bad input, 1 for everything else.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from sandman import __version__, config
from sandman.cli import banks, breathe, curate, hooks, imports, report, schedule, shift, trail
from sandman.cli.common import BodyArgument, PlainUsage, SeveralWords, fail, layout, run, say
from sandman.marks import visible

app = typer.Typer(
    name="sandman",
    help="A memory engine for Claude Code sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals hold transcripts
    rich_markup_mode=None,
)


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
            from sandman.hookfork import fork_detached

            payload = hook_entry.read_payload()
            raise typer.Exit(0 if fork_detached() else hook_entry.main(["take", "--hook"], payload))
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


app.add_typer(banks.banks_app, name="banks")


app.add_typer(schedule.schedule_app, name="schedule")


app.add_typer(imports.import_app, name="import")


app.add_typer(hooks.hooks_app, name="hooks")


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


@app.command(cls=SeveralWords)
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

    from sandman.verbs.note import leave, read_stream

    if note == "-":
        note = run(lambda: read_stream(sys.stdin.buffer))
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


app.add_typer(curate.curate_app, name="curate")


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


app.add_typer(report.report_app, name="report")


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

app.add_typer(trail.trail_app, name="trail")


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

app.add_typer(breathe.breathe_app, name="breathe")


# --- the machine: shifts (issue 14) ---

app.add_typer(shift.shift_app, name="shift")
