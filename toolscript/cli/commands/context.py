"""``toolscript context claude-usage-suggestion``: the skills and tools worth mentioning for one prompt."""

import argparse
import sys

from toolscript import log
from toolscript.errors import UserError
from toolscript.cli.output import print_json

logger = log.get("context")

DESCRIPTION = """\
claude-usage-suggestion: pick the skills (from ~/.claude/skills, the project's
.claude/skills and installed plugins) and the gateway's MCP tools that fit a
prompt, and print the UserPromptSubmit hook answer Claude Code expects:
{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}
or {} when nothing fits.  The plugin's prompt hook runs the same pipeline.

Backends: api (the Messages API: ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN),
claude (the claude CLI, for subscription logins), local (no model: a ranker
over the skills and the prompt's key phrases), auto (api when a key is set,
else claude when it is installed and logged in, else local).  A model that
fails or runs out of time falls back to local.  Everything stays within
--timeout; it exits 0 whatever happens (errors go to -v and --json).

examples:
  toolscript context claude-usage-suggestion --prompt "open a github issue for this bug"
  echo "make a pptx from these notes" | toolscript context claude-usage-suggestion --prompt -
  toolscript context claude-usage-suggestion --prompt "query the orders table" --backend local --json
  toolscript --gateway-url http://127.0.0.1:PORT/t/TOKEN context claude-usage-suggestion --prompt "..."
"""

ACTIONS = ("claude-usage-suggestion",)


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("action", help="claude-usage-suggestion")
    parser.add_argument("--prompt", required=True, help="the user's prompt; - reads it from stdin")
    parser.add_argument("--backend", choices=("auto", "api", "claude", "local"), default=None,
                        help='who picks: auto (default; config "suggestions.backend", env TOOLSCRIPT_SUGGEST_BACKEND), api, claude or local')
    parser.add_argument("--model", default=None, help="the model for api/claude (default: config, then ANTHROPIC_DEFAULT_HAIKU_MODEL, then the backend's haiku)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="the whole suggestion's budget (default 1.5, config suggestions.timeout)")
    parser.add_argument("--cwd", default=None, metavar="DIR", help="the project whose skills count (default: the current directory)")
    parser.add_argument("--no-cache", action="store_true", help="ask the backend even if it answered this prompt in the last 5 minutes")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import os

    from toolscript.config import keys as configkeys
    from toolscript.claude_code import suggest
    from toolscript.cli.args import unknown_name

    if args.action not in ACTIONS:
        raise unknown_name("action", args.action, ACTIONS, "toolscript context --help")
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if args.timeout is not None and not 0 < args.timeout <= 60:
        raise UserError("--timeout must be more than 0 and at most 60 seconds", exit_code=2)
    cwd = os.path.abspath(args.cwd) if args.cwd else os.getcwd()
    if args.cwd and not os.path.isdir(cwd):
        raise UserError(f"--cwd {args.cwd}: no such directory", exit_code=2)
    settings, problems = configkeys.suggestion_settings(args.config_paths, cwd)
    for problem in problems:
        logger.warning("%s (ignored; the default applies)", problem)
    backend = args.backend or os.environ.get("TOOLSCRIPT_SUGGEST_BACKEND", "").strip() or settings["backend"]
    if backend not in configkeys.SUGGESTION_BACKENDS:
        raise UserError(f"TOOLSCRIPT_SUGGEST_BACKEND={backend!r}: use one of {', '.join(configkeys.SUGGESTION_BACKENDS)}", exit_code=2)
    gateway_url = _gateway_url(args)
    result = suggest.suggest(
        prompt,
        cwd=cwd,
        gateway_url=gateway_url,
        model_key=suggest.model_key_for(gateway_url, args.session),  # the session's warm model, as the hook has it
        backend=backend,
        model=args.model or settings["model"],
        timeout=args.timeout or float(settings["timeout"]),
        session=args.session,
        min_interval=0.0,  # asked by hand: no per-session rate limit
        max_tools=int(settings["maxTools"]),
        use_cache=not args.no_cache,
    )
    for error in result.errors:
        logger.warning("%s", error)
    logger.info("context: %s answered in %d ms%s", result.backend, result.ms, f" ({result.reason})" if result.reason else "")
    if args.json:
        print_json(result.as_dict())
    else:
        print_json(suggest.hook_output(result))
    return 0


def _gateway_url(args: argparse.Namespace):
    """--gateway-url, else the usual discovery (--session, TOOLSCRIPT_GATEWAY_URL, the session's state); None: skills only."""
    from toolscript.gateway.client import find_url

    try:
        return find_url(args.gateway_url, args.session)
    except UserError as exc:
        logger.info("context: no gateway (%s): skills only", exc)
        return None
