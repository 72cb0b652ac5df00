"""An index made of parts ranks exactly as one index of all the tools (toolscript/search/parts.py).

The gateway builds one part per server and puts an index together from the
parts; every score, every order, every ``--explain`` share and every looked-up
term must be what ``SearchIndex(all the tools)`` gives -- BM25's idf and field
lengths are the whole catalog's, not a part's.  Catalogs are drawn at random
from the evaluation sets' recorded servers, split into parts at random, and
the parts are reused across indexes as the gateway reuses them.
"""

import random

import pytest

from search_sets import evalsets, tool
from toolscript.search import SearchIndex
from toolscript.search.parts import IndexPart

# Requests of every kind the ranking reads differently: words, paraphrases, typos, an exact
# name, parameter names, a question, a server named, run-together names, noise, blanks.
QUERIES = [
    "create a new issue", "list my pull requests", "take a screenshot of the page", "serach isues", "delte file",
    "search_issues", "github__search_issues", "calendarId timeMin", "parent_task_id", "which jobs are running?",
    "send a message in slack", "in notion add a page", "k8s pods", "s3 buckets", "a1b2c3", "hugging face models",
    "browsertools console errors", "altitude of a mountain", "the of a", "", "  ", "zzzz qqqq", "web search",
    "response time of the api", "repo commits", "remove the branch",
]


def every_answer(index, queries):
    """What an index says of ``queries``: results with and without the vectors, filtered, explained, and the terms."""
    servers = sorted({t["server"] for t in index._tools})[:3]
    return [
        (query,
         index.search(query, limit=10, threshold=0.0, explain=True),
         index.search(query, limit=5, threshold=0.3),
         index.search(query, limit=5, semantic=False, explain=True),
         index.search(query, limit=5, servers=servers),
         index.explain_terms(query),
         index.explain_terms(query, semantic=False))
        for query in queries
    ]


def split_at_random(tools, rng, most=6):
    """``tools`` cut into consecutive runs: by server, with some servers cut in two and some runs joined."""
    runs = []
    for t in tools:
        if runs and runs[-1][-1]["server"] == t["server"] and rng.random() > 0.1:
            runs[-1].append(t)
        elif runs and rng.random() < 0.2 and len(runs[-1]) < most * 4:
            runs[-1].append(t)  # a part of two servers' tools
        else:
            runs.append([t])
    return runs


def random_catalog(rng, pool, servers):
    """Tools of ``servers`` servers drawn from ``pool``, a random share of each server's, in server order."""
    by_server = {}
    for t in pool:
        by_server.setdefault(t["server"], []).append(t)
    chosen = rng.sample(sorted(by_server), servers)
    tools = []
    for server in chosen:
        own = by_server[server]
        tools += rng.sample(own, max(1, int(len(own) * rng.uniform(0.3, 1.0))))
    return tools


@pytest.fixture(scope="module")
def pool():
    tools = []
    for name in evalsets.development()[:4]:
        tools += evalsets.own_tools(name)
    return tools


@pytest.mark.parametrize("seed", range(4))
def test_an_index_of_random_parts_ranks_as_one_index_of_all_the_tools(pool, seed):
    rng = random.Random(seed)
    tools = random_catalog(rng, pool, servers=rng.randint(3, 12))
    queries = QUERIES + [q["query"] for q in rng.sample(evalsets.queries("set01"), 12)]
    parts = [IndexPart(run) for run in split_at_random(tools, rng)]
    assert len(parts) > 1
    assert every_answer(SearchIndex.from_parts(parts), queries) == every_answer(SearchIndex(tools), queries)


