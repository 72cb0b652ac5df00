"""SearchIndex: rank a catalog of tools against a natural-language query.

An index is built once per catalog change and then answers queries from
memory.  The ranking is BM25F: every tool is a document with weighted fields
(:mod:`toolscript.search.fields`), and a query word's matches in all fields
are added up into one term frequency before BM25's saturation, so a word in
the name counts for more than the same word in a long description.  A query
word also looks up, each at a discount so that a literal match always counts
more: the catalog words it is probably a misspelling of (sharing character
trigrams, within one or two edits: ``serach isues`` finds ``search_issues``),
the words of the synonym table and the thesaurus
(:mod:`toolscript.search.thesaurus`), and, with the vectors data, catalog
words close to it in meaning (:mod:`toolscript.search.similar`).  A query
that *is* a tool's name (``search_issues``, ``github__search_issues``) ranks
that tool first with score 1.  With the vectors data, the words are fused
with the cosine of the query's vector and each tool's
(:mod:`toolscript.search.signals`); without it, ranking and scores are the
words' alone.

What a score means: the word part is the tool's BM25F score divided by the
score of an ideal tool for the query -- one that has every query word, each
about twice (say in its name and its description).  Every query word weighs
by its rarity (idf), and a word no tool contains weighs as much as the
rarest word, since no tool can explain it.  So it is, roughly, the share of
the query that the tool accounts for: about 1 when the tool's name and
description say what the query says, about 0.5 when the description covers
most of it, and below 0.3 when only a common word or two matched.  With the
vectors, the score is half that share plus half the cosine mapped onto 0..1
(0 at cosine 0.2 or less, 1 at 0.9 or more), the share then weighing each
word by its idf to the power 1.75 (a word many tools share explains less;
the vectors tell those tools apart): a tool that says the query's words
*and* means it scores near 1, words or meaning alone about half; the other
signals add small shares on top.  A threshold of 0.3 keeps plausible tools
and drops most noise (bench/search.py measures both).  Scores are capped at
1; results are ordered by the uncapped score, then by id, so the order is
deterministic.  ``search(explain=True)`` shows each signal's part of the
score.  The numbers are in :mod:`toolscript.search.tuning`.
"""

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from toolscript.search import signals, thesaurus
from toolscript.search.parts import (CatalogCosines, CatalogExact, CatalogIdf, CatalogParameters, CatalogTerms, CatalogWords,
                                     IndexPart)
from toolscript.search.signals import SIGNALS
from toolscript.search.similar import CACHE_WORDS, SimilarWords, is_candidate, similar_weight
from toolscript.search.text import STOPWORDS, compact, idf, stem, terms, tokenize, words_with_wholes
from toolscript.search.tuning import DEFAULT_TUNING, Tuning

__all__ = ["SearchIndex"]


