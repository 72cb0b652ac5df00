"""``toolscript ask``: ask a model a question it may answer with tools (the loop is toolscript.models.ask)."""

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

from toolscript import log
from toolscript.errors import UserError
from toolscript.cli.output import echo, format_table, print_json

logger = log.get("ask")

DESCRIPTION = """\
Ask a Claude model a question.  It sees the built-in tools and, when a gateway
is reachable, the gateway's MCP tools (names made API-safe: builtin__time_now);
it calls them (several at once in parallel), reads the results and errors, and
answers.  Text mode prints the answer (-v: a trace of each tool call on
stderr); --json prints {"answer", "toolCalls", "toolResults", "toolError" (when
a call failed), "sessionContextUpdated", "usage", "steps", "stopped"}.

Backends: api (the Messages API: ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN,
ANTHROPIC_BASE_URL), claude (the claude CLI, for subscription logins; needs a
gateway), auto (api when a key is set, else claude).  In this command --session
names the conversation kept in <data dir>/ask.db (not a gateway session: use
--gateway-url for that); identical read-only tool calls in a session reuse
their cached result for 10 minutes.

Exit status: 0 answered, 1 step limit / model error / timeout, 2 usage, 130 interrupted.

examples:
  toolscript ask "what time is it in UTC?"
  toolscript ask "summarise README.md" --tool-allow 'fs.*' -v
  toolscript ask "which issues mention flaky tests?" --tool-allow 'github__*' --json
  echo "list the files here" | toolscript ask - --max-steps 4
  toolscript ask "and the biggest one?" --session files
  toolscript ask "hello" --with-tools=false --model claude-sonnet-4-5
  toolscript ask --list-sessions
  toolscript ask --forget-session files
"""


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def _positive(kind: Any) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    from toolscript.models import ask

    parser.add_argument("question", nargs="?", help="the question; - reads it from stdin")
    parser.add_argument("--with-tools", type=_bool, default=True, metavar="true|false", help="let the model call tools (default true)")
    parser.add_argument("--tool-allow", metavar="A,B", help="only these tools: ids, built-in names, * globs (server__*, fs.*)")
    parser.add_argument("--max-steps", type=_positive(int), default=ask.DEFAULT_MAX_STEPS, metavar="N",
                        help=f"model turns before giving up (default {ask.DEFAULT_MAX_STEPS})")
    parser.add_argument("--model", metavar="M", help="model id (default $ANTHROPIC_DEFAULT_HAIKU_MODEL, else a Haiku)")
    parser.add_argument("--backend", choices=("auto", "api", "claude"), default="auto", help="how to reach the model (default auto)")
    parser.add_argument("--system", metavar="S", help="a system prompt")
    parser.add_argument("--timeout", type=_positive(float), default=ask.DEFAULT_TIMEOUT, metavar="S",
                        help=f"seconds for the whole run (default {ask.DEFAULT_TIMEOUT:g})")
    parser.add_argument("--tool-timeout", type=_positive(float), default=ask.DEFAULT_TOOL_TIMEOUT, metavar="S",
                        help=f"seconds per tool call (default {ask.DEFAULT_TOOL_TIMEOUT:g})")
    parser.add_argument("--list-sessions", action="store_true", help="list the kept conversations and exit")
    parser.add_argument("--forget-session", metavar="NAME", help="delete a kept conversation and its cached results, and exit")
    # --session is a global option (the gateway's session elsewhere); here it names the conversation.
    for action in parser._actions:
        if action.dest == "session":
            action.help = "NAME: keep this conversation in <data dir>/ask.db and continue it next time"
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscript.models import ask, history

    if args.list_sessions:
        return _list_sessions(args)
    if args.forget_session:
        if not history.forget_conversation(args.forget_session):
            raise UserError(f"no ask session named {args.forget_session!r}; see 'toolscript ask --list-sessions'")
        print(f"forgot ask session {args.forget_session!r}", file=sys.stderr)
        return 0
    question = _question(args.question)
    allow = ask.parse_allow(args.tool_allow)
    backend = _backend(args.backend)
    trace = _tracer() if args.verbose else None
    session_name = getattr(args, "session", None)
    if backend == "claude":
        result = _run_claude(args, question, allow)
        updated = False
    else:
        result, updated = _run_api(args, question, allow, session_name, trace)
    if args.json:
        print_json(ask.as_json(result, updated))
    else:
        if result.answer:
            echo(result.answer)
        if result.error:
            echo(f"toolscript: {result.error}", file=sys.stderr)
    if result.stopped == ask.STOP_ANSWERED:
        return 0
    if result.stopped == ask.STOP_INTERRUPTED:
        return 130
    return 1


