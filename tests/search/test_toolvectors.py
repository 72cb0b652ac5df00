"""The tools' vectors (toolscript/search/toolvectors.py): what a tool's vector is made of, encoded once.

A tool's vector weighs its name more than its description and its parameter
names a little; a new catalog version encodes only the tools that changed,
in an index and in the gateway; the packed vectors give every cosine as the
float dot product does.
"""

import math

import pytest

from search_sets import tool
from toolscript.search import SearchIndex, toolvectors, vectors
from toolscript.search.fields import vector_texts
from toolscript.search.toolvectors import PackedVectors, encode_tool
from toolscript.search.tuning import DEFAULT_TUNING

needs_vectors = pytest.mark.skipif(not vectors.available(), reason="no vectors data in this checkout")

PARAPHRASE_CATALOG = [
    tool("github", "search_issues", "Search for issues and pull requests across GitHub repositories"),
    tool("github", "create_issue", "Create a new issue in a GitHub repository"),
    tool("filesystem", "list_directory", "Get a detailed listing of all files and directories in a specified path"),
    tool("brave", "brave_web_search", "Performs a web search using the Brave Search API"),
    tool("browser", "page_screenshot", "Capture a PNG of the current browser tab"),
    tool("git", "git_log", "Shows the commit logs",
         inputSchema={"type": "object", "properties": {"max_count": {"type": "integer"}}}),
]


@needs_vectors
def test_a_new_catalog_version_encodes_only_the_tools_that_changed(monkeypatch):
    first = SearchIndex(PARAPHRASE_CATALOG)
    encoded = []
    real = toolvectors.encode_tool

    def counting(texts, weights):
        encoded.append(texts[0])  # server and name as words
        return real(texts, weights)

    monkeypatch.setattr(toolvectors, "encode_tool", counting)
    changed = PARAPHRASE_CATALOG[:-1] + [tool("git", "git_status", "Shows the working tree status")]
    second = SearchIndex(changed, vector_cache=first.vector_cache)
    assert encoded == ["git git status"]
    assert len(second.vector_cache) == len(changed)
    query = "what commits happened recently"
    assert second.search(query, limit=5) == SearchIndex(changed).search(query, limit=5)


@needs_vectors
def test_gateway_keeps_tool_vectors_across_catalog_versions(monkeypatch):
    from toolscript.gateway.catalog import Catalog
    from toolscript.gateway.derived import Derived

    tools = {"git": [{"name": "git_log", "description": "Shows the commit logs", "inputSchema": {"type": "object"}}]}
    catalog = Catalog(lambda: list(tools.items()))
    derived = Derived(catalog)
    try:
        before = derived.current()
        encoded = []
        real = toolvectors.encode_tool
        monkeypatch.setattr(toolvectors, "encode_tool", lambda texts, weights: encoded.append(texts[0]) or real(texts, weights))
        tools["git"] = tools["git"] + [{"name": "git_status", "description": "Shows the working tree status", "inputSchema": {"type": "object"}}]
        assert catalog.rebuild()
        after = derived.current()
        assert after.version > before.version and after.index.semantic
        assert encoded == ["git git status"]
        assert derived.search("what commits happened recently", limit=1, threshold=0, servers=None)[0]["id"] == "git__git_log"
    finally:
        derived.close()


@needs_vectors
@pytest.mark.usefixtures("vectors_v3")  # written against VECTORS-V3's cosines (conftest.vectors_v3)
def test_the_tool_name_weighs_more_than_each_description_text_in_the_tool_vector():
    texts = vectors.tool_texts(tool("git", "git_log", "Shows the commit logs. Lists commits with author, date and message."))
    parts = [vectors.encode(t) for t in texts]
    equal = [sum(xs) for xs in zip(*parts)]
    norm = math.hypot(*equal)
    equal = [x / norm for x in equal]
    weighted = encode_tool(texts, DEFAULT_TUNING.tool_text_weights)
    assert math.isclose(math.hypot(*weighted), 1.0, rel_tol=1e-9)
    name = parts[0]
    assert vectors.dot(weighted, name) > vectors.dot(equal, name) + 0.01
    assert encode_tool(["", "", "", ""], DEFAULT_TUNING.tool_text_weights) is None


@needs_vectors
@pytest.mark.usefixtures("vectors_v3")
def test_the_parameter_names_are_part_of_the_tool_vector_at_a_small_weight():
    schema = {"type": "object", "properties": {"max_count": {"type": "integer"}, "authorEmail": {"type": "string"}}}
    with_params = tool("git", "git_log", "Shows the commit logs", inputSchema=schema)
    texts = vector_texts(with_params)
    assert texts[:3] == vectors.tool_texts(with_params) and texts[3] == "max count authorEmail"
    bare = encode_tool(vector_texts(tool("git", "git_log", "Shows the commit logs")), DEFAULT_TUNING.tool_text_weights)
    weighted = encode_tool(texts, DEFAULT_TUNING.tool_text_weights)
    params = vectors.encode(texts[3])
    assert vectors.dot(weighted, params) > vectors.dot(bare, params)
    assert vectors.dot(weighted, bare) > 0.95  # a quarter's weight: the name and description still lead
    index = SearchIndex([with_params])
    assert index.vector_cache == {"\n".join(texts): list(weighted)}


def test_packed_tool_vectors_give_every_cosine_as_the_float_dot_product_does():
    import random

    rng = random.Random(13)

    def unit(values):
        norm = math.hypot(*values)
        return tuple(x / norm for x in values)

    dim = 256
    axis = tuple(1.0 if d == 0 else 0.0 for d in range(dim))
    tools = [unit([rng.gauss(0, 1) for _ in range(dim)]) for _ in range(40)]
    tools += [axis, tuple(-x for x in axis), unit([1.0] * dim), unit([-1.0] * dim)]  # the extremes: cosines of +-1
    packed = PackedVectors([(3 * n, v) for n, v in enumerate(tools)])
    for query in [axis, unit([1.0] * dim), unit([-1.0] * dim)] + [unit([rng.gauss(0, 1) for _ in range(dim)]) for _ in range(5)]:
        cosines = packed.cosines(query)
        assert sorted(cosines) == [3 * n for n in range(len(tools))]
        for n, v in enumerate(tools):
            assert abs(cosines[3 * n] - sum(a * b for a, b in zip(query, v))) < 1e-3
    assert PackedVectors([]).cosines(axis) == {}
