"""Memories' meaning vectors: the static embedding table of tool search (``toolscript.search.vectors``), stored small.

A memory's vector is computed once, when it is stored, and kept beside it in
the database as 260 bytes: 256 values, each scaled so the largest is ±127 and
stored plus 128 (0..255), then the length of those 256 values as a float32.
A quarter of the floats' size; a cosine moves by under 0.01.  A search
encodes only its query and scores the vectors of its best candidates all at
once (``cosines``).  The embedding table is read on first use, so commands
that neither store nor search never pay for it.
"""

import math
import struct
from typing import Dict, Optional, Sequence, Tuple

__all__ = ["available", "ready", "pack", "query", "cosines"]

WIDTH = 256  # values in a vector (toolscript.search.vectors.DIM)
_NORM = struct.Struct("<f")
PACKED_SIZE = WIDTH + _NORM.size


def available() -> bool:
    """Whether the embedding table can be read (reads it on the first call; never raises)."""
    from toolscript.search import vectors

    return vectors.available()


def ready() -> bool:
    """Whether this process has read the embedding table already (so encoding costs no load)."""
    from toolscript.search import vectors

    return vectors.loaded() is not None


def pack(text: str) -> Optional[bytes]:
    """``text``'s vector as stored (PACKED_SIZE bytes), or None when no word of it is known to the table."""
    from toolscript.search import vectors

    found = vectors.encode(text)
    if not found or len(found) != WIDTH:
        return None
    largest = max(abs(x) for x in found)
    if largest == 0.0:
        return None
    scale = 127.0 / largest
    values = [int(round(x * scale)) for x in found]
    return bytes(v + 128 for v in values) + _NORM.pack(math.hypot(*values))


# A query's unit vector is kept in integers (times _QUERY_UNIT) to meet many memories at once: each
# dimension's values of every memory side by side in one big integer (32 bits a memory), so the query
# meets them all in 256 big-integer multiply-adds, in C (the idea of
# toolscript.search.toolvectors.PackedVectors, straight from the stored bytes: a Python dot product per
# memory took ~10 us).  Each field ends as 2^31 + sum(q_d * (m_d + 128)) with |q_d| <= 1000: within
# 0..2^32, never carrying into the next.
_QUERY_UNIT = 1000.0
_FIELD_BIAS = 1 << 31


def query(text: str) -> Optional[Tuple[int, ...]]:
    """A query's vector, ready for ``cosines``; None when no word of it is known."""
    from toolscript.search import vectors

    found = vectors.encode(text)
    if not found or len(found) != WIDTH:
        return None
    return tuple(int(round(_QUERY_UNIT * x)) for x in found)


def cosines(wanted: Sequence[int], stored: Sequence[Tuple[int, bytes]]) -> Dict[int, float]:
    """{id: cosine} of a query's vector (from ``query``) with each stored one; damaged ones are left out."""
    rows = [(memory_id, bytes(packed)) for memory_id, packed in stored if len(packed) == PACKED_SIZE]
    if not rows or len(wanted) != WIDTH:
        return {}
    n = len(rows)
    matrix = b"".join(packed for _, packed in rows)
    fields = bytearray(4 * n)
    total = (_FIELD_BIAS - 128 * sum(wanted)) * int.from_bytes(b"\x01\x00\x00\x00" * n, "little")
    for d, value in enumerate(wanted):
        if value:
            fields[0::4] = matrix[d::PACKED_SIZE]
            total += value * int.from_bytes(fields, "little")
    dots = struct.unpack("<%dI" % n, total.to_bytes(4 * n, "little"))
    out: Dict[int, float] = {}
    for (memory_id, packed), dot in zip(rows, dots):
        norm = _NORM.unpack_from(packed, WIDTH)[0]
        if norm > 0.0:
            out[memory_id] = (dot - _FIELD_BIAS) / (_QUERY_UNIT * norm)
    return out
