"""What people see on stderr, and the one filter every text for people passes.

Log lines: everything goes to stderr (stdout is reserved for a command's
output, which may be JSON another program parses).  ``DEBUG=1`` in the
environment or ``-vv`` turns on debug lines and tracebacks; ``-v`` shows info
lines.  With ``-v`` the command line also keeps them in a file
(``log_to_file``: ``<data dir>/logs/cli.log``, private, rotated at 10 MB,
files unchanged for 7 days removed), so what a command did can be read after
the terminal is gone.

Text for people passes through ``terminal_text``: the one place that keeps
what a server, skill file, memory or model wrote from acting on the terminal.
Such text may carry escape sequences that set the window title, clear the
screen, draw an OSC 8 hyperlink whose target differs from its text, or bidi
overrides that show text in another order than it reads; all of them go,
their words stay.  Every log line goes through it, and so does every text
printed for people (``toolscript.cli.output``), suggested to Claude Code,
injected from memory or written into stubs.  Where the user must judge text
exactly (what a project's config file would run), ``escape=True`` shows each
such character as an escape (``\\x1b``) instead of removing it.  JSON is left
as it is: JSON escapes control characters itself, and a program reading it
wants the exact text.
"""

import logging
import os
import re
import sys
from typing import Any, Mapping, Optional

LOGGER_NAME = "toolscript"
_TRUE = {"1", "true", "yes", "on"}
LOG_KEEP_DAYS = 7  # a log file unchanged this long is removed
LOG_MAX_BYTES = 10 * 1024 * 1024  # a log file this big is rotated
LOG_BACKUPS = 3  # rotated files kept besides the current one
_FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def debug_enabled(environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when the user asked for debug output with DEBUG=1."""
    env = os.environ if environ is None else environ
    return env.get("DEBUG", "").strip().lower() in _TRUE


def setup(verbosity: int = 0, environ: Optional[Mapping[str, str]] = None) -> int:
    """Send toolscript's log records to stderr at the level asked for; return it.

    Every formatted line passes ``terminal_text``: log lines quote servers'
    words, their stderr and log messages.
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
        handler.setFormatter(_CleanFormatter(fmt))
        logger.addHandler(handler)
        logger.propagate = False
    return level


def log_to_file(folder: str, command: str, name: str = "cli.log", max_bytes: int = LOG_MAX_BYTES) -> Optional[logging.Handler]:
    """Also write toolscript's log records to ``folder/name``; the handler, or None when the file cannot be had.

    The folder is created 0700 and the files 0600 (a log line may name
    projects, sessions and servers).  The file is rotated at ``max_bytes``
    (``LOG_BACKUPS`` older ones kept) and any of its files unchanged for
    ``LOG_KEEP_DAYS`` days is removed now.  The first line each process
    writes is ``command`` and its pid, so the runs of several commands can be
    told apart.  Once per process: a second call returns the first handler.
    """
    logger = logging.getLogger(LOGGER_NAME)
    path = os.path.join(folder, name)
    for handler in logger.handlers:
        if getattr(handler, "_toolscript_file", None) == path:
            return handler
    import time
    from logging.handlers import RotatingFileHandler  # here: only -v pays for importing it

    class PrivateRotatingFile(RotatingFileHandler):
        def _open(self) -> Any:
            return open(self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors, opener=_private_opener)

    try:
        os.makedirs(os.path.dirname(os.path.abspath(folder)), mode=0o700, exist_ok=True)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        for entry in os.listdir(folder):
            old = os.path.join(folder, entry)
            if entry.startswith(name) and time.time() - os.path.getmtime(old) > LOG_KEEP_DAYS * 86400:
                os.unlink(old)
        handler = PrivateRotatingFile(path, maxBytes=max_bytes, backupCount=LOG_BACKUPS, encoding="utf-8")
    except OSError as exc:
        get("log").warning("no log file in %s (%s)", folder, exc.strerror or exc)
        return None
    handler._toolscript_file = path  # type: ignore[attr-defined]  # marks our handler so a second call finds it
    handler.setFormatter(_CleanFormatter(_FILE_FORMAT))
    handler.handle(logger.makeRecord(LOGGER_NAME, logging.INFO, __file__, 0, "%s (pid %d)", (command, os.getpid()), None))
    logger.addHandler(handler)
    return handler


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_CLOEXEC, 0o600)


