"""``toolscript hook <event>``: the entry point of every Claude Code hook.

Reads the event JSON on stdin, does the event's work, and prints nothing or
one JSON object.  It always exits 0: a failure is logged to
``<state dir>/hooks.log`` and Claude Code's session goes on (the contract is
``toolscript.claude_code.hooks``, the event table ``toolscript.claude_code.events``).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # argparse only for the annotations: the hook fast path (events.main_fast) never imports it
    import argparse

DESCRIPTION = """\
Claude Code runs this from the plugin's hook scripts with the event JSON on
stdin.  It always exits 0 and prints nothing or one JSON object; failures go
to the hooks log in the state directory.  TOOLSCRIPT_HOOKS_DISABLED=1 makes it
a no-op.

examples:
  echo '{"session_id": "s1", "cwd": "."}' | toolscript hook session-start
  echo '{"session_id": "s1"}' | toolscript hook session-end
  echo '{"session_id": "s1", "prompt": "open a github issue"}' | toolscript hook user-prompt-submit

user-prompt-submit adds the skills and MCP tools that fit the prompt (see
'toolscript context --help'); TOOLSCRIPT_SUGGEST=0 or "suggestions":
{"enabled": false} in the config turns just that one off.
"""

def add_arguments(parser: "argparse.ArgumentParser", common: "argparse.ArgumentParser") -> None:
    # Not argparse choices: a usage error exits 2, which *blocks* some Claude
    # Code events.  An unknown event (a newer plugin, an older zipapp) is a no-op.
    from toolscript.claude_code.events import EVENTS

    parser.add_argument("event", help="which hook: " + ", ".join(sorted(EVENTS)))
    parser.set_defaults(handler=run)


def run(args: "argparse.Namespace") -> int:
    from toolscript.claude_code import events

    return events.run_event(args.event)
