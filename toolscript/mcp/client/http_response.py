"""The head of every HTTP response the gateway writes (JSON API and MCP endpoint).

One function builds the status line and headers, so both servers frame their
answers the same way and the sandbox runtime's small parser
(``codemode/runtime.py``) has one format to understand.  Callers append the
body and send head and body in one write: two small writes stall ~40 ms on
Nagle + delayed ACK.  Standard library only, nothing of ours imported.
"""

from http import HTTPStatus
from typing import Optional, Sequence, Tuple


def response_head(
    status: int,
    *,
    content_type: Optional[str] = None,
    content_length: Optional[int] = None,
    cache_control: Optional[str] = "no-store",
    close: bool = False,
    extra: Sequence[Tuple[str, str]] = (),
) -> bytes:
    """``HTTP/1.1 <status> <reason>`` and the headers, ending with the blank line.

    ``content_length`` None means no Content-Length (a stream that ends when the
    connection closes, so ``close`` should be true).  ``extra`` headers follow
    the standard ones in order.  Header values must not contain CR or LF.
    """
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {status} {reason}"]
    if content_type is not None:
        lines.append(f"Content-Type: {content_type}")
    if content_length is not None:
        lines.append(f"Content-Length: {content_length}")
    if cache_control is not None:
        lines.append(f"Cache-Control: {cache_control}")
    for name, value in extra:
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError(f"header {name!r} has a line break")
        lines.append(f"{name}: {value}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
