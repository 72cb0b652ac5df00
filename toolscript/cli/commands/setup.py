"""``toolscript setup``: register toolscript's Claude Code hooks in a project that does not use the plugin.

The arguments and the report; what is written where (the settings merge, the
scripts, the symlink rules, the manifest ``--undo`` reads) is
``toolscript.claude_code.install``.
"""

import argparse
import os
import sys
from typing import Any, Dict

from toolscript.claude_code import install
from toolscript.errors import UserError

DESCRIPTION = """\
For a project that does not use the toolscript Claude Code plugin: register
every toolscript hook (gateway start/stop, per-prompt suggestions, memory) in
the project's .claude/settings.json, so any Claude Code session started there
runs them.

What it writes, all under <project>/.claude/:
  settings.json     the "hooks" entries SessionStart, UserPromptSubmit,
                    PostToolUse (matcher "*"), Stop and SessionEnd, timeouts in
                    seconds (10, 10, 5, 5, 5).  A merge: every other key and
                    every other hook stays as it was; ours are never added
                    twice (they are the commands naming .claude/hooks/toolscript-*.sh).
                    The old file is kept as settings.json.bak-<time>; the new
                    one is written atomically.  A symlinked settings.json is
                    followed when its target is inside the project: the
                    target is rewritten, its backup goes beside it and the
                    link stays.
  hooks/toolscript-<event>.sh
                    one script per hook, executable; each runs
                    'toolscript hook <event>'.  In .claude/hooks/ rather than
                    ./hooks/ so nothing lands among the project's own files
                    (many projects have a hooks/ of their own), and with a
                    toolscript- prefix so no other tool's script is overwritten.
  toolscript/       when setup runs from toolscript.pyz: a copy of it and a
                    'toolscript' launcher (a session's Bash tool finds it on
                    PATH), git-ignored.  The scripts run that copy with python3,
                    else 'toolscript' from PATH, else do nothing and exit 0 (a
                    teammate without toolscript is not bothered).

setup writes only inside the project: when a symlink (settings.json,
.claude/ or anything under it) leads out of it -- to ~/.claude/settings.json,
say, where the hooks would run in every project -- it refuses, names the link
and writes nothing, --force or not.

Running it again changes nothing; --force rewrites toolscript's own entries
(and replaces a settings.json that is not valid JSON, after backing it up).
--undo removes exactly what setup added -- our hook entries, event lists it
left empty, the scripts, the copy of the zipapp -- and keeps the backups.
A warning says so when the toolscript plugin is enabled for the project too
(both would run every hook).

examples:
  toolscript setup                        set up the project in this directory
  toolscript setup --project ~/src/app    set up another project
  toolscript setup --dry-run              show the settings diff and the files, write nothing
  toolscript setup --force                rewrite toolscript's entries (e.g. after an upgrade)
  toolscript setup --undo                 take it all out again
  toolscript setup --json                 {"settings", "scripts", "backup", "changed", ...}

exit status: 0 done (or nothing to do), 1 when settings.json is not valid JSON,
a file cannot be written or a symlink leads out of the project (nothing is
written then), 2 for a usage error.
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", metavar="DIR", help="the project to set up (default: this directory)")
    parser.add_argument("--force", action="store_true", help="rewrite toolscript's entries; replace an invalid settings.json (backed up)")
    parser.add_argument("--undo", action="store_true", help="remove what setup added (the backups stay)")
    parser.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    project = os.path.abspath(os.path.expanduser(args.project or "."))
    if not os.path.isdir(project):
        raise UserError(f"--project {args.project}: no such directory; give the project's root directory", exit_code=2)
    if args.undo:
        report = install.undo(project, dry_run=args.dry_run)
    else:
        report = install.setup(project, force=args.force, dry_run=args.dry_run)
    plugin = None if args.undo else install.enabled_plugin(project)
    if plugin:
        # Both would run every hook twice (two SessionStart hooks for one session's gateway).
        print(f"toolscript: warning: the plugin {plugin} is enabled for this project too, so its hooks and these "
              f"both run: 'claude plugin disable {plugin}' or 'toolscript setup --undo'", file=sys.stderr)
    if args.json:
        from toolscript.cli.output import print_json

        print_json(report)
    else:
        _print_report(report)
    return 0


# --- output ---------------------------------------------------------------------------------


def _link_note(path: str, report: Dict[str, Any]) -> str:
    """" (the symlink's target: config/claude.json)" when the settings file written is reached through a link."""
    target = report.get("settingsTarget")
    real_project = os.path.realpath(report["project"])
    if path != report["settings"] or not target or target == os.path.join(real_project, ".claude", install.SETTINGS):
        return ""
    return f" (the symlink's target: {os.path.relpath(target, real_project)})"


def _print_report(report: Dict[str, Any]) -> None:
    project = report["project"]
    shown = install.display_path(report["settings"], project)
    verb = "would " if report["dryRun"] else ""
    if not report["changed"]:
        if report["action"] == "undo":
            print(f"toolscript setup --undo: nothing of toolscript's in {project}; nothing changed")
        else:
            print(f"toolscript setup: already set up in {project}; nothing changed (--force rewrites toolscript's hook entries)")
        return
    if report["dryRun"] and report.get("diff"):
        sys.stdout.write(report["diff"])
    if report["action"] == "undo":
        for path in report["removed"]:
            print(f"{verb}remove {install.display_path(path, project)}")
        if report["backup"]:
            print(f"rewrote {shown} without toolscript's hooks (backup: {install.display_path(report['backup'], project)})")
        if not report["dryRun"]:
            claude_dir = os.path.dirname(report["settings"])
            kept = os.path.isdir(claude_dir) and any(".bak-" in name for name in os.listdir(claude_dir))
            print(f"toolscript's hooks are gone from {project}" + ("; the settings backups stay in .claude/" if kept else ""))
        return
    for path in report["written"]:
        print(f"{verb}write {install.display_path(path, project)}{_link_note(path, report)}")
    if report["backup"]:
        print(f"backup of the old settings: {install.display_path(report['backup'], project)}")
    if report["dryRun"]:
        return
    if report["zipapp"] is None:
        print("note: not run from toolscript.pyz, so the hooks run 'toolscript' from PATH (and do nothing without it)")
    print("toolscript's hooks run in every new Claude Code session here; 'toolscript setup --undo' removes them")
