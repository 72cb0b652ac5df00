"""The ``toolscript`` command line: global options, lazy subcommands, exit codes.

Each subcommand lives in its own module under ``toolscript/cli/commands/`` and is
imported only when it is the command being run, so a hook that runs
``toolscript hook ...`` does not pay for importing the gateway or the MCP
client.  Each command's one-line summary for ``toolscript --help`` is in
``COMMANDS`` here, so listing them imports no command module.  A command module provides:

    DESCRIPTION: str                  the command's own ``--help`` text, with examples
    def add_arguments(parser, common) -> None
        common is a parent parser holding the global options; pass it as
        ``parents=[common]`` to any nested subparsers so ``--json`` etc. work there too.
        The module sets ``parser.set_defaults(handler=fn)``; ``fn(args) -> int``.

Command modules never import this module (it imports them): what they share
(``add_action``, ``unknown_name``) lives in ``toolscript.cli.args``.  A mistyped
command or action is one line with a suggestion, not argparse's usage dump.

Exit codes: 0 ok, 1 failure, 2 usage error, 130 interrupted.
"""

import argparse
import importlib
import os
import sys
from typing import List, Optional, Sequence

from toolscript import __version__, log
from toolscript.cli.args import did_you_mean
from toolscript.errors import UserError

# name -> (module, summary).  Summaries live here so ``--help`` imports nothing.
COMMANDS = {
    "search": ("toolscript.cli.commands.search", "find tools by what they do"),
    "get-types": ("toolscript.cli.commands.get_types", "Python stubs (or TypeScript) for the tools"),
    "exec": ("toolscript.cli.commands.exec", "run a Python script that calls tools, sandboxed"),
    "gateway": ("toolscript.cli.commands.gateway", "start, inspect or stop the gateway"),
    "mcp": ("toolscript.cli.commands.mcp", "serve code mode to any MCP client (stdio)"),
    "list-servers": ("toolscript.cli.commands.list_servers", "the gateway's servers and their state"),
    "list-tools": ("toolscript.cli.commands.list_tools", "one server's tools, via the gateway"),
    "tools": ("toolscript.cli.commands.tools", "list, describe or invoke tools"),
    "ask": ("toolscript.cli.commands.ask", "ask a model a question it may answer with tools"),
    "servers": ("toolscript.cli.commands.servers", "check that configured MCP servers connect"),
    "auth": ("toolscript.cli.commands.auth", "sign in to an http/sse MCP server that needs OAuth"),
    "config": ("toolscript.cli.commands.config", "show, validate or import the configuration"),
    "trust": ("toolscript.cli.commands.trust", "review and approve a project's .toolscript.json"),
    "doctor": ("toolscript.cli.commands.doctor", "check the installation, config, servers and gateway"),
    "skills": ("toolscript.cli.commands.skills", "the Claude Code skills a session here would see"),
    "memory": ("toolscript.cli.commands.memory", "what toolscript remembers across sessions"),
    "status": ("toolscript.cli.commands.status", "memory, sessions and this session's gateway at a glance"),
    "ui": ("toolscript.cli.commands.ui", "a link to the gateway's page: memories, servers, tools"),
    "context": ("toolscript.cli.commands.context", "skills and MCP tools that fit a prompt (the prompt hook)"),
    "hook": ("toolscript.cli.commands.hook", "run a Claude Code hook (used by the plugin)"),
    "hooks-mcp": ("toolscript.cli.commands.hooks_mcp", "answer Claude Code hooks as an MCP server (plugin)"),
    "setup": ("toolscript.cli.commands.setup", "add toolscript's hooks to a project (no plugin)"),
}

EPILOG = """\
examples:
  toolscript gateway start              serve built-in tools and every configured server
  toolscript search "create an issue"   find the tools a task needs
  toolscript get-types --filter github  typed Python stubs for them
  toolscript exec -f script.py          run a script that calls tools, sandboxed
  toolscript tools invoke builtin__time.now
  toolscript servers check              connect to every configured MCP server and report
  toolscript config show --json         the merged configuration, secrets masked
  toolscript config validate            exit 1 if the configuration has errors

configuration: ~/.toolscript.json then ./.toolscript.json (Claude Code's
"mcpServers" format); --config or TOOLSCRIPT_CONFIG replace that list.
diagnostics: -v for progress (also kept in <data dir>/logs/cli.log), DEBUG=1 (or -vv)
for debug lines and tracebacks.
"""

# Global options that take a value, so the command name can be found in argv
# without parsing it (which would need every command's arguments).
_VALUE_OPTIONS = {"--config", "--gateway-url", "--session"}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors for mistyped commands and a usage error that says how to get help, exiting 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n(run '{self.prog} --help' for usage and examples)\n")

    def _check_value(self, action: argparse.Action, value: str) -> None:
        # argparse would print the whole usage and every choice for ``toolscript serch``;
        # one line with the closest command (or action: ``gateway strat``) helps more.
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            kind, where = ("command", "") if self.prog == "toolscript" else ("action", f" for '{self.prog}'")
            suggestion = did_you_mean(value, list(action.choices))
            hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
            self.exit(2, f"toolscript: unknown {kind} {value!r}{where}{hint}; see '{self.prog} --help'\n")
        super()._check_value(action, value)


