"""How the store ranks memories for a query: words first, then neighbours, meaning and time over the best few.

``ranked`` runs the steps over what the store's index gave (it reads only
the pool's dates and vectors); the rest are pure functions:

1. **Words.**  Each query word (FTS5's porter analysis, the store's one
   analyzer) brings its newest ``CANDIDATES_PER_TERM`` memories; a memory
   scores the idf-weighted share of the query's words it has (0..1).  A rare
   word's synonyms (tool search's thesaurus: "staging" for "pre-production")
   count in its place where it is missing, at RELATED_WEIGHT of their weight.
   A name the query asks about ("John", written capitalised) weighs more
   where it is a memory's first word: its speaker ("John: I ...") or its
   subject, rather than someone talking to or of them.
2. **The pool.**  The best ``POOL`` memories by that share go on; the rest
   keep their order behind them.  Where the pool cuts memories of equal
   share (a name alone finds every turn its speaker said), the closest in
   meaning of their newest ``CUT_MEANING`` go on, not merely the newest.
   Everything below costs per pool row, so a search's work stays bounded at
   any store size.
3. **Neighbours.**  A memory next to one that matches (the previous or next
   memory of the project: the question before an answer, the failed test
   before the fix) shares its relevance: an answer rarely repeats the words
   of the question it answers.  After a question (a "?" near its end), twice.
   A turn of the person the query names shares what their turn an exchange
   before or after (the other's reply between) has beyond it: one thread.
4. **Meaning.**  The cosine of the memory's stored vector (the static
   embedding table of tool search, computed when the memory was added) with
   the query's: a paraphrase that shares no word but a name still ranks.
5. **Time.**  A question about the latest or the first of something
   ("when did we last deploy", "what was the first error") prefers the newer
   or the older of memories that fit about as well; one that names a date or
   a month ("on May 3, 2023", "in March 2026") prefers memories recorded
   around it.
"""

import math
import re
from typing import Any, Collection, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from toolscript.memory import vectorcodec

__all__ = ["ranked", "lexical", "related_terms", "names_asked", "rerank", "time_preference", "POOL", "RARE"]

# Every weight was chosen on the development sets (bench/memory_eval/README.md).
POOL = 200  # the best this-many by words are reranked (300: no better, and slower)
NEIGHBOR_WEIGHT = 0.35  # of the previous memory's word share
NEXT_SHARE = 0.5  # the next memory's share counts half: an answer follows its question
ANSWER_SHARE = 2.0  # and the previous one's twice when it asks something: this memory is likely its answer
MEANING_WEIGHT = 0.3  # of the cosine with the query
TIME_WEIGHT = 0.25  # how far the latest (or first) of the close matches moves up
TIME_BAND = 0.8  # close: at least this share of the best score (0.85 when the idf counted the whole store)
DATE_WEIGHT = 0.3  # for a memory recorded around a date the question names
RELATED_WEIGHT = 0.3  # a synonym's weight, of the word it stands for
CUT_MEANING = 300  # where the pool cuts a group of equal word share, this many of its newest are chosen from by meaning
CONTINUE_SHARE = 0.7  # of what the same speaker's turn an exchange before or after has beyond this one's share
LABEL_WEIGHT = 0.2  # a memory whose first word is a name the query asks about (its speaker)

# "when did we last deploy", "the latest error", "what was the first thing that failed"; not "last week".
_LATEST = re.compile(r"\b(?:latest|newest|most recent(?:ly)?|recently|last(?!\s+(?:%s)\b))\b")
_EARLIEST = re.compile(r"\b(?:first|earliest|oldest|initially|originally)\b")
_UNITS = "night|evening|morning|day|days|week|weekend|weeks|month|months|year|years|summer|winter|spring|fall|autumn|" \
         "monday|tuesday|wednesday|thursday|friday|saturday|sunday|time|one|two|few|couple"
_LATEST = re.compile(_LATEST.pattern % _UNITS)


def idf(df: int, total: int) -> float:
    """BM25's inverse document frequency, never negative: rare words weigh more."""
    return math.log(1.0 + (max(total, df) - df + 0.5) / (df + 0.5))


