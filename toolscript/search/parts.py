"""An index part: what search reads from a run of a catalog's tools, built once.

A :class:`~toolscript.search.index.SearchIndex` is made of parts.  The
gateway builds one per server when the server's tool list arrives or
changes, and the index over the whole catalog from the parts in catalog
order (``SearchIndex.from_parts``), so a change to one server reads only
that server's tools again.  A part holds what depends on its own tools
alone: each tool's terms per field (with the fields they occur in, in the
order BM25F adds them up) and its field lengths, its words as written, its
vector, its parameter names, whether it only reads.  What depends on the
whole catalog -- how many tools have a term (BM25's idf) and each field's
average length (BM25's length normalisation) -- the index sums from its
parts' counts, term by term as queries need them; ranking and scores are
the same as an index built from all the tools at once.

The slow work a part does for a query word is kept on the part (its words
close in meaning, its words within a typo), so a new index over a changed
catalog still has the other parts' answers.
"""

from typing import Any, Dict, List, Optional, Set, Tuple

from toolscript.search import signals
from toolscript.search.fields import index_fields, parameter_names
from toolscript.search.similar import CACHE_WORDS, WordTable
from toolscript.search.text import compact, edit_distance, idf, trigrams
from toolscript.search.toolvectors import PackedVectors, tool_vectors
from toolscript.search.tuning import DEFAULT_TUNING, Tuning

__all__ = ["IndexPart", "CatalogTerms", "CatalogIdf", "CatalogWords", "CatalogCosines", "CatalogExact", "CatalogParameters"]

# The field positions a term occurs at in one tool, once per occurrence: few distinct tuples, shared.
_Occurrences = Tuple[int, ...]


