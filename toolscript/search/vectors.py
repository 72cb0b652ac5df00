"""Static semantic vectors for tool search: a distilled token-embedding table shipped as package data.

``data/embeddings.bin`` (beside this module) holds one small quantised vector (int4, with float scales) per
WordPiece token of a sentence-embedding model's vocabulary (all-MiniLM-L6-v2), distilled at development
time by distill/distill.py and tuned on real tool requests by distill/requests.py (see distill/README.md).  A text's vector is the sum of its tokens' vectors, normalised to unit length: the
scales already carry a per-token weight (frequent words like "the" count little), so the sum is a weighted
mean.  Paraphrases land close together ("take a picture of the page" near "screenshot") without a model
at run time: the tokenizer (BERT basic tokenisation + greedy longest-match WordPiece) and the maths are
stdlib Python.

The table is read on first use only (``import toolscript.search.vectors`` costs nothing, ``--version`` and hooks
never read it), with pkgutil.get_data so it loads from the zipapp as from a checkout.
"""

import math
import pkgutil
import re
import struct
import threading
import unicodedata
from array import array
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

DIM = 256  # vector width; the data file must say the same
DATA = "data/embeddings.bin"  # beside this module
_MAGIC = b"TSVEC\x00\x02\n"
_MAX_WORD = 100  # longer "words" are [UNK] to the teacher's tokenizer too
# camelCase and PascalCase boundaries ("getFileContents", "HTTPRequest"): tool names use them, the
# teacher's uncased tokenizer would glue them into one rare word.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# Summing token vectors is the hot loop of an index build (500 tools: ~15,000 rows of 256 floats, ~0.1 s
# in Python).  So each row is kept as one big integer: 256 fixed-point values (2^-20 resolution), each
# biased to be positive and given 64 bits, side by side.  Adding two such integers adds every field at
# once in C; no field carries into the next while fewer than 2^23 rows are summed (bias 2^40, values far
# below it), and struct unpacks the 64-bit fields in one call.  Integer sums are also exact, so a text's
# vector does not depend on the order of its words' rows.
_FIXED = float(1 << 20)
_BIAS = 1 << 40
_MAX_SUMMED = 1 << 20  # rows added before the fields are unpacked (far from 2^23, where a field would carry)

# int4 rows: each byte holds two values (low nibble first), each stored as value + 8.
_NIBBLES = [((byte & 15) - 8, (byte >> 4) - 8) for byte in range(256)]

_ASCII_WORD = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NAME_SEPARATORS = re.compile(r"[_\-./:]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")

_lock = threading.Lock()
_table: Optional["Table"] = None
_failed = False
loads = 0  # how many times the data file was read (tests: importing or --version must not read it)


class Table:
    """The loaded data: token -> row index, per-row scales, quantised rows, and rows packed for summing on demand."""

    def __init__(self, data: bytes) -> None:
        if data[:8] != _MAGIC:
            raise ValueError("not a toolscript embeddings file")
        dim, bits, count, with_vectors, words_size = struct.unpack_from("<HHIII", data, 8)
        if dim != DIM:
            raise ValueError(f"embeddings file has {dim} dimensions, toolscript.search.vectors expects {DIM}")
        if bits not in (4, 8):
            raise ValueError(f"embeddings file has {bits}-bit rows, toolscript.search.vectors reads 4 or 8")
        offset = 8 + struct.calcsize("<HHIII")
        words = data[offset:offset + words_size].decode("utf-8").split("\n")
        offset += words_size
        column = array("f")
        column.frombytes(data[offset:offset + 4 * dim])
        offset += 4 * dim
        scales = array("f")
        scales.frombytes(data[offset:offset + 4 * with_vectors])
        offset += 4 * with_vectors
        width = dim if bits == 8 else dim // 2
        # A view, not a slice: a copy of 3.6 MB costs a fresh process ~2 ms of page faults, and only the rows
        # of a text's words are ever read (Table.vector).
        body = memoryview(data)[offset:offset + width * with_vectors]
        if len(words) != count or len(scales) != with_vectors or len(body) != width * with_vectors:
            raise ValueError("embeddings file is truncated")
        if struct.pack("<f", 1.0) != array("f", [1.0]).tobytes():
            column.byteswap()  # the file is little-endian
            scales.byteswap()
        # Entries past the rows are for tokenisation only: scale 0 marks "no vector".
        scales.extend([0.0] * (count - with_vectors))
        if bits == 8:
            rows = array("b")
            rows.frombytes(body)
            self.row_bytes: object = rows
        else:
            self.row_bytes = body
        self.bits = bits
        self.width = width
        self.column_fixed = [c * _FIXED for c in column]  # column factors in the packed rows' fixed point
        self.index: Dict[str, int] = dict(zip(words, range(count)))  # in C: the comprehension's loop costs ~1 ms
        self.scales = scales
        self.fields = struct.Struct(f"<{dim}q")
        self.packed: Dict[int, int] = {}
        self.pieces: Dict[str, Tuple[int, ...]] = {}
        self.names: Optional[List[str]] = None

    def vector(self, row: int) -> int:
        """Row ``row`` packed into one integer (see _FIXED and _BIAS); 0 for a token kept for tokenisation only."""
        found = self.packed.get(row)
        if found is not None:
            return found
        scale = self.scales[row]
        value = 0
        if scale > 0.0:
            start = row * self.width
            packed = self.row_bytes[start:start + self.width]  # type: ignore[index]
            levels = packed if self.bits == 8 else [n for byte in packed for n in _NIBBLES[byte]]
            fixed = [_BIAS + int(scale * q * c) for q, c in zip(levels, self.column_fixed)]
            value = int.from_bytes(self.fields.pack(*fixed), "little")
        self.packed[row] = value
        return value


