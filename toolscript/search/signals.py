"""The signals a score is made of besides the words' BM25F share, and how they are fused.

With the vectors data (:mod:`toolscript.search.vectors`), a tool's score is
the word share and the cosine of the query's vector with the tool's, blended
(:func:`fuse`), plus shares that tell apart tools the two alike find:

* a query that names a server ("add a line to my obsidian journal") wants
  that product's tool, but the vectors rank by what the rest of the query
  means and another server's tool can mean it better ("a table": airtable's
  create_table over notion's data sources).  Each tool of a named server
  gains Tuning.named_server_bonus.  A word names a server when it is a word
  of the server's name and nearly only that server's tools say it
  (:func:`server_naming_terms`: "notion", "playwright" do; "time", "fetch",
  "search" do not), or is such a word as written where only its stem is
  shared ("plane" against "plan", :func:`server_naming_words`), or is its
  whole name run together or apart ("browsertools", "hugging face",
  :func:`whole_server_names`).  Among the named server's tools the naming
  words say nothing about which tool is wanted, so they are set apart
  there (SearchIndex._within_named, SearchIndex._evened);
* a query with an identifier that is some tool's parameter name
  ("parent_task_id", "timeMin") asks by parameters: the vectors read an
  identifier as loose wordpieces, so they weigh less
  (Tuning.identifier_vector_scale), and a tool gains for the share of those
  names it takes, each weighed by its rarity (the one name only the wanted
  tool takes tells apart a family's tools that take the rest);
* a question ("which jobs are running?") wants a tool that only reads
  (:func:`is_question`, :func:`reads_only`): get_x and create_x match a
  question's words alike and the vectors barely tell their verbs apart;
* a request whose meaning is spread over a server's tools ("check the inbox
  over imap") lifts that server's tools a little (:func:`server_shares`).

:data:`SIGNALS` names each part, as ``--explain`` shows them.
"""

import math
import re
from typing import Any, Dict, List, Optional, Protocol, Set, Tuple

from toolscript.search.fields import tool_text
from toolscript.search.text import is_word_character, split_run, stem, terms, tokenize
from toolscript.search.tuning import Tuning

__all__ = ["SIGNALS", "server_naming_terms", "server_naming_words", "whole_server_names", "identifiers",
           "is_question", "reads_only", "vector_share", "fuse", "server_shares"]

# The named signals a score is made of, in the order --explain shows them:
# query words found as written (BM25F), words reached through the synonym
# table, typo corrections, adjacent query words joined ("web search" meets
# "websearch"), catalog words close in meaning to a query word, the whole
# texts' vectors, a query that names the tool's server, and a query that is
# a tool's name; with the vectors also the parameter names a query gives
# that a tool takes, a question meeting a tool that only reads, and the
# tool's server as a whole.
SIGNALS = (
    "bm25", "synonym", "typo", "joined_words", "similar_words", "vector", "parameters", "question_read",
    "named_server", "server", "exact_name",
)


# -- a query that names a server ----------------------------------------------


class Postings(Protocol):
    """What the server-naming signals read of an index's postings: a term's row of {tool index: term frequency}."""

    def get(self, term: str) -> Optional[Dict[int, float]]: ...


def server_naming_terms(tools: List[Dict[str, Any]], postings: Postings, purity: float) -> Dict[str, frozenset]:
    """Index term -> the servers a query naming it names: a term of a server's name at least ``purity`` of
    whose tools (in any field) are that server's."""
    servers_of: Dict[str, Set[str]] = {}
    for server in _servers_in_order(tools):
        for term in terms(server):
            servers_of.setdefault(term, set()).add(server)
    naming: Dict[str, frozenset] = {}
    for term, servers in servers_of.items():
        having = postings.get(term)
        if not having:
            continue
        on_them = sum(1 for i in having if tools[i].get("server") in servers)
        if on_them >= purity * len(having):
            naming[term] = frozenset(servers)
    return naming