def _global_options(suppress: bool) -> argparse.ArgumentParser:
    """The options every command accepts, before or after the command name.

    On subparsers the defaults are suppressed so a value given before the
    command name is not overwritten by the subparser's default.
    """
    default = (lambda value: argparse.SUPPRESS) if suppress else (lambda value: value)
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("global options")
    group.add_argument("--json", action="store_true", default=default(False), help="print machine-readable JSON on stdout")
    group.add_argument("-v", "--verbose", action="count", default=default(0), help="more diagnostics on stderr (-vv: debug)")
    group.add_argument(
        "--config",
        metavar="PATHS",
        default=default(None),
        help="comma-separated config files replacing ~/.toolscript.json,./.toolscript.json (env: TOOLSCRIPT_CONFIG)",
    )
    group.add_argument(
        "--gateway-url",
        metavar="URL",
        default=default(None),
        help="the gateway to talk to (default: --session's state file if given, else $TOOLSCRIPT_GATEWAY_URL, else the session's state file)",
    )
    group.add_argument(
        "--session",
        metavar="ID",
        default=default(None),
        help="the session whose gateway to use or start; beats $TOOLSCRIPT_GATEWAY_URL (default: $CLAUDE_CODE_SESSION_ID, else 'default')",
    )
    return common


def _command_in(argv: Sequence[str]) -> Optional[str]:
    """The first positional word of argv: the command the user asked for."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--":
            return None
        elif word in _VALUE_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The full parser, with arguments loaded only for the command in ``argv``."""
    parser = _Parser(
        prog="toolscript",
        description="MCP code mode, tool search and memory for Claude Code and other agents.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[_global_options(suppress=False)],
    )
    parser.add_argument("--version", action="version", version=f"toolscript {__version__}")
    # Every parser below is a _Parser (subparsers inherit the class), for its one-line errors.
    sub: "argparse._SubParsersAction[argparse.ArgumentParser]" = parser.add_subparsers(
        dest="command", metavar="COMMAND", title="commands", parser_class=_Parser
    )
    wanted = _command_in(argv)
    common = _global_options(suppress=True)
    for name, (module_name, summary) in COMMANDS.items():
        if name != wanted:
            sub.add_parser(name, help=summary, add_help=False)
            continue
        module = importlib.import_module(module_name)
        cmd = sub.add_parser(
            name,
            help=summary,
            description=module.DESCRIPTION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=[common],
        )
        module.add_arguments(cmd, common)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command; return the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 2
    except BrokenPipeError:
        # ``toolscript --help | true``: before 3.11 argparse lets this escape.
        _silence_stdout()
        return 0
    log.setup(args.verbose)
    if args.verbose and args.command:
        _log_to_file(args)
    # ``--config a,b`` replaces the default file list (None: the defaults, or TOOLSCRIPT_CONFIG).
    args.config_paths = [p.strip() for p in args.config.split(",") if p.strip()] if args.config else None
    handler = getattr(args, "handler", None)
    if handler is None:
        # ``toolscript`` or ``toolscript config`` without a subcommand: show help.
        target = parser if args.command is None else _subparser(parser, args.command)
        target.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args) or 0)
    except UserError as exc:
        _fail(str(exc))
        if log.debug_enabled() or args.verbose >= 2:
            import traceback

            traceback.print_exc()
        return exc.exit_code
    except KeyboardInterrupt:
        print("toolscript: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error worth a message.
        _silence_stdout()
        return 0
    except Exception as exc:  # a bug: one line normally, the traceback under DEBUG
        if log.debug_enabled() or args.verbose >= 2:
            import traceback

            traceback.print_exc()
        _fail(f"internal error: {type(exc).__name__}: {exc} (run with DEBUG=1 for the traceback and report it)")
        return 1


def exit_main() -> None:
    """The process entry point: run ``main`` and end the process without interpreter teardown.

    A command has finished its work when ``main`` returns (servers stopped,
    files written, output printed); tearing down the interpreter after that
    (module and object finalisation) measured ~25 ms of a ~120 ms ``exec``.
    Log handlers are flushed and closed and stdout/stderr flushed first.
    """
    code = main()
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more to say there
            pass
    os._exit(code & 0xFF if code >= 0 else 1)


def _log_to_file(args: argparse.Namespace) -> None:
    """``-v``: what the command says on stderr also goes to ``<data dir>/logs/cli.log`` (``log.log_to_file``)."""
    from toolscript.memory.store import data_dir

    action = getattr(args, "action", None)
    command = " ".join(["toolscript", args.command] + ([action] if isinstance(action, str) else []))
    try:
        folder = os.path.join(data_dir(), "logs")
    except UserError as exc:  # no usable home directory: the command itself will say so if it needs one
        log.get("log").warning("no log file: %s", exc)
        return
    log.log_to_file(folder, command)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    return parser


def _fail(message: str) -> None:
    from toolscript.cli.output import echo  # errors quote servers' and files' words: cleaned like all text for people

    echo(f"toolscript: error: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
