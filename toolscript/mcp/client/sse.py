"""The Server-Sent Events wire format (the WHATWG ``text/event-stream`` rules).

Both HTTP transports read SSE: Streamable HTTP for POST responses and the GET
stream, legacy HTTP+SSE for everything the server sends.  Lines may end in LF
or CRLF (the Python SDK's server writes CRLF).  Events with empty data, such
as the priming event ``id: X`` + ``data:`` that 2025-11-25 servers send first,
are still yielded so the reader can track the last event id and retry time.
"""

from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional

from toolscript.mcp.client.transport import DEFAULT_MAX_MESSAGE_BYTES, HEAD_TAIL_BYTES, Oversized, read_line


@dataclass
class Event:
    event: str = "message"
    data: str = ""
    id: Optional[str] = None
    retry: Optional[int] = None  # milliseconds, when the server set it in this event
    # Set (and ``data`` left empty) when the event's data was over the cap: its
    # first and last bytes, to tell which request it answered.
    oversized: Optional[Oversized] = None


def iter_events(
    readline: Callable[[int], bytes],
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    keep_reading: Optional[Callable[[bytes], bool]] = None,
) -> Iterator[Event]:
    """Yield events from a byte stream until ``readline(limit)`` returns ``b""`` (EOF).

    No line and no event's data may pass ``max_bytes``: the excess is
    discarded and the event comes out with ``oversized`` set.  ``keep_reading``
    (see ``transport.read_line``) may stop discarding an endless line; the
    event is then yielded with ``oversized.ended`` False and the stream ends.
    """
    event_type = ""
    data_lines: List[str] = []
    data_size = 0
    too_big: Optional[Oversized] = None
    event_id: Optional[str] = None
    retry: Optional[int] = None
    seen = False
    keep = None if keep_reading is None else (lambda head: keep_reading(_field_value(head)))
    while True:
        raw = read_line(readline, max_bytes, keep)
        if isinstance(raw, Oversized):
            # Only data lines are long in practice; whatever field it was, the event is over the cap.
            head = _field_value(raw.head)
            if too_big is None:
                start = "\n".join(data_lines).encode("utf-8") + (b"\n" if data_lines else b"")
                too_big = Oversized((start + head)[:HEAD_TAIL_BYTES], raw.tail.rstrip(b"\r\n"), data_size + raw.size, raw.ended)
            else:
                too_big.tail, too_big.size, too_big.ended = raw.tail.rstrip(b"\r\n"), too_big.size + raw.size, raw.ended
            data_lines, seen = [], True
            if not raw.ended:
                yield Event(event_type or "message", "", event_id, retry, too_big)
                return
            continue
        if not raw:
            return  # an unterminated event at EOF is discarded, as the spec says
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            if seen:
                yield Event(event_type or "message", "" if too_big else "\n".join(data_lines), event_id, retry, too_big)
            event_type, data_lines, data_size, too_big, event_id, retry, seen = "", [], 0, None, None, None, False
            continue
        if line.startswith(":"):
            continue  # a comment, used for keep-alives
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        seen = True
        if name == "data":
            size = len(raw)
            if too_big is not None:
                too_big.size += size
                too_big.tail = (too_big.tail + b"\n" + value.encode("utf-8"))[-HEAD_TAIL_BYTES:]
            elif data_size + size > max_bytes:
                text = "\n".join(data_lines + [value]).encode("utf-8")
                too_big = Oversized(text[:HEAD_TAIL_BYTES], text[-HEAD_TAIL_BYTES:], data_size + size, True)
                data_lines = []
            else:
                data_lines.append(value)
                data_size += size
        elif name == "event":
            event_type = value
        elif name == "id":
            if "\0" not in value:
                event_id = value
        elif name == "retry":
            if value.isdigit():
                retry = int(value)


def _field_value(line: bytes) -> bytes:
    """``b"data: {..."`` -> ``b"{..."``."""
    _, sep, value = line.partition(b":")
    return value[1:] if sep and value.startswith(b" ") else value