def _load() -> Optional[Table]:
    global _table, _failed, loads
    if _table is not None or _failed:
        return _table
    with _lock:
        if _table is None and not _failed:
            try:
                loads += 1
                data = pkgutil.get_data(__name__.rpartition(".")[0], DATA)
                _table = Table(data or b"")
            except Exception:  # a missing or damaged file means search without vectors, never a crash
                _failed = True
    return _table


def use_table(data: bytes) -> None:
    """Replace the table with ``data`` (bench/vectors.py compares candidate tables; tests load broken ones)."""
    global _table, _failed
    with _lock:
        try:
            _table, _failed = Table(data), False
        except Exception:
            _table, _failed = None, True


def reset() -> None:
    """Forget the table in use: the next use reads the package's data file again."""
    global _table, _failed
    with _lock:
        _table, _failed = None, False


def loaded() -> Optional[Table]:
    """The table in use, without loading one: None before the first use or when it failed to load."""
    return _table


def available() -> bool:
    """Whether the embedding table is present and loadable (reads it on the first call; never raises)."""
    return _load() is not None


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
            or 0x2A700 <= code <= 0x2CEAF or 0xF900 <= code <= 0xFAFF or 0x2F800 <= code <= 0x2FA1F)


def basic_words(text: str) -> List[str]:
    """BERT's basic tokenisation (uncased): clean, split CJK and punctuation, lower-case, strip accents."""
    text = _CAMEL.sub(" ", text)
    if text.isascii():
        # The common case, ~5x faster: in ASCII the rules come down to dropping control characters and
        # splitting runs of letters and digits from single punctuation marks.
        return _ASCII_WORD.findall(_ASCII_CONTROL.sub("", text).lower())
    out = []
    for char in text:
        code = ord(char)
        if code == 0 or code == 0xFFFD:
            continue
        category = unicodedata.category(char)
        if char in " \t\n\r" or category == "Zs":
            out.append(" ")
        elif category in ("Cc", "Cf"):
            continue
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    words = []
    for word in "".join(out).lower().split():
        word = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
        current = ""
        for char in word:
            if _is_punctuation(char):
                if current:
                    words.append(current)
                words.append(char)
                current = ""
            else:
                current += char
        if current:
            words.append(current)
    return words


def _wordpieces(table: Table, word: str) -> Tuple[int, ...]:
    """Greedy longest-match WordPiece row indexes of one word; () when any part is unknown (the word is [UNK])."""
    found = table.pieces.get(word)
    if found is not None:
        return found
    pieces: List[int] = []
    if len(word) <= _MAX_WORD:
        start = 0
        while start < len(word):
            end = len(word)
            row = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                row = table.index.get(piece)
                if row is not None:
                    break
                end -= 1
            if row is None:
                pieces = []
                break
            pieces.append(row)
            start = end
    result = tuple(pieces)
    if len(table.pieces) < 100_000:  # bounded: a catalog's vocabulary is small, hostile input is not
        table.pieces[word] = result
    return result


