"""Words: how search, the suggestion backend and memory read a text.

A text's words are its runs of letters and digits, split further at case
changes and between letters and digits (``getFileInfo`` -> get, file, info),
lower-cased.  Its index terms are those words without stopwords and single
letters, reduced by a light suffix stemmer, so the catalog and a query meet on
the same key whatever form either uses (``issues``, ``issue`` -> ``issu``).
Also here: the edit distance and trigrams that typo tolerance uses, and BM25's
idf.  Nothing in this module depends on a catalog or on the tuning.
"""

import math
import re
from functools import lru_cache
from typing import Dict, List, Optional, Set, Tuple

__all__ = ["CHUNK", "STOPWORDS", "tokenize", "split_run", "stem", "terms", "words_with_wholes", "compact",
           "edit_distance", "trigrams", "idf", "is_word_character", "clear_caches"]

# Words are runs of letters and digits; a run is split further at case
# changes ("getFileInfo", "HTTPServer") and between letters and digits.
CHUNK = re.compile(r"[A-Za-z0-9]+")
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NON_WORD = re.compile(r"[^A-Za-z0-9]+")

# Only words that carry no meaning in a tool request.  Kept short on purpose:
# BM25's idf already discounts words that many tools share.
STOPWORDS = frozenset(
    """a an and are as at be been but by can could do does for from has have how i if in into is it its
    me my of on or our please should so that the their them then there these this those to was we what
    when where which while who will with would you your""".split()
)


def tokenize(text: str) -> List[str]:
    """Lower-case words of ``text``, identifiers split into their parts.

    >>> tokenize("getFileInfo read_text-file v1.2 HTTPServer")
    ['get', 'file', 'info', 'read', 'text', 'file', 'v', '1', '2', 'http', 'server']
    """
    words: List[str] = []
    for chunk in CHUNK.findall(text):
        words.extend(split_run(chunk))
    return words


def split_run(chunk: str) -> List[str]:
    """The lower-case words of one run of letters and digits (a match of :data:`CHUNK`)."""
    # Most words are plain lower-case or capitalised and need no regex.
    if chunk.isalpha():
        if chunk.islower():
            return [chunk]
        if chunk[1:].islower():
            return [chunk.lower()]
    elif chunk.isdigit():
        return [chunk]
    return [part.lower() for part in _PART.findall(chunk)]


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light English suffix stripper: plurals, -ed, -ing, a final -e.

    Not a linguistic stemmer; it only has to map the common forms of a word
    onto one key, the same way for the catalog and for the query.

    >>> [stem(w) for w in ("issues", "queries", "branches", "created", "creating", "create", "status")]
    ['issu', 'query', 'branch', 'creat', 'creat', 'creat', 'status']
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) >= 7:  # "listing", not "string"
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) >= 5 and not word.endswith("eed"):  # "added", not "speed"
        word = _undouble(word[:-2])
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    # "committed" -> "committ" -> "commit"; "added" -> "add" stays.
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        return word[:-1]
    return word


def terms(text: str, surface: Optional[Dict[str, str]] = None) -> List[str]:
    """The index terms of ``text``: words without stopwords or single letters, stemmed.

    An identifier split into parts also yields the whole, so "JavaScript"
    meets both "javascript" and "java script"; so does a run of letters and
    digits, whose parts are often single characters that say nothing alone
    ("k8s", "S3").  ``surface``, when given, collects each word as written
    (lower-cased) with its stem.

    >>> terms("Execute JavaScript in the browser")
    ['execut', 'java', 'script', 'javascript', 'browser']
    >>> terms("list_s3_buckets on k8s")
    ['list', 's3', 'bucket', 'k8s']
    """
    out: List[str] = []
    for chunk in CHUNK.findall(text):
        pairs = _chunk_terms(chunk)
        out.extend(term for _, term in pairs)
        if surface is not None:
            surface.update(pairs)
    return out


@lru_cache(maxsize=1 << 16)  # a catalog repeats its words many times over
def _chunk_terms(chunk: str) -> Tuple[Tuple[str, str], ...]:
    """(word, term) for each word of one run of letters and digits."""
    words = split_run(chunk)
    if len(words) > 1:  # "javascript" and "k8s" whole (see terms)
        words.append(chunk.lower())
    return tuple((w, stem(w)) for w in words if len(w) > 1 and w not in STOPWORDS)


def clear_caches() -> None:
    """Forget every word's stem and terms (bench/search.py times builds from a cold start)."""
    stem.cache_clear()
    _chunk_terms.cache_clear()


def words_with_wholes(query: str) -> Tuple[List[str], Set[str]]:
    """tokenize's words of ``query`` with each run of letters and digits also whole ("k8s"); and those wholes."""
    words: List[str] = []
    wholes: Set[str] = set()
    for chunk in CHUNK.findall(query):
        parts = split_run(chunk)
        words.extend(parts)
        if len(parts) > 1 and not chunk.isalpha():
            words.append(chunk.lower())
            wholes.add(chunk.lower())
    return words, wholes


def compact(text: str) -> str:
    """``text`` lower-cased without anything but letters and digits: "search_issues", "Search Issues" -> "searchissues"."""
    return _NON_WORD.sub("", text).lower()


def is_word_character(character: str) -> bool:
    """Whether ``character`` is one :data:`CHUNK` matches (ASCII letters and digits)."""
    return character.isascii() and character.isalnum()


def trigrams(word: str) -> Set[str]:
    """The character trigrams of ``word``, padded so its first and last letters count too."""
    padded = f"  {word} "
    return {padded[i:i + 3] for i in range(len(padded) - 2)}


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) from a to b; limit+1 once past limit."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: List[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], before[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        before, prev = prev, cur
    return prev[-1]


def idf(n: int, df: int) -> float:
    """BM25's idf of a term ``df`` of ``n`` documents have, kept positive for words most of them share."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))
