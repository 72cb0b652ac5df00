"""Catalog-aware vectors (issue 13, helper VX9): query words weighed by the catalog, tool vectors centred on it.

Both are switched off in the shipped ranker (bench/catalog_vectors.py measured them on the eight development
sets: neither reached the bar); these tests pin that the switches do what they say when turned on.
"""
import math

import pytest

from toolscript import search, vectors

pytestmark = pytest.mark.skipif(not vectors.available(), reason="no vectors data")

TOOLS = [
    {"id": "files__read_file", "server": "files", "name": "read_file", "description": "Read a file from disk."},
    {"id": "files__write_file", "server": "files", "name": "write_file", "description": "Write a file to disk."},
    {"id": "files__list_files", "server": "files", "name": "list_files", "description": "List the files in a folder."},
    {"id": "web__screenshot", "server": "web", "name": "screenshot", "description": "Take a picture of the page."},
]


def test_weighted_encode_with_weight_one_is_the_plain_encode():
    plain = vectors.encode("take a picture of the page")
    weighed = vectors.encode("take a picture of the page", lambda word: 1.0)
    assert max(abs(a - b) for a, b in zip(plain, weighed)) < 1e-9


def test_a_word_weighed_zero_is_left_out():
    without = vectors.encode("picture", lambda word: 1.0)
    weighed = vectors.encode("file picture", lambda word: 0.0 if word == "file" else 1.0)
    assert max(abs(a - b) for a, b in zip(without, weighed)) < 1e-9
    assert vectors.encode("file", lambda word: 0.0) is None


def test_a_word_every_tool_says_weighs_less_than_one_no_tool_says(monkeypatch):
    monkeypatch.setattr(search, "_QUERY_IDF_POWER", 1.0)
    index = search.SearchIndex(TOOLS)
    assert index._query_word_weight("zebra") == 1.0  # no tool says it: a paraphrase keeps its say
    assert index._query_word_weight("file") < index._query_word_weight("picture") < 1.0


def test_centred_tool_vectors_have_no_mean_left(monkeypatch):
    monkeypatch.setattr(search, "_CENTRE_BLEND", 1.0)
    monkeypatch.setattr(search, "_CENTRE_DIRECTIONS", 1)
    index = search.SearchIndex(TOOLS)
    mean, directions = index._centre
    raw_mean = [sum(c) / len(TOOLS) for c in zip(*(v for _, v in index._vectors))]
    assert max(abs(a - b) for a, b in zip(mean, raw_mean)) < 1e-9
    assert len(directions) == 1 and abs(math.hypot(*directions[0]) - 1.0) < 1e-9
    centred = [search._centred(v, index._centre) for _, v in index._vectors]
    assert all(abs(sum(x * d for x, d in zip(v, directions[0]))) < 1e-9 for v in centred)
    assert index.search("take a picture of the page", limit=1)[0]["id"] == "web__screenshot"


def test_switches_off_rank_as_before():
    index = search.SearchIndex(TOOLS)
    assert index._centre is None and index._query_word_df is None
