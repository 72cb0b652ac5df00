"""Similar words (toolscript/search/similar.py): a query word meets the catalog words closest to it in meaning.

A query word that no tool or only a few tools have is also looked up as the
catalog words whose vectors are nearest its own ("altitude" -> "elevation"),
weighted by the cosine and always below a literal match, inside the BM25F
frame (field weights, idf, saturation).  These tests check that the signal
finds a tool through a word it does not contain, prefers a name to a
description, never beats a literal or exact match, goes away without the
vectors data, and keeps its word rows for one vectors table only.
"""

import os
from dataclasses import replace

import pytest

from conftest import REPO_ROOT
from search_sets import load_catalogs, tool, tools_of
from toolscript.search import SIGNALS, SearchIndex, vectors
from toolscript.search.similar import forget_rows_of_another_table, similar_weight, word_row
from toolscript.search.tuning import DEFAULT_TUNING

# The cases here were written before the thesaurus, which reaches some of their words itself (see
# conftest.no_thesaurus).
pytestmark = [pytest.mark.skipif(not vectors.available(), reason="no vectors data in this checkout"),
              pytest.mark.usefixtures("no_thesaurus")]


MAPS = [
    tool("maps", "get_elevation", "Return the data of points on the earth's surface"),
    tool("maps", "plan_route", "Plan a route between two places, with its distance, duration and elevation gain"),
    tool("maps", "geocode", "Convert an address into geographic coordinates"),
    tool("maps", "place_details", "Opening hours, reviews and photos of a place"),
    tool("files", "read_file", "Read the contents of a file from disk"),
]


def ids(results):
    return [r["id"] for r in results]


def test_a_tool_is_found_through_a_word_it_does_not_contain():
    query = "altitude of denver"  # no tool says "altitude"; get_elevation says "elevation" in its name
    index = SearchIndex(MAPS)
    top = index.search(query, limit=3, explain=True)[0]
    assert top["id"] == "maps__get_elevation"
    assert top["signals"]["similar_words"] > 0 and "bm25" not in top["signals"]
    matched = [t for t in index.explain_terms(query) if t["signal"] == "similar_words"]
    assert {"from": "altitude", "word": "elevation", "term": "elevation"}.items() <= matched[0].items()
    assert 0 < matched[0]["weight"] < 1 and DEFAULT_TUNING.similar_floor <= matched[0]["cosine"] <= 1

    # With the signal switched off the tool has only what the whole texts' vectors give it: less.
    off = SearchIndex(MAPS, tuning=replace(DEFAULT_TUNING, similar_top=0))
    without = {r["id"]: r for r in off.search(query, limit=5, explain=True)}
    alone = without.get("maps__get_elevation", {"score": 0.0, "signals": {}})
    assert "similar_words" not in alone["signals"] and alone["score"] < top["score"]


def test_similar_words_add_up_with_the_other_signals_and_change_no_result_when_explained():
    index = SearchIndex(MAPS)
    for query in ("altitude of denver", "altitude", "photos of a place", "read a file"):
        explained = index.search(query, limit=5, explain=True)
        assert [{k: v for k, v in r.items() if k != "signals"} for r in explained] == index.search(query, limit=5)
        for r in explained:
            assert round(min(1.0, sum(r["signals"].values())), 3) == pytest.approx(r["score"], abs=0.001), r
    assert SIGNALS.index("similar_words") < SIGNALS.index("vector")


def test_a_similar_word_in_a_name_counts_more_than_in_a_description():
    index = SearchIndex(MAPS)
    results = index.search("altitude", limit=5, explain=True)
    order = ids(results)
    assert order.index("maps__get_elevation") < order.index("maps__plan_route")
    by_id = {r["id"]: r for r in results}
    assert by_id["maps__get_elevation"]["signals"]["similar_words"] > by_id["maps__plan_route"]["signals"]["similar_words"] > 0


def test_a_similar_word_never_outranks_the_word_itself():
    catalog = MAPS + [tool("maps", "get_altitude", "Return the data of points on the earth's surface")]
    index = SearchIndex(catalog)
    # Same fields, same length: the one that says "altitude" comes first.
    assert ids(index.search("altitude of denver", limit=2)) == ["maps__get_altitude", "maps__get_elevation"]
    # A query that is a tool's name puts that tool first, similar words or not.
    assert ids(index.search("get_elevation", limit=1)) == ["maps__get_elevation"]
    assert index.search("get_elevation", limit=1)[0]["score"] == 1.0
    # The weight a similar word gets is below a literal word's 1 at every cosine.
    assert similar_weight(1.0, DEFAULT_TUNING) < 1.0 and similar_weight(DEFAULT_TUNING.similar_floor, DEFAULT_TUNING) == 0.0


def test_common_and_misspelt_query_words_look_for_no_similar_words():
    catalog = [tool("s", f"read_{n}", f"Read the {n} file") for n in ("first", "second", "third", "fourth")] + MAPS
    index = SearchIndex(catalog)
    looked_up = index.explain_terms("read the elevaton")
    # "read" is in most tools: it is matched as written and nothing else; "elevaton" is a typo of "elevation".
    assert {t["signal"] for t in looked_up} == {"bm25", "typo"}


