"""The general built-in tools (toolscript.tools.builtin): time.now, tools.echo, shell.pwd, fs.list_dir, fs.read_file."""

import base64
import datetime
import os
import re
import subprocess
import sys
import time

import pytest

from builtin_calls import ctx, error_of, ok_data, root, run, write  # noqa: F401  # ctx, root: fixtures
from safe_open_mechanisms import mechanism  # noqa: F401  # a fixture
from toolscript.errors import UserError
from toolscript.gateway.catalog import builtin_tools
from toolscript.tools import builtin as builtins
from toolscript.tools import schema as jsonschema
from toolscript.tools.builtin import builtin_specs, resolve_path
from toolscript.tools.contract import DEFAULT_TIMEOUT, ERROR_EXECUTION, ERROR_INVALID_ARGS, ToolCall, ToolContext, ToolFailure, ToolSpec, execute

OUTSIDE = "is outside the workspace"
ALLOWED_SUFFIX = "only files under the workspace roots are allowed"


def outside_message(path: str, *roots: str) -> str:
    return f'path "{path}" is outside the workspace ({", ".join(roots)}); {ALLOWED_SUFFIX}'


# --- built-in specs ---------------------------------------------------------------------


def test_builtin_specs_order_and_timeouts():
    assert list(builtin_specs()) == ["time.now", "tools.echo", "shell.pwd", "fs.list_dir", "fs.read_file"]
    specs = builtin_tools(True)  # and memory's, which the gateway adds after them
    assert list(specs) == ["time.now", "tools.echo", "shell.pwd", "fs.list_dir", "fs.read_file", "memory.search", "memory.timeline", "memory.get",
                           "memory.remember"]
    assert DEFAULT_TIMEOUT == 8.0
    assert all(s.timeout == 8.0 and s.name == name for name, s in specs.items())


def test_builtin_specs_are_fresh_objects():
    first = builtin_specs()
    first["fs.read_file"].input_schema["properties"].clear()
    assert "path" in builtin_specs()["fs.read_file"].input_schema["properties"]


def _all_properties(schema):
    """Every (name, property-schema) in a schema, nested ones included."""
    for name, prop in schema.get("properties", {}).items():
        yield name, prop
        yield from _all_properties(prop)
        if isinstance(prop.get("items"), dict):
            yield from _all_properties(prop["items"])


@pytest.mark.parametrize("name", ["time.now", "tools.echo", "shell.pwd", "fs.list_dir", "fs.read_file"])
def test_schemas_are_documented_and_closed(name):
    tool = builtin_specs()[name]
    assert tool.description
    for schema in (tool.input_schema, tool.output_schema):
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is (name == "tools.echo")
        for prop_name, prop in _all_properties(schema):
            assert prop.get("description"), f"{name}: {prop_name} has no description"
    assert tool.to_mcp()["inputSchema"] is tool.input_schema


# --- time.now, tools.echo, shell.pwd -----------------------------------------------------


