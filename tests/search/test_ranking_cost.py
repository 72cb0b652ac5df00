"""What a search over a large catalog does per tool, and that doing less gives the same answers.

A warm search over 5,000 tools is mostly per-tool work: each tool's cosine
with the query, its word share, its fused score.  Only the few results shown
need a rounded score and a place in order; these tests pin that the rest of
the catalog is not rounded and sorted one by one, and that the shortcut
picks, orders and scores exactly as rounding and sorting every tool did.
"""

import random

import pytest

from search_sets import tool
from toolscript.search import SearchIndex, vectors
from toolscript.search import index as index_module
from toolscript.search.toolvectors import PackedVectors, query_values

needs_vectors = pytest.mark.skipif(not vectors.available(), reason="no vectors data in this checkout")

VERBS = ["get", "list", "create", "delete", "update", "search", "read", "send", "fetch", "move"]
THINGS = ["issue", "branch", "file", "message", "page", "calendar event", "record", "ticket", "invoice", "image"]


def big_catalog(size):
    """``size`` tools over a few servers, their words drawn from a small vocabulary so many tools match a query."""
    rng = random.Random(7)
    out = []
    for k in range(size):
        verb, thing = rng.choice(VERBS), rng.choice(THINGS)
        out.append(tool(f"server{k % 7}", f"{verb}_{thing.replace(' ', '_')}_{k}",
                        f"{verb.capitalize()} a {thing} in the {rng.choice(THINGS)} store, number {k}"))
    return out


def every_tool_ranked(fused, exact, ids, servers, limit, threshold, allowed):
    """The results as search used to pick them: every tool rounded, filtered and sorted."""
    ranked = []
    for i, value in fused.items():
        if allowed is not None and servers[i] not in allowed:
            continue
        score = 1.0 if i in exact else round(min(1.0, value), 3)
        if score > 0.0 and score >= threshold:
            ranked.append((0, 0.0, ids[i], score, i) if i in exact else (1, -value, ids[i], score, i))
    ranked.sort()
    return [(tool_id, score, i) for _, _, tool_id, score, i in ranked[:limit]]


def test_a_search_over_a_large_catalog_rounds_only_the_scores_it_may_show(monkeypatch):
    index = SearchIndex(big_catalog(2000), semantic=False)
    rounded = []

    def counting_round(value, places=None):
        rounded.append(value)
        return round(value, places)

    monkeypatch.setattr(index_module, "round", counting_round, raising=False)
    results = index.search("create a calendar event", limit=5)
    assert len(results) == 5
    # Every one of the 2,000 tools says "a" or "create" or "calendar" or "event": a few rounded, not each.
    assert len(rounded) <= 10, len(rounded)


def test_picking_the_best_few_gives_what_rounding_and_sorting_every_tool_gives():
    rng = random.Random(11)
    index = SearchIndex(big_catalog(300), semantic=False)
    ids, servers = index._ids, index._server_names
    n = len(ids)
    for trial in range(400):
        size = rng.choice([0, 1, 3, 20, 300])
        # Values with ties (a coarse grid), over 1 (capped), at 0 and around the rounding's edges.
        grid = rng.choice([0.05, 0.0005, None])
        fused = {}
        for i in rng.sample(range(n), size):
            value = rng.uniform(-0.1, 1.3)
            fused[i] = round(value / grid) * grid if grid else value
        exact = rng.sample(sorted(fused), min(len(fused), rng.choice([0, 0, 1, 2])))
        limit = rng.choice([1, 2, 3, 5, 10, 400])
        threshold = rng.choice([0.0, 0.0, 0.3, 0.9995, 1.0, 1.5])
        allowed = rng.choice([None, None, {"server1", "server3"}, set()])
        want = every_tool_ranked(fused, exact, ids, servers, limit, threshold, allowed)
        got = index._ranked(dict(fused), exact, limit, threshold, allowed)
        assert got == want, (trial, limit, threshold, allowed)


@needs_vectors
def test_packed_cosines_are_the_exact_integer_dot_products_scaled():
    rng = random.Random(5)
    dim = vectors.DIM

    def unit():
        values = [rng.gauss(0, 1) for _ in range(dim)]
        norm = sum(x * x for x in values) ** 0.5
        return tuple(x / norm for x in values)

    tools = [unit() for _ in range(50)]
    packed = PackedVectors(list(enumerate(tools)))
    for _ in range(5):
        query = unit()
        values = query_values(query)
        want = [sum(v * round(32767 * x) for v, x in zip(values, t)) * (1.0 / (32767 * 32767)) for t in tools]
        assert packed.cosine_list(values) == want
        assert packed.cosines(query) == dict(enumerate(want))


def test_the_parameter_signal_does_not_depend_on_the_processs_hash_seed():
    """Sums of the parameter names' weights are made in one order whatever PYTHONHASHSEED is."""
    import subprocess
    import sys

    from conftest import REPO_ROOT

    script = (
        "from toolscript.search import SearchIndex\n"
        "names = [f'param_{w}_id' for w in 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu'.split()]\n"
        "tools = [{'server': 's', 'name': f'tool_{i}', 'description': 'x', 'inputSchema': {'type': 'object',\n"
        "          'properties': {n: {'type': 'string'} for j, n in enumerate(names) if (i * 7 + j * 3) % (j + 2) == 0 or j == i % 12}}}\n"
        "         for i in range(40)]\n"
        "print(repr(sorted(SearchIndex(tools, semantic=False)._parameter_coverage(' '.join(names)).items())))\n"
    )
    outputs = {subprocess.run([sys.executable, "-c", script], env={"PYTHONHASHSEED": str(seed), "PYTHONPATH": REPO_ROOT},
                              capture_output=True, text=True, timeout=60, check=True).stdout for seed in range(1, 7)}
    assert len(outputs) == 1, outputs
