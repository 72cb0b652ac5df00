"""``toolscript search`` and the gateway's /search (toolscript/commands/search.py): what the CLI shows.

``--explain`` prints each signal's share as a column (the similar words a query word met, the server as
a whole) and the words looked up, in a table or JSON; ``--json`` without it has no signals; the
gateway searches by the words alone on request.  The ranking itself is tests/search/test_index.py's.
"""

import json
import os
import sys

import pytest

from conftest import REPO_ROOT, run_cli
from mcp_servers.launch import FIXTURE
from toolscript.config.load import ServerConfig
from toolscript.search import vectors
from toolscript.search.tuning import DEFAULT_TUNING

needs_vectors = pytest.mark.skipif(not vectors.available(), reason="no vectors data in this checkout")


def stdio_fixture():
    return ServerConfig(name="fixture", type="stdio", source="t", command=sys.executable, args=[FIXTURE, "stdio"], timeout=10)


def cli_env(url, tmp_path):
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT,
            "TOOLSCRIPT_GATEWAY_URL": url, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}


def test_search_explain_through_the_gateway_and_cli(gateway, tmp_path):
    _, url = gateway(stdio_fixture())
    env = cli_env(url, tmp_path)
    plain = run_cli("search", "add two integers", "--json", env=env, cwd=str(tmp_path))
    assert plain.returncode == 0, plain.stderr
    assert all("signals" not in r for r in json.loads(plain.stdout))

    table = run_cli("search", "add two integers", "--explain", env=env, cwd=str(tmp_path))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["SCORE", "TOOL", "BM25"]
    assert lines[1].split()[1] == "fixture__add"
    assert any(line.startswith("looked up: ") and "add (bm25)" in line for line in lines)

    as_json = json.loads(run_cli("search", "add two integers", "--explain", "--json", env=env, cwd=str(tmp_path)).stdout)
    assert as_json["query"] == "add two integers"
    top = as_json["results"][0]
    assert top["id"] == "fixture__add" and top["signals"]["bm25"] > 0
    assert {"term", "signal", "weight", "idf"} <= set(as_json["terms"][0])

    refused = run_cli("search", "add", "--explain", "--output", "types", env=env, cwd=str(tmp_path))
    assert refused.returncode == 2 and "--explain shows a table or JSON" in refused.stderr


@needs_vectors
def test_gateway_search_words_only_on_request(gateway):
    from toolscript.gateway.client import GatewayClient

    _, url = gateway(stdio_fixture())
    client = GatewayClient(url)
    mixed = client.get("/search", q="add two integers", explain="1")["results"]
    words = client.get("/search", q="add two integers", explain="1", semantic="0")["results"]
    assert mixed[0]["id"] == words[0]["id"] == "fixture__add"
    assert "vector" in mixed[0]["signals"] and "vector" not in words[0]["signals"]
    assert words[0]["score"] != mixed[0]["score"]


@needs_vectors
def test_gateway_search_says_whether_its_ranking_used_the_vectors(gateway):
    from toolscript.gateway.client import GatewayClient

    _, url = gateway(stdio_fixture())
    client = GatewayClient(url)
    assert client.get("/search", q="add two integers")["vectors"] is True  # the suggestion hook reads scores by it
    assert "vectors" not in client.get("/search", q="add two integers", semantic="0")


@needs_vectors
def test_explain_in_the_cli_names_the_catalog_word_a_query_word_met(gateway, tmp_path):
    _, url = gateway(stdio_fixture())
    env = cli_env(url, tmp_path)
    table = run_cli("search", "take a nap", "--explain", env=env, cwd=str(tmp_path))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert "SIMILAR_WORDS" in lines[0].split()
    assert lines[1].split()[1] == "fixture__slow"  # "Sleep `steps` times ..."
    looked_up = next(line for line in lines if line.startswith("looked up: "))
    assert "sleep (similar_words x" in looked_up and "for nap)" in looked_up

    as_json = json.loads(run_cli("search", "take a nap", "--explain", "--json", env=env, cwd=str(tmp_path)).stdout)
    similar = [t for t in as_json["terms"] if t["signal"] == "similar_words"]
    assert similar and similar[0]["from"] == "nap" and similar[0]["word"] == "sleep"
    assert as_json["results"][0]["signals"]["similar_words"] > 0


@needs_vectors
def test_gateway_words_only_explain_lists_no_similar_words(gateway):
    from toolscript.gateway.client import GatewayClient

    _, url = gateway(stdio_fixture())
    client = GatewayClient(url)
    mixed = client.get("/search", q="take a nap", explain="1")
    words = client.get("/search", q="take a nap", explain="1", semantic="0")
    assert any(t["signal"] == "similar_words" for t in mixed["terms"])
    assert all(t["signal"] != "similar_words" for t in words["terms"])


@needs_vectors
def test_cli_explain_shows_the_server_signal_as_a_column_and_in_json(gateway, tmp_path):
    _, url = gateway(stdio_fixture())
    env = cli_env(url, tmp_path)
    table = run_cli("search", "add two integers", "--explain", env=env, cwd=str(tmp_path))
    assert table.returncode == 0, table.stderr
    assert "SERVER" in table.stdout.splitlines()[0].split()
    as_json = json.loads(run_cli("search", "add two integers", "--explain", "--json", env=env, cwd=str(tmp_path)).stdout)
    # Its server leads (the gateway may list a few tools of its own): nearly the whole weight.
    assert as_json["results"][0]["signals"]["server"] == pytest.approx(DEFAULT_TUNING.server_weight, rel=0.01)
