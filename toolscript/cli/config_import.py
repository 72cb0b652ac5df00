"""``toolscript config import --from CLIENT``: another client's MCP servers, written into a toolscript config file.

The reading and converting is ``toolscript.config.importers``, the writing
``toolscript.config.merge``; this module runs them in order and tells the user
what happened to each server, where it came from and every warning.

Exit status: 0 when the servers were written (or were already there, or
``--dry-run`` found nothing in the way); 1 when there was nothing to import
from (no file where the client keeps it), a file does not parse, or a server
differs from the entry of the same name without ``--force`` (then nothing is
written); 2 for usage errors (``--project`` with a client that has no project
file).
"""

import argparse
import json
import os
import shlex
import sys
from typing import Any, Dict, List

from toolscript.cli.output import echo, print_json
from toolscript.config import importers, merge
from toolscript.config import keys as configkeys
from toolscript.config.view import masked_entry

DESCRIPTION = """\
Copy the MCP servers another client is configured with into toolscript's
configuration: ~/.toolscript.json, or with --project ./.toolscript.json (from
the client's file for this project).  Each server is printed with the file and
key it came from and every warning: a key toolscript has no use for, a renamed
server, a variable translated (${env:NAME} becomes ${NAME}; a VS Code
${input:id} becomes a variable you export).  A server whose name is already
there with a different entry is a conflict: nothing is written unless --force.
The old file is kept as <file>.bak.  A project file written here counts as
approved (you asked for it), unless it held content you had not approved.

where each client keeps its servers (Linux; macOS and Windows in docs/configuration.md):
  cursor          ~/.cursor/mcp.json              project: .cursor/mcp.json
  vscode          ~/.config/Code/User/mcp.json    project: .vscode/mcp.json
  claude-desktop  ~/.config/Claude/claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/)
  codex           $CODEX_HOME/config.toml (~/.codex/config.toml)
                                                  project: .codex/config.toml up to the repository root
  windsurf        ~/.codeium/windsurf/mcp_config.json

examples:
  toolscript config import --from cursor --dry-run     what would be written, secrets masked
  toolscript config import --from claude-desktop
  toolscript config import --from vscode --project     this project's .vscode/mcp.json into ./.toolscript.json
  toolscript config import --from codex --force        replace entries that differ
  toolscript config import --from vscode --file ~/.config/Code/User/profiles/abc/mcp.json
  toolscript config import --from windsurf --json      for scripts

exit status: 0 imported (or already there); 1 nothing to import from, a file
that does not parse, or a conflict without --force (nothing written); 2 usage.
"""

_VERBS = {merge.ADDED: "added", merge.REPLACED: "replaced", merge.UNCHANGED: "already there", merge.CONFLICT: "CONFLICT",
          merge.SKIPPED: "skipped"}
_DRY_VERBS = {merge.ADDED: "would add", merge.REPLACED: "would replace"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="client", required=True, choices=list(importers.CLIENTS), metavar="CLIENT",
                        help="the client to import from: " + ", ".join(importers.CLIENTS))
    parser.add_argument("--project", action="store_true",
                        help="import the client's file for this project into ./.toolscript.json (cursor, vscode, codex)")
    parser.add_argument("--file", metavar="PATH", help="read this file (in the client's format) instead of its usual place")
    parser.add_argument("--dry-run", action="store_true", help="print what would be written; write nothing")
    parser.add_argument("--force", action="store_true", help="replace entries of the same name that differ")


