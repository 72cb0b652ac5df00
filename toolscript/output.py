"""Printing a command's result: JSON for scripts, aligned text for people."""

import json
import sys
from typing import Any, List, Optional, Sequence, TextIO


def print_json(data: Any, stream: Optional[TextIO] = None) -> None:
    """Write ``data`` as pretty JSON followed by a newline."""
    stream = stream or sys.stdout
    stream.write(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))
    stream.write("\n")


def format_table(rows: Sequence[Sequence[Any]], headers: Sequence[str] = ()) -> List[str]:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    table = [list(map(str, headers))] if headers else []
    table += [["" if cell is None else str(cell) for cell in row] for row in rows]
    if not table:
        return []
    widths = [max(len(row[i]) for row in table if i < len(row)) for i in range(max(map(len, table)))]
    lines = []
    for row in table:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines
