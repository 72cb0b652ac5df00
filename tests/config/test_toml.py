"""Tests for toolscript.config.toml: Codex's TOML read the same on every supported Python.

The valid fixtures (fixtures/clients/codex/toml/*.toml and the two Codex configs) must
parse to their stored ``tomllib`` result, with the same types (20 is not 20.0); the
invalid ones must fail with the file, line and column.  The reader toolscript uses
before Python 3.11 is tested here directly, in a real Python 3.9, and against
``tomllib`` where this Python has it.
"""

import glob
import json
import math
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, find_python39
from toolscript.config import toml

CODEX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "clients", "codex")
VALID = sorted(glob.glob(os.path.join(CODEX, "toml", "*.toml")))
INVALID = sorted(glob.glob(os.path.join(CODEX, "toml", "invalid", "*.toml")))
# The two whole Codex configs of the import fixtures, with their stored tomllib parse.
CONFIGS = [(os.path.join(CODEX, "home", ".codex", "config.toml"), os.path.join(CODEX, "expected", "home.config.toml.json")),
           (os.path.join(CODEX, "project", ".codex", "config.toml"), os.path.join(CODEX, "expected", "project.config.toml.json"))]
GOLDEN = [(path, path + ".json") for path in VALID] + CONFIGS

# Where each invalid fixture fails, and a part of the message.
INVALID_AT = {
    "duplicate-key.toml": (3, "mcp_servers.dup.command is defined twice"),
    "duplicate-table.toml": (4, "table mcp_servers.dup is defined twice"),
    "inline-then-table.toml": (6, "inline table"),
    "newline-in-array-string.toml": (3, "unterminated string"),
    "unterminated-string.toml": (2, "unterminated string"),
    "windows-path-in-basic-string.toml": (4, "Windows path"),
}

# Small documents on both sides of TOML's edges: the reader must agree with tomllib on each
# (the same value, or both refuse).  Dates and times are the one deliberate difference.
SNIPPETS = [
    'a = 1', 'a = "x"\nb = \'y\'', 'a.b.c = 1\na.b.d = 2', '[a]\nb.c = 1\n[a.b.d]\ne = 1', '[a]\nb.c = 1\n[a.b]\n',
    'a = {b = 1}\na.c = 2', 'a = [1,2,]', 'a = [\n1, # c\n2\n]', 'a = {}', 'a = { b = {c = 1}, d = [1] }',
    'a = {b = 1,}', 'a = {b = 1\n}', '[[a]]\nb=1\n[[a]]\nb=2\n[a.c]\nd=1', '[[a]]\n[a]', '[a]\n[[a]]', 'a=[1]\n[[a]]',
    'a = """\nx\\\n   y"""', 'a = """\\\n\n  x"""', 'a = """x""""', 'a = """x"""""', "a = '''x''''", "a = '''x'''''",
    'a = "\\x41"', 'a = "\\e"', 'a = "\\u00"', 'a = "\\uD800"', 'a = 0x', 'a = 01',
    'a = 1__0', 'a = 1_', 'a = +0x1', 'a = -inf', 'a = nan', 'a = +nan', 'a = 1.', 'a = .1', 'a = 1e', 'a = 3.14e+2',
    'a = -0.0', 'a = 0e0', 'a = truee', 'a = true # ok', 'a = 1 b = 2', '"a b" = 1', "'c' = 2", '"" = 1', 'a . b = 1',
    '[ a . "b c" ]\nx=1', 'a = "tab\there"', 'a = "\x01"', '# \x01', 'a = 1\r\nb = 2\r\n', 'a = 1\rb=2', 'a = [ "x",\r\n "y" ]',
    '[a]\nb=1\n[a]\nc=2', '[a.b]\n[a]\n[a.b.c]', 'a.b = 1\n[a]', 'a.b = 1\n[a.c]\nx=1', '[x]\na.b=1\n[x.a]', '[x]\na.b=1\n[x.a.c]',
    'a = [{b=1},{b=2}]', 'a = [{b=1}]\n[[a]]', '[[a.b]]\n[[a.b]]\n[a.b.c]\nx = 1', '[[a]]\n[[a.b]]\nx=1\n[[a]]\n[[a.b]]',
    'a = "x" "y"', '=1', 'a =', 'a = [1 2]', 'a = {b=1 c=2}', 'a = {b.c=1, b.d=2}', 'a = {b.c=1, b=2}', 'a = {b={c=1}, b.d=2}',
    '[a]\n  b = 1\n  [a.c]  # x\n  d = "e"', "a = 'x\\ny'", 'a = """a\\tb"""', 'a = """\r\nx"""', "a = '''\r\nx\r\ny'''",
    'a = 9223372036854775807', 'a = 0o777', 'a = 0b102', 'a = 1e400', 'a.b.c = 1\na.b = 2', 'a = 1\na.b = 2',
    '[a]\n[b]\n[a.c]', 'a = "unterminated', 'a = """x', "a = '''x", '[a', '[[a]', 'a = {', 'a = [', '[a]]', 'a=1 # c\n# only\n\n',
    '\ufeffa = 1', 'a = "\\U0001F600"', 'a = "\\"', 'a = """ \\ x"""', 'a = "é"', 'é = 1', 'a = inf_', 'a = 1.0_0',
    '[mcp_servers."x.y"]\ncommand = "z"', "[mcp_servers.'c:\\\\w']\nk = 1", 'a = [[1, 2], ["x"]]', 'a = [ ]', 'a = [\n]',
]


