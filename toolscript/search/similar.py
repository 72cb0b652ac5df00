"""Similar words: the catalog words closest in meaning to a query word.

A query word is also looked up as the catalog words closest to it in
meaning (the cosine of their static word vectors), like a synonym no table
listed: "altitude" finds "elevation" in a tool's name, where the name
field's weight, the word's idf and BM25's saturation apply as to any word.
The lookup's weight grows with the cosine and stays below a literal match's
(:func:`similar_weight`).  Only rare query words look (a word many tools
have is matched already, its neighbours in meaning would add noise and
time), and only words of letters longer than two (:func:`is_candidate`).
"""

import math
from array import array
from functools import lru_cache
from itertools import compress
from typing import Container, Dict, List, Optional, Sequence, Tuple

from toolscript.search.text import stem
from toolscript.search.tuning import Tuning

__all__ = ["SimilarWords", "WordTable", "similar_weight", "is_candidate", "CACHE_WORDS"]

CACHE_WORDS = 4096  # query words whose matches an index keeps: a bound against hostile input

# Words are compared as int8 vectors packed so that one query word meets
# every catalog word in ~128 big-integer multiply-adds that run in C.  A
# catalog word's unit vector is stored as round(127 x value) (at most 127
# in size, since no value of a unit vector exceeds 1); column d of the
# catalog is one integer holding every word's value in dimension d, + 128 so
# that it is positive, in a 24-bit field of its own.  The query's values are
# scaled to use the whole int8 range.  Multiplied by the query's value in d
# and summed over d, each field holds that word's dot product with the
# query, plus 128 x the sum of the query's values; one more multiple of
# "1 in every field" replaces that by 2^23 minus the dot product a word needs
# to reach the floor.  So a field's top bit says whether the word passes,
# and bytes.translate reads every field's top byte at once.  The dot
# products stay within 128 x 127 x 127 < 2^21, so each field stays within
# 0..2^24 and never borrows from or carries into the next.  A plain loop of
# math.dist over 2,500 words (a 500-tool catalog) takes ~6 ms per query
# word; this, ~0.45 ms.  Rounding moves a cosine by < 0.01.
_FIELD_BYTES = 3
_PASS = 1 << 23  # a field at or above this: the word is at the floor or closer
_FLIP = bytes(b ^ 0x80 for b in range(256))  # int8 as a byte -> the same value + 128, unsigned
_TOP_BIT = bytes(b >> 7 for b in range(256))  # a field's top byte -> 1 when its top bit is set


def _unit_prefix(word: str, dims: int) -> Optional[List[float]]:
    """The first ``dims`` values of ``word``'s vector (the table's are ordered by variance), renormalised;
    None when it has no vector."""
    from toolscript.search import vectors

    vector = vectors.encode(word)
    if not vector:
        return None
    vector = vector[:min(dims, 128)]
    norm = math.hypot(*vector)
    return [x / norm for x in vector] if norm else None


@lru_cache(maxsize=1 << 15)  # process-wide: a new catalog version or another index meets the same words
def word_row(word: str, dims: int) -> Optional[bytes]:
    """A catalog word's unit vector as int8 values, 127 x each (see above); None when it has no vector."""
    vector = _unit_prefix(word, dims)
    return None if vector is None else array("b", map(round, map((127.0).__mul__, vector))).tobytes()


_rows_of: List[object] = [None]  # the vectors table word_row's cache was filled from


def forget_rows_of_another_table() -> None:
    """Empty word_row's cache when the vectors table changed since it was filled."""
    # bench/vectors.py and tests swap the table in a running process
    # (vectors.use_table); rows cached from the old one would mix two spaces.
    from toolscript.search import vectors

    table = vectors.loaded()
    if table is not _rows_of[0]:
        word_row.cache_clear()
        _rows_of[0] = table


def is_candidate(word: str) -> bool:
    """Whether a word may have similar words: letters only and longer than two ("v2", "id" and "ok" mean
    little alone and their vectors say less)."""
    return len(word) > 2 and word.isalpha()


def similar_weight(cosine: float, tuning: Tuning) -> float:
    """The lookup weight of a catalog word at ``cosine`` from the query word: 0 at the floor, similar_weight at 1."""
    return tuning.similar_weight * max(0.0, cosine - tuning.similar_floor) / (1.0 - tuning.similar_floor)


