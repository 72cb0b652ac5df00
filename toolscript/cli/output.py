"""Printing a command's result: JSON for scripts, aligned text for people.

Text for people passes through ``terminal_text``: the one place that keeps
what a server, skill file, memory or model wrote from acting on the terminal.
Such text may carry escape sequences that set the window title, clear the
screen, draw an OSC 8 hyperlink whose target differs from its text, or bidi
overrides that show text in another order than it reads; all of them go,
their words stay.  ``echo`` prints a line through it and ``format_table``
cleans every cell.  Where the user must judge text exactly (what a project's
config file would run), ``escape=True`` shows each such character as an
escape (``\\x1b``) instead of removing it.  JSON (``print_json``) is left as it is: JSON escapes
control characters itself, and a program reading it wants the exact text.
"""

import json
import re
import sys
from typing import Any, List, Optional, Sequence, TextIO

# Escape sequences, matched whole so their parameters go with them (ECMA-48):
# strings (OSC, DCS, SOS, PM, APC, 7- or 8-bit) ended by BEL or ST; CSI with
# its parameters; any other ESC with its intermediates and final byte.  A
# string's body stops at the next introducer, so an unended one costs one scan
# to there (linear on any input) and only its introducer is removed.
_SEQUENCE = re.compile(
    "(?:\x1b[]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x90\x98\x9c\x9d\x9e\x9f]*(?:\x07|\x1b\\\\|\x9c)"
    "|(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]"
    "|\x1b[ -/]*[0-~]"
)
# Line breaks a terminal (or Python's str.splitlines) would break at: shown as a newline.
# A lone carriage return would let a later part of a line overwrite an earlier one.
_LINE_BREAK = re.compile("\r\n?|[\x0b\x0c\x85\u2028\u2029]")
# What is left to remove: C0 controls but tab and newline, DEL, C1 controls, the bidi
# embeddings, overrides, isolates and marks; lone surrogates cannot be printed at all.
_UNSAFE = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SEQUENCE_START = re.compile("[\x1b\x90\x98\x9b\x9d\x9e\x9f]")
# What escape=True spells out: everything above, the line breaks too (the text is one line).
_SPELLED_OUT = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ud800-\udfff]")


def terminal_text(text: str, one_line: bool = False, escape: bool = False) -> str:
    """``text`` with nothing a terminal would act on: escape sequences, control characters, bidi controls.

    Newlines and tabs stay (``one_line``: each becomes a space); CR, CRLF,
    VT, FF, NEL and the Unicode line separators become newlines; a lone
    surrogate becomes U+FFFD.  Visible text is never removed.  ``escape``:
    one line where each of those characters, newlines and tabs included, is
    shown as ``\\xNN`` or ``\\uNNNN`` and the rest of a sequence stays as text.
    """
    if escape:
        return _SPELLED_OUT.sub(_spelled_out, text)
    if _SEQUENCE_START.search(text):
        text = _SEQUENCE.sub("", text)
    text = _LINE_BREAK.sub("\n", text)
    text = _UNSAFE.sub(lambda match: "\ufffd" if match.group() >= "\ud800" else "", text)
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


def echo(text: str = "", file: Optional[TextIO] = None, escape: bool = False) -> None:
    """``print`` for text that holds anything from outside toolscript: through ``terminal_text`` first."""
    print(terminal_text(text, escape=escape), file=file if file is not None else sys.stdout)


def print_json(data: Any, stream: Optional[TextIO] = None) -> None:
    """Write ``data`` as pretty JSON followed by a newline."""
    stream = stream or sys.stdout
    stream.write(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))
    stream.write("\n")


def format_table(rows: Sequence[Sequence[Any]], headers: Sequence[str] = ()) -> List[str]:
    """Left-aligned columns separated by two spaces; the last column is not padded.

    Every cell is one line of ``terminal_text``: a newline or an escape sequence
    inside one would break the table (or the terminal).
    """
    table = [[terminal_text(str(cell), one_line=True) for cell in headers]] if headers else []
    table += [["" if cell is None else terminal_text(str(cell), one_line=True) for cell in row] for row in rows]
    if not table:
        return []
    widths = [max(len(row[i]) for row in table if i < len(row)) for i in range(max(map(len, table)))]
    lines = []
    for row in table:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines
