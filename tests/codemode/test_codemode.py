"""Code mode end to end: search, stubs and exec through a real gateway and real upstreams.

The ranker, stub generator and sandbox have unit tests of their own; these
tests check they are wired together: what search finds, get-types prints and
exec runs must agree on names and results.
"""

import json
import os
import subprocess
import sys
import time


from conftest import REPO_ROOT
from mcp_servers.launch import FIXTURE
from toolscript.config.load import ServerConfig
from toolscript.gateway.client import GatewayClient


def stdio(name, *options):
    return ServerConfig(name=name, type="stdio", source="t", command=sys.executable, args=[FIXTURE, "stdio", *options], timeout=10)


def cli(*args, url, cwd, stdin=None, timeout=60):
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_GATEWAY_URL": url, "TOOLSCRIPT_STATE_DIR": str(cwd / "state")}
    return subprocess.run([sys.executable, "-m", "toolscript", *args], env=env, cwd=str(cwd), input=stdin, capture_output=True, text=True, timeout=timeout)


def test_search_endpoint_ranks_and_filters(gateway):
    gw, url = gateway(stdio("fixture"))
    client = GatewayClient(url)
    results = client.get("/search", q="add two integers", limit="3")["results"]
    assert results[0]["id"] == "fixture__add" and 0 < results[0]["score"] <= 1
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    only_builtin = client.get("/search", q="read a file", server="builtin")["results"]
    assert only_builtin[0]["id"] == "builtin__fs.read_file" and {r["server"] for r in only_builtin} == {"builtin"}
    strict = client.get("/search", q="add two integers", limit="3", threshold="0.5")["results"]
    assert strict and all(r["score"] >= 0.5 for r in strict) and len(strict) < len(results)


def test_search_follows_catalog_changes(gateway):
    gw, url = gateway(stdio("fixture"))
    client = GatewayClient(url)
    client.post("/call", {"tool": "fixture__change_tools", "arguments": {}})
    deadline = time.monotonic() + 10
    found = []
    while not found and time.monotonic() < deadline:
        found = [r for r in client.get("/search", q="extra_tool", limit="1")["results"] if r["id"] == "fixture__extra_tool"]
    assert found


def test_types_and_runtime_names_agree(gateway):
    gw, url = gateway(stdio("fixture"))
    client = GatewayClient(url)
    everything = client.get("/types")
    compile(everything["code"], "<stubs>", "exec")
    assert "class fixture:" in everything["code"] and "def add(*, a: int, b: int)" in everything["code"]
    subset = client.get("/types", filter="fixture__add,builtin__time.now")
    assert subset["tools"] == ["fixture__add", "builtin__time.now"]
    assert subset["usage"].startswith("result = tools.fixture.add(")  # the first selected tool
    names = client.get("/runtime/names")["servers"]
    assert names["fixture"]["add"]["id"] == "fixture__add"
    assert names["builtin"]["time_now"]["id"] == "builtin__time.now"
    ts = client.get("/types", lang="ts")["code"]
    assert "fixture" in ts and "add" in ts


def test_search_and_get_types_commands(gateway, tmp_path):
    gw, url = gateway(stdio("fixture"))
    table = cli("search", "add", "two", "integers", url=url, cwd=tmp_path)
    assert table.returncode == 0 and table.stdout.splitlines()[1].split()[1] == "fixture__add"
    types = cli("search", "add two integers", "--limit", "1", "--output", "types", url=url, cwd=tmp_path)
    assert types.returncode == 0 and "def add(*, a: int, b: int)" in types.stdout
    assert "# usage: result = tools.fixture.add(" in types.stdout
    as_json = json.loads(cli("search", "echo a message", "--json", url=url, cwd=tmp_path).stdout)
    assert as_json[0]["id"] == "fixture__echo"
    nothing = cli("search", "zzzqqq", "--threshold", "0.5", url=url, cwd=tmp_path)
    assert nothing.returncode == 0 and "No tools matched" in nothing.stdout
    stubs = cli("get-types", "--filter", "fixture", url=url, cwd=tmp_path)
    assert stubs.returncode == 0 and "class fixture:" in stubs.stdout and "class builtin" not in stubs.stdout
    compile(stubs.stdout, "<get-types>", "exec")
