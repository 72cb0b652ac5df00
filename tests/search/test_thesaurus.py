"""Search's thesaurus (toolscript/search/thesaurus.py, data/thesaurus.tsv): compiled from its source, used by search, never fatal."""

import importlib.util
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import REPO_ROOT
from toolscript.search import SearchIndex, thesaurus
from toolscript.search.tuning import DEFAULT_TUNING

_spec = importlib.util.spec_from_file_location("thesaurus_compiler", os.path.join(REPO_ROOT, "distill", "thesaurus.py"))
compiler = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compiler)

# Two tools of one server that share the request's other words: only "octets" (the size tool says "bytes")
# or "response time" (the latency tool says "latency") tells them apart.
TOOLS = [
    {"server": "store", "name": "get_object_size", "description": "Return the size of a stored object in bytes.",
     "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}},
    {"server": "store", "name": "get_object_owner", "description": "Return the owner of a stored object.",
     "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}},
    {"server": "store", "name": "get_latency", "description": "Report the latency of the store.",
     "inputSchema": {"type": "object", "properties": {}}},
]


@pytest.fixture
def table(monkeypatch):
    """A small thesaurus in place of the shipped one."""
    entries = {"octet": ("byt",), "responstim": ("latency",)}
    monkeypatch.setattr(thesaurus, "load", lambda: entries)
    return entries


def synonym_terms(index, query, semantic=True):
    return {e["term"]: e["weight"] for e in index.explain_terms(query, semantic=semantic) if e["signal"] == "synonym"}


# -- the compiler ------------------------------------------------------------------------------------------

def test_committed_data_is_the_compiled_source():
    with open(compiler.SOURCE, encoding="utf-8") as f:
        compiled = compiler.compile_source(f.read())
    with open(compiler.OUTPUT, encoding="utf-8") as f:
        assert f.read() == compiled, "toolscript/search/data/thesaurus.tsv is stale: run python3 distill/thesaurus.py"


def test_check_mode_says_when_the_data_is_stale(tmp_path, monkeypatch, capsys):
    assert compiler.main(["--check"]) == 0
    stale = tmp_path / "thesaurus.tsv"
    stale.write_text("# an older table\n", encoding="utf-8")
    monkeypatch.setattr(compiler, "OUTPUT", str(stale))
    assert compiler.main(["--check"]) == 1
    assert "run python3 distill/thesaurus.py" in capsys.readouterr().err


def test_an_alternative_becomes_the_term_a_query_yields():
    compiled = compiler.compile_source(
        "# a comment\n"
        "latency\tdelay|response time|time it takes to answer|latencies|l10n lag\n"
        "acme\t\n"
        "Deleted\tRemoved\n"
        "kubernetes\tK8s|kube\n")
    lines = compiled.splitlines()
    assert lines[:2] == compiler.HEADER.splitlines()
    # One word stemmed, two joined (stopwords aside), one run of letters and digits whole; three, the word
    # itself once stemmed, digits among words and no alternatives: left out.
    assert lines[2:] == ["delay\tlatency", "k8s\tkubernet", "kub\tkubernet", "remov\tdelet", "responstim\tlatency"]


def test_a_missing_data_file_is_out_of_date_and_a_bad_source_line_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(compiler, "OUTPUT", str(tmp_path / "absent.tsv"))
    assert compiler.main(["--check"]) == 1
    assert "is out of date: run python3 distill/thesaurus.py" in capsys.readouterr().err
    source = tmp_path / "thesaurus.tsv"
    source.write_text("latency\tdelay\nbroken line\n", encoding="utf-8")
    monkeypatch.setattr(compiler, "SOURCE", str(source))
    assert compiler.main([]) == 2
    err = capsys.readouterr().err
    assert ":2: expected 'word<TAB>alternative|...'" in err and "fix that line" in err and "Traceback" not in err
    assert not (tmp_path / "absent.tsv").exists()  # nothing written


def test_a_line_without_a_tab_is_named():
    with pytest.raises(ValueError, match=r"thesaurus.tsv:2: expected 'word<TAB>alternative\|\.\.\.'"):
        compiler.compile_source("latency\tdelay\nbroken line\n")


def test_source_lines_are_word_tab_alternatives():
    """Every line of the committed source is one lowercase word, a tab, and '|'-separated phrases of <= 3 words."""
    with open(compiler.SOURCE, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if not line.startswith("#")]
    words = [line.split("\t")[0] for line in lines]
    assert len(words) == len(set(words)) and words == sorted(words)
    for line in lines:
        word, alternatives = line.split("\t")
        assert word == word.lower() and " " not in word, line
        for alternative in filter(None, alternatives.split("|")):
            assert alternative == alternative.strip().lower() and len(alternative.split()) <= 3, line


# -- search ------------------------------------------------------------------------------------------------

def test_a_request_in_other_words_reaches_the_tool(table, monkeypatch):
    index = SearchIndex(TOOLS, semantic=False)  # no vectors: the words and the thesaurus alone
    query = "octets of the stored object"
    assert synonym_terms(index, query) == {"byt": DEFAULT_TUNING.thesaurus_weight}
    results = index.search(query, limit=3, explain=True)
    assert results[0]["name"] == "get_object_size" and results[0]["signals"]["synonym"] > 0
    scores = {r["name"]: r["score"] for r in results}
    assert scores["get_object_size"] - scores["get_object_owner"] > 0.1
    # Control: without the thesaurus the words alone hardly tell the two object tools apart.
    monkeypatch.setattr(thesaurus, "load", lambda: {})
    assert synonym_terms(index, query) == {}
    scores = {r["name"]: r["score"] for r in index.search(query, limit=3)}
    assert abs(scores["get_object_size"] - scores["get_object_owner"]) < 0.01


def test_two_adjacent_words_are_looked_up_joined(table):
    index = SearchIndex(TOOLS, semantic=False)  # no vectors: the words and the thesaurus alone
    assert synonym_terms(index, "what is the response time of the store") == {"latency": DEFAULT_TUNING.thesaurus_weight}
    assert index.search("what is the response time of the store", limit=1)[0]["name"] == "get_latency"
    # Apart, the two words stand for nothing.
    assert synonym_terms(index, "the time of a response from the store") == {}


def test_a_search_calibrated_on_word_scores_does_without_it(table):
    """semantic=False (the suggestion hook's searches: their floor was set on the words' scores) skips it."""
    index = SearchIndex(TOOLS, semantic=False)
    query = "octets of the stored object"
    assert synonym_terms(index, query, semantic=False) == {}
    scores = {r["name"]: r["score"] for r in index.search(query, limit=3, semantic=False)}
    assert abs(scores["get_object_size"] - scores["get_object_owner"]) < 0.01
    assert index.search(query, limit=1)[0]["name"] == "get_object_size"  # control: the default search uses it


def test_a_word_as_written_outweighs_its_thesaurus_meaning(table):
    index = SearchIndex(TOOLS, semantic=False)  # no vectors: the words and the thesaurus alone
    literal = index.search("latency of the store", limit=1)[0]
    through_thesaurus = index.search("response time of the store", limit=1)[0]
    assert literal["name"] == through_thesaurus["name"] == "get_latency"
    assert literal["score"] > through_thesaurus["score"]


def test_the_shipped_thesaurus_is_read_on_first_use():
    thesaurus.load.cache_clear()
    shipped = thesaurus.load()
    assert len(shipped) > 4000
    assert "byt" in shipped["octet"] and "latency" in shipped["responstim"]


def test_a_missing_or_damaged_file_means_search_without_it(monkeypatch):
    real = thesaurus.pkgutil.get_data

    def thesaurus_only(replacement):
        # Only the thesaurus's read is replaced: the vectors table, read the same way, must stay readable
        # (its loader remembers a failed read for the whole process).
        def get_data(package, name):
            if name != thesaurus.PATH:
                return real(package, name)
            if isinstance(replacement, Exception):
                raise replacement
            return replacement
        return get_data

    for data in (None, b"\xff\xfe not utf-8"):
        monkeypatch.setattr(thesaurus.pkgutil, "get_data", thesaurus_only(data))
        thesaurus.load.cache_clear()
        assert thesaurus.load() == {}
        assert SearchIndex(TOOLS).search("size of a stored object in bytes", limit=1)[0]["name"] == "get_object_size"
    monkeypatch.setattr(thesaurus.pkgutil, "get_data", thesaurus_only(OSError("gone")))
    thesaurus.load.cache_clear()
    assert thesaurus.load() == {}
    monkeypatch.undo()
    thesaurus.load.cache_clear()
    assert thesaurus.load()  # the shipped table again, for the tests after this one


def test_version_reads_no_thesaurus():
    """--version and a bare import do not read the data file (start-up stays as fast)."""
    code = ("import pkgutil, sys\nread = []\nreal = pkgutil.get_data\n"
            "pkgutil.get_data = lambda p, n: read.append(n) or real(p, n)\n"
            "from toolscript.cli.frame import main\nimport toolscript.search\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print('READ=' + ','.join(read), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=REPO_ROOT), capture_output=True,
                          text=True, timeout=60)
    assert "READ=\n" in proc.stderr or proc.stderr.rstrip().endswith("READ="), proc.stderr


def test_the_zipapp_carries_and_reads_it(pyz):
    with zipfile.ZipFile(pyz) as archive:
        with open(compiler.OUTPUT, "rb") as f:
            assert archive.read("toolscript/search/" + thesaurus.PATH) == f.read()
    code = (f"import sys; sys.path.insert(0, {pyz!r}); from toolscript.search import thesaurus; "
            "print(thesaurus.__file__, len(thesaurus.load()))")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    where, count = proc.stdout.split()
    assert where.startswith(pyz) and int(count) > 4000, proc.stderr


def test_lookup_answers_as_the_table_without_building_it():
    table = thesaurus.load()
    sample = list(table.items())[:: max(1, len(table) // 200)] + [next(reversed(list(table.items())))]
    for key, targets in sample:
        assert thesaurus.lookup(key) == targets, key
    assert thesaurus.lookup("no-such-word-anywhere") == ()
    assert thesaurus.lookup("") == () and thesaurus.lookup("#") == () and thesaurus.lookup("a\nb") == ()
