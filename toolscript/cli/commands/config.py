"""``toolscript config show|validate|import``: the merged configuration, checked; other clients' servers, imported."""

import argparse
import sys

from toolscript.cli.args import add_action
from toolscript.cli.output import echo, print_json
from toolscript.config import load as configuration
from toolscript.config.view import masked_view

DESCRIPTION = """\
Configuration is Claude Code's "mcpServers" format, read from
~/.toolscript.json then ./.toolscript.json (later files win per server name).
--config a.json,b.json or TOOLSCRIPT_CONFIG replace that list.  A project's
./.toolscript.json counts only once you approved its content with
'toolscript trust'; until then show and validate list what it would add.

The MCP servers Claude Code is configured with for this project are served
too (~/.claude.json's user and local scopes, and .mcp.json servers Claude Code
approved or you trusted with 'toolscript trust .mcp.json'); a toolscript entry
of the same name wins, and "claudeCodeServers": false turns them off.

examples:
  toolscript config show                  servers as toolscript sees them, secrets masked
  toolscript config show --json           the same as JSON, for scripts
  toolscript config validate              list every problem; exit 1 if there is one
  toolscript --config ./team.json config validate
  toolscript config import --from cursor  copy Cursor's MCP servers into ~/.toolscript.json
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", title="actions")
    add_action(
        actions, "show", common, "print the merged configuration with secrets masked",
        "Print the merged configuration with secrets in env, headers, URLs and args masked.\n\n"
        "examples:\n  toolscript config show\n  toolscript config show --json | jq '.servers | keys'\n",
        run_show,
    )
    add_action(
        actions, "validate", common, "check the configuration; exit 1 on errors",
        "Check every config file and list each problem on its own line (file:line:col for JSON\n"
        "syntax, the JSON path for wrong values). A server that cannot start because a ${VAR} it\n"
        "uses is not set is an error of that server: exit 1, though the others work. Warnings\n"
        "(unknown keys) do not fail validation.\n\n"
        "examples:\n  toolscript config validate\n  toolscript config validate --json\n",
        run_validate,
    )
    from toolscript.cli import config_import

    config_import.add_arguments(add_action(
        actions, "import", common, "copy another client's MCP servers (Cursor, VS Code, Claude Desktop, Codex, Windsurf)",
        config_import.DESCRIPTION, config_import.run,
    ))


def run_show(args: argparse.Namespace) -> int:
    config = configuration.load_config(args.config_paths)
    view = masked_view(config)
    if args.json:
        print_json(view)
        return 0
    for warning in config.warnings:
        echo(f"toolscript: warning: {warning}", file=sys.stderr)
    pending = [file.path for file in config.untrusted if not file.claude_code]
    if view["files"] or pending:
        print("files: " + ", ".join(view["files"] + [f"{path} (not trusted, not used)" for path in pending]))
    else:
        print("files: none found (" + ", ".join(configuration.default_config_paths()) + ")")
    if not config.claude_code_servers:
        print("Claude Code's servers: not served (\"claudeCodeServers\": false)")
    elif config.claude_code_files:
        print("Claude Code's servers from: " + ", ".join(config.claude_code_files))
    if not view["servers"] and not config.untrusted_servers():
        print("servers: none")
    for name, server in view["servers"].items():
        where = server.get("command") or server.get("url") or ""
        if server.get("args"):
            where += " " + " ".join(server["args"])
        flags = " (disabled)" if server.get("disabled") else ""
        echo(f"{name}: {server['type']} {where}{flags}")
        if server.get("error"):
            echo(f"    cannot start: {server['error']}")
        for key in ("env", "headers"):
            for k, v in (server.get(key) or {}).items():
                echo(f"    {key}.{k} = {v}")
        for key in ("cwd", "includeTools", "excludeTools", "timeout", "maxMessageBytes"):
            if key in server:
                value = ", ".join(server[key]) if isinstance(server[key], list) else server[key]
                echo(f"    {key} = {value}")
        oauth = server.get("oauth")
        if isinstance(oauth, dict):
            for k, v in oauth.items():
                echo(f"    oauth.{k} = {v}")
        elif oauth is not None:
            print(f"    oauth = {'true' if oauth else 'false'}")
        imported = server.get("from")
        if isinstance(imported, dict):
            if server.get("callTimeout") is not None:
                print(f"    call timeout = {server['callTimeout']:g}s")
            if server.get("headersHelper"):
                echo(f"    headersHelper = {server['headersHelper']}")
            if server.get("unset"):
                echo("    not set (passed on as written): " + ", ".join("${" + v + "}" for v in server["unset"]))
            echo(f"    from {imported['described']}: started only to list its tools and when a script calls it")
        else:
            print(f"    from {server['source']}")
    for item in config.not_imported:
        echo(f"{item.name}: not served: {item.reason}")
        echo(f"    from {item.source}")
    _print_untrusted(config)
    return 0


def _print_untrusted(config: "configuration.Config") -> None:
    """Each server an unapproved project file would add, and the settings it would change, with who approves it."""
    for name, file in config.untrusted_servers().items():
        echo(f"{name}: not started: awaiting approval")
        if file.claude_code:
            echo(f"    from {file.path} (project scope: not approved in Claude Code, not trusted in toolscript)")
        else:
            echo(f"    from {file.path} ({'changed since approved' if file.status == 'changed' else 'not trusted yet'})")
    for file in config.untrusted:
        if file.problem:
            echo(f"{file.path}: {file.problem}")
        if file.settings:
            echo(f"ignored until approved: {', '.join(file.settings)} from {file.path}")
        print(f"approve {file.path} in a terminal with: {file.fix()} (it shows what the file runs first)")


def run_validate(args: argparse.Namespace) -> int:
    try:
        config = configuration.load_config(args.config_paths)
    except configuration.ConfigError as exc:
        if args.json:
            print_json({"ok": False, "problems": exc.problems, "warnings": exc.warnings})
        else:
            for warning in exc.warnings:
                print(f"warning: {warning}")
            for problem in exc.problems:
                print(f"error: {problem}")
            print(f"{len(exc.problems)} problem(s) found; fix them and run 'toolscript config validate' again")
        return 1
    # The files are valid, but an enabled server whose ${VAR} is unset cannot start:
    # an error of that server (exit 1), which the gateway shows as failed.
    broken = [s for s in config.enabled_servers() if s.config_error]
    problems = [f"{s.source}: {s.config_error}" for s in broken]
    if args.json:
        print_json({"ok": not problems, "files": config.files, "servers": len(config.servers), "problems": problems, "warnings": config.warnings,
                    "untrusted": [file.as_dict() for file in config.untrusted]})
        return 1 if problems else 0
    for warning in config.warnings:
        print(f"warning: {warning}")
    for file in config.untrusted:
        names = ", ".join(sorted(file.servers)) or "no servers"
        print(f"warning: {file.reason()} (it names {names}; '{file.fix()} --show' prints what it would run)")
    for problem in problems:
        print(f"error: {problem}")
    files = ", ".join(config.files) or "no config files found (zero servers is fine)"
    if problems:
        working = len(config.enabled_servers()) - len(broken)
        print(f"{len(problems)} server(s) cannot start; the other {working} can: set the variables named and run 'toolscript config validate' again")
        return 1
    print(f"ok: {len(config.servers)} server(s) from {files}")
    return 0
