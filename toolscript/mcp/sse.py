"""The Server-Sent Events wire format (the WHATWG ``text/event-stream`` rules).

Both HTTP transports read SSE: Streamable HTTP for POST responses and the GET
stream, legacy HTTP+SSE for everything the server sends.  Lines may end in LF
or CRLF (the Python SDK's server writes CRLF).  Events with empty data, such
as the priming event ``id: X`` + ``data:`` that 2025-11-25 servers send first,
are still yielded so the reader can track the last event id and retry time.
"""

from dataclasses import dataclass
from typing import Callable, Iterator, Optional


@dataclass
class Event:
    event: str = "message"
    data: str = ""
    id: Optional[str] = None
    retry: Optional[int] = None  # milliseconds, when the server set it in this event


def iter_events(readline: Callable[[], bytes]) -> Iterator[Event]:
    """Yield events from a byte stream until ``readline`` returns ``b""`` (EOF)."""
    event_type = ""
    data_lines = []
    event_id: Optional[str] = None
    retry: Optional[int] = None
    seen = False
    while True:
        raw = readline()
        if not raw:
            return  # an unterminated event at EOF is discarded, as the spec says
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            if seen:
                yield Event(event_type or "message", "\n".join(data_lines), event_id, retry)
            event_type, data_lines, event_id, retry, seen = "", [], None, None, False
            continue
        if line.startswith(":"):
            continue  # a comment, used for keep-alives
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        seen = True
        if name == "data":
            data_lines.append(value)
        elif name == "event":
            event_type = value
        elif name == "id":
            if "\0" not in value:
                event_id = value
        elif name == "retry":
            if value.isdigit():
                retry = int(value)
