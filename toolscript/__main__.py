"""``python -m toolscript`` and the zipapp's entry point."""

import sys

from toolscript.cli import main

if __name__ == "__main__":
    sys.exit(main())