def lexical(matched: Mapping[int, int], dfs: Sequence[int], total: int,
            related: Sequence[Tuple[int, float]] = (), labels: int = 0) -> Tuple[Dict[int, float], List[Tuple[float, int]]]:
    """(share by mask, [(score, mask)] best first): the idf-weighted share of the query's words each mask holds.

    A word no memory contains (df 0) says nothing about which memory fits: it
    stays out of the whole, or a prompt's new words would sink every score.
    ``related``: for the terms past the query's own words, (the word they stand
    for, their discount): such a term counts in its word's place, discounted,
    where the word itself is missing.  ``labels``: the last this-many terms
    are names the query asks about, found as a memory's first word (its
    speaker or subject: "John: ..."); such a memory scores LABEL_WEIGHT more
    (in the order only: the share, which neighbours take, stays the words').
    """
    weights = [idf(df, total) if df else 0.0 for df in dfs[:len(dfs) - labels]]
    own = len(weights) - len(related)
    label_bits = sum(1 << i for i in range(len(weights), len(dfs)))
    groups: Dict[int, List[Tuple[int, float]]] = {}  # a word with synonyms -> (bit, weight) of it and of each
    for i, (word, factor) in enumerate(related, own):
        groups.setdefault(word, [(word, weights[word])]).append((i, factor * weights[i]))
    alone = [(i, weights[i]) for i in range(own) if i not in groups]
    whole = (sum(w for _, w in alone) + sum(max(w for _, w in group) for group in groups.values())) or 1.0
    by_mask: Dict[int, float] = {}
    for mask in set(matched.values()):
        got = sum(w for i, w in alone if mask >> i & 1)
        for group in groups.values():
            got += max((w for i, w in group if mask >> i & 1), default=0.0)
        by_mask[mask] = min(1.0, got / whole)
    return by_mask, sorted(((score + (LABEL_WEIGHT if mask & label_bits else 0.0), mask) for mask, score in by_mask.items()),
                           reverse=True)


def ranked(conn: Any, query: str, matched: Dict[int, int], dfs: Sequence[int], total: int, *,
           vectors: bool, related: Sequence[Tuple[int, float]] = (), labels: int = 0) -> Iterator[Tuple[int, float]]:
    """(rowid, score 0..1) best first over ``matched`` (rowid -> mask of the query words it has; ``dfs``: each word's count).

    ``conn``: the store's SQLite connection, for the pool's dates and
    vectors; ``vectors``: whether the store keeps meaning vectors;
    ``related`` and ``labels``: the terms past the query's own words (``lexical``).
    """
    by_mask, masks = lexical(matched, dfs, total, related, labels)
    label_bits = sum(1 << i for i in range(len(dfs) - labels, len(dfs)))
    groups: Dict[int, List[int]] = {}
    for rowid, mask in matched.items():
        groups.setdefault(mask, []).append(rowid)
    wanted = vectorcodec.query(query) if vectors and MEANING_WEIGHT else None
    cosines: Dict[int, float] = {}
    pool: List[int] = []
    for _, mask in masks:
        group = sorted(groups[mask], reverse=True)  # newest first on ties
        room = POOL - len(pool)
        if len(group) > room and wanted is not None and CUT_MEANING:
            # The pool cuts this group: of its newest CUT_MEANING, the closest in meaning go on.
            group = group[:CUT_MEANING]
            cosines.update(_cosines(conn, wanted, group))
            group.sort(key=lambda rowid: -cosines.get(rowid, -1.0))
        pool.extend(group[:room])
        if len(pool) >= POOL:
            break
    # Word shares of the pool and its neighbours only: a common word can match thousands of rows.
    share: Dict[int, float] = {}
    for rowid in pool:
        for near in (rowid - 2, rowid - 1, rowid, rowid + 1, rowid + 2):
            has = matched.get(near)
            if has is not None:
                share[near] = by_mask[has]
    created: Dict[int, float] = {}
    prefer = time_preference(query)
    spans = dates_asked(query)
    if prefer or spans:
        for start in range(0, len(pool), 500):
            chunk = pool[start:start + 500]
            for rowid, when in conn.execute(f"SELECT id, created FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk):
                created[int(rowid)] = float(when)
    if wanted is not None:
        cosines.update(_cosines(conn, wanted, [rowid for rowid in pool if rowid not in cosines]))
    # The ids before and after: in a project's stream of work, almost always its previous and next memory.
    neighbors = {rowid: (rowid - 1, rowid + 1) for rowid in pool}
    asks = _questions(conn, [rowid - 1 for rowid in pool])
    labelled = {rowid for rowid in pool if matched[rowid] & label_bits}
    # The same person's turns one exchange before and after (the other's reply between): one thread of theirs.
    continues = {rowid: tuple(other for other in (rowid - 2, rowid + 2)
                              if matched.get(other, 0) & label_bits == matched[rowid] & label_bits)
                 for rowid in labelled}
    reranked = rerank(pool, share, neighbors=neighbors, cosines=cosines, created=created, prefer=prefer, spans=spans,
                      asks=asks, labelled=labelled, continues=continues)
    rest = ((rowid, round(score, 4)) for score, mask in masks for rowid in sorted(groups[mask], reverse=True))
    return merged(reranked, rest)


_QUERY_WORD = re.compile(r"[^\W_]+")  # the store's query words (store.query_terms)
RARE = 100  # a query word found in at most this many memories also looks for its synonyms (their newest this-many)
_MAX_RELATED = 6  # synonyms searched per query, at most (in the query's order; 12: no better, and slower)


def related_terms(query: str, terms: Sequence[str], dfs: Sequence[int]) -> List[Tuple[str, int]]:
    """(a word stem to search as a prefix, the index in ``terms`` of the word it stands for), from search's synonyms.

    Developer shorthand and its meaning ("env" / "environment"), words that
    stand for one another ("delete" / "remove") and the thesaurus of tool
    search ("pre-production" / "staging"): a memory says it its own way.
    """
    if not RELATED_WEIGHT:
        return []
    from toolscript.search import thesaurus  # the prompt hook's process imports it only here
    from toolscript.search.text import stem

    stems = [stem(t) for t in terms]
    seen = set(stems)
    out: List[Tuple[str, int]] = []
    index = {t: i for i, t in enumerate(terms)}
    words = _QUERY_WORD.findall((query or "").lower())
    # A word that finds many memories is matched already: its synonyms would add noise, and time.
    keys: List[Tuple[str, int]] = [(s, i) for i, s in enumerate(stems) if dfs[i] <= RARE]
    # Two words the thesaurus knows as one ("pre-production", "code review").
    keys += [(stem(first + second), index[first]) for first, second in zip(words, words[1:])
             if first in index and second in index and min(dfs[index[first]], dfs[index[second]]) <= RARE]
    for key, word in keys:
        for other in list(thesaurus.SYNONYMS.get(key, {})) + list(thesaurus.lookup(key)):
            prefix = other[:-1] if other.endswith("y") else other  # porter: "deploy" is indexed as "deploi"
            if len(prefix) >= 4 and prefix not in seen and other not in seen:
                seen.add(prefix)
                out.append((prefix, word))
        if len(out) >= _MAX_RELATED:
            break
    return out[:_MAX_RELATED]


_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][^\W\d_]*)\b")
_MAX_NAMES = 3  # looked up as first words per query, at most: a pasted traceback's class names cost a query each


