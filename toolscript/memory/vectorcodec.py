"""Memories' meaning vectors: the static embedding table of tool search (``toolscript.search.vectors``), stored small.

A memory's vector is computed once, when it is stored, and kept beside it in
the database as 256 signed bytes (each value scaled so the largest is ±127):
a quarter of the floats' size, and a cosine moves by under 0.01.  A search
encodes only its query and reads the vectors of its best candidates
(``toolscript.memory.rank``).  The embedding table is read on first use, so
commands that neither store nor search never pay for it.
"""

import math
import operator
from array import array
from typing import Optional, Sequence, Tuple

__all__ = ["available", "pack", "query", "cosine"]

_sumprod = getattr(math, "sumprod", None)  # Python 3.12+


def available() -> bool:
    """Whether the embedding table can be read (reads it on the first call; never raises)."""
    from toolscript.search import vectors

    return vectors.available()


def pack(text: str) -> Optional[bytes]:
    """``text``'s vector as 256 signed bytes, or None when no word of it is known to the table."""
    from toolscript.search import vectors

    found = vectors.encode(text)
    if not found:
        return None
    largest = max(abs(x) for x in found)
    if largest == 0.0:
        return None
    scale = 127.0 / largest
    return array("b", [int(round(x * scale)) for x in found]).tobytes()


def query(text: str) -> Optional[Tuple[float, ...]]:
    """A query's unit vector (floats), or None."""
    from toolscript.search import vectors

    found = vectors.encode(text)
    return tuple(found) if found else None


def cosine(wanted: Sequence[float], packed: bytes) -> float:
    """The cosine of a query's unit vector with a stored vector; 0.0 for a damaged one."""
    values = array("b")
    values.frombytes(bytes(packed))
    if len(values) != len(wanted):
        return 0.0
    norm = math.hypot(*values)
    if norm == 0.0:
        return 0.0
    dot = _sumprod(wanted, values) if _sumprod is not None else sum(map(operator.mul, wanted, values))
    return float(dot) / norm
