"""Words (toolscript/search/text.py): how search, the suggestion backend and memory read a text."""

import pytest

from toolscript.search.text import edit_distance, stem, terms, tokenize


@pytest.mark.parametrize(
    "text, words",
    [
        ("getFileInfo", ["get", "file", "info"]),
        ("search_issues", ["search", "issues"]),
        ("get-tiny-image", ["get", "tiny", "image"]),
        ("fs.read_file", ["fs", "read", "file"]),
        ("HTTPServer parseURL", ["http", "server", "parse", "url"]),
        ("sd3.5 v2beta", ["sd", "3", "5", "v", "2", "beta"]),
        ("  Read the README!  ", ["read", "the", "readme"]),
        ("", []),
    ],
)
def test_tokenize_splits_identifiers(text, words):
    assert tokenize(text) == words


def test_terms_drop_stopwords_and_keep_camel_case_whole():
    assert terms("Read the file from a JavaScript page") == ["read", "fil", "java", "script", "javascript", "pag"]


@pytest.mark.parametrize(
    "forms",
    [
        ("issue", "issues"),
        ("query", "queries"),
        ("branch", "branches"),
        ("create", "created", "creating", "creates"),
        ("commit", "commits", "committed"),
        ("directory", "directories"),
        ("modify", "modified", "modifies"),
        ("list", "lists", "listing"),
    ],
)
def test_stem_maps_forms_of_a_word_together(forms):
    assert len({stem(f) for f in forms}) == 1, {f: stem(f) for f in forms}


@pytest.mark.parametrize("word", ["status", "address", "analysis", "string", "speed", "git", "id"])
def test_stem_leaves_words_that_only_look_inflected(word):
    assert stem(word) == word




@pytest.mark.parametrize("a, b, limit, distance", [
    ("issues", "issues", 2, 0),
    ("isues", "issues", 2, 1),
    ("serach", "search", 2, 1),  # two neighbours swapped: one edit
    ("kuberentes", "kubernetes", 2, 1),
    ("abc", "xyz", 1, 2),  # past the limit: limit + 1
    ("a", "abcdef", 2, 3),
])
def test_edit_distance_counts_inserts_deletes_substitutions_and_swaps_up_to_a_limit(a, b, limit, distance):
    assert edit_distance(a, b, limit) == distance