class _CleanFormatter(logging.Formatter):
    """A formatter whose every line goes through ``terminal_text``."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_text(super().format(record))


def get(name: str) -> logging.Logger:
    """A child logger, e.g. ``get("mcp.stdio")`` -> ``toolscript.mcp.stdio``."""
    return logging.getLogger(f"{LOGGER_NAME}.{name}")


# Escape sequences, matched whole so their parameters go with them (ECMA-48):
# strings (OSC, DCS, SOS, PM, APC, 7- or 8-bit) ended by BEL or ST; CSI with
# its parameters; any other ESC with its intermediates and final byte.  A
# string's body stops at the next introducer, so an unended one costs one scan
# to there (linear on any input) and only its introducer is removed.
_SEQUENCE = (
    "(?:\x1b[]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x90\x98\x9c\x9d\x9e\x9f]*(?:\x07|\x1b\\\\|\x9c)"
    "|(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]"
    "|\x1b[ -/]*[0-~]"
)
# Line breaks a terminal (or Python's str.splitlines) would break at: shown as a newline.
# A lone carriage return would let a later part of a line overwrite an earlier one.
_LINE_BREAK = "\r\n?|[\x0b\x0c\x85\u2028\u2029]"
# What is left to remove: C0 controls but tab and newline, DEL, C1 controls, the bidi
# embeddings, overrides, isolates and marks; lone surrogates cannot be printed at all.
_UNSAFE = "[\x00-\x08\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_SEQUENCE_START = "[\x1b\x90\x98\x9b\x9d\x9e\x9f]"
# What escape=True spells out: everything above, the line breaks too (the text is one line).
_SPELLED_OUT = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ud800-\udfff]"
# Compiled on first use: every command imports this module, few print outside text.
_compiled: "dict[str, re.Pattern[str]]" = {}


def _pattern(source: str) -> "re.Pattern[str]":
    found = _compiled.get(source)
    if found is None:
        found = _compiled[source] = re.compile(source)
    return found


def terminal_text(text: str, one_line: bool = False, escape: bool = False) -> str:
    """``text`` with nothing a terminal would act on: escape sequences, control characters, bidi controls.

    Newlines and tabs stay (``one_line``: each becomes a space); CR, CRLF,
    VT, FF, NEL and the Unicode line separators become newlines; a lone
    surrogate becomes U+FFFD.  Visible text is never removed.  ``escape``:
    one line where each of those characters, newlines and tabs included, is
    shown as ``\\xNN`` or ``\\uNNNN`` and the rest of a sequence stays as text.
    """
    if escape:
        return _pattern(_SPELLED_OUT).sub(_spelled_out, text)
    if _pattern(_SEQUENCE_START).search(text):
        text = _pattern(_SEQUENCE).sub("", text)
    text = _pattern(_LINE_BREAK).sub("\n", text)
    text = _pattern(_UNSAFE).sub(lambda match: "\ufffd" if match.group() >= "\ud800" else "", text)
    return text.replace("\n", " ").replace("\t", " ") if one_line else text


def _spelled_out(match: "re.Match[str]") -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: Optional[str], limit: Optional[int] = None) -> str:
    """``text`` as one line for a table cell: cleaned, each run of whitespace one space, at most ``limit`` characters.

    Cleaned before it is cut, so that a cut never leaves half an escape sequence behind as text.
    """
    line = " ".join(terminal_text(text or "").split())
    return line if limit is None else line[:limit]
