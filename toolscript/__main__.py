"""``python -m toolscript`` and the zipapp's entry point (build_pyz.py's ``__main__.py`` calls :func:`main`).

Any ``python3`` may be the one that runs this file, so it is written in syntax
every Python parses (no annotations, no f-strings): on one older than
toolscript needs, the version check must get to speak before a module that
uses newer syntax or imports is loaded.
"""

import sys

MINIMUM = (3, 9)


def too_old():
    # type: () -> bool
    """True when this Python is older than ``MINIMUM``, after saying so in one line on stderr.

    A hook (``hook NAME``) says nothing: a hook never breaks Claude Code's session.
    """
    if tuple(sys.version_info[:2]) >= MINIMUM:
        return False
    if sys.argv[1:2] != ["hook"]:
        sys.stderr.write(
            "toolscript needs Python %d.%d or newer (this is %d.%d.%d): run it with python%d.%d or newer\n"
            % (MINIMUM + tuple(sys.version_info[:3]) + MINIMUM)
        )
    return True


def main():
    # type: () -> None
    """Run the command in ``sys.argv`` and end the process."""
    if too_old():
        sys.exit(0 if sys.argv[1:2] == ["hook"] else 2)
    if len(sys.argv) == 3 and sys.argv[1] == "hook" and not sys.argv[2].startswith("-"):
        # Claude Code runs a hook on every prompt and tool call: skip the CLI's argument parsing and command table.
        from toolscript.claude_code.events import main_fast

        main_fast(sys.argv[2])
    if sys.argv[1:] == ["hooks-mcp"]:
        # Claude Code waits for its MCP servers before the first prompt: answer initialize without the CLI's imports.
        from toolscript.claude_code.hook_server import main_fast as serve_hooks

        serve_hooks()
    from toolscript.cli.frame import exit_main

    exit_main()


if __name__ == "__main__":
    main()
