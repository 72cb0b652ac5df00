"""Helpers the command modules share: declaring actions, and naming unknown things.

Command modules import these from here rather than from ``toolscript.cli.frame``,
which loads the command modules: a command importing ``cli`` would be a cycle.
"""

import argparse
from typing import Callable, Iterable, Optional

from toolscript.errors import UserError


def add_action(
    actions: "argparse._SubParsersAction",
    name: str,
    common: argparse.ArgumentParser,
    summary: str,
    description: str,
    handler: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """Declare one action of a command (``config show``): its help, examples and handler.

    ``description`` is shown verbatim by ``--help`` and should end with examples.
    """
    parser = actions.add_parser(
        name, help=summary, description=description, formatter_class=argparse.RawDescriptionHelpFormatter, parents=[common]
    )
    parser.set_defaults(handler=handler)
    return parser


def did_you_mean(name: str, known: Iterable[str]) -> Optional[str]:
    """The known name closest to ``name``, or None when none is close."""
    known = list(known)
    import difflib  # here: only a mistyped name needs it (~1 ms of every start otherwise)

    matches = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if not matches:
        # Tool ids are long (server__tool): compare case-insensitively too.
        folded = {k.lower(): k for k in known}
        matches = [folded[m] for m in difflib.get_close_matches(name.lower(), list(folded), n=1, cutoff=0.6)]
    return matches[0] if matches else None


def unknown_name(kind: str, name: str, known: Iterable[str], list_command: str) -> UserError:
    """The one-line usage error (exit 2) for a server or tool name nobody has.

    ``toolscript: error: unknown server 'gihub' (did you mean 'github'?); see 'toolscript list-servers'``
    """
    suggestion = did_you_mean(name, known)
    hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
    return UserError(f"unknown {kind} {name!r}{hint}; see '{list_command}'", exit_code=2)
