"""``toolscript trust``: approve (or revoke) a project's ``.toolscript.json``, after seeing what it would run."""

import argparse
import json
import os
import shlex
import sys
from typing import Any, Dict, List, Tuple

from toolscript.errors import UserError
from toolscript.cli.output import echo, print_json

DESCRIPTION = """\
A project's ./.toolscript.json comes with the repository: its stdio servers
would run commands as you and its ${VAR}s would send your environment to the
URLs it names.  So toolscript uses nothing in it (no server, no setting) until
you approve that file's exact content here; if the file changes, it needs
approval again.  Your own files (~/.toolscript.json, --config,
TOOLSCRIPT_CONFIG) are always trusted.

A project's .mcp.json holds Claude Code's project servers.  toolscript
serves those Claude Code approved; 'toolscript trust .mcp.json' approves the
whole file for toolscript too (a server Claude Code rejected stays off).  They
run as Claude Code runs them: with your whole environment, in the project
directory.

trust prints every command line, URL and variable the file would use and asks
for confirmation on the terminal.  Without a terminal it refuses unless --yes
is given.  Approvals are kept as SHA-256 hashes in the state directory
(trusted-configs.json, 0600).  A running gateway picks an approval, or its
revocation, up within a few seconds: it watches the store.

examples:
  toolscript trust                     review ./.toolscript.json and approve it
  toolscript trust --show              only review it (change nothing)
  toolscript trust ../other/.toolscript.json
  toolscript trust .mcp.json           let toolscript serve Claude Code's project servers
  toolscript trust --yes               approve without asking (scripts; you read it first)
  toolscript trust --revoke            forget the approval of ./.toolscript.json
  toolscript trust --list              every approved file, and which changed since

exit status: 0 approved, shown or revoked; 1 declined, or nothing to revoke;
2 no such file, or no terminal to ask on (use --yes).
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", metavar="FILE", help="the project config file: ./.toolscript.json (the default), or a Claude Code .mcp.json")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--show", action="store_true", help="print what the file would run and its trust state; change nothing")
    mode.add_argument("--yes", "-y", action="store_true", help="approve without asking (needed without a terminal)")
    mode.add_argument("--revoke", action="store_true", help="forget the approval of the file")
    mode.add_argument("--list", action="store_true", help="list every approved file")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.config import trust

    if args.list:
        return _list(args, trust.approvals())
    path = os.path.abspath(args.path or ".toolscript.json")
    if args.revoke:
        revoked = trust.revoke(path)
        if args.json:
            print_json({"path": path, "revoked": revoked})
        else:
            print(f"revoked: {path} is no longer trusted" if revoked else f"{path} was not trusted; nothing to revoke")
        return 0 if revoked else 1
    data = _read(path)
    state = trust.status(path, data)
    review = describe(path, data)
    review["status"] = state
    if args.show or (state == trust.TRUSTED and not args.yes):
        if args.json:
            print_json(review)
        else:
            _print_review(review)
            if state == trust.TRUSTED:
                print("already trusted: this exact content was approved")
        return 0
    if review["problem"]:
        raise UserError(f"{path} is not approved: it {review['problem']}; fix the file, then run trust again", exit_code=1)
    if not args.yes:
        if args.json:
            raise UserError("--json needs --show, --yes, --revoke or --list: there is no terminal question in JSON mode", exit_code=2)
        _print_review(review)
        if not _interactive():
            raise UserError(
                f"not approved: no terminal to ask on; review the above and run 'toolscript trust --yes {shlex.quote(path)}' yourself",
                exit_code=2,
            )
        if not _confirm("Trust this file and run what it names? [y/N] "):
            print("not approved; nothing changed")
            return 1
    store = trust.approve(path, data)
    if args.json:
        review.update(status=trust.TRUSTED, store=store)
        print_json(review)
    else:
        what = "serves its servers" if trust.is_claude_code_file(path) else "uses it"
        print(f"trusted: {path} (sha256 {trust.digest(data)[:16]}...); a gateway {what} from now on (one already running within a few seconds)")
    return 0


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise UserError(f"no such file: {path} (run trust in the project's directory, or name the file)", exit_code=2) from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}", exit_code=2) from exc


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _confirm(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


# -- what a file would do ------------------------------------------------------------------------


def describe(path: str, data: bytes) -> Dict[str, Any]:
    """Each server's command line or URL, the variables the file would expand, and the settings it would change."""
    review: Dict[str, Any] = {"path": path, "servers": [], "variables": [], "settings": {}, "problem": None}
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:
        review["problem"] = f"is not valid JSON ({exc})"
        return review
    if not isinstance(document, dict):
        review["problem"] = 'is not a JSON object with "mcpServers"'
        return review
    from toolscript.config.trust import is_claude_code_file

    claude_code = is_claude_code_file(path)  # Claude Code's rules: no $${ escape, the whole environment
    variables: List[str] = []
    entries = document.get("mcpServers")
    for name, entry in (entries.items() if isinstance(entries, dict) else []):
        server = _describe_server(str(name), entry)
        if claude_code and server.get("kind") == "stdio":
            server["environment"] = "your whole environment, in the project directory"
        review["servers"].append(server)
        _collect_variables(entry, variables, escape=not claude_code)
    review["settings"] = {key: value for key, value in document.items() if key not in ("mcpServers", "$schema")}
    _collect_variables(review["settings"], variables)
    review["variables"] = [{"name": name, "set": name in os.environ} for name in variables]
    return review


