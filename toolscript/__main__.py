"""``python -m toolscript`` and the zipapp's entry point (build_pyz.py's ``__main__.py`` calls :func:`main`)."""

import sys


def main() -> None:
    """Run the command in ``sys.argv`` and end the process."""
    if len(sys.argv) == 3 and sys.argv[1] == "hook" and not sys.argv[2].startswith("-"):
        # Claude Code runs a hook on every prompt and tool call: skip the CLI's argument parsing and command table.
        from toolscript.claude_code.events import main_fast

        main_fast(sys.argv[2])
    from toolscript.cli.frame import exit_main

    exit_main()


if __name__ == "__main__":
    main()