def test_parts_kept_across_catalog_changes_rank_as_a_fresh_index(pool):
    """The gateway keeps unchanged servers' parts, with what they learnt from earlier queries, in the next index."""
    rng = random.Random(7)
    tools = random_catalog(rng, pool, servers=6)
    servers = list(dict.fromkeys(t["server"] for t in tools))
    parts = {s: IndexPart([t for t in tools if t["server"] == s]) for s in servers}
    first = SearchIndex.from_parts([parts[s] for s in servers])
    every_answer(first, QUERIES)  # fills each part's caches of query words
    # One server's tools change, one server goes away, one comes: the rest keep their parts.
    changed, gone = servers[1], servers[3]
    changed_tools = [dict(t, description=(t.get("description") or "") + " and archives it") for t in tools if t["server"] == changed][1:]
    added = [tool("brand-new", "frobnicate_widget", "Frobnicate a widget and report its status"),
             tool("brand-new", "list_widgets", "List every widget")]
    parts[changed] = IndexPart(changed_tools)
    del parts[gone]
    parts["brand-new"] = IndexPart(added)
    order = [s for s in servers if s != gone] + ["brand-new"]
    now = [t for s in order for t in (changed_tools if s == changed else added if s == "brand-new" else
                                      [t for t in tools if t["server"] == s])]
    assert every_answer(SearchIndex.from_parts([parts[s] for s in order]), QUERIES) == every_answer(SearchIndex(now), QUERIES)


def test_a_development_set_split_by_server_ranks_as_its_whole_index():
    tools = evalsets.index_tools("set01")
    runs = []
    for t in tools:
        if runs and runs[-1][-1]["server"] == t["server"]:
            runs[-1].append(t)
        else:
            runs.append([t])
    queries = [q["query"] for q in evalsets.queries("set01")] + list(evalsets.noise("set01"))
    by_parts = SearchIndex.from_parts([IndexPart(run) for run in runs])
    assert every_answer(by_parts, queries) == every_answer(SearchIndex(tools), queries)


def test_an_index_of_no_parts_finds_nothing():
    index = SearchIndex.from_parts([])
    assert len(index) == 0 and index.search("anything") == [] and index.explain_terms("anything") == []


def test_parts_built_with_other_field_weights_are_refused():
    import dataclasses

    from toolscript.search.tuning import DEFAULT_TUNING

    other = dataclasses.replace(DEFAULT_TUNING, fields=(("name", 3.0, 0.3),) + DEFAULT_TUNING.fields[1:])
    with pytest.raises(ValueError):
        SearchIndex.from_parts([IndexPart([tool("a", "b")]), IndexPart([tool("c", "d")], tuning=other)])


def whole_catalog_postings(tools, tuning):
    """BM25F's term frequencies and idf computed over all of ``tools`` at once, the plain way: the reference."""
    from toolscript.search.fields import index_fields
    from toolscript.search.text import idf

    fields = {name: (weight, b) for name, weight, b in tuning.fields}
    docs = [index_fields(t, {}) for t in tools]
    n = len(docs)
    average = {f: (sum(len(d[f]) for d in docs) / n if n else 0.0) or 1.0 for f in fields}
    postings = {}
    for i, doc in enumerate(docs):
        for field, words in doc.items():
            weight, b = fields[field]
            norm = weight / (1.0 - b + b * len(words) / average[field])
            for word in words:
                row = postings.setdefault(word, {})
                row[i] = row.get(i, 0.0) + norm
    return postings, {term: idf(n, len(row)) for term, row in postings.items()}


@pytest.mark.parametrize("seed", range(2))
def test_term_frequencies_and_idf_are_the_whole_catalogs_to_the_last_bit(pool, seed):
    from toolscript.search.tuning import DEFAULT_TUNING

    rng = random.Random(100 + seed)
    tools = random_catalog(rng, pool, servers=8)
    index = SearchIndex.from_parts([IndexPart(run) for run in split_at_random(tools, rng)])
    postings, idf = whole_catalog_postings(tools, DEFAULT_TUNING)
    for term, row in postings.items():
        assert term in index._postings
        made = index._postings[term]
        assert list(made.items()) == list(row.items()), term  # the same floats, tools in the same order
        assert index._idf[term] == idf[term] and index._postings.df(term) == len(row)
    assert "nosuchterm" not in index._postings and index._postings.df("nosuchterm") == 0
