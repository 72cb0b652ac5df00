"""Tool search: rank a catalog of tools against what a request says and means.

The modules, from the words up:

* :mod:`~toolscript.search.text`: words, stems, index terms, edit distance,
  idf (also what the suggestion backend and memory read texts with);
* :mod:`~toolscript.search.thesaurus`: other words a request may use, a
  written synonym table and the shipped thesaurus (``data/thesaurus.tsv``);
* :mod:`~toolscript.search.fields`: what is read from a tool;
* :mod:`~toolscript.search.vectors`: the static word-vector table
  (``data/embeddings.bin``) and its tokenizer;
* :mod:`~toolscript.search.toolvectors`: the tools' vectors, packed for one
  query's cosines with all of them at once;
* :mod:`~toolscript.search.similar`: catalog words close in meaning to a
  query word;
* :mod:`~toolscript.search.signals`: the signals besides the words' BM25F
  share and how they are fused into one score;
* :mod:`~toolscript.search.parts`: what an index reads from a run of tools
  (one server's, in the gateway), built once, and the whole catalog's view of
  its parts;
* :mod:`~toolscript.search.index`: :class:`SearchIndex`, which builds on all
  of the above;
* :mod:`~toolscript.search.tuning`: every number the ranking uses.

Importing this package loads only :mod:`~toolscript.search.text`: hooks that
read words (the suggestion backend, memory) never pay for the ranker, which
loads on first use of :class:`SearchIndex`, :data:`SIGNALS` or the tuning.
The vectors data is read only when an index first needs it.
"""

from typing import TYPE_CHECKING, Any

from toolscript.search.text import stem, terms, tokenize

if TYPE_CHECKING:
    from toolscript.search.index import SearchIndex
    from toolscript.search.signals import SIGNALS
    from toolscript.search.tuning import DEFAULT_TUNING, Tuning

__all__ = ["SearchIndex", "SIGNALS", "Tuning", "DEFAULT_TUNING", "tokenize", "stem", "terms"]

_LAZY = {
    "SearchIndex": "toolscript.search.index",
    "SIGNALS": "toolscript.search.signals",
    "Tuning": "toolscript.search.tuning",
    "DEFAULT_TUNING": "toolscript.search.tuning",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