def server_naming_words(
    tools: List[Dict[str, Any]], postings: Postings, naming: Dict[str, frozenset], purity: float,
) -> Dict[str, frozenset]:
    """A word of a server's name as written -> the servers it names, for a word whose stem names none.

    "plane" stems to "plan", which test plans and pricing plans say too; the
    word "plane" itself only plane's tools say.  Same ``purity``, on the word.
    """
    servers = sorted({str(t["server"]) for t in tools if isinstance(t.get("server"), str) and t["server"]})
    texts: Dict[int, Tuple[str, str]] = {}  # tool index -> its text as written and lower-cased, for the tools looked at
    out: Dict[str, Set[str]] = {}
    for server in servers:
        for word in tokenize(server):
            having = postings.get(stem(word))
            if len(word) < 3 or stem(word) in naming or not having:
                continue
            mine = [i for i in having if tools[i].get("server") == server]
            # Other servers' tools first: past this many saying the word, it cannot be pure (a word every
            # tool of a big catalog has, "tools" or "data", is given up after a few tools, not tokenized in all).
            allowed = (1.0 - purity) / purity * len(mine)
            others = 0
            for i in having:
                if tools[i].get("server") != server and _says(tools, i, word, texts):
                    others += 1
                    if others > allowed:
                        break
            if others > allowed:
                continue
            on_them = sum(1 for i in mine if _says(tools, i, word, texts))
            if on_them and on_them >= purity * (on_them + others):
                out.setdefault(word, set()).add(server)
    return {w: frozenset(s) for w, s in out.items()}


def _says(tools: List[Dict[str, Any]], i: int, word: str, texts: Dict[int, Tuple[str, str]]) -> bool:
    """Whether tool ``i``'s texts have ``word`` as written (a word of tokenize); ``texts`` keeps each tool's text."""
    known = texts.get(i)
    if known is None:
        text = tool_text(tools[i])
        known = texts[i] = (text, text.lower())
    text, lowered = known
    # Only the runs of letters and digits the word is found in are split into words, not the whole text.
    at = lowered.find(word)
    while at >= 0:
        start, end = at, at + len(word)
        while start > 0 and is_word_character(text[start - 1]):
            start -= 1
        while end < len(text) and is_word_character(text[end]):
            end += 1
        if word in split_run(text[start:end]):
            return True
        at = lowered.find(word, at + 1)
    return False


def whole_server_names(tools: List[Dict[str, Any]]) -> Dict[str, frozenset]:
    """A server's name with its words run together ("browsertools", "huggingface") -> the servers of that name.

    A name said whole is specific whatever its words' purity; one word that
    is a one-word server's whole name ("time", "fetch") still names it only
    by the purity of :func:`server_naming_terms`.
    """
    out: Dict[str, Set[str]] = {}
    for server in _servers_in_order(tools):
        out.setdefault("".join(tokenize(server)), set()).add(server)
    return {w: frozenset(s) for w, s in out.items()}


def _servers_in_order(tools: List[Dict[str, Any]]) -> List[str]:
    """The tools' servers (non-empty names), each once, in order of first appearance: their words are read once."""
    return list(dict.fromkeys(server for server in (tool.get("server") for tool in tools) if isinstance(server, str) and server))


# -- a query by parameter names -------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z0-9]+_[A-Za-z0-9_]*[A-Za-z0-9]|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*")
_IDENTIFIER_RUN = re.compile(r"[A-Za-z0-9_]+")
# No parameter name is this long; a longer run is not searched for one.
_LONGEST_IDENTIFIER = 100


def identifiers(query: str) -> List[str]:
    """The snake_case and camelCase identifiers in ``query``.

    The identifier pattern alone is quadratic in a long run of letters (it
    tries each start to the run's end): a 20,000-letter query took 2.6 s.
    Its matches never cross a run of identifier characters, so each run is
    searched on its own, and runs no parameter name could be are skipped.
    """
    return [chunk for run in _IDENTIFIER_RUN.findall(query) if len(run) <= _LONGEST_IDENTIFIER
            for chunk in _IDENTIFIER.findall(run)]


# -- a question ------------------------------------------------------------------

# A question ends in "?" or starts (after an optional "server:" prefix) with
# an interrogative or an auxiliary: English grammar, not any set's words.  A
# tool only reads when its annotations say readOnlyHint (MCP's own
# statement; about half of the recorded servers give it), else when a word
# of its name is a reading verb.
_QUESTION_WORDS = frozenset("what which who whom whose where when why how is are was were does do did can any".split())
_READING_VERBS = frozenset("get list search find read describe fetch query show view lookup retrieve".split())
_SERVER_PREFIX = re.compile(r"^\s*[\w .-]{1,40}:\s")


