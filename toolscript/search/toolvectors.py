"""The tools' vectors: encoded once per index, packed to meet a query's vector in one pass.

A tool's vector is its texts (:func:`toolscript.search.fields.vector_texts`:
server and name as words, the description's first sentence, the whole
description, the parameter names as words) encoded apart and summed, each a
unit vector times its weight (Tuning.tool_text_weights).  Encoded apart, a
long description does not drown the two or three words of the name that say
what the tool does.
"""

import struct
import sys
from array import array
from typing import Any, Dict, List, Optional, Sequence, Tuple

from toolscript.search.fields import vector_texts

__all__ = ["encode_tool", "tool_vectors", "PackedVectors", "query_values"]


def encode_tool(texts: Sequence[str], weights: Sequence[float]) -> Optional[List[float]]:
    """A tool's unit vector from its ``vector_texts`` and their weights; None when no word of them is known."""
    from toolscript.search import vectors

    return vectors.encode_texts(texts, weights)


def tool_vectors(
    tools: List[Dict[str, Any]],
    previous: Dict[str, Optional[List[float]]],
    mine: Dict[str, Optional[List[float]]],
    weights: Sequence[float],
) -> Optional[List[Tuple[int, Tuple[float, ...]]]]:
    """(tool index, unit vector) for every tool that has one; None when the vectors data is not there.

    Tools whose texts are in ``previous`` are not encoded again (a cache is
    only valid for the ``weights`` it was made with); ``mine`` receives every
    tool's vector, keyed by its texts.
    """
    from toolscript.search import vectors

    if not tools or not vectors.available():
        return None
    out = []
    for i, tool in enumerate(tools):
        texts = vector_texts(tool)
        key = "\n".join(texts)
        if key in mine:
            vector = mine[key]
        elif key in previous:
            vector = mine[key] = previous[key]
        else:
            vector = mine[key] = encode_tool(texts, weights)
        if vector is not None:
            out.append((i, tuple(vector)))
    return out


# The tools' vectors packed so that a query meets all of them in one
# big-integer multiply-add per dimension, in C (the same idea as the similar
# words' int8 columns, at 16 bits).  A tool vector's values are stored as
# round(32767 x value) + 32768 (unsigned 16 bits); column d is one integer
# holding every tool's value in dimension d, each in a 32-bit field of its
# own.  The query's values are round(32767 x value) too; summed over d, each
# field holds that tool's dot product plus 32768 x the sum of the query's
# values, which one multiple of "1 in every field" replaces by 2^31.  The dot
# products of two unit vectors at this scale stay within 32767^2 < 2^30 in
# size, so each field stays within 0..2^32 and never borrows from or carries
# into the next.  500 tools x 256 dimensions: ~0.3 ms per query, where a
# math.dist per tool took ~1.4 ms; rounding moves a cosine by < 0.0002.
_UNIT_16 = 32767
_FIELD_BIAS = 1 << 31
_COSINE_SCALE = 1.0 / (_UNIT_16 * _UNIT_16)  # an integer dot product times this is the cosine


class PackedVectors:
    """The tools' unit vectors, for the cosines of one query vector with all of them at once."""

    def __init__(self, vectors: List[Tuple[int, Tuple[float, ...]]]) -> None:
        rows = array("H", [round(_UNIT_16 * x) + 32768 for _, vector in vectors for x in vector])
        if sys.byteorder != "little":
            rows.byteswap()
        self._pack([i for i, _ in vectors], rows.tobytes(), len(vectors[0][1]) if vectors else 0)

    @classmethod
    def joined(cls, packs: Sequence[Tuple["PackedVectors", int]]) -> "PackedVectors":
        """One pack of several packs' vectors, each pack's tool numbers moved up by its offset: one pass per query.

        Column by column, the packs' fields side by side: every cosine is the same as its own pack gives.
        """
        joined = cls.__new__(cls)
        kept = [pack for pack, _ in packs if pack.tools]
        if len({len(pack.columns) for pack in kept}) > 1:
            raise ValueError("packed vectors of different widths")
        sizes = [4 * len(pack.tools) for pack in kept]
        joined.tools = [offset + i for pack, offset in packs for i in pack.tools]
        joined.columns = [int.from_bytes(b"".join(column.to_bytes(size, "little") for column, size in zip(row, sizes)), "little")
                          for row in zip(*(pack.columns for pack in kept))]
        joined._fields(len(joined.tools))
        return joined

    def _pack(self, tools: List[int], matrix: bytes, width: int) -> None:
        # matrix: each tool's row of unsigned 16-bit little-endian values, row after row.
        self.tools = tools
        n = len(tools)
        fields = bytearray(4 * n)
        self.columns: List[int] = []
        for d in range(width):
            # Each value's two bytes into the low half of its tool's little-endian field, in C.
            fields[0::4] = matrix[2 * d::2 * width]
            fields[1::4] = matrix[2 * d + 1::2 * width]
            self.columns.append(int.from_bytes(fields, "little"))
        self._fields(n)

    def _fields(self, n: int) -> None:
        self.ones = int.from_bytes(b"\x01\x00\x00\x00" * n, "little")
        # Each field holds 2^31 + its dot product; flipping every field's top bit leaves the dot product
        # in two's complement, which struct reads as signed 32 bits: no subtraction per tool in Python.
        self._top_bits = self.ones << 31
        self.fields = struct.Struct(f"<{n}i")

    def cosines(self, query: Sequence[float]) -> Dict[int, float]:
        """Tool index -> the cosine of unit vector ``query`` with the tool's."""
        return dict(zip(self.tools, map(_COSINE_SCALE.__mul__, self._dots(query_values(query)))))

    def cosine_list(self, values: Sequence[int]) -> List[float]:
        """The cosine of each tool's vector (in the order of ``tools``) with a query vector as :func:`query_values` gives it."""
        return list(map(_COSINE_SCALE.__mul__, self._dots(values)))

    def _dots(self, values: Sequence[int]) -> Tuple[int, ...]:
        # Every tool's dot product with the query at scale 32767^2, an exact integer.
        total = (_FIELD_BIAS - 32768 * sum(values)) * self.ones
        for value, column in zip(values, self.columns):
            if value:
                total += value * column
        return self.fields.unpack((total ^ self._top_bits).to_bytes(self.fields.size, "little"))


def query_values(query: Sequence[float]) -> List[int]:
    """A unit query vector as :meth:`PackedVectors.cosine_list` takes it (each value x 32767, rounded)."""
    return [round(_UNIT_16 * x) for x in query]
