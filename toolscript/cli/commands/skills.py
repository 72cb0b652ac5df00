"""``toolscript skills``: the skills Claude Code would list in a session here (what suggestions choose from)."""

import argparse
import os
import sys

from toolscript.cli.output import echo, format_table, print_json
from toolscript.log import one_line

DESCRIPTION = """\
List the skills Claude Code would offer the model in a session started in
this directory (or --cwd DIR): the per-prompt suggestion hook chooses from
exactly this list.

  user      $CLAUDE_CONFIG_DIR/skills/*/SKILL.md (default ~/.claude/skills)
  project   .claude/skills/*/SKILL.md in the project ($CLAUDE_PROJECT_DIR, else
            the directory) and each parent up to the git root
  plugin    skills/*/SKILL.md of every installed plugin that enabledPlugins
            enables in the user, project or local settings, named plugin:skill

A name found twice keeps the user skill, then the nearest project one, as
Claude Code does.  Skills with disable-model-invocation: true are left out
(the model cannot invoke them).  Files that cannot be read or whose
frontmatter does not parse are reported on stderr, naming the file.

Unlike Claude Code, a skill whose directory or SKILL.md is a symlink to
somewhere outside its skills directory is left out (and named on stderr),
and a SKILL.md without frontmatter is listed with no description: neither
may put a line of some other file in front of the model.

examples:
  toolscript skills                       NAME, SOURCE and DESCRIPTION (abbreviated)
  toolscript skills --json                [{"name", "source", "description", "path"}, ...]
  toolscript skills --cwd ~/src/project   as a session started in that project would see them
  CLAUDE_CONFIG_DIR=/tmp/cc toolscript skills

exit status: 0 (also when a file was skipped), 2 for a usage error.
"""

DESCRIPTION_WIDTH = 70  # characters of a description in the table


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", metavar="DIR", help="list as for a session started in DIR (default: here, or $CLAUDE_PROJECT_DIR)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.errors import UserError
    from toolscript.claude_code.skills import discover

    env = dict(os.environ)
    cwd = None
    if args.cwd is not None:
        cwd = os.path.abspath(os.path.expanduser(args.cwd))
        if not os.path.isdir(cwd):
            raise UserError(f"--cwd {args.cwd}: no such directory; give the project directory a session would start in", exit_code=2)
        env.pop("CLAUDE_PROJECT_DIR", None)  # --cwd says which project; an inherited variable must not override it
    warnings: list = []
    skipped: list = []
    skills = discover(cwd, env, warnings, skipped)
    for warning in warnings:
        echo(f"toolscript: warning: {warning}", file=sys.stderr)
    for line in skipped:
        echo(f"toolscript: {line}", file=sys.stderr)
    if args.json:
        print_json([skill._asdict() for skill in skills])
        return 0
    if not skills:
        print("No skills found (none in ~/.claude/skills, .claude/skills or an enabled plugin).")
        return 0
    rows = [(skill.name, skill.source, _abbreviate(skill.description)) for skill in skills]
    for line in format_table(rows, headers=("NAME", "SOURCE", "DESCRIPTION")):
        print(line)
    return 0


def _abbreviate(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= DESCRIPTION_WIDTH else text[: DESCRIPTION_WIDTH - 3].rstrip() + "..."
