"""``python -m toolscript`` and the zipapp's entry point."""

from toolscript.cli import exit_main

if __name__ == "__main__":
    exit_main()
