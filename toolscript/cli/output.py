"""Printing a command's result: JSON for scripts, aligned text for people.

Text for people passes through ``toolscript.log.terminal_text`` (what a
server, skill file, memory or model wrote must not act on the terminal):
``echo`` prints a line through it and ``format_table`` cleans every cell.
Where the user must judge text exactly (what a project's config file would
run), ``escape=True`` shows each such character as an escape (``\\x1b``)
instead of removing it.  JSON (``print_json``) is left as it is: JSON escapes
control characters itself, and a program reading it wants the exact text.
"""

import json
import sys
from typing import Any, List, Optional, Sequence, TextIO

from toolscript.log import terminal_text


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