def _question(text: Optional[str]) -> str:
    if text is None:
        raise UserError("ask needs a question: toolscript ask \"QUESTION\" (or - to read it from stdin)", exit_code=2)
    if text == "-":
        text = sys.stdin.read()
    if not text.strip():
        raise UserError("the question is empty: toolscript ask \"QUESTION\"", exit_code=2)
    return text.strip()


def _backend(requested: str) -> str:
    from toolscript.models import backends as models

    name = models.choose_backend(requested)
    if name == "local":
        raise UserError("no model backend: set ANTHROPIC_API_KEY, or install the claude CLI and log in with 'claude'")
    return name


def _tools(args: argparse.Namespace) -> Any:
    """The gateway's tools when one answers, else the built-ins in this process."""
    from toolscript.models import ask
    from toolscript.config import load as configuration
    from toolscript.gateway.catalog import builtin_tools
    from toolscript.gateway.client import GatewayUnavailable, connect

    try:
        client = connect(args.gateway_url, None, timeout=10)
        client.get("/health")
        return ask.GatewayTools(client)
    except GatewayUnavailable as exc:
        logger.info("no gateway (%s): built-in tools only, in this process", exc)
    config = configuration.load_config(args.config_paths)
    roots = [os.path.realpath(os.getcwd())] + [os.path.realpath(r) for r in config.workspace_roots]
    return ask.LocalTools(builtin_tools(config.builtin_tools), roots)


def _run_api(args: argparse.Namespace, question: str, allow: List[str], session_name: Optional[str], trace: Any) -> Any:
    from toolscript.models import ask, history

    db = history.open_history() if session_name else None
    conversation = history.Conversation(db, session_name) if db is not None and session_name else None
    try:
        # Ctrl-C inside the loop is handled there; this catches one that lands before it starts.
        tools = _tools(args) if args.with_tools else None
        result = ask.run_api(
            question,
            tools=tools,
            allow=allow,
            model=args.model,
            max_steps=args.max_steps,
            system=args.system,
            timeout=args.timeout,
            tool_timeout=args.tool_timeout,
            conversation=conversation,
            on_event=trace,
        )
    except KeyboardInterrupt:
        result = ask.AskResult("", [], [], 0, {"input_tokens": 0, "output_tokens": 0}, ask.STOP_INTERRUPTED, "interrupted")
    finally:
        if db is not None:
            db.close()
    return result, conversation is not None and result.steps > 0


def _run_claude(args: argparse.Namespace, question: str, allow: List[str]) -> Any:
    from toolscript.gateway.client import GatewayUnavailable, connect
    from toolscript.models import ask_claude

    if getattr(args, "session", None):
        print("toolscript: --session keeps conversations with the api backend only; this one is not kept", file=sys.stderr)
    try:
        client = connect(args.gateway_url, None, timeout=10)
        client.get("/health")
    except GatewayUnavailable as exc:
        raise UserError(f"the claude backend hands the gateway's tools to claude, and {exc}") from None
    return ask_claude.run_claude(
        question,
        gateway_url=client.url,
        allow=allow if args.with_tools else ["-"],
        model=args.model,
        max_steps=args.max_steps,
        system=args.system,
        timeout=args.timeout,
        env=os.environ,
        cwd=os.getcwd(),
    )


def _tracer() -> Any:
    def trace(kind: str, info: Dict[str, Any]) -> None:
        if kind == "model":
            print(f"ask: model step {info['step']}  {info['ms']:.0f} ms", file=sys.stderr)
            return
        args = json.dumps(info.get("args"), ensure_ascii=False, separators=(",", ":"))
        if len(args) > 60:
            args = args[:57] + "..."
        if info.get("ok"):
            outcome = "ok (cached)" if info.get("cached") else "ok"
        else:
            error = info.get("error") or {}
            outcome = f"error {error.get('code')}: {str(error.get('message'))[:80]}"
        echo(f"ask: tool {info['tool']} {args}  {info['ms']} ms  {outcome}", file=sys.stderr)

    return trace


def _list_sessions(args: argparse.Namespace) -> int:
    import time

    from toolscript.models import history

    sessions = history.list_conversations()
    if args.json:
        print_json(sessions)
        return 0
    if not sessions:
        print("no ask sessions yet: toolscript ask \"QUESTION\" --session NAME", file=sys.stderr)
        return 0
    rows = [(s["name"], s["messages"], time.strftime("%Y-%m-%d %H:%M", time.localtime(s["updated"]))) for s in sessions]
    for line in format_table(rows, headers=("SESSION", "MESSAGES", "UPDATED")):
        print(line)
    return 0