def test_time_now(ctx):
    before = int(time.time() * 1000)
    data = ok_data(run("time.now", ctx))
    after = int(time.time() * 1000)
    assert set(data) == {"timestamp", "iso"}
    assert isinstance(data["timestamp"], int)
    assert before - 1 <= data["timestamp"] <= after + 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", data["iso"])
    parsed = datetime.datetime.strptime(data["iso"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    assert (parsed - epoch) // datetime.timedelta(milliseconds=1) == data["timestamp"]


def test_time_now_refuses_arguments(ctx):
    assert error_of(run("time.now", ctx, zone="UTC")) == (ERROR_INVALID_ARGS, "/zone: unexpected property")


def test_echo_returns_the_input(ctx):
    args = {"text": "hi", "n": 1.5, "nested": {"list": [1, None, True]}, "empty": {}}
    assert ok_data(run("tools.echo", ctx, **args)) == args
    assert ok_data(run("tools.echo", ctx)) == {}


def test_pwd_is_first_root(tmp_path, root):
    other = os.path.realpath(str(tmp_path))
    data = ok_data(run("shell.pwd", ToolContext(workspace_roots=[root, other])))
    assert data == {"cwd": root}


def test_no_roots_is_an_execution_error():
    assert error_of(run("shell.pwd", ToolContext(workspace_roots=[]))) == (
        ERROR_EXECUTION,
        "no workspace roots are configured",
    )


# --- fs.list_dir ----------------------------------------------------------------------


def test_list_dir_top_level(root, ctx):
    write(os.path.join(root, "b.txt"), b"12345")
    write(os.path.join(root, "a.txt"), b"")
    write(os.path.join(root, "sub", "inner.txt"), b"x")
    os.symlink("a.txt", os.path.join(root, "link"))
    data = ok_data(run("fs.list_dir", ctx))
    assert data == {
        "path": ".",
        "entries": [
            {"name": "a.txt", "path": "a.txt", "type": "file", "size": 0},
            {"name": "b.txt", "path": "b.txt", "type": "file", "size": 5},
            {"name": "link", "path": "link", "type": "symlink"},
            {"name": "sub", "path": "sub", "type": "dir"},
        ],
        "truncated": False,
    }


def test_list_dir_other_type(root, ctx):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(os.path.join(root, "pipe"))
    assert ok_data(run("fs.list_dir", ctx))["entries"] == [{"name": "pipe", "path": "pipe", "type": "other"}]


def _tree(root):
    # a/b/c/d/e/f.txt, plus a/top.txt
    write(os.path.join(root, "a", "b", "c", "d", "e", "f.txt"), b"deep")
    write(os.path.join(root, "a", "top.txt"), b"t")


def test_list_dir_recursive_default_depth(root, ctx):
    _tree(root)
    paths = [e["path"] for e in ok_data(run("fs.list_dir", ctx, recursive=True))["entries"]]
    assert paths == ["a", "a/b", "a/b/c", "a/b/c/d", "a/top.txt"]


def test_list_dir_recursive_max_depth(root, ctx):
    _tree(root)
    paths = [e["path"] for e in ok_data(run("fs.list_dir", ctx, recursive=True, maxDepth=2))["entries"]]
    assert paths == ["a", "a/b", "a/top.txt"]
    paths = [e["path"] for e in ok_data(run("fs.list_dir", ctx, recursive=True, maxDepth=32))["entries"]]
    assert paths == ["a", "a/b", "a/b/c", "a/b/c/d", "a/b/c/d/e", "a/b/c/d/e/f.txt", "a/top.txt"]


def test_list_dir_max_depth_ignored_without_recursive(root, ctx):
    _tree(root)
    paths = [e["path"] for e in ok_data(run("fs.list_dir", ctx, maxDepth=5))["entries"]]
    assert paths == ["a"]


def test_list_dir_sorted_by_path(root, ctx):
    for name in ["zeta", "Alpha", "beta", "_x", "10", "9"]:
        write(os.path.join(root, "d", name), b"")
    write(os.path.join(root, "c.txt"), b"")
    data = ok_data(run("fs.list_dir", ctx, recursive=True))
    paths = [e["path"] for e in data["entries"]]
    assert paths == ["c.txt", "d", "d/10", "d/9", "d/Alpha", "d/_x", "d/beta", "d/zeta"]


def test_list_dir_subdirectory(root, ctx):
    write(os.path.join(root, "sub", "deeper", "x.txt"), b"xy")
    data = ok_data(run("fs.list_dir", ctx, path="sub", recursive=True))
    assert data["path"] == "sub"
    assert data["entries"] == [
        {"name": "deeper", "path": "deeper", "type": "dir"},
        {"name": "x.txt", "path": "deeper/x.txt", "type": "file", "size": 2},
    ]
    assert ok_data(run("fs.list_dir", ctx, path=os.path.join(root, "sub")))["path"] == "sub"


def test_list_dir_does_not_follow_symlinked_directories(root, ctx):
    write(os.path.join(root, "real", "inside.txt"), b"")
    os.symlink(os.path.join(root, "real"), os.path.join(root, "alias"))
    paths_types = [(e["path"], e["type"]) for e in ok_data(run("fs.list_dir", ctx, recursive=True))["entries"]]
    assert paths_types == [("alias", "symlink"), ("real", "dir"), ("real/inside.txt", "file")]


def test_list_dir_symlink_loop_is_harmless(root, ctx):
    os.symlink(".", os.path.join(root, "self"))
    entries = ok_data(run("fs.list_dir", ctx, recursive=True, maxDepth=32))["entries"]
    assert entries == [{"name": "self", "path": "self", "type": "symlink"}]


def test_list_dir_truncates(root, ctx, monkeypatch):
    monkeypatch.setattr(builtins, "MAX_LIST_ENTRIES", 3)
    for name in ["e", "d", "c", "b", "a"]:
        write(os.path.join(root, name), b"")
    data = ok_data(run("fs.list_dir", ctx))
    assert [e["path"] for e in data["entries"]] == ["a", "b", "c"]
    assert data["truncated"] is True


def test_list_dir_truncates_while_recursing(root, ctx, monkeypatch):
    monkeypatch.setattr(builtins, "MAX_LIST_ENTRIES", 3)
    for name in ["a/1", "a/2", "a/3", "b"]:
        write(os.path.join(root, name), b"")
    data = ok_data(run("fs.list_dir", ctx, recursive=True))
    assert [e["path"] for e in data["entries"]] == ["a", "a/1", "a/2"]
    assert data["truncated"] is True


def test_list_dir_exactly_at_the_cap_is_not_truncated(root, ctx, monkeypatch):
    monkeypatch.setattr(builtins, "MAX_LIST_ENTRIES", 3)
    for name in ["a", "b", "c"]:
        write(os.path.join(root, name), b"")
    data = ok_data(run("fs.list_dir", ctx))
    assert len(data["entries"]) == 3
    assert data["truncated"] is False


def test_list_dir_default_cap_is_5000():
    assert builtins.MAX_LIST_ENTRIES == 5000
    assert "5000 entries" in builtin_specs()["fs.list_dir"].description


def test_list_dir_errors(root, ctx):
    write(os.path.join(root, "f.txt"), b"")
    assert error_of(run("fs.list_dir", ctx, path="f.txt")) == (ERROR_EXECUTION, 'path "f.txt" is not a directory')
    assert error_of(run("fs.list_dir", ctx, path="nope")) == (ERROR_EXECUTION, 'path "nope" does not exist')


# --- fs.read_file ----------------------------------------------------------------------


def test_read_text_file(root, ctx):
    write(os.path.join(root, "notes", "a.md"), "héllo\nwörld ✓\n")
    data = ok_data(run("fs.read_file", ctx, path="notes/a.md"))
    assert data == {
        "path": "notes/a.md",
        "size": len("héllo\nwörld ✓\n".encode("utf-8")),
        "encoding": "utf-8",
        "content": "héllo\nwörld ✓\n",
    }


def test_read_binary_file_as_base64(root, ctx):
    blob = bytes(range(256))
    write(os.path.join(root, "blob.bin"), blob)
    data = ok_data(run("fs.read_file", ctx, path="blob.bin"))
    assert data["encoding"] == "base64"
    assert data["size"] == 256
    assert base64.b64decode(data["content"]) == blob


def test_read_nul_bytes_as_base64(root, ctx):
    write(os.path.join(root, "z.bin"), b"abc\x00def")
    data = ok_data(run("fs.read_file", ctx, path="z.bin"))
    assert (data["encoding"], base64.b64decode(data["content"])) == ("base64", b"abc\x00def")


def test_read_empty_file(root, ctx):
    write(os.path.join(root, "empty"), b"")
    data = ok_data(run("fs.read_file", ctx, path="empty"))
    assert (data["size"], data["encoding"], data["content"]) == (0, "utf-8", "")


def test_read_over_default_max_bytes_is_an_error(root, ctx):
    write(os.path.join(root, "big.txt"), b"x" * 300000)
    assert error_of(run("fs.read_file", ctx, path="big.txt")) == (
        ERROR_EXECUTION,
        "file is 300000 bytes, over maxBytes 204800; ask for a larger maxBytes or read a smaller file",
    )
    data = ok_data(run("fs.read_file", ctx, path="big.txt", maxBytes=300000))
    assert data["size"] == 300000 and len(data["content"]) == 300000


def test_read_max_bytes_boundary(root, ctx):
    write(os.path.join(root, "ten"), b"0123456789")
    assert ok_data(run("fs.read_file", ctx, path="ten", maxBytes=10))["content"] == "0123456789"
    assert error_of(run("fs.read_file", ctx, path="ten", maxBytes=9)) == (
        ERROR_EXECUTION,
        "file is 10 bytes, over maxBytes 9; ask for a larger maxBytes or read a smaller file",
    )


def test_read_max_bytes_must_be_positive(root, ctx):
    result = run("fs.read_file", ctx, path="x", maxBytes=0)
    assert error_of(result) == (ERROR_INVALID_ARGS, "/maxBytes: expected >= 1, got 0")


def test_read_directory_is_an_error(root, ctx):
    os.mkdir(os.path.join(root, "dir"))
    assert error_of(run("fs.read_file", ctx, path="dir")) == (
        ERROR_EXECUTION,
        'path "dir" is a directory, not a regular file; use fs.list_dir to list it',
    )
    assert error_of(run("fs.read_file", ctx, path="."))[1].startswith('path "." is a directory')


def test_read_fifo_is_an_error_and_does_not_block(root, ctx):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(os.path.join(root, "pipe"))
    assert error_of(run("fs.read_file", ctx, path="pipe")) == (ERROR_EXECUTION, 'path "pipe" is not a regular file')


def test_read_missing_file(ctx):
    assert error_of(run("fs.read_file", ctx, path="nope.txt")) == (ERROR_EXECUTION, 'path "nope.txt" does not exist')


def test_read_symlink_inside_the_workspace(root, ctx):
    write(os.path.join(root, "real.txt"), "data")
    os.symlink("real.txt", os.path.join(root, "alias.txt"))
    data = ok_data(run("fs.read_file", ctx, path="alias.txt"))
    assert (data["path"], data["content"]) == ("real.txt", "data")


# --- workspace confinement ------------------------------------------------------------


@pytest.mark.parametrize("path", ["..", "../../etc/passwd", "/etc/passwd", "sub/../../x", "/"])
def test_escapes_are_refused(root, ctx, path):
    os.mkdir(os.path.join(root, "sub"))
    with pytest.raises(ToolFailure) as info:
        resolve_path(path, ctx)
    assert str(info.value) == outside_message(path, root)
    for tool in ("fs.read_file", "fs.list_dir"):
        assert error_of(run(tool, ctx, path=path)) == (ERROR_EXECUTION, outside_message(path, root))


def test_dotdot_that_stays_inside_is_allowed(root, ctx):
    write(os.path.join(root, "a.txt"), "A")
    os.mkdir(os.path.join(root, "sub"))
    assert resolve_path("sub/../a.txt", ctx) == os.path.join(root, "a.txt")
    assert ok_data(run("fs.read_file", ctx, path="sub/../a.txt"))["content"] == "A"


def test_root_itself_is_allowed(root, ctx):
    assert resolve_path(".", ctx) == root
    assert resolve_path(root, ctx) == root
    assert resolve_path("", ctx) == root
    assert ok_data(run("fs.list_dir", ctx, path=root))["path"] == "."


def test_symlink_pointing_out_is_refused(tmp_path, root, ctx):
    outside = os.path.realpath(str(tmp_path / "secret"))
    write(os.path.join(outside, "key.txt"), "s3cret")
    os.symlink(outside, os.path.join(root, "out"))
    os.symlink(os.path.join(outside, "key.txt"), os.path.join(root, "key-link.txt"))

    for tool, path in [
        ("fs.read_file", "key-link.txt"),
        ("fs.read_file", "out/key.txt"),
        ("fs.list_dir", "out"),
        ("fs.list_dir", "out/"),
    ]:
        assert error_of(run(tool, ctx, path=path)) == (ERROR_EXECUTION, outside_message(path, root)), (tool, path)

    # Listing the root shows the links but never what is behind them.
    data = ok_data(run("fs.list_dir", ctx, recursive=True))
    assert [(e["path"], e["type"]) for e in data["entries"]] == [("key-link.txt", "symlink"), ("out", "symlink")]


def test_sibling_with_common_prefix_is_outside(tmp_path, root, ctx):
    sibling = root + "2"
    write(os.path.join(sibling, "f.txt"), "nope")
    for path in [os.path.join(sibling, "f.txt"), "../root2/f.txt", sibling]:
        with pytest.raises(ToolFailure) as info:
            resolve_path(path, ctx)
        assert str(info.value) == outside_message(path, root)
    assert error_of(run("fs.read_file", ctx, path="../root2/f.txt"))[0] == ERROR_EXECUTION


def test_second_root_is_allowed(tmp_path, root):
    second = os.path.realpath(str(tmp_path / "second"))
    write(os.path.join(second, "doc.txt"), "two")
    elsewhere = os.path.realpath(str(tmp_path / "elsewhere"))
    write(os.path.join(elsewhere, "x.txt"), "no")
    ctx = ToolContext(workspace_roots=[root, second])

    data = ok_data(run("fs.read_file", ctx, path=os.path.join(second, "doc.txt")))
    # Absolute: relative, it would be read against the first root.
    assert (data["path"], data["content"]) == (os.path.join(second, "doc.txt"), "two")
    listing = ok_data(run("fs.list_dir", ctx, path=second))
    assert listing["path"] == second
    assert [e["path"] for e in listing["entries"]] == ["doc.txt"]

    # Relative paths still start from the first root, and other places stay closed.
    assert error_of(run("fs.read_file", ctx, path="doc.txt"))[1] == 'path "doc.txt" does not exist'
    bad = os.path.join(elsewhere, "x.txt")
    assert error_of(run("fs.read_file", ctx, path=bad))[1] == outside_message(bad, root, second)


def test_symlink_into_second_root_is_allowed(tmp_path, root):
    second = os.path.realpath(str(tmp_path / "second"))
    write(os.path.join(second, "doc.txt"), "two")
    os.symlink(os.path.join(second, "doc.txt"), os.path.join(root, "doc-link"))
    ctx = ToolContext(workspace_roots=[root, second])
    assert ok_data(run("fs.read_file", ctx, path="doc-link"))["content"] == "two"
    assert error_of(run("fs.read_file", ToolContext(workspace_roots=[root]), path="doc-link"))[0] == ERROR_EXECUTION


def test_nul_byte_in_path_is_refused(ctx):
    for tool in ("fs.read_file", "fs.list_dir"):
        assert error_of(run(tool, ctx, path="a\x00b")) == (
            ERROR_EXECUTION,
            'path "a\x00b" is not usable: it contains a NUL byte',
        )


# --- outputs match the published output schemas ----------------------------------------


def test_outputs_match_output_schemas(root, ctx):
    write(os.path.join(root, "d", "f.txt"), "x")
    write(os.path.join(root, "b.bin"), b"\xff\xfe")
    os.symlink("d", os.path.join(root, "l"))
    specs = builtin_specs()
    calls = [
        ("time.now", {}),
        ("tools.echo", {"a": [1]}),
        ("shell.pwd", {}),
        ("fs.list_dir", {"recursive": True}),
        ("fs.read_file", {"path": "d/f.txt"}),
        ("fs.read_file", {"path": "b.bin"}),
    ]
    for name, args in calls:
        data = ok_data(execute(specs, ToolCall(name=name, args=args), ctx))
        assert jsonschema.validate(data, specs[name].output_schema) == [], name
    # The check itself can fail: a listing entry with a made-up type does not match.
    bad = {"path": ".", "entries": [{"name": "x", "path": "x", "type": "weird"}], "truncated": False}
    assert jsonschema.validate(bad, specs["fs.list_dir"].output_schema) != []


# --- choosing built-ins: select_builtins, as the gateway's builtin_tools calls it ---------


def test_select_all_and_none():
    assert list(builtin_tools(True)) == list(builtin_specs()) + ["memory.search", "memory.timeline", "memory.get",
                           "memory.remember"]
    assert builtin_tools(False) == {}


def test_select_list_keeps_builtin_order():
    chosen = builtin_tools(["fs.read_file", "time.now"])
    assert list(chosen) == ["time.now", "fs.read_file"]
    assert all(isinstance(s, ToolSpec) for s in chosen.values())
    assert builtin_tools([]) == {}


def test_select_unknown_name():
    with pytest.raises(UserError) as info:
        builtin_tools(["time.now", "fs.write_file"])
    assert str(info.value) == (
        'unknown built-in tool "fs.write_file"; known built-in tools: '
        "time.now, tools.echo, shell.pwd, fs.list_dir, fs.read_file, memory.search, memory.timeline, memory.get, memory.remember"
    )
    with pytest.raises(UserError) as info:
        builtin_tools(["a", "b"])
    assert str(info.value).startswith('unknown built-in tools "a", "b"; known built-in tools: time.now, ')


@pytest.mark.parametrize("setting", ["time.now", 1, None, [1]])
def test_select_bad_setting(setting):
    with pytest.raises(UserError) as info:
        builtin_tools(setting)
    assert str(info.value) == "the built-in tools setting must be true, false or a list of tool names"


# --- a directory swapped for a symlink while a tool runs ---------------------------------

# Swaps <root>/d between a real directory and a symlink to the outside directory, over and
# over, with renames only (each step atomic), until the stop file appears.
_SWAPPER = """
import os, sys
root, outside, stop = sys.argv[1:4]
d, held, link = (os.path.join(root, name) for name in ("d", "d.held", "d.link"))
os.symlink(outside, link)
open(stop + ".ready", "w").close()
while not os.path.exists(stop):
    os.rename(d, held)
    os.rename(link, d)
    os.rename(d, link)
    os.rename(held, d)
"""
CANARY = "CANARY-from-outside-the-workspace"
# Without the descriptor-relative open, each of these races leaked within a few hundred calls.
RACE_CALLS = 5000


@pytest.fixture
def outside(tmp_path) -> str:
    """A directory next to the workspace holding secret.txt and canary.txt, both CANARY."""
    path = os.path.realpath(str(tmp_path / "outside"))
    write(os.path.join(path, "secret.txt"), CANARY)
    write(os.path.join(path, "canary.txt"), CANARY)
    return path


@pytest.fixture
def swapping(tmp_path, root, outside):
    """<root>/d/secret.txt ("inside"), and a process swapping d for a symlink to ``outside`` all the time."""
    write(os.path.join(root, "d", "secret.txt"), "inside")
    stop = str(tmp_path / "stop")
    proc = subprocess.Popen([sys.executable, "-c", _SWAPPER, root, outside, stop])
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(stop + ".ready") and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None and os.path.exists(stop + ".ready"), "the swapping process did not start"
        yield
    finally:
        open(stop, "w").close()
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, "the swapping process failed, so the race did not run"


def _race(handler, args, ctx, leaked) -> int:
    """Call ``handler`` RACE_CALLS times (stopping at the first leak); how many calls succeeded."""
    succeeded = 0
    for _ in range(RACE_CALLS):
        try:
            data = handler(dict(args), ctx)
        except ToolFailure:
            continue  # d was missing, or a symlink was met on the way: refused, which is right
        succeeded += 1
        if leaked(data):
            pytest.fail(f"read outside the workspace through a swapped symlink after {succeeded} reads: {data}")
    return succeeded


def test_read_file_never_follows_a_directory_swapped_for_a_symlink(ctx, mechanism, swapping):
    handler = builtin_specs()["fs.read_file"].handler
    succeeded = _race(handler, {"path": "d/secret.txt"}, ctx, lambda data: data["content"] != "inside")
    assert succeeded > 0  # the race ran against real reads, not only refusals


def test_list_dir_never_lists_a_directory_swapped_for_a_symlink(ctx, mechanism, swapping):
    handler = builtin_specs()["fs.list_dir"].handler
    names = lambda data: {entry["name"] for entry in data["entries"]}  # noqa: E731
    succeeded = _race(handler, {"path": "d"}, ctx, lambda data: "canary.txt" in names(data))
    assert succeeded > 0


def test_recursive_list_never_enters_a_directory_swapped_for_a_symlink(ctx, mechanism, swapping):
    handler = builtin_specs()["fs.list_dir"].handler
    paths = lambda data: {entry["path"] for entry in data["entries"]}  # noqa: E731
    succeeded = _race(handler, {"path": ".", "recursive": True}, ctx, lambda data: "d/canary.txt" in paths(data))
    assert succeeded > 0


def _checked_before_the_swap(monkeypatch, root):
    """Make resolve_path answer as it did while <root>/d was still a directory: the race, made certain."""
    checked = builtins.resolve_path

    def resolve_then_swap(path, context):
        real = checked(path, context)
        os.rename(os.path.join(root, "d"), os.path.join(root, "d.held"))
        os.rename(os.path.join(root, "d.link"), os.path.join(root, "d"))
        return real

    monkeypatch.setattr(builtins, "resolve_path", resolve_then_swap)


SWAPPED = (
    'path "{}" is not usable: a symlink on it changed while it was opened, or loops; '
    "symlinks are followed only when they lead inside the workspace"
)


@pytest.mark.parametrize("tool, path", [("fs.read_file", "d/secret.txt"), ("fs.list_dir", "d"), ("fs.read_file", "d")])
def test_a_symlink_swapped_in_after_the_check_is_refused(root, ctx, outside, mechanism, monkeypatch, tool, path):
    write(os.path.join(root, "d", "secret.txt"), "inside")
    os.symlink(outside, os.path.join(root, "d.link"))
    _checked_before_the_swap(monkeypatch, root)
    assert error_of(run(tool, ctx, path=path)) == (ERROR_EXECUTION, SWAPPED.format(path))


def test_symlinks_inside_the_workspace_still_work_both_ways(root, ctx, mechanism):
    write(os.path.join(root, "real", "f.txt"), "data")
    os.symlink("real", os.path.join(root, "dir-link"))
    os.symlink(os.path.join(root, "real", "f.txt"), os.path.join(root, "file-link"))
    assert ok_data(run("fs.read_file", ctx, path="dir-link/f.txt"))["content"] == "data"
    assert ok_data(run("fs.read_file", ctx, path="file-link"))["path"] == "real/f.txt"
    listing = ok_data(run("fs.list_dir", ctx, path="dir-link"))
    assert (listing["path"], [e["path"] for e in listing["entries"]]) == ("real", ["f.txt"])


def test_symlink_loop_is_a_clear_error(root, ctx, mechanism):
    os.symlink("loop", os.path.join(root, "loop"))
    for tool in ("fs.read_file", "fs.list_dir"):
        assert error_of(run(tool, ctx, path="loop")) == (ERROR_EXECUTION, SWAPPED.format("loop"))


def test_a_file_where_a_directory_should_be(root, ctx, mechanism):
    write(os.path.join(root, "f.txt"), "x")
    assert error_of(run("fs.read_file", ctx, path="f.txt/x")) == (ERROR_EXECUTION, 'cannot access "f.txt/x": Not a directory')
    assert error_of(run("fs.list_dir", ctx, path="f.txt/x")) == (ERROR_EXECUTION, 'cannot access "f.txt/x": Not a directory')


def test_the_file_tools_leave_no_descriptor_open(root, ctx, mechanism):
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd to count descriptors")
    write(os.path.join(root, "a", "b", "f.txt"), "x")
    os.symlink("loop", os.path.join(root, "loop"))
    specs = builtin_specs()
    before = len(os.listdir("/proc/self/fd"))
    for name, args in [("fs.read_file", {"path": "a/b/f.txt"}), ("fs.read_file", {"path": "a/nope"}),
                       ("fs.read_file", {"path": "loop"}), ("fs.list_dir", {"recursive": True}),
                       ("fs.list_dir", {"path": "a/b/f.txt"})] * 20:
        try:
            specs[name].handler(args, ctx)
        except ToolFailure:
            pass
    assert len(os.listdir("/proc/self/fd")) == before