def names_asked(query: str, terms: Sequence[str]) -> List[int]:
    """The indices in ``terms`` of the words ``query`` writes as names: capitalised, not opening a sentence.

    A memory that opens with one ("John: I started boxing") is by or about
    that person: the store looks for them as a memory's first word.
    """
    index = {t: i for i, t in enumerate(terms)}
    found: List[int] = []
    for word in _NAME.findall((query or "").strip()):
        i = index.get(word.lower())
        if i is not None and i not in found:
            found.append(i)
    return found[:_MAX_NAMES]


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH = r"(%s|%s)\.?" % ("|".join(_MONTHS), "|".join(m[:3] for m in _MONTHS if m != "may"))
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?%s,?\s+(\d{4})\b" % _MONTH)
_MONTH_DAY_YEAR = re.compile(r"\b%s\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b" % _MONTH)
_MONTH_YEAR = re.compile(r"\b%s,?\s+(\d{4})\b" % _MONTH)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
DAY = 86400.0
# A memory is recorded when the work is done or told of: from a little before the date a question names to
# a couple of weeks after ("last week I ..." is said after the event).
DATE_BEFORE, DATE_AFTER = 3 * DAY, 14 * DAY


def dates_asked(query: str) -> List[Tuple[float, float]]:
    """The spans of time (epoch seconds, UTC) of the calendar dates and months ``query`` names, widened as above."""
    import calendar

    text = (query or "").lower()
    spans: List[Tuple[float, float]] = []

    def month_number(name: str) -> int:
        return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(name.rstrip(".")[:3]))

    def day_span(year: int, month: int, day: int) -> None:
        try:
            start = float(calendar.timegm((year, month, day, 0, 0, 0)))
        except (ValueError, OverflowError):
            return
        if 1 <= month <= 12 and 1 <= day <= 31:
            spans.append((start - DATE_BEFORE, start + DAY + DATE_AFTER))

    for day, month, year in _DAY_MONTH_YEAR.findall(text):
        day_span(int(year), month_number(month), int(day))
    for month, day, year in _MONTH_DAY_YEAR.findall(text):
        day_span(int(year), month_number(month), int(day))
    for year, month, day in _ISO_DAY.findall(text):
        day_span(int(year), int(month), int(day))
    if not spans:
        for month, year in _MONTH_YEAR.findall(text):
            number = month_number(month)
            start = float(calendar.timegm((int(year), number, 1, 0, 0, 0)))
            end = float(calendar.timegm((int(year) + number // 12, number % 12 + 1, 1, 0, 0, 0)))
            spans.append((start - DATE_BEFORE, end + DATE_AFTER))
    return spans


def _cosines(conn: Any, wanted: Sequence[int], ids: Sequence[int]) -> Dict[int, float]:
    """{id: cosine with the query's vector} for those of ``ids`` that have a stored vector."""
    out: Dict[int, float] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        stored = conn.execute(f"SELECT id, vector FROM memory_vectors WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        out.update(vectorcodec.cosines(wanted, stored.fetchall()))
    return out


def _questions(conn: Any, ids: Sequence[int]) -> Set[int]:
    """Which of ``ids`` are questions (a "?" near their end): the memory after one is likely its answer."""
    asks: Set[int] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        rows = conn.execute(f"SELECT id, substr(content, -60) FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        asks.update(int(rowid) for rowid, tail in rows if "?" in str(tail))
    return asks


def time_preference(query: str) -> int:
    """+1 when the query asks for the latest of something, -1 for the first, 0 otherwise."""
    text = (query or "").lower()
    latest, earliest = bool(_LATEST.search(text) or "last time" in text), bool(_EARLIEST.search(text))
    return 0 if latest == earliest else (1 if latest else -1)


def rerank(
    pool: Sequence[int],
    share: Mapping[int, float],
    *,
    neighbors: Mapping[int, Tuple[Optional[int], Optional[int]]],
    cosines: Mapping[int, float],
    created: Mapping[int, float],
    prefer: int = 0,
    spans: Sequence[Tuple[float, float]] = (),
    asks: Collection[int] = (),
    labelled: Collection[int] = (),
    continues: Optional[Mapping[int, Sequence[int]]] = None,
) -> List[Tuple[int, float]]:
    """(rowid, score 0..1) best first over ``pool``; ``share`` holds every matched row's word share.

    ``neighbors``: a pool row's previous and next memory ids in its project;
    ``labelled``: the rows that open with a name the query asks about;
    ``continues``: for those, the same speaker's turns an exchange before and after;
    ``cosines``: meaning similarity for the rows that have a vector;
    ``created``: when each pool row was made (for ``prefer``).
    """
    if not pool:
        return []
    raw = []
    for rowid in pool:
        before, after = neighbors.get(rowid, (None, None))
        previous = share.get(before, 0.0) if before else 0.0
        if before in asks:
            previous *= ANSWER_SHARE
        # The same speaker's turn an exchange away counts for what it has beyond this one: equal small talk lifts nothing.
        went_on = max((share.get(other, 0.0) for other in (continues or {}).get(rowid, ())), default=0.0) - share.get(rowid, 0.0)
        near = max(previous, NEXT_SHARE * (share.get(after, 0.0) if after else 0.0), CONTINUE_SHARE * went_on)
        raw.append((share.get(rowid, 0.0) + NEIGHBOR_WEIGHT * near + MEANING_WEIGHT * max(0.0, cosines.get(rowid, 0.0))
                    + (LABEL_WEIGHT if rowid in labelled else 0.0), rowid))
    if spans and DATE_WEIGHT:
        # A question that names a date or a month: memories recorded around it fit better.
        raw = [(score + (DATE_WEIGHT if any(a <= created.get(rowid, -1.0) <= b for a, b in spans) else 0.0), rowid)
               for score, rowid in raw]
    if prefer and TIME_WEIGHT and created:
        # Among the memories that fit about as well as the best, the latest (or the first) moves up.
        best = max(score for score, _ in raw)
        close = sorted((r for score, r in raw if score >= TIME_BAND * best), key=lambda r: created.get(r, 0.0),
                       reverse=prefer > 0)
        span = float(max(1, len(close) - 1))
        bonus = {r: TIME_WEIGHT * (1.0 - i / span) for i, r in enumerate(close)}
        raw = [(score + bonus.get(rowid, 0.0), rowid) for score, rowid in raw]
    raw.sort(key=lambda p: (-p[0], -p[1]))
    # Ordered by the sum; reported capped at 1.0, so a memory with every query word still says 1.0.
    return [(rowid, round(min(1.0, score), 4)) for score, rowid in raw]


def merged(reranked: Sequence[Tuple[int, float]], rest: Iterable[Tuple[int, float]]) -> Iterator[Tuple[int, float]]:
    """The reranked pool first, then every other candidate in its word order (scores capped under the pool's last)."""
    seen = set()
    floor = reranked[-1][1] if reranked else 1.0
    for item in reranked:
        seen.add(item[0])
        yield item
    for rowid, score in rest:
        if rowid not in seen:
            yield rowid, min(score, floor)