def run(args: argparse.Namespace) -> int:
    cwd = os.getcwd()
    environ = os.environ
    source = importers.read_source(args.client, project=args.project, cwd=cwd, environ=environ, file=args.file)
    target = configkeys.resolve_path(configkeys.PROJECT_PATH if args.project else configkeys.USER_PATH, cwd, environ)
    report: Dict[str, Any] = {
        "from": args.client, "scope": source.scope, "found": bool(source.files), "files": source.files, "looked": source.looked,
        "target": target, "dryRun": bool(args.dry_run), "force": bool(args.force), "written": False, "backup": None,
        "approved": None, "servers": [], "conflicts": [], "notes": list(source.notes),
    }
    if not source.files:
        where = " or ".join(source.looked)
        message = f"nothing to import from {where}: no {source.label} config there"
        if args.client == "windsurf" and not args.file:
            message += " (Devin Desktop, Windsurf's successor, keeps ~/.config/devin/mcp_config.json: import it with --file)"
        report["error"] = message
        _finish(args, report, [message], stream_error=True)
        return 1
    planned = merge.plan(source.servers, target, args.force)
    report["servers"] = [_server_report(server) for server in planned.servers]
    report["conflicts"] = [server.name for server in planned.conflicts]
    lines = [f"{source.label} ({source.scope} scope): {', '.join(source.files)} -> {target}"]
    if not source.servers:
        lines.append(f"no servers in {', '.join(source.files)}")
    for server in planned.servers:
        existing = planned.document.get("mcpServers", {}).get(server.name)
        lines += _server_lines(server, args.dry_run, existing if isinstance(existing, dict) else None)
    lines += [f"note: {note}" for note in source.notes]
    named, _ = configkeys.select_paths(args.config_paths, cwd, environ)
    if (args.config_paths is not None or environ.get(configkeys.CONFIG_ENV, "").strip()) and target not in named:
        note = f"{target} is not read while --config or {configkeys.CONFIG_ENV} names the config files"
        report["notes"].append(note)
        lines.append(f"note: {note}")
    if planned.conflicts and not args.force:
        names = ", ".join(repr(server.name) for server in planned.conflicts)
        message = (f"{len(planned.conflicts)} server(s) ({names}) differ from the entries of the same name in {target}; "
                   f"nothing was written: rerun with --force to replace them, or rename them there first")
        report["error"] = message
        _finish(args, report, lines + [message], stream_error=True)
        return 1
    changes = planned.changes
    if args.dry_run:
        lines.append(f"dry run: would write {len(changes)} server(s) to {target}; nothing written" if changes
                     else f"dry run: nothing to change in {target}")
    elif not changes:
        lines.append(f"nothing to change in {target}")
    else:
        backup = merge.write(planned)
        report.update(written=True, backup=backup)
        lines.append(f"wrote {len(changes)} server(s) to {target}" + (f" (its previous content is in {backup})" if backup else ""))
    if args.project and target != configkeys.resolve_path(configkeys.USER_PATH, cwd, environ):
        lines += _approval(args, planned, report)
    _finish(args, report, lines)
    return 0


def _approval(args: argparse.Namespace, planned: merge.Plan, report: Dict[str, Any]) -> List[str]:
    """Approve the project file this import wrote (``merge.approve_written``); what to tell the user about its trust."""
    from toolscript.config import trust

    target = planned.target
    approved_before = planned.old is None or trust.status(planned.real, planned.old) == trust.TRUSTED
    if report["written"]:
        problem = merge.approve_written(planned)
        report["approved"] = problem is None
        if problem:
            return [f"note: {problem}"]
        return [f"approved {target} as written: importing into it was your own act ('toolscript trust --revoke' undoes that)"]
    if args.dry_run and planned.changes:
        if approved_before:
            return [f"would approve {target} after writing it: importing into it is your own act"]
        return [f"note: {target} holds content you have not approved, so it would stay untrusted: review it with 'toolscript trust'"]
    if planned.old is not None:
        report["approved"] = approved_before
        if not approved_before:
            return [f"note: {target} is not trusted yet: review it with 'toolscript trust'"]
    return []


def _server_report(server: importers.Imported) -> Dict[str, Any]:
    return {"name": server.name, "sourceName": server.source_name, "file": server.file, "key": server.key, "status": server.status,
            "entry": masked_entry(server.entry) if server.entry is not None else None, "skipped": server.skipped,
            "warnings": list(server.warnings)}


def _server_lines(server: importers.Imported, dry_run: bool, conflicting: Any = None) -> List[str]:
    verb = (_DRY_VERBS.get(server.status) if dry_run else None) or _VERBS[server.status]
    if server.entry is None:
        head = f"{server.name}: {verb}: {server.skipped}"
    else:
        head = f"{server.name}: {verb}: {_summary(server.entry)}"
        if server.status == merge.CONFLICT and conflicting is not None:
            keys = sorted(set(server.entry) | set(conflicting))
            differ = [key for key in keys if server.entry.get(key) != conflicting.get(key)]
            head += f" (differs from the entry already there in: {', '.join(differ)})"
    lines = [head, f"    from {server.file} {server.key}"]
    if dry_run and server.entry is not None and server.status in (merge.ADDED, merge.REPLACED):
        lines.append("    " + json.dumps({server.name: masked_entry(server.entry)}, ensure_ascii=False))
    lines += [f"    warning: {warning}" for warning in server.warnings]
    return lines


def _summary(entry: Dict[str, Any]) -> str:
    """``stdio npx -y pkg`` or ``http https://host/mcp``, secrets masked, and ``(disabled)``."""
    shown = masked_entry(entry)
    if "command" in shown:
        text = "stdio " + " ".join(shlex.quote(word) for word in [shown["command"]] + list(shown.get("args") or []))
    else:
        text = f"{shown.get('type', 'http')} {shown.get('url', '')}"
    return text + (" (disabled)" if entry.get("disabled") else "")


def _finish(args: argparse.Namespace, report: Dict[str, Any], lines: List[str], stream_error: bool = False) -> None:
    if args.json:
        print_json(report)
        return
    error = report.get("error") if stream_error else None
    for line in lines:
        if line == error:
            echo(f"toolscript: error: {line}", file=sys.stderr)
        else:
            echo(line)