class WordTable:
    """Catalog words with their vectors packed (see above), for one pass of a query word over all of them.

    One index part's words (:mod:`toolscript.search.parts`); :class:`SimilarWords`
    looks through the tables of all of an index's parts.  ``surface``: word as
    written -> its index term.
    """

    def __init__(self, surface: Dict[str, str], dims: int) -> None:
        forget_rows_of_another_table()
        self.words: List[str] = []
        self.terms: List[str] = []
        rows: List[bytes] = []
        for word, term in sorted(surface.items()):
            if not is_candidate(word):
                continue
            row = word_row(word, dims)
            if row is not None:
                self.words.append(word)
                self.terms.append(term)
                rows.append(row)
        self._pack(b"".join(rows).translate(_FLIP), len(rows[0]) if rows else 0)

    def _pack(self, matrix: bytes, width: int) -> None:
        # matrix: each word's row of int8 values + 128, row after row.
        n = len(self.words)
        fields = bytearray(_FIELD_BYTES * n)
        self.columns: List[int] = []
        for d in range(width):
            # Row-major bytes to one column: a strided slice, then each byte
            # into the low byte of its little-endian field, all in C.
            fields[0::_FIELD_BYTES] = matrix[d::width]
            self.columns.append(int.from_bytes(fields, "little"))
        self.ones = int.from_bytes((1).to_bytes(_FIELD_BYTES, "little") * n, "little")  # 1 in every field
        # (query word, need) -> its passing words, for as long as the table is used.
        self.cache: Dict[Tuple[str, int], List[Tuple[str, float, str]]] = {}

    def passing(self, word: str, values: Sequence[int], need: int, unit: float) -> List[Tuple[str, float, str]]:
        """(term, cosine, word) of the words at the floor or closer to ``word``, in word order.

        ``values``: the query word's vector scaled to int8; ``unit``: what a
        dot product is divided by to be the cosine; ``need``: the dot product
        at the floor (all three as :meth:`SimilarWords._search` computes them).
        """
        key = (word, need)
        found = self.cache.get(key)
        if found is not None:
            return found
        total = (_PASS - need - 128 * sum(values)) * self.ones
        for value, column in zip(values, self.columns):
            if value:
                total += value * column
        packed = total.to_bytes(_FIELD_BYTES * len(self.words), "little")
        passed = packed[_FIELD_BYTES - 1::_FIELD_BYTES].translate(_TOP_BIT)
        found = []
        for i in compress(range(len(self.words)), passed):
            start = i * _FIELD_BYTES
            cosine = (int.from_bytes(packed[start:start + _FIELD_BYTES], "little") - _PASS + need) / unit
            found.append((self.terms[i], cosine, self.words[i]))
        if len(self.cache) >= CACHE_WORDS:
            self.cache.clear()  # a bound against hostile input
        self.cache[key] = found
        return found


class SimilarWords:
    """The catalog's words with their vectors, for finding the ones closest in meaning to a query word.

    ``tables``: the word tables of the index's parts; ``known``: every word of
    the catalog as written (the index's surface), for the rule below.
    """

    def __init__(self, tables: Sequence[WordTable], known: Container[str], tuning: Tuning) -> None:
        # Each part's table is looked through on its own, and keeps what it found for a word while the part
        # lives: an index put together after a change finds the unchanged parts' answers there.
        self.tables = [table for table in tables if table.columns]
        self.known = known
        self.tuning = tuning
        self.cache: Dict[str, List[Tuple[str, float, str]]] = {}
        self._joined_words: Dict[str, bool] = {}

    def _joined(self, word: str) -> bool:
        # An identifier joined from words the catalog has ("messagetype",
        # "perpage") is left out: its parts are in, and the whole's vector
        # matched too loosely ("message" -> "messagetype").
        joined = self._joined_words.get(word)
        if joined is None:
            known = self.known
            joined = any(word[:k] in known and word[k:] in known for k in range(2, len(word) - 1))
            if len(self._joined_words) >= 16 * CACHE_WORDS:
                self._joined_words.clear()
            self._joined_words[word] = joined
        return joined

    @property
    def words(self) -> List[str]:
        """The words looked through, sorted."""
        return sorted({w for table in self.tables for w in table.words if not self._joined(w)})

    def matches(self, word: str) -> List[Tuple[str, float, str]]:
        """(term, cosine, catalog word) of the catalog words closest to ``word``, best first, other terms than its own."""
        found = self.cache.get(word)
        if found is not None:
            return found
        found = self._search(word)
        if len(self.cache) >= CACHE_WORDS:
            self.cache.clear()  # a bound against hostile input; a catalog's users repeat few words
        self.cache[word] = found
        return found

    def _search(self, word: str) -> List[Tuple[str, float, str]]:
        vector = _unit_prefix(word, self.tuning.similar_dims) if is_candidate(word) and self.tables else None
        if vector is None:
            return []
        scale = 127.0 / max(map(abs, vector))
        values = array("b", map(round, map(scale.__mul__, vector)))
        unit = 127.0 * scale  # a dot product of the packed values / unit = the cosine
        need = math.ceil(self.tuning.similar_floor * unit)
        own = stem(word)
        best: Dict[str, Tuple[float, str]] = {}
        for table in self.tables:
            for term, cosine, catalog_word in table.passing(word, values, need, unit):
                if term == own or self._joined(catalog_word):
                    continue
                kept = best.get(term)
                # The best cosine per term; of equal ones, the first word in sorted order.
                if kept is None or kept[0] < cosine or (kept[0] == cosine and catalog_word < kept[1]):
                    best[term] = (cosine, catalog_word)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:self.tuning.similar_top]
        return [(term, cosine, catalog_word) for term, (cosine, catalog_word) in ranked]
