"""What every command module of the CLI shares: printing made inert, one-line errors and exit codes,
the configured root's Layout, and the three command classes for free-text arguments.

Errors reach the user here as one line on stderr (``sandman: <what>``) and a non-zero exit: 2 for
bad input, 1 for everything else (``run``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import typer
import typer.core

from sandman import config
from sandman.errors import SandmanError
from sandman.layout import Layout
from sandman.marks import visible

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


class SeveralWords(PlainUsage):
    """A command whose one argument is words: ``sandman search make release`` is the query
    ``make release`` (the words the shell split, joined by one space), as the README writes
    ``sandman search <words>``. Options and their values stay where they are; words after ``--``
    are words too. One word or none is left to click as it came (its help page unchanged).
    """

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _words_joined(self, args))


def _words_joined(command: typer.core.TyperCommand, args: list[str]) -> list[str]:
    takes_value = {opt for p in command.params if not getattr(p, "is_flag", False) for opt in p.opts}
    words, rest, after_option, dashes = [], [], False, False
    for arg in args:
        if dashes or not after_option and (arg == "-" or not arg.startswith("-")):
            words.append(arg)
        elif arg == "--" and not after_option:
            dashes = True
        else:
            rest.append(arg)
            after_option = not after_option and arg in takes_value
            continue
        after_option = False
    return [*rest, "--", " ".join(words)] if len(words) > 1 else args


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