class IndexPart:
    """Search's reading of ``tools`` (dicts as :class:`SearchIndex` takes them), for any index of the same tuning.

    Never changed once built, but for caches of query words' answers, so
    one part may serve several indexes and concurrent searches.
    """

    def __init__(
        self,
        tools: List[Dict[str, Any]],
        *,
        semantic: bool = True,
        vector_cache: Optional[Dict[str, Optional[List[float]]]] = None,
        tuning: Tuning = DEFAULT_TUNING,
    ) -> None:
        # semantic=False, or no vectors data: words only.  vector_cache: an
        # earlier part's ``vector_cache`` ({tool texts: vector}), so only the
        # tools that changed are encoded again (same tool_text_weights).
        self.tuning = tuning
        self.tools = [t for t in tools if isinstance(t, dict)]
        self.ids = [str(t.get("id") or f"{t.get('server', '')}__{t.get('name', '')}") for t in self.tools]
        position = {name: k for k, name in enumerate(name for name, _, _ in tuning.fields)}
        surface: Dict[str, str] = {}
        # term -> {tool: the field positions it occurs at}, tools in order.
        self.occurrences: Dict[str, Dict[int, _Occurrences]] = {}
        self.lengths: List[Tuple[int, ...]] = []  # per tool, each field's length in terms
        sums = [0] * len(position)
        shared: Dict[_Occurrences, _Occurrences] = {}
        for i, tool in enumerate(self.tools):
            length = [0] * len(position)
            found: Dict[str, List[int]] = {}
            for field, words in index_fields(tool, surface).items():
                k = position[field]
                length[k] = len(words)
                sums[k] += len(words)
                for word in words:
                    at = found.get(word)
                    if at is None:
                        found[word] = [k]
                    else:
                        at.append(k)
            for word, at in found.items():
                fields = tuple(at)
                fields = shared.setdefault(fields, fields)
                row = self.occurrences.get(word)
                if row is None:
                    self.occurrences[word] = {i: fields}
                else:
                    row[i] = fields
            self.lengths.append(tuple(length))
        self.length_sums = tuple(sums)
        self.surface = surface  # word as written -> its term
        # Words as written that a typo may be meant for; their trigram index is built on the first misspelt query.
        self.typo_words = [w for w in surface if len(w) > 3 and w.isalpha()]
        self._by_trigram: Optional[Dict[str, List[str]]] = None
        self._near: Dict[Tuple[str, int], List[Tuple[str, float]]] = {}
        self.vector_cache: Dict[str, Optional[List[float]]] = {}
        self.vectors = tool_vectors(self.tools, vector_cache or {}, self.vector_cache, tuning.tool_text_weights) if semantic else None
        self.packed = PackedVectors(self.vectors) if self.vectors else None
        # With the vectors data, the words close in meaning to a query word are looked for here too.
        self.words = WordTable(surface, tuning.similar_dims) if self.vectors is not None else None
        server_numbers: Dict[str, int] = {}
        self.server_of = [server_numbers.setdefault(str(t.get("server") or ""), len(server_numbers)) for t in self.tools]
        self.servers = list(server_numbers)  # in order of first appearance
        self.reads_only = [signals.reads_only(t) for t in self.tools]
        # Compacted parameter name -> the tools that take it, in order.
        self.tools_taking: Dict[str, List[int]] = {}
        self.exact: Dict[str, List[int]] = {}
        for i, t in enumerate(self.tools):
            for name in parameter_names([t]):
                self.tools_taking.setdefault(name, []).append(i)
            for key in {compact(str(t.get("name", ""))), compact(self.ids[i])}:
                if key:
                    self.exact.setdefault(key, []).append(i)

    def __len__(self) -> int:
        return len(self.tools)

    @property
    def semantic(self) -> bool:
        """Whether this part was built with the vectors (the data was there and it has tools)."""
        return self.vectors is not None

    def near_words(self, word: str, limit: int) -> List[Tuple[str, float]]:
        """This part's words as written within ``limit`` edits of ``word``, with a similarity in 0..1, in no order."""
        key = (word, limit)
        known = self._near.get(key)
        if known is None:
            if len(self._near) >= CACHE_WORDS:
                self._near.clear()  # a bound against hostile queries; misspellings repeat little
            known = self._near[key] = self._find_near_words(word, limit)
        return known

    def _find_near_words(self, word: str, limit: int) -> List[Tuple[str, float]]:
        by_trigram = self._by_trigram
        if by_trigram is None:
            # Two threads may both get here; each builds the same index and
            # the last assignment wins, so no lock is needed.
            by_trigram = {}
            for w in self.typo_words:
                for g in trigrams(w):
                    by_trigram.setdefault(g, []).append(w)
            self._by_trigram = by_trigram
        grams = trigrams(word)
        shared: Dict[str, int] = {}
        for g in grams:
            for w in by_trigram.get(g, ()):
                shared[w] = shared.get(w, 0) + 1
        near: List[Tuple[str, float]] = []
        for w, count in shared.items():
            # Words within two edits share at least a third of their trigrams;
            # this keeps the edit distances to compute few.
            if 3 * count < len(grams):
                continue
            distance = edit_distance(word, w, limit)
            if distance <= limit:
                near.append((w, 1.0 - distance / max(len(word), len(w))))
        return near


# -- the whole catalog's view of its parts -------------------------------------------
#
# An index over parts answers what a query asks of the whole catalog from its
# parts, and keeps each answer for the next query: nothing is worked out for a
# term, a name or a parameter no query asked about.  Each answer is what an
# index of all the tools at once would hold (the same floats, summed in the
# same order, tools in the same order).


Run = Tuple[IndexPart, int]  # a part and the index of its first tool in the whole catalog


