"""Diagnostics for humans: where log lines go and how loud they are.

Everything goes to stderr (stdout is reserved for a command's output, which may
be JSON another program parses).  ``DEBUG=1`` in the environment or ``-vv``
turns on debug lines and tracebacks; ``-v`` shows info lines.
"""

import logging
import os
import sys
from typing import Callable, Mapping, Optional

LOGGER_NAME = "toolscript"
_TRUE = {"1", "true", "yes", "on"}


def debug_enabled(environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when the user asked for debug output with DEBUG=1."""
    env = os.environ if environ is None else environ
    return env.get("DEBUG", "").strip().lower() in _TRUE


def setup(verbosity: int = 0, environ: Optional[Mapping[str, str]] = None, clean: Optional[Callable[[str], str]] = None) -> int:
    """Send toolscript's log records to stderr at the level asked for; return it.

    ``clean`` rewrites each formatted line (the CLI passes ``output.terminal_text``:
    log lines quote servers' words, their stderr and log messages).
    """
    if debug_enabled(environ) or verbosity >= 2:
        level = logging.DEBUG
    elif verbosity == 1:
        level = logging.INFO
    else:
        level = logging.WARNING
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(level)
    if not any(getattr(h, "_toolscript", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler._toolscript = True  # type: ignore[attr-defined]  # marks our handler so setup is idempotent
        fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s" if level == logging.DEBUG else "toolscript: %(levelname)s: %(message)s"
        handler.setFormatter(_CleanFormatter(fmt, clean) if clean else logging.Formatter(fmt))
        logger.addHandler(handler)
        logger.propagate = False
    return level


class _CleanFormatter(logging.Formatter):
    """A formatter whose every line goes through ``clean``."""

    def __init__(self, fmt: str, clean: Callable[[str], str]) -> None:
        super().__init__(fmt)
        self.clean = clean

    def format(self, record: logging.LogRecord) -> str:
        return self.clean(super().format(record))


def get(name: str) -> logging.Logger:
    """A child logger, e.g. ``get("mcp.stdio")`` -> ``toolscript.mcp.client.stdio``."""
    return logging.getLogger(f"{LOGGER_NAME}.{name}")
