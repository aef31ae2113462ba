"""``sandman report [show|serve|propose|approve|decline|proposals]``: the nights' reports, the site, the proposals.

One typer sub-app (STYLE.md, "The CLI boundary"), added to the root app by sandman/cli/__init__.py;
each command parses, calls its verb module (imported inside it), prints and exits.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from sandman import config
from sandman.cli.common import PlainUsage, fail, layout, run, say

report_app = typer.Typer(
    help="The shifts' reports, unread first; the site.",
    invoke_without_command=True,
    rich_markup_mode=None,
)


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