class CatalogTerms:
    """term -> {tool index: BM25F pseudo term frequency} over all parts, each row made on its first use.

    A row needs each field's average length in the whole catalog, so it
    cannot be made before the catalog is known: here it is made from the
    parts' field positions and lengths, adding each occurrence's share in the
    order an index of all the tools adds them.
    """

    def __init__(self, runs: List[Run], fields: Tuple[Tuple[str, float, float], ...], average: Dict[str, float]) -> None:
        self._runs = runs
        self._fields = [(weight, b, average[name]) for name, weight, b in fields]
        self._rows: Dict[str, Dict[int, float]] = {}
        # Term -> how many tools have it, as queries ask; the catalog's terms only, and a bounded
        # number of terms it lacks (misspellings, the thesaurus's words), so the map stays bounded.
        self._df: Dict[str, int] = {}
        self._lacking: Set[str] = set()

    def df(self, term: str) -> int:
        """How many tools have ``term``."""
        known = self._df.get(term)
        if known is not None:
            return known
        if term in self._lacking:
            return 0
        known = 0
        for part, _ in self._runs:
            row = part.occurrences.get(term)
            if row:
                known += len(row)
        if known:
            self._df[term] = known
        else:
            if len(self._lacking) >= 4 * CACHE_WORDS:
                self._lacking.clear()
            self._lacking.add(term)
        return known

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and (term in self._rows or self.df(term) > 0)

    def __getitem__(self, term: str) -> Dict[int, float]:
        row = self.get(term)
        if row is None:
            raise KeyError(term)
        return row

    def get(self, term: str, default: Any = None) -> Any:
        row = self._rows.get(term)
        if row is not None:
            return row
        fields = self._fields
        row = {}
        for part, offset in self._runs:
            found = part.occurrences.get(term)
            if not found:
                continue
            lengths = part.lengths
            for i, at in found.items():
                length = lengths[i]
                tf = 0.0
                for k in at:
                    weight, b, average = fields[k]
                    tf += weight / (1.0 - b + b * length[k] / average)
                row[offset + i] = tf
        if not row:
            return default
        self._rows[term] = row  # two threads may both make it: the same row, the last one kept
        return row


class CatalogIdf(Dict[str, float]):
    """term -> its idf in the whole catalog, worked out on first use; a KeyError for a term no tool has."""

    def __init__(self, terms: CatalogTerms, n: int) -> None:
        super().__init__()
        self._terms = terms
        self._n = n

    def __missing__(self, term: str) -> float:
        df = self._terms.df(term)
        if not df:
            raise KeyError(term)
        value = self[term] = idf(self._n, df)
        return value


class CatalogWords:
    """Every part's words as written -> their terms (``in``, ``[]``): the catalog's surface."""

    def __init__(self, parts: List[IndexPart]) -> None:
        self._surfaces = [part.surface for part in parts]
        self._all = self._surfaces[0].keys() if len(parts) == 1 else set().union(*self._surfaces)

    def __contains__(self, word: object) -> bool:
        return word in self._all

    def __getitem__(self, word: str) -> str:
        for surface in self._surfaces:
            term = surface.get(word)
            if term is not None:
                return term
        raise KeyError(word)


class CatalogCosines:
    """The cosines of a query vector with every tool's (tool index -> cosine), in one pass over all the parts' vectors."""

    def __init__(self, runs: List[Run]) -> None:
        packs = [(part.packed, offset) for part, offset in runs if part.packed is not None]
        # One part's pack serves as it is; several are joined column by column (the packing's slow
        # part, rounding every value, each part did once), so a query costs one pass, not one per part.
        self._packed = packs[0][0] if len(packs) == 1 and packs[0][1] == 0 else PackedVectors.joined(packs)

    def cosines(self, query: List[float]) -> Dict[int, float]:
        return self._packed.cosines(query)


class CatalogExact:
    """A compacted name or id -> the tools it names exactly, in order (``get``)."""

    def __init__(self, runs: List[Run]) -> None:
        self._runs = runs

    def get(self, key: str, default: Any = None) -> Any:
        out: List[int] = []
        for part, offset in self._runs:
            found = part.exact.get(key)
            if found:
                out.extend(offset + i for i in found)
        return out or default


class CatalogParameters:
    """A compacted parameter name -> the set of tools that take it (``in``, ``[]``), made on first use."""

    def __init__(self, runs: List[Run]) -> None:
        self._runs = runs
        self._names = set().union(*(part.tools_taking for part, _ in runs))
        self._sets: Dict[str, Set[int]] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __getitem__(self, name: str) -> Set[int]:
        known = self._sets.get(name)
        if known is None:
            known = set()
            for part, offset in self._runs:
                for i in part.tools_taking.get(name, ()):
                    known.add(offset + i)  # in tool order, as an index of all the tools adds them
            if not known:
                raise KeyError(name)
            self._sets[name] = known
        return known