class SearchIndex:
    """An in-memory BM25F index over one catalog of tools.

    Each tool is a dict ``{"id": "server__tool", "server", "name", "title"?,
    "description"?, "inputSchema"?}``.  Building is linear in the catalog's
    text; the index never changes afterwards (but for what it keeps of the
    queries it answered), so one instance may serve concurrent searches.
    Build a new one when the catalog changes: ``SearchIndex(tools)``, or
    ``SearchIndex.from_parts(parts)`` from :class:`~toolscript.search.parts.IndexPart`
    objects of which only the changed ones are new.
    """

    def __init__(
        self,
        tools: List[Dict[str, Any]],
        *,
        semantic: bool = True,
        vector_cache: Optional[Dict[str, Optional[List[float]]]] = None,
        tuning: Tuning = DEFAULT_TUNING,
    ) -> None:
        # semantic=False, or no vectors data: words only (BM25F and friends).
        # vector_cache: the previous index's ``vector_cache`` ({tool texts:
        # vector}), so a catalog change re-encodes only the tools that changed
        # (valid for an index of the same tuning's tool_text_weights).
        self._assemble([IndexPart(tools, semantic=semantic, vector_cache=vector_cache, tuning=tuning)], tuning)

    @classmethod
    def from_parts(cls, parts: Sequence[IndexPart], tuning: Optional[Tuning] = None) -> "SearchIndex":
        """The index of the parts' tools, in the parts' order: it ranks and scores as ``SearchIndex(all their tools)``.

        Cheap next to building the parts: what depends on the whole catalog
        is worked out as queries need it (:mod:`toolscript.search.parts`).
        The parts must have been built with ``tuning``'s fields, tool text
        weights and similar-words dimensions (the default: the first part's tuning).
        """
        parts = list(parts)
        tuning = tuning if tuning is not None else parts[0].tuning if parts else DEFAULT_TUNING
        for part in parts:
            if (part.tuning.fields, part.tuning.tool_text_weights, part.tuning.similar_dims) != (
                    tuning.fields, tuning.tool_text_weights, tuning.similar_dims):
                raise ValueError("an index part was built with another tuning's fields, tool text weights or similar_dims")
        index = cls.__new__(cls)
        index._assemble(parts, tuning)
        return index

    def _assemble(self, parts: List[IndexPart], tuning: Tuning) -> None:
        self.tuning = tuning
        self._parts = parts
        self._fields = {name: (weight, b) for name, weight, b in tuning.fields}
        runs = []
        self._tools: List[Dict[str, Any]] = []
        self._ids: List[str] = []
        for part in parts:
            runs.append((part, len(self._tools)))
            self._tools += part.tools
            self._ids += part.ids
        n = len(self._tools)
        average = {name: (sum(part.length_sums[k] for part in parts) / n if n else 0.0) or 1.0
                   for k, (name, _, _) in enumerate(tuning.fields)}
        # term -> {tool index: BM25F pseudo term frequency}.  Field weights and
        # length normalisation do not depend on the query: folded in once per term.
        self._postings = CatalogTerms(runs, tuning.fields, average)
        self._idf = CatalogIdf(self._postings, n)
        self._unknown_idf = idf(n, 0)
        # Catalog words as written, for typo correction (each part keeps its words' trigram index).
        self._surface = CatalogWords(parts)
        # A misspelt word's near words are wanted twice per query (the words' lookups
        # and the vectors' corrected query): computed once per word.
        self._near: Dict[str, List[Tuple[str, float]]] = {}
        self._vectors = any(part.vectors for part in parts)
        # The tools' vectors packed for one query's cosines with every tool at once.
        self._packed = CatalogCosines(runs) if self._vectors else None
        # The catalog's words with their vectors, when the vectors data is there.
        self._similar = SimilarWords([part.words for part in parts if part.words is not None], self._surface, tuning) if self._vectors else None
        self._rare = max(2, int(tuning.similar_rare * n))
        self._naming = signals.server_naming_terms(self._tools, self._postings, tuning.naming_purity)
        # Words as written and whole names that name a server where its stems do not.
        self._naming_words = signals.server_naming_words(self._tools, self._postings, self._naming, tuning.naming_purity)
        self._whole_names = signals.whole_server_names(self._tools)
        # The run-together names of servers named by two or more words: one query word says them whole.
        self._run_together = {w for w, servers in self._whole_names.items() if any(len(tokenize(s)) > 1 for s in servers)}
        # Each tool's server as a number 0 .. _servers - 1 (see signals.server_shares).
        server_numbers: Dict[str, int] = {}
        self._server_of: List[int] = []
        for part in parts:
            numbers = [server_numbers.setdefault(server, len(server_numbers)) for server in part.servers]
            self._server_of += [numbers[k] for k in part.server_of]
        self._servers = len(server_numbers)
        self._reads_only = [reads for part in parts for reads in part.reads_only]
        self._reading = [i for i, reads in enumerate(self._reads_only) if reads]
        self._server_names = [tool.get("server") for tool in self._tools]  # as a tool gives it, for filters by server
        self._exact = CatalogExact(runs)
        # Compacted parameter name -> the tools that take it: the names for _names_parameters,
        # the tools for _parameter_coverage.
        self._tools_taking = self._parameter_names = CatalogParameters(runs)

    @property
    def vector_cache(self) -> Dict[str, Optional[List[float]]]:
        """{tool texts: vector} of this index's tools, for the next index (see ``vector_cache`` above)."""
        if len(self._parts) == 1:
            return self._parts[0].vector_cache
        merged: Dict[str, Optional[List[float]]] = {}
        for part in self._parts:
            merged.update(part.vector_cache)
        return merged

    @property
    def parts(self) -> List[IndexPart]:
        """The parts this index is made of, in order."""
        return list(self._parts)

    def __len__(self) -> int:
        return len(self._tools)

    def search(
        self,
        query: str,
        *,
        limit: int = 3,
        threshold: float = 0.0,
        servers: Optional[List[str]] = None,
        explain: bool = False,
        semantic: bool = True,
    ) -> List[Dict[str, Any]]:
        """The best ``limit`` tools for ``query``, best first, each scoring at least ``threshold``.

        Each result is ``{"id", "server", "name", "score", "description"}``
        with ``score`` in 0..1 rounded to 3 places (see the module docstring
        for what it means).  ``servers``, when not None, keeps only tools of
        those servers.  An empty or blank query finds nothing.  ``explain``
        adds ``"signals"``: each signal's contribution to the score
        (see :data:`~toolscript.search.signals.SIGNALS`), unrounded; they add up to the score before
        it is capped at 1 and rounded.  ``semantic=False`` ranks and scores
        by the words as written alone, without the vectors, similar words or
        the thesaurus (for callers whose thresholds were calibrated on those
        word scores); an index built without vectors still uses the thesaurus.
        """
        if not isinstance(query, str) or not query.strip() or limit <= 0:
            return []
        tuning = self.tuning
        allowed = None if servers is None else set(servers)
        named = self._named_servers(query) if semantic and self._vectors else frozenset()
        names_parameters = self._names_parameters(query)
        # A query by parameter names ("calendarId timeMin") names no server by
        # the words inside them: their tools are not told apart without them.
        set_apart = named if named and not names_parameters else frozenset()
        cosines = self._semantic(query, set_apart) if semantic else {}
        if not cosines:
            named = set_apart = frozenset()  # words alone rank as they did before the vectors
        # Fused with the vectors, a word weighs by its rarity to a power (Tuning.fused_idf_power).
        power = tuning.fused_idf_power if cosines else 1.0
        lexical, by_signal, exact = self._lexical(query, explain, similar=semantic, idf_power=power, named=set_apart)
        scale = tuning.identifier_vector_scale if cosines and names_parameters else 1.0
        fused = signals.fuse(lexical, cosines, tuning, scale)
        extras = self._extras(query, bool(cosines), names_parameters)
        if cosines and not named and not names_parameters and tuning.server_weight:
            # The server as a whole (signals.server_shares); only tools already in fused gain it, below.
            # Not for a query that names a server (the named share says that already) or parameters.
            shares = signals.server_shares(cosines, self._server_of, self._servers, tuning)
            server_of = self._server_of
            extras["server"] = {i: shares[server_of[i]] for i in fused if shares[server_of[i]]} if any(shares) else {}
        for part in extras.values():
            for i, value in part.items():
                if i in fused:
                    fused[i] += value
        server_names = self._server_names
        if named:
            bonus = tuning.named_server_bonus
            for i in fused:
                if server_names[i] in named:
                    fused[i] += bonus
        results = []
        for tool_id, score, i in self._ranked(fused, exact, limit, threshold, allowed):
            tool = self._tools[i]
            description = tool.get("description")
            result = {
                "id": tool_id,
                "server": tool.get("server"),
                "name": tool.get("name"),
                "score": score,
                "description": description if isinstance(description, str) else "",
            }
            if explain:
                parts = self._contributions(i, by_signal, cosines, i in exact, scale)
                if tool.get("server") in named:
                    parts["named_server"] = tuning.named_server_bonus
                for name, part in extras.items():
                    if i in part:
                        parts[name] = part[i]
                result["signals"] = {name: parts[name] for name in SIGNALS if name in parts}
            results.append(result)
        return results

    def _ranked(
        self, fused: Dict[int, float], exact: Sequence[int], limit: int, threshold: float, allowed: Optional[Set[str]],
    ) -> List[Tuple[str, float, int]]:
        """The best ``limit`` of ``fused`` as (id, score, tool index): the tools named exactly first, in id order, with
        score 1; then by the uncapped score and id, each score (capped at 1, rounded) above 0 and at least ``threshold``.

        Only the few best are rounded and sorted: a score never rises as the uncapped score falls,
        so past the first tool that fails the threshold every later one fails it too.
        """
        ids, server_names = self._ids, self._server_names
        if allowed is not None:
            fused = {i: value for i, value in fused.items() if server_names[i] in allowed}
        named_exactly = set(exact).intersection(fused)
        out = [(ids[i], 1.0, i) for i in named_exactly if 1.0 >= threshold]
        out.sort(key=lambda found: (found[0], found[2]))
        wanted = limit - len(out)
        if wanted <= 0:
            return out[:limit]
        # Enough of the highest uncapped scores to fill the results past the exact names (ties all in).
        values = sorted(fused.values(), reverse=True)
        if len(values) > wanted + len(named_exactly):
            least = values[wanted + len(named_exactly) - 1]
            best = [(-value, ids[i], i) for i, value in fused.items() if value >= least and i not in named_exactly]
        else:
            best = [(-value, ids[i], i) for i, value in fused.items() if i not in named_exactly]
        best.sort()
        for negated, tool_id, i in best[:wanted]:
            # Rounded before the threshold applies, so it cuts where the scores shown do.
            score = round(min(1.0, -negated), 3)
            if not (score > 0.0 and score >= threshold):
                break
            out.append((tool_id, score, i))
        return out

    def _lexical(
        self, query: str, explain: bool = False, similar: bool = True, idf_power: float = 1.0,
        named: frozenset = frozenset(),
    ) -> Tuple[Dict[int, float], Dict[str, Dict[int, float]], Sequence[int]]:
        """The word-based share of ``query`` each tool accounts for (uncapped), per signal when ``explain``, and exact names.

        The share is the tool's BM25F score over the ideal tool's (see the
        module docstring); tools a query names exactly are in the result
        with at least 0.  ``idf_power``: each word's idf is raised to it,
        in the score and the ideal alike.  ``named``: the servers the query
        names (search passes them with the vectors); a word naming one of
        them counts the same for each of its tools (see _evened).
        """
        k1 = self.tuning.k1
        k1_plus_1 = k1 + 1
        lookups, ideal, _ = self._lookups(query, similar, idf_power)
        raw: Dict[int, float] = {}
        by_signal: Dict[str, Dict[int, float]] = {}
        for term, (weight, signal) in lookups.items():
            rarity = self._idf[term] ** idf_power * weight
            parts = by_signal.setdefault(signal, {}) if explain else None
            postings = self._postings[term]
            if named and self._naming.get(term, frozenset()) & named:
                postings = self._evened(postings, named)
            if parts is not None:
                for i, tf in postings.items():
                    value = rarity * tf * (k1 + 1) / (tf + k1)
                    raw[i] = raw.get(i, 0.0) + value
                    parts[i] = parts.get(i, 0.0) + value
            elif not raw:
                # The first term's values are the sums so far (0.0 + value is value): one pass in C.
                raw = {i: rarity * tf * k1_plus_1 / (tf + k1) for i, tf in postings.items()}
            else:
                so_far = raw.get
                for i, tf in postings.items():
                    raw[i] = so_far(i, 0.0) + rarity * tf * k1_plus_1 / (tf + k1)
        # A query that is a tool's name puts that tool first, whatever the words say.
        exact = self._exact.get(compact(query), ())
        for i in exact:
            raw.setdefault(i, 0.0)
        if not ideal:
            return {i: 0.0 for i in raw}, {}, exact
        shares = {i: value / ideal for i, value in raw.items()}
        return shares, {name: {i: v / ideal for i, v in part.items()} for name, part in by_signal.items()}, exact

    def _evened(self, postings: Dict[int, float], named: frozenset) -> Dict[int, float]:
        """``postings`` of a word naming a server, with each of the ``named`` servers' tools at the least of theirs.

        Every tool of a named server has the server's name, and the named
        share already counts it: a tool whose description repeats the name
        should not gain more of the word share for it.
        """
        evened = dict(postings)
        for server in named:
            mine = [i for i in postings if self._tools[i].get("server") == server]
            if mine:
                least = min(postings[i] for i in mine)
                for i in mine:
                    evened[i] = least
        return evened

    def _semantic(self, query: str, named: frozenset = frozenset()) -> Dict[int, float]:
        """Cosine of the query's vector with each tool's; empty without vectors data or a known query word.

        ``named``: the servers the query names; their tools' cosines are told
        apart by the query without its server-naming words (see _within_named).
        """
        if not self._vectors or not any(len(w) > 1 and w not in STOPWORDS for w in tokenize(query)):
            return {}  # stopwords alone ("the of a") mean nothing, whatever their vectors say
        from toolscript.search import vectors

        text = self._as_corrected(query)
        wanted = vectors.encode(text)
        if wanted is None:
            return {}
        cosines = self._packed.cosines(wanted)  # type: ignore[union-attr]
        if named:
            self._within_named(cosines, text, named)
        return cosines

    def _within_named(self, cosines: Dict[int, float], text: str, named: frozenset) -> None:
        """Among each named server's tools, move each cosine toward how the query without its naming words ranks them.

        The words naming a server pull, in the query's vector, toward the
        tools whose texts say the product most, not the action ("kick off the
        nightly jenkins job" got get_view, not build_item).  Each tool's
        distance from its server's mean cosine becomes, by
        Tuning.name_words_set_apart, its distance from the mean for the query
        without those words; the mean stays, so the named server's tools
        stand against other servers' as before.  Not all the way: the product
        word gives the action words their sense ("note ... from my gmail" is
        an email).
        """
        from toolscript.search import vectors

        kept = [w for w in text.split() if stem(w) not in self._naming and w not in self._naming_words and w not in self._run_together]
        if not any(len(w) > 1 and w not in STOPWORDS for w in kept) or len(kept) == len(text.split()):
            return  # the query is its server's name alone, or names none by a word of its own
        action = vectors.encode(" ".join(kept))
        if action is None:
            return
        without = self._packed.cosines(action)  # type: ignore[union-attr]
        share = self.tuning.name_words_set_apart
        for server in named:
            mine = [i for i in cosines if self._tools[i].get("server") == server]
            if not mine:
                continue
            shift = sum(cosines[i] - without[i] for i in mine) / len(mine)
            for i in mine:
                cosines[i] += share * (without[i] + shift - cosines[i])

    def _named_servers(self, query: str) -> frozenset:
        """The servers ``query`` names by a word that (nearly) only their tools have ("in notion", "airtable"), or whole.

        Empty when it names every server of the catalog: the share would then
        move every score and no ranking.
        """
        named: Set[str] = set()
        for term in terms(query):
            named.update(self._naming.get(term, ()))
        words = tokenize(query)
        longest = self.tuning.max_name_words
        for k, word in enumerate(words):
            named.update(self._naming_words.get(word, ()))
            if word in self._run_together:
                named.update(s for s in self._whole_names[word] if len(tokenize(s)) > 1)
            # Two or more words run together: a one-word server's name too ("hugging face").
            for n in range(2, longest + 1):
                named.update(self._whole_names.get("".join(words[k:k + n]), ()) if k + n <= len(words) else ())
        return frozenset(named) if len(named) < self._servers else frozenset()

    def _extras(self, query: str, fused_with_vectors: bool, names_parameters: bool) -> Dict[str, Dict[int, float]]:
        """Signal -> {tool index: what it adds to the fused score} for the shares added after the fusion.

        With the vectors only (words alone rank as before): a query by
        parameter names gives the tools that take them Tuning.parameter_coverage_bonus
        times their share of those names; a question gives each tool that
        only reads Tuning.question_read_bonus.  ``names_parameters``: the query's
        _names_parameters, which search has computed already.
        """
        if not fused_with_vectors:
            return {}
        tuning = self.tuning
        if names_parameters:
            coverage = self._parameter_coverage(query)
            return {"parameters": {i: tuning.parameter_coverage_bonus * share for i, share in coverage.items()}}
        if tuning.question_read_bonus and signals.is_question(query):
            return {"question_read": {i: tuning.question_read_bonus for i in self._reading}}
        return {}

    def _parameter_coverage(self, query: str) -> Dict[int, float]:
        """Tool index -> the share of ``query``'s parameter names the tool takes, each weighed by its rarity (idf).

        Only identifiers that are some tool's parameter name count; a name
        every tool of a family takes ("project_id") weighs little, one that
        only the wanted tool takes ("label_id" with "label_data") decides.
        """
        n = len(self._tools)
        # Sorted: a set's order follows the process's hash seed, and float sums follow the order.
        wanted = sorted({compact(chunk) for chunk in signals.identifiers(query)})
        weights = {name: idf(n, len(self._tools_taking[name])) for name in wanted if name in self._tools_taking}
        total = sum(weights.values())
        if not total:
            return {}
        coverage: Dict[int, float] = {}
        for name, weight in weights.items():
            for i in self._tools_taking[name]:
                coverage[i] = coverage.get(i, 0.0) + weight / total
        return coverage

    def _vector_scale(self, query: str) -> float:
        """Tuning.identifier_vector_scale when ``query`` names parameters (see _names_parameters), else 1."""
        return self.tuning.identifier_vector_scale if self._names_parameters(query) else 1.0

    def _names_parameters(self, query: str) -> bool:
        """Whether ``query`` has an identifier (snake_case, camelCase) that is some tool's parameter name.

        A snake_case or camelCase word that no tool takes as a parameter (a
        tool's name, "node_modules") does not make a query one by parameters.
        """
        return any(compact(chunk) in self._parameter_names for chunk in signals.identifiers(query))

    @property
    def semantic(self) -> bool:
        """Whether this index ranks with the vectors as well as the words."""
        return bool(self._vectors)

    def _contributions(
        self, i: int, by_signal: Dict[str, Dict[int, float]], semantic: Dict[int, float], exact: bool, vector_scale: float = 1.0,
    ) -> Dict[str, float]:
        """Each signal's share of tool ``i``'s fused score, in :data:`SIGNALS` order (``vector_scale`` as fuse's)."""
        tuning = self.tuning
        weight = tuning.lexical_weight + tuning.vector_weight * (1.0 - vector_scale) if semantic else 1.0
        parts = {name: by_signal[name][i] * weight for name in SIGNALS if i in by_signal.get(name, {})}
        if i in semantic:
            parts["vector"] = signals.vector_share(semantic[i], tuning) * vector_scale
        if exact:
            parts["exact_name"] = 1.0  # alone enough for the top score
        return parts

    def explain_terms(self, query: str, semantic: bool = True) -> List[Dict[str, Any]]:
        """What ``query`` looks up: ``{"term", "signal", "weight", "idf"}`` per index term, in lookup order.

        ``idf`` is the term's rarity in this catalog; ``weight`` the discount
        its signal puts on it (1 for a word as written); ``fused_idf``, when
        the search fuses the words with the vectors, the idf it weighs the
        term by there (idf ** Tuning.fused_idf_power).  A ``similar_words``
        lookup also has ``from`` (the query word), ``word`` (the catalog word
        as written; ``term`` is its stem) and ``cosine`` (of their vectors).
        ``semantic=False``: the lookups of a words-only search.
        """
        if not isinstance(query, str) or not query.strip():
            return []
        lookups, _, origins = self._lookups(query, semantic)
        # When search fuses the words with the vectors, each idf counts raised to Tuning.fused_idf_power.
        fused = semantic and bool(self._semantic(query))
        out = []
        for term, (weight, signal) in lookups.items():
            entry: Dict[str, Any] = {"term": term, "signal": signal, "weight": round(weight, 4), "idf": round(self._idf[term], 4)}
            if fused:
                entry["fused_idf"] = round(self._idf[term] ** self.tuning.fused_idf_power, 4)
            if signal == "similar_words":
                word, catalog_word, cosine = origins[term]
                entry.update({"from": word, "word": catalog_word, "cosine": round(cosine, 4)})
            out.append(entry)
        return out

    def _lookups(
        self, query: str, similar: bool = True, idf_power: float = 1.0,
    ) -> Tuple[Dict[str, Tuple[float, str]], float, Dict[str, Tuple[str, str, float]]]:
        """The index terms to look up for ``query``, each with its weight and signal; the ideal score (its
        words' idf raised to ``idf_power``); and for each similar-words lookup, the query word it stands for,
        the catalog word as written and their cosine."""
        tuning = self.tuning
        literal: Dict[str, float] = {}
        extra: Dict[str, Tuple[float, str]] = {}
        origins: Dict[str, Tuple[str, str, float]] = {}
        ideal = 0.0
        gain = tuning.ideal_tf * (tuning.k1 + 1) / (tuning.ideal_tf + tuning.k1)
        # A run of letters and digits ("k8s", "s3") is also read whole, here as in the catalog's terms and the
        # thesaurus: its parts are single characters that count for nothing.
        query_words, wholes = words_with_wholes(query)
        words = [w for w in query_words if len(w) > 1 and w not in STOPWORDS]
        stems = [stem(w) for w in words]
        similar_words = self._similar if similar else None
        # Scores a caller calibrated on the words alone (semantic=False: the suggestion hook's floor) stay as
        # they were: the thesaurus lifts loosely related tools' scores too.
        table = thesaurus.load() if similar else {}
        rare: List[Tuple[int, int, str]] = []  # (tools that have it, position, query word) to look for similar words of

        def add(term: str, weight: float, signal: str) -> bool:
            # A term reached two ways is looked up once, at the higher weight.
            if term not in extra or extra[term][0] < weight:
                extra[term] = (weight, signal)
                return True
            return False

        for word, term in zip(words, stems):
            corrections: List[Tuple[str, float]] = []
            if word in wholes and term not in self._postings:
                # One no tool has ("a1b2c3") is an id, not a misspelling: its parts are the query's words.
                for synonym in table.get(term, ()):
                    add(synonym, tuning.thesaurus_weight, "synonym")
                continue
            if term in self._postings:
                literal[term] = literal.get(term, 0.0) + 1.0  # a repeated word counts again
                ideal += self._idf[term] ** idf_power * gain
            else:
                corrections = self._correct(word)
                for fixed, similarity in corrections:
                    add(fixed, tuning.fuzzy_weight * similarity, "typo")
                # A misspelt word is worth what its correction is worth; a word
                # no tool has, as much as the rarest word.
                ideal += (self._idf[corrections[0][0]] if corrections else self._unknown_idf) ** idf_power * gain
            for synonym, kind in thesaurus.SYNONYMS.get(term, {}).items():
                add(synonym, tuning.abbreviation_weight if kind == thesaurus.ABBREVIATION else tuning.related_weight, "synonym")
            for synonym in table.get(term, ()):
                add(synonym, tuning.thesaurus_weight, "synonym")
            # A word within an edit or two of a catalog word is a misspelling
            # of it; its vector would be the vector of its broken wordpieces.
            # A word many tools have is matched already; its neighbours in
            # meaning would add noise (and time).
            if similar_words is not None and not corrections and is_candidate(word):
                tools_with_it = self._postings.df(term)
                if tools_with_it <= self._rare:
                    rare.append((tools_with_it, len(rare), word))
        # The rarest few only: each new word costs a pass over the catalog's
        # words, and a long query's rarest words carry most of its meaning.
        for _, _, word in sorted(rare)[:tuning.similar_per_query]:
            for found, cosine, catalog_word in similar_words.matches(word):  # type: ignore[union-attr]
                if add(found, similar_weight(cosine, tuning), "similar_words"):
                    origins[found] = (word, catalog_word, cosine)
        for a, b in zip(stems, stems[1:]):
            extra[a + b] = (1.0, "joined_words")  # "web search" meets the joined name part "websearch"
            for synonym in table.get(a + b, ()):  # "response time" stands for "latency"
                add(synonym, tuning.thesaurus_weight, "synonym")
        lookups = {t: w for t, w in extra.items() if t in self._postings and t not in literal}
        lookups.update((t, (w, "bm25")) for t, w in literal.items())
        return lookups, ideal, origins

    def _as_corrected(self, query: str) -> str:
        """``query`` with each misspelt word replaced by the catalog word it is closest to, for the vectors.

        The words' ranking already reads "isues" as "issues"; the vectors would
        read it as the wordpieces "is" + "##ues", and the query's vector would
        then be "search" alone -- pulling every search tool above
        ``search_issues``.  A word the vectors' vocabulary has whole is a real
        word, not a misspelling, and keeps its own meaning there: "stack" is
        not "slack", "altitude" not "latitude", "three" not "tree" (the words'
        lookups still try the correction, at a discount).
        """
        out = []
        for word in tokenize(query):
            if len(word) > 1 and word not in STOPWORDS and stem(word) not in self._postings:
                near = self._near_words(word)
                if near and not _known_whole(word):
                    word = near[0][0]
            out.append(word)
        return " ".join(out)

    def _correct(self, word: str) -> List[Tuple[str, float]]:
        """Catalog terms ``word`` is probably a misspelling of, most similar first, with a similarity in 0..1."""
        found: Dict[str, float] = {}
        for w, similarity in self._near_words(word):
            term = self._surface[w]
            found[term] = max(found.get(term, 0.0), similarity)
        return sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[:self.tuning.max_corrections]

    def _near_words(self, word: str) -> List[Tuple[str, float]]:
        """Catalog words as written within ``word``'s typo limit, most similar first, with a similarity in 0..1."""
        known = self._near.get(word)
        if known is None:
            if len(self._near) >= CACHE_WORDS:
                self._near.clear()  # a bound against hostile queries; misspellings repeat little
            known = self._near[word] = self._find_near_words(word)
        return known

    def _max_typos(self, word: str) -> int:
        # Short words are left alone: "bake" is one letter from "base" and "make",
        # and a corrected short word is more often a wrong guess than a fix.
        one, two = self.tuning.typo_lengths
        return 0 if len(word) < one else 1 if len(word) < two else 2

    def _find_near_words(self, word: str) -> List[Tuple[str, float]]:
        limit = self._max_typos(word)
        if not limit:
            return []
        found: Dict[str, float] = {}
        for part in self._parts:
            for w, similarity in part.near_words(word, limit):
                found[w] = similarity  # a word several parts have is as near in each
        return sorted(found.items(), key=lambda ws: (-ws[1], ws[0]))


def _known_whole(word: str) -> bool:
    """Whether the vectors' vocabulary has ``word`` as one token with a vector (not pieced together)."""
    from toolscript.search import vectors

    return vectors.tokens(word) == [word]