def rows_of(table: Table, text: str) -> List[int]:
    """Row indexes of the text's known wordpieces that carry a vector, in order."""
    rows: List[int] = []
    for word in basic_words(text):
        rows.extend(r for r in _wordpieces(table, word) if table.scales[r] > 0.0)
    return rows


def tokens(text: str) -> List[str]:
    """The wordpieces ``encode(text)`` sums, in order (for --explain and debugging); [] without the table."""
    table = _load()
    if table is None:
        return []
    names = _names(table)
    return [names[r] for r in rows_of(table, text)]


def _names(table: Table) -> List[str]:
    """Row index -> token, built on the first tokens() call only (encode does not need it)."""
    if table.names is None:
        table.names = [""] * len(table.index)
        for word, row in table.index.items():
            table.names[row] = word
    return table.names


def encode(text: str) -> Optional[List[float]]:
    """The unit-length weighted mean of the text's token vectors; None when no token of it is known."""
    table = _load()
    if table is None:
        return None
    packed = [p for p in map(table.vector, rows_of(table, text)) if p]
    if not packed:
        return None
    if len(packed) <= _MAX_SUMMED:  # always, but for a text of a million words
        fields = table.fields.unpack(sum(packed).to_bytes(table.fields.size, "little"))
        offset = len(packed) * _BIAS
        norm = math.dist(fields, (offset,) * len(fields))  # the length of fields - offset, in C
        if norm == 0.0:
            return None
        scale = 1.0 / norm
        return [(f - offset) * scale for f in fields]
    total = [0] * DIM
    for start in range(0, len(packed), _MAX_SUMMED):
        chunk = packed[start:start + _MAX_SUMMED]
        offset = len(chunk) * _BIAS
        fields = table.fields.unpack(sum(chunk).to_bytes(table.fields.size, "little"))
        total = [t + f - offset for t, f in zip(total, fields)]
    return _unit(total)


def _unit(vector: Sequence[float]) -> Optional[List[float]]:
    norm = math.hypot(*vector)
    if norm == 0.0:
        return None
    scale = 1.0 / norm
    return [x * scale for x in vector]


def encode_many(texts: Sequence[str]) -> List[Optional[List[float]]]:
    """``encode`` of each text, in order."""
    return [encode(text) for text in texts]


_sumprod = getattr(math, "sumprod", None)  # Python 3.12+


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two unit vectors (their dot product); fastest when both are tuples.

    Before Python 3.12 there is no dot product in C, and ``sum(map(mul, a, b))`` takes ~10 us at 256
    dimensions; for unit vectors |a - b|^2 = 2 - 2 a.b, and math.dist runs in C (~2 us), so the hybrid
    ranker can score 500 tools well inside its per-query budget.
    """
    if _sumprod is not None:
        return float(_sumprod(a, b))
    distance = math.dist(a, b)
    return 1.0 - 0.5 * distance * distance


def tool_texts(tool: Mapping[str, Any]) -> List[str]:
    """A tool's texts to encode apart (``encode_texts``): server and name as words, first sentence, description.

    Encoded apart and summed, so a long description does not drown the name, and its first sentence (what
    the tool does) counts twice.  Chosen on the development set (bench/vectors.py --recipe all); search
    adds the parameter names and weighs the parts (toolscript.search.fields.vector_texts).
    """
    name = _NAME_SEPARATORS.sub(" ", f"{tool.get('server') or ''} {tool.get('name') or ''}").strip()
    description = str(tool.get("description") or "").strip()
    first = _SENTENCE_END.split(description, maxsplit=1)[0]
    return [name, first, description]


def encode_texts(texts: Sequence[str], weights: Sequence[float]) -> Optional[List[float]]:
    """The unit vector of ``sum(weight * encode(text))`` over the pairs; None when no text has a known word."""
    total: Optional[List[float]] = None
    done: Dict[str, Optional[List[float]]] = {}
    for text, weight in zip(texts, weights):
        part = done[text] if text in done else done.setdefault(text, encode(text) if text else None)  # often first == whole
        if part is None:
            continue
        part = [weight * x for x in part] if weight != 1.0 else part
        total = part if total is None else [a + b for a, b in zip(total, part)]
    if total is None:
        return None
    norm = math.hypot(*total)
    return [x / norm for x in total] if norm else None