def is_question(query: str) -> bool:
    """Whether ``query`` asks a question (see above)."""
    if query.rstrip().endswith("?"):
        return True
    first = tokenize(_SERVER_PREFIX.sub("", query, count=1))[:1]
    return bool(first) and first[0] in _QUESTION_WORDS


def reads_only(tool: Dict[str, Any]) -> bool:
    """Whether ``tool`` only reads: its readOnlyHint when it gives one, else a reading verb in its name."""
    annotations = tool.get("annotations")
    if isinstance(annotations, dict) and isinstance(annotations.get("readOnlyHint"), bool):
        return annotations["readOnlyHint"]
    return any(w in _READING_VERBS for w in tokenize(str(tool.get("name", ""))))


# -- fusion ----------------------------------------------------------------------


def vector_share(cosine: float, tuning: Tuning) -> float:
    """What a cosine adds to the score: 0 at the floor or below, the vectors' whole weight at the ceiling or above."""
    if cosine <= tuning.vector_floor:
        return 0.0
    return tuning.vector_weight * min(1.0, (cosine - tuning.vector_floor) / (tuning.vector_ceiling - tuning.vector_floor))


def fuse(lexical: Dict[int, float], semantic: Dict[int, float], tuning: Tuning, vector_scale: float = 1.0) -> Dict[int, float]:
    """Tool index -> fused score (uncapped).  Without a vector signal, the word-based share as it is.

    ``vector_scale``: what the vectors' weight is multiplied by; the words
    take the weight it gives up, so a tool both signals fully back still
    scores 1 (below 1 for a query that names parameters).  A tool no query
    word reaches is listed on its vector alone only from Tuning.vector_alone
    (below it, every query would list some tool, gibberish included), or
    from Tuning.vector_alone_with_words when the query's words reach some
    tool: then it is a request in the catalog's language.
    """
    if not semantic:
        return lexical
    lexical_weight = tuning.lexical_weight + tuning.vector_weight * (1.0 - vector_scale)
    fused = {i: share * lexical_weight for i, share in lexical.items()}
    # Some share above 0 (shares are never NaN): the largest is, found in C.
    alone = tuning.vector_alone_with_words if max(lexical.values(), default=0.0) > 0.0 else tuning.vector_alone
    # vector_share inlined: this loop runs once per tool and query.
    floor, span, weight = tuning.vector_floor, tuning.vector_ceiling - tuning.vector_floor, tuning.vector_weight * vector_scale
    for i, cosine in semantic.items():
        if cosine > floor:
            over = (cosine - floor) / span
            extra = weight * (over if over < 1.0 else 1.0)  # min(1.0, over), without the call
            if i in fused:
                fused[i] += extra
            elif cosine >= alone:
                fused[i] = extra
    return fused


# -- a server as a whole -----------------------------------------------------------


def server_shares(cosines: Dict[int, float], server_of: List[int], servers: int, tuning: Tuning) -> List[float]:
    """Per server: what each of its tools gains for the server's standing as a whole.

    A request often describes a domain ("why did the deploy fail") whose
    meaning is spread over a server's tools, not concentrated in the one
    tool wanted; scored alone, a tool of another server can outrank them on
    one shared word.  A server's standing is the mean cosine of its best
    Tuning.server_tools tools (a missing one counts 0; each cosine capped at
    the vectors' ceiling, above which every cosine is a full match); each
    tool gains Tuning.server_weight times its server's softmax share of
    those means, counted above an even split (1 / servers) and rescaled so a
    clear leader still gains the whole weight.  One server alone, or
    servers that tie, gain nothing: a flat share on every tool would only
    lift noise over the threshold.
    """
    if servers < 2:
        return [0.0] * servers
    best = [[0.0] * tuning.server_tools for _ in range(servers)]
    ceiling = tuning.vector_ceiling
    for i, cosine in cosines.items():
        kept = best[server_of[i]]
        if cosine > kept[-1]:
            kept[-1] = cosine if cosine < ceiling else ceiling
            kept.sort(reverse=True)
    means = [sum(kept) / tuning.server_tools for kept in best]
    top = max(means)
    weights = [math.exp((mean - top) / tuning.server_temperature) for mean in means]
    total = sum(weights)
    even = 1.0 / servers
    return [tuning.server_weight * max(0.0, w / total - even) / (1.0 - even) for w in weights]