def test_without_vectors_data_there_are_no_similar_words():
    words_only = SearchIndex(MAPS, semantic=False)
    # A missing or damaged data file: vectors reports no table, as when reading it fails.
    vectors.use_table(b"not a table")
    try:
        degraded = SearchIndex(MAPS)
    finally:
        vectors.reset()
    assert not degraded.semantic
    for query in ["altitude of denver", "altitude", "get_elevation", "read a file"]:
        assert degraded.search(query, limit=5, explain=True) == words_only.search(query, limit=5, explain=True)
        assert degraded.explain_terms(query) == words_only.explain_terms(query)


def test_words_only_searches_use_no_similar_words():
    index = SearchIndex(MAPS)
    assert all(t["signal"] != "similar_words" for t in index.explain_terms("altitude of denver", semantic=False))
    plain = index.search("altitude of denver", limit=5, semantic=False, explain=True)
    assert all("similar_words" not in r["signals"] for r in plain)


def test_a_long_query_looks_for_similar_words_of_its_rarest_words_only():
    index = SearchIndex(MAPS)
    words = ["altitude", "summit", "glacier", "valley", "canyon", "plateau", "volcano", "meadow"]
    looked_for = [t["from"] for t in index.explain_terms(" ".join(words)) if t["signal"] == "similar_words"]
    assert set(index._similar.cache) <= set(words) and len(index._similar.cache) == DEFAULT_TUNING.similar_per_query
    assert set(looked_for) <= set(index._similar.cache)


def test_matches_are_cached_per_query_word():
    index = SearchIndex(MAPS)
    first = index.explain_terms("altitude")
    assert "altitude" in index._similar.cache
    assert index.explain_terms("altitude") == first


def test_packed_cosines_agree_with_the_vectors():
    # The big-integer dot products (see SimilarWords) against plain floating-point ones.
    index = SearchIndex(MAPS)
    for word in ("altitude", "photo", "height", "document"):
        for term, cosine, catalog_word in index._similar.matches(word):
            a = vectors.encode(word)[:DEFAULT_TUNING.similar_dims]
            b = vectors.encode(catalog_word)[:DEFAULT_TUNING.similar_dims]
            exact = sum(x * y for x, y in zip(a, b)) / (sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5
            assert cosine == pytest.approx(exact, abs=0.01), (word, catalog_word)


def test_a_new_vectors_table_is_not_mixed_with_word_rows_of_the_old_one():
    SearchIndex(MAPS).explain_terms("altitude")
    assert word_row.cache_info().currsize > 0
    # What vectors.use_table (bench/vectors.py, tests) leaves behind: another table object.
    with open(os.path.join(REPO_ROOT, "toolscript", "search", "data", "embeddings.bin"), "rb") as f:
        vectors.use_table(f.read())
    try:
        forget_rows_of_another_table()
        assert word_row.cache_info().currsize == 0
    finally:
        vectors.reset()


def test_a_new_catalog_version_encodes_only_its_new_words(monkeypatch):
    from toolscript.gateway.catalog import Catalog
    from toolscript.gateway.derived import Derived

    word_row.cache_clear()
    tools = {"maps": [{"name": "get_elevation", "description": "Return the data of points", "inputSchema": {"type": "object"}}]}
    catalog = Catalog(lambda: list(tools.items()))
    derived = Derived(catalog)
    try:
        assert derived.search("altitude", limit=1, threshold=0, servers=None)[0]["id"] == "maps__get_elevation"
        encoded = []
        real = vectors.encode
        monkeypatch.setattr(vectors, "encode", lambda text: encoded.append(text) or real(text))
        tools["maps"] = tools["maps"] + [{"name": "geocode", "description": "Convert an address", "inputSchema": {"type": "object"}}]
        assert catalog.rebuild()
        after = derived.current()
        assert after.index.semantic
        # Words the previous version had keep their vectors (process-wide); only the new tool's are encoded.
        assert {text for text in encoded if " " not in text} == {"geocode", "convert", "address"}, encoded
        assert derived.search("altitude", limit=1, threshold=0, servers=None)[0]["id"] == "maps__get_elevation"
    finally:
        derived.close()


def development_catalog():
    """set00's recorded catalogs, as bench/search.py indexes them."""
    return tools_of(load_catalogs(os.path.join(REPO_ROOT, "bench", "search", "sets", "set00")))


def test_a_misspelt_word_reaches_the_vectors_as_the_word_it_stands_for():
    # "isues" as wordpieces is "is" + "##ues": the query's vector was "search" alone and
    # pulled every search tool above search_issues, which the words alone rank first.
    index = SearchIndex(development_catalog())
    assert index._as_corrected("search isues") == "search issues"
    assert index._as_corrected("search the issues") == "search the issues"  # known words stay as written
    assert "github__search_issues" in ids(index.search("search isues", limit=3))
    assert ids(index.search("search isues", limit=1)) == ids(index.search("search issues", limit=1))
