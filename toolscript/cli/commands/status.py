"""``toolscript status``: memory, sessions, the suggestion backend and this session's gateway at a glance."""

import argparse
import os
from typing import Any, Dict

from toolscript import log
from toolscript.cli.output import echo, print_json

logger = log.get("status")

DESCRIPTION = """\
One screen: how many memories and sessions (active, completed) the memory
database holds, where it is and how big, whether full-text search (FTS5) or
the slower LIKE fallback is in use; which backend the prompt suggestions would
use; and whether this session's gateway answers.  Nothing is created: a missing
database is reported as such.  Exit 0; -v also writes what it did to the
rotating log in <data dir>/logs/cli.log (kept 7 days, 10 MB per file).

examples:
  toolscript status
  toolscript status --json
"""

def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.set_defaults(handler=run)


def _memory(args: argparse.Namespace) -> Dict[str, Any]:
    from toolscript.config import keys as configkeys
    from toolscript.memory import store

    settings, problems = configkeys.memory_settings(args.config_paths)
    data = settings.get("dataDir")
    path = os.path.join(os.path.expanduser(data), "memory.db") if data else store.default_path()
    report: Dict[str, Any] = {"enabled": bool(settings["enabled"]) and os.environ.get("TOOLSCRIPT_MEMORY", "").strip() not in ("0", "false", "off", "no"),
                              "path": path, "problems": problems}
    if not os.path.exists(path):
        report.update(exists=False, memories=0, sessions={"active": 0, "completed": 0})
        return report
    try:
        with store.open_store(path, readonly=True) as db:
            report.update(exists=True, **db.stats())
    except store.StoreError as exc:
        report.update(exists=True, error=str(exc))
    return report


def _gateway(args: argparse.Namespace) -> Dict[str, Any]:
    from toolscript.errors import UserError
    from toolscript.gateway.client import GatewayClient, find_url, redact

    try:
        url = find_url(args.gateway_url, args.session)
    except UserError as exc:
        return {"running": False, "error": str(exc)}
    if not url:
        return {"running": False, "fix": "toolscript gateway start --detach"}
    try:
        health = GatewayClient(url, timeout=2).get("/health")
    except UserError as exc:
        return {"running": False, "url": redact(url), "error": str(exc)}
    servers = health.get("servers") if isinstance(health, dict) else None
    return {"running": True, "url": redact(url), "pid": health.get("pid") if isinstance(health, dict) else None,
            "servers": servers}


def _suggestions(args: argparse.Namespace) -> Dict[str, Any]:
    from toolscript.config import keys as configkeys
    from toolscript.models import backends as models

    settings, problems = configkeys.suggestion_settings(args.config_paths)
    wanted = os.environ.get("TOOLSCRIPT_SUGGEST_BACKEND", "").strip() or settings["backend"]
    try:
        backend = models.choose_backend(wanted)
    except ValueError as exc:
        backend, problems = "local", problems + [str(exc)]
    off = os.environ.get("TOOLSCRIPT_SUGGEST", "").strip().lower() in ("0", "false", "off", "no")
    return {"enabled": bool(settings["enabled"]) and not off, "backend": backend, "configured": wanted, "problems": problems}


def run(args: argparse.Namespace) -> int:
    report = {"memory": _memory(args), "suggestions": _suggestions(args), "gateway": _gateway(args)}
    logger.info("status: %s memories, gateway %s", report["memory"].get("memories"), "up" if report["gateway"]["running"] else "down")
    if args.json:
        print_json(report)
        return 0
    memory, suggestions, gateway = report["memory"], report["suggestions"], report["gateway"]
    if memory.get("error"):
        print(f"memory:      {memory['error']}")
    elif not memory.get("exists"):
        print(f"memory:      none yet ({memory['path']} is created on first use)" + ("" if memory["enabled"] else "; turned off"))
    else:
        size = memory.get("bytes", 0) / 1024 / 1024
        print(f"memory:      {memory['memories']} memories, {memory['sessions']['active']} active and "
              f"{memory['sessions']['completed']} completed sessions" + ("" if memory["enabled"] else " (turned off)"))
        print(f"database:    {memory['path']} ({size:.1f} MB, search: {memory.get('fts')})")
    for problem in memory.get("problems", []) + suggestions.get("problems", []):
        echo(f"config:      {problem}")
    print(f"suggestions: {'backend ' + suggestions['backend'] if suggestions['enabled'] else 'turned off'}"
          + (" (auto)" if suggestions["configured"] == "auto" and suggestions["enabled"] else ""))
    if gateway["running"]:
        servers = gateway.get("servers")
        count = f", {len(servers)} server(s)" if isinstance(servers, (list, dict)) else ""
        print(f"gateway:     running, pid {gateway.get('pid')}{count}")
        signed_out = [name for name, state in servers.items() if state == "needs-auth"] if isinstance(servers, dict) else []
        for name in signed_out:
            print(f"             {name}: needs auth: run toolscript auth {name}")
    else:
        print(f"gateway:     not running ({gateway.get('error') or 'start it with: ' + gateway.get('fix', 'toolscript gateway start --detach')})")
    return 0
