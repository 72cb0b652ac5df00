"""``toolscript hooks-mcp``: the plugin's MCP server that answers Claude Code's hooks (see ``toolscript.claude_code.hook_server``)."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # argparse only for the annotations: __main__ starts the server without the CLI
    import argparse

DESCRIPTION = """\
An MCP server on stdin/stdout that Claude Code starts once per session (the
plugin's .mcp.json names it; Claude Code calls it plugin:toolscript:hooks).
The plugin's mcp_tool hooks call its tools for UserPromptSubmit, PreToolUse,
PostToolUse and Stop: the same work as 'toolscript hook EVENT', without a
Python start per event.  It lists no tools to the model.  With a Claude Code
older than the one it knows calls it, it answers nothing and the plugin's
command hooks do the work.  TOOLSCRIPT_HOOKS_DISABLED=1 makes it answer
nothing.  Not meant to be run by hand.

examples:
  toolscript hooks-mcp    (what Claude Code runs for the plugin)
"""


def add_arguments(parser: "argparse.ArgumentParser", common: "argparse.ArgumentParser") -> None:
    parser.set_defaults(handler=run)


def run(args: "argparse.Namespace") -> int:
    from toolscript.claude_code import hook_server

    return hook_server.serve()