def _describe_server(name: str, entry: Any) -> Dict[str, Any]:
    if not isinstance(entry, dict):
        return {"name": name, "kind": "invalid", "runs": json.dumps(entry)[:200]}
    described: Dict[str, Any] = {"name": name}
    if "command" in entry or entry.get("type") == "stdio":
        args = entry["args"] if isinstance(entry.get("args"), list) else []
        words = [str(entry.get("command", ""))] + [str(arg) for arg in args]
        described.update(kind="stdio", runs=" ".join(shlex.quote(word) for word in words))
        if isinstance(entry.get("cwd"), str):
            described["cwd"] = entry["cwd"]
        if isinstance(entry.get("env"), dict):
            described["env"] = {str(k): str(v) for k, v in entry["env"].items()}
    else:
        described.update(kind=str(entry.get("type", "http")), url=str(entry.get("url", "")))
        if isinstance(entry.get("headers"), dict):
            described["headers"] = {str(k): str(v) for k, v in entry["headers"].items()}
    if entry.get("disabled") is True:
        described["disabled"] = True
    return described


def _collect_variables(value: Any, found: List[str], escape: bool = True) -> None:
    """Every ``${NAME}`` / ``${NAME:-default}`` in the strings of ``value``, in order, once each (``escape``: ``$${`` is not one)."""
    if isinstance(value, dict):
        for item in value.values():
            _collect_variables(item, found, escape)
    elif isinstance(value, list):
        for item in value:
            _collect_variables(item, found, escape)
    elif isinstance(value, str):
        text = value.replace("$${", "") if escape else value
        start = text.find("${")
        while start >= 0:
            end = text.find("}", start + 2)
            if end < 0:
                break
            name = text[start + 2:end].partition(":-")[0]
            if name and name not in found:
                found.append(name)
            start = text.find("${", end + 1)


def _print_review(review: Dict[str, Any]) -> None:
    from toolscript.config.trust import CHANGED, TRUSTED

    state = str(review.get("status"))
    label = {TRUSTED: "trusted", CHANGED: "CHANGED since you approved it"}.get(state, "not trusted")
    # The file's words are shown with every control character spelled out (\x1b): a sequence could
    # otherwise hide or rewrite on screen the command line the user is approving.
    echo(f"{review['path']} ({label})", escape=True)
    if review.get("problem"):
        print(f"  cannot be read as a config file: {review['problem']}")
        return
    if not review["servers"]:
        print("  names no MCP servers")
    for server in review["servers"]:
        off = " (disabled)" if server.get("disabled") else ""
        if server["kind"] == "stdio":
            echo(f"  {server['name']}: runs as you{off}: {server['runs']}", escape=True)
            if server.get("environment"):
                echo(f"      with {server['environment']}", escape=True)
            if server.get("cwd"):
                echo(f"      in {server['cwd']}", escape=True)
            for key, value in (server.get("env") or {}).items():
                echo(f"      env {key}={value}", escape=True)
        elif server["kind"] == "invalid":
            echo(f"  {server['name']}: not a server entry: {server['runs']}", escape=True)
        else:
            echo(f"  {server['name']}: connects to{off}: {server['url']} ({server['kind']})", escape=True)
            for key, value in (server.get("headers") or {}).items():
                echo(f"      header {key}: {value}", escape=True)
    if review["variables"]:
        shown = ", ".join(f"${{{v['name']}}} ({'set' if v['set'] else 'not set'})" for v in review["variables"])
        echo(f"  your environment it would read: {shown}", escape=True)
    for key, value in review["settings"].items():
        echo(f"  sets {key} = {json.dumps(value)[:200]}", escape=True)


def _list(args: argparse.Namespace, found: List[Dict[str, Any]]) -> int:
    if args.json:
        print_json({"files": found})
        return 0
    if not found:
        print("no project config file is trusted yet (toolscript trust in a project approves its ./.toolscript.json)")
        return 0
    from toolscript.cli.output import format_table

    rows: List[Tuple[str, ...]] = [(item["state"], item.get("approved") or "-", item["path"]) for item in found]
    for line in format_table(rows, headers=("STATE", "APPROVED", "FILE")):
        print(line)
    return 0