def typed(value):
    """``value`` with every scalar tagged by its type, NaN made comparable: 20 and 20.0 differ, as in TOML."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


@pytest.mark.parametrize("path,golden", GOLDEN, ids=[os.path.basename(p) for p, _ in GOLDEN])
def test_the_reader_parses_each_valid_fixture_to_tomllibs_result(path, golden):
    with open(golden, encoding="utf-8") as f:
        expected = json.load(f)
    assert typed(toml.read_minimal(read_text(path), path)) == typed(expected)
    assert typed(toml.loads(read_text(path), path)) == typed(expected)  # tomllib on 3.11+, the reader before


@pytest.mark.parametrize("path", INVALID, ids=[os.path.basename(p) for p in INVALID])
@pytest.mark.parametrize("reader", ["read_minimal", "loads"])
def test_each_invalid_fixture_is_refused_with_its_line(path, reader):
    line, words = INVALID_AT[os.path.basename(path)]
    with pytest.raises(toml.TomlError) as info:
        getattr(toml, reader)(read_text(path), path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}:") and "\n" not in message
    if reader == "read_minimal":
        assert words in message


def test_every_invalid_fixture_has_an_expected_place():
    assert sorted(INVALID_AT) == sorted(os.path.basename(p) for p in INVALID)


def test_the_windows_fixture_keeps_its_crlf_line_endings():
    with open(os.path.join(CODEX, "toml", "codex-app-windows.toml"), "rb") as f:
        data = f.read()
    assert data.count(b"\r\n") > 5 and data.count(b"\n") == data.count(b"\r\n")


def test_dates_are_refused_with_the_reason_and_place():
    with pytest.raises(toml.TomlError) as info:
        toml.read_minimal("[x]\nwhen = 1979-05-27\n", "c.toml")
    assert str(info.value).startswith("c.toml:2:8: dates and times are not supported")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
@pytest.mark.parametrize("snippet", SNIPPETS)
def test_the_reader_agrees_with_tomllib(snippet):
    import tomllib

    try:
        expected = ("value", typed(tomllib.loads(snippet)))
    except tomllib.TOMLDecodeError:
        expected = ("refused", None)
    try:
        found = ("value", typed(toml.read_minimal(snippet)))
    except toml.TomlError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("<toml>:")
        found = ("refused", None)
    assert found == expected


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
def test_loads_reports_tomllibs_errors_as_file_line_col():
    with pytest.raises(toml.TomlError) as info:
        toml.loads("a = 1\nb = [1\n", "x.toml")
    assert str(info.value).startswith("x.toml:") and "(at line" not in str(info.value)
    assert info.value.line >= 2


# What a Python 3.9 prints for each fixture: the reader's result (typed) or its error.
_ON_PY39 = """
import json, math, sys
sys.path.insert(0, sys.argv[1])
from toolscript.config import toml
def typed(v):
    if isinstance(v, dict): return {k: typed(x) for k, x in v.items()}
    if isinstance(v, list): return [typed(x) for x in v]
    if isinstance(v, float) and math.isnan(v): return ["float", "nan"]
    if isinstance(v, float) and math.isinf(v): return ["float", "inf" if v > 0 else "-inf"]
    return [type(v).__name__, v]
out = {}
for path in sys.argv[2:]:
    text = open(path, "rb").read().decode("utf-8")
    try:
        out[path] = {"value": typed(toml.loads(text, path)), "tomllib": sys.version_info >= (3, 11)}
    except toml.TomlError as exc:
        out[path] = {"error": str(exc)}
print(json.dumps(out))
"""


def json_typed(value):
    """:func:`typed` in the shape the 3.9 script prints (lists, infinities spelled out)."""
    if isinstance(value, dict):
        return {key: json_typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_typed(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return ["float", "nan"]
    if isinstance(value, float) and math.isinf(value):
        return ["float", "inf" if value > 0 else "-inf"]
    return [type(value).__name__, value]


def test_python39_reads_every_fixture_as_tomllib_does():
    python39 = find_python39()
    paths = [path for path, _ in GOLDEN] + INVALID
    proc = subprocess.run([python39, "-I", "-c", _ON_PY39, REPO_ROOT, *paths], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    for path, golden in GOLDEN:
        with open(golden, encoding="utf-8") as f:
            expected = json_typed(json.load(f))
        assert results[path].get("tomllib") is False, "Python 3.9 has no tomllib: the reader must be what ran"
        assert results[path]["value"] == expected, path
    for path in INVALID:
        line, words = INVALID_AT[os.path.basename(path)]
        assert results[path]["error"].startswith(f"{path}:{line}:") and words in results[path]["error"]
