"""``toolscript doctor``: check the installation, config, servers, gateway and plugin."""

import argparse

from toolscript.cli.output import echo, print_json

DESCRIPTION = """\
Check everything toolscript depends on and print one line per check -- ok,
warn or FAIL -- with the command that fixes each problem:

  python    the interpreter, and the checkout or zipapp this toolscript runs from
  config    the config files, how many servers, warnings, the first error
  server:N  each enabled server connects and lists its tools (in parallel)
  gateway   this session's gateway: reachable, token valid, each server's state
  claude    the claude CLI on PATH and its version
  plugin    whether Claude Code has the toolscript plugin installed, which
            version and scope ($CLAUDE_CONFIG_DIR or ~/.claude/plugins/)
  state     the private state directory (0700, yours, writable)
  exec      the isolation exec scripts run under (Landlock, bubblewrap,
            namespaces, or only the in-process guard) and what it does not
            stop: ok with Landlock, a warning without it, FAIL when only the
            guard is left and the config sets "requireIsolation"

A missing gateway is a warning outside Claude Code and a failure inside it
(when CLAUDE_CODE_SESSION_ID is set).  Connecting to servers is the slow
part; --no-servers skips it.

examples:
  toolscript doctor                       every check
  toolscript doctor --no-servers          skip connecting to the MCP servers (fast)
  toolscript doctor --json                [{"check", "status", "detail", "fix"}, ...]; the
                                          exec line adds "isolation": the full report
  toolscript doctor --session S           check the gateway of Claude Code session S
  toolscript --config ./ci.json doctor

exit status: 0 when no check failed (warnings allowed), 1 otherwise.
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-servers", action="store_true", help="do not connect to the configured MCP servers")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.cli import doctor

    results = doctor.run_checks(
        config_paths=args.config_paths,
        gateway_url=args.gateway_url,
        session=args.session,
        servers=not args.no_servers,
    )
    if args.json:
        print_json([result.as_dict() for result in results])
    else:
        for line in doctor.render(results):
            echo(line)
    return doctor.exit_code(results)
