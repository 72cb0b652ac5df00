"""Every number search ranks by, in one place.

:data:`DEFAULT_TUNING` is what the product uses.  A caller that measures
another value (bench/search.py's grids, a test that switches a signal off)
passes its own to :class:`~toolscript.search.index.SearchIndex`::

    SearchIndex(tools, tuning=dataclasses.replace(DEFAULT_TUNING, question_read_bonus=0.0))

Each value was chosen by measurement on the development sets
(bench/search/sets/); bench/search/README.md tells how, and what else was tried.
"""

from dataclasses import dataclass
from typing import Tuple

__all__ = ["Tuning", "DEFAULT_TUNING"]


@dataclass(frozen=True)
class Tuning:
    """The constants of search's ranking; see the module docstring."""

    # -- words: BM25F over a tool's fields ---------------------------------
    # (field, weight, BM25 length normalisation b).  The name says what the tool does; parameter
    # descriptions are long and mostly about formats; the server name is on every tool of its server.
    fields: Tuple[Tuple[str, float, float], ...] = (
        ("name", 2.0, 0.3),
        ("server", 1.5, 0.0),
        ("title", 2.0, 0.3),
        ("description", 1.0, 0.75),
        ("params", 0.5, 0.5),
        ("param_docs", 0.5, 0.75),
    )
    k1: float = 1.2  # BM25's term frequency saturation
    ideal_tf: float = 2.0  # the ideal tool's term frequency for every query word (a score's denominator)

    # -- other words for a query word ---------------------------------------
    abbreviation_weight: float = 0.9  # a word developer shorthand stands for ("repo" -> repository)
    related_weight: float = 0.4  # a related word ("remove" -> delete): below a literal match
    thesaurus_weight: float = 0.5  # a catalog word the thesaurus says a query word may stand for

    # -- typos --------------------------------------------------------------
    # A word shorter than the first length is never corrected, shorter than the second by one edit, else by two.
    typo_lengths: Tuple[int, int] = (5, 8)
    fuzzy_weight: float = 0.8  # a corrected word's weight, times its similarity to the query word
    max_corrections: int = 3  # catalog words tried for one misspelt query word

    # -- similar words: catalog words close in meaning to a query word ------
    similar_floor: float = 0.4  # the least word-vector cosine at which two words are taken to mean the same
    similar_top: int = 2  # catalog words one query word is matched to, at most (0: no similar words)
    similar_rare: float = 0.02  # only query words at most this share of the tools have (or 2 tools) look
    similar_weight: float = 0.8  # the lookup weight at cosine 1, falling linearly to 0 at the floor
    similar_dims: int = 128  # leading vector dimensions words are compared on (the packing holds 128 at most)
    similar_per_query: int = 5  # query words that look for similar words, the rarest first

    # -- meaning: the vectors fused with the words --------------------------
    # Weights of a tool vector's texts: server and name, first sentence, description, parameter names.
    tool_text_weights: Tuple[float, ...] = (2.0, 1.0, 1.0, 0.25)
    lexical_weight: float = 0.5  # the word share's weight in the fused score
    vector_weight: float = 0.5  # the vectors' weight in the fused score
    vector_floor: float = 0.2  # a cosine at or below this adds nothing (unrelated texts still point alike a little)
    vector_ceiling: float = 0.9  # a cosine at or above this adds the vectors' whole weight
    vector_alone: float = 0.45  # the least cosine for a tool no query word reaches to be listed at all
    vector_alone_with_words: float = 0.25  # ...when some query word reaches some tool (not gibberish)
    fused_idf_power: float = 1.75  # fused with the vectors, a query word's idf is raised to this

    # -- a query that names a server -----------------------------------------
    named_server_bonus: float = 0.15  # what each tool of a server the query names gains
    naming_purity: float = 0.8  # the least share of the tools saying a word of a server's name that are its own
    name_words_set_apart: float = 0.6  # how far a named server's tools' cosines move toward the query without its name
    max_name_words: int = 3  # a server's name said whole is looked for in runs of up to this many query words

    # -- a query by parameter names, a question -------------------------------
    identifier_vector_scale: float = 0.3  # the vectors' weight is multiplied by this for a query naming parameters
    parameter_coverage_bonus: float = 0.3  # times the idf-weighed share of the query's parameter names a tool takes
    question_read_bonus: float = 0.15  # what a tool that only reads gains when the query is a question

    # -- a server as a whole ---------------------------------------------------
    server_weight: float = 0.04  # the most a tool gains from its server's standing (0: off)
    server_temperature: float = 0.02  # softmax temperature over the servers' mean cosines
    server_tools: int = 3  # a server's standing is the mean cosine of its best this many tools


DEFAULT_TUNING = Tuning()
