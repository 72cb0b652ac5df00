"""``toolscript exec --lang ts``: TypeScript under the pinned Deno (npm ``deno`` 2.9.6 in tests/peers).

Deno really runs here: ``peers.deno_binary()`` finds it (a missing binary
skips, or fails under ``TOOLSCRIPT_REQUIRE_PEERS=1``).  Tool calls go through a
real gateway in this process with the stdlib fixture server over stdio; the
result rules are pinned against a fake gateway with canned answers.  Every
escape attempt must be refused by Deno's permission checks with a message
that names what was refused.
"""

import http.server
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from conftest import FAKE_TOOL_RESULTS, REPO_ROOT, Output, deno_on_runtime, fake_gateway_api, running_gateway
from mcp_servers.launch import FIXTURE
from toolscript.codemode import deno
from toolscript.gateway import tsruntime
from toolscript.config.load import ServerConfig
from toolscript.errors import UserError


def run_ts(deno_path, code, **kwargs):
    """deno.run with captured output: (ExecResult, stdout text, stderr text)."""
    out, err = Output(), Output()
    result = deno.run(code, stdout=out, stderr=err, deno=deno_path, **kwargs)
    return result, out.text, err.text


def expected_mode():
    """The ``ExecResult.mode`` a run reports here: ``landlock(abi 7)+seccomp+deno-permissions`` or ``deno-permissions``."""
    kernel = deno.kernel_layer()
    return f"{kernel}+{deno.MODE}" if kernel else deno.MODE


def assert_group_gone(result):
    assert result.pid > 0
    with pytest.raises(ProcessLookupError):
        os.killpg(result.pid, 0)


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory):
    """A real gateway in this process with the fixture server over stdio (server ``fixture``)."""
    fixture = ServerConfig(name="fixture", type="stdio", source="t", command=sys.executable, args=[FIXTURE, "stdio"], timeout=10)
    with running_gateway([fixture], tmp_path_factory.mktemp("ws")) as (gw, url):
        assert gw.wait_for_servers() == []
        yield url


@pytest.fixture
def listener():
    """Another local port, which scripts must not reach."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(5)
    yield sock.getsockname()[1]
    sock.close()


# -- the runtime module, against the real gateway ---------------------------------------------


def test_tools_calls_chain_and_return_plain_values(deno_path, gateway_url):
    code = """
import { tools } from "toolscript";
const first = await tools.fixture.add({ a: 2, b: 3 });           // structuredContent
const second = await tools.fixture.add({ a: first.sum, b: 10 }); // chained
const echoed = await tools.fixture.echo({ message: `sum is ${second.sum}` });  // text, not JSON
const dynamic = await tools.call("fixture__add", { a: 1, b: 1 });
const now = await tools.builtin.time_now();                       // a built-in: its data as is
console.log(JSON.stringify({ first, second, echoed, dynamic, iso: typeof now.iso }));
"""
    result, out, err = run_ts(deno_path, code, gateway_url=gateway_url)
    assert result.exit_code == 0, err
    assert json.loads(out) == {"first": {"sum": 5}, "second": {"sum": 15}, "echoed": "Echo: sum is 15", "dynamic": {"sum": 2}, "iso": "string"}
    assert result.mode == expected_mode() and not result.timed_out and not result.truncated
    assert_group_gone(result)


def test_tool_errors_reject_with_tool_error(deno_path, gateway_url):
    code = """
import { tools, ToolError } from "toolscript";
try {
  await tools.fixture.fail({ message: "boom" });
} catch (err) {
  console.log(JSON.stringify({ isToolError: err instanceof ToolError, name: err.name, message: err.message,
    tool: err.tool, code: err.code, reason: err.reason }));
}
try { await tools.call("fixture__nope", {}); } catch (err) { console.log(err.code, err.message); }
try { await tools.fixture.add({ a: "x", b: 1 }); } catch (err) { console.log(err.code, err.message); }
await tools.fixture.fail({ message: "uncaught" });
"""
    result, out, err = run_ts(deno_path, code, gateway_url=gateway_url)
    lines = out.splitlines()
    assert json.loads(lines[0]) == {
        "isToolError": True, "name": "ToolError", "message": "fixture__fail: boom",
        "tool": "fixture__fail", "code": "execution_error", "reason": "boom",
    }
    assert lines[1].startswith("tool_not_found fixture__nope: unknown tool"), lines[1]
    assert lines[2].startswith("invalid_args fixture__add: /a"), lines[2]
    assert result.exit_code == 1
    assert "Uncaught" in err and "ToolError: fixture__fail: uncaught" in err


def test_the_gateway_token_never_reaches_the_output(deno_path, gateway_url):
    token = gateway_url.rstrip("/").rsplit("/", 1)[1]
    code = """
import { tools } from "toolscript";
try { await tools.fixture.fail({ message: "caught" }); } catch (err) { console.log(err); }
console.log(import.meta.resolve("toolscript"));
await tools.fixture.fail({ message: "uncaught" });
"""
    result, out, err = run_ts(deno_path, code, gateway_url=gateway_url)
    assert result.exit_code == 1
    assert "/t/<token>/runtime/tools.ts" in out and "/t/<token>/runtime/tools.ts" in err
    assert token not in out and token not in err


def test_redaction_holds_across_chunk_boundaries():
    sink = io.BytesIO()
    stream = deno._Redacting(sink, "SECRETTOKEN0123456789")
    for piece in [b"a SECRET", b"TOKEN0123", b"456789 b S", b"ECRETTOKEN0123456789\n", b"tail S"]:
        stream.write(piece)
    stream.finish()
    assert sink.getvalue() == b"a <token> b <token>\ntail S"


def test_discovery_and_helpful_name_errors(deno_path, gateway_url):
    code = """
import { tools } from "toolscript";
const hits = await tools.search("add two integers", 3);
console.log(hits[0].id, hits.length <= 3);
console.log((await tools.list("fixture")).some((t) => t.id === "fixture__echo"));
for (const attempt of [() => tools.fixture.Add, () => tools.builtin.timeNow, () => tools.nosuch, () => tools.fixture.add(1, 2)]) {
  try { await attempt(); } catch (err) { console.log(err.message); }
}
console.log(typeof tools.fixture.then, JSON.stringify(Object.keys(tools)), tools.fixture.add.name);
"""
    result, out, err = run_ts(deno_path, code, gateway_url=gateway_url)
    assert result.exit_code == 0, err
    lines = out.splitlines()
    assert lines[0] == "fixture__add true"
    assert lines[1] == "true"
    assert lines[2].startswith('tools.fixture has no tool "Add"; did you mean add?')
    assert lines[3].startswith('tools.builtin has no tool "timeNow"; did you mean time_now?')
    assert lines[4].startswith('tools has no server "nosuch"') and "fixture" in lines[4]
    assert lines[5] == "tools.fixture.add() takes one object of arguments: tools.fixture.add({ a: ..., b: ... })"
    assert lines[6] == 'undefined ["builtin","fixture"] add'


def test_the_gateway_serves_the_module_with_its_token(gateway_url):
    with urllib.request.urlopen(gateway_url + "/runtime/tools.ts", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("application/typescript")
        text = response.read().decode()
    assert 'export const tools: Tools' in text and '\\"fixture\\":{' in text
    tokenless = gateway_url.rsplit("/t/", 1)[0] + "/t/wrong/runtime/tools.ts"
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(tokenless, timeout=10)
    assert caught.value.code in (401, 403, 404)


# -- the runtime module, against a fake gateway -------------------------------------------------

FAKE_NAMES = {
    "servers": {
        "x": {
            **{tool.split("__")[1]: {"id": tool, "args": {}} for tool in FAKE_TOOL_RESULTS},
            "renamed": {"id": "x__renamed", "args": {"per_page": "per-page", "from_": "from", "query": "query"}},
            "broken": {"id": "x__broken", "args": {}},
        },
        "builtin": {"time_now": {"id": "builtin__time.now", "args": {}}},
        # Names a server could send: they must not break or change the module.
        "hostile": {
            "__proto__": {"id": "hostile__proto\"*/`${globalThis.x=1}`\u2028", "args": {"__proto__": "__proto__"}},
            "constructor": {"id": "hostile__</script>\\", "args": {}},
        },
    }
}


class FakeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/t/tok/runtime/tools.ts":
            self._send(200, tsruntime.typescript_runtime(FAKE_NAMES).encode(), "application/typescript")
        elif self.path.startswith("/t/tok/search?"):
            self.server.calls.append(self.path)
            self._send(200, json.dumps({"results": [{"id": "x__plain_text", "score": 0.9}]}).encode())
        else:
            self._send(404, b'{"error": "no such endpoint"}')

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.calls.append(request)
        tool = request["tool"]
        if tool == "x__broken":
            self._send(500, b'{"error": "something broke"}')
        elif tool.startswith("builtin__"):
            self._send(200, json.dumps({"ok": True, "data": {"content": "raw builtin data"}}).encode())
        elif tool in FAKE_TOOL_RESULTS:
            self._send(200, json.dumps({"ok": True, "data": FAKE_TOOL_RESULTS[tool]}).encode())
        else:
            self._send(200, json.dumps({"ok": False, "error": {"code": "upstream_error", "message": "no"}, "data": None}).encode())


@pytest.fixture
def fake_gateway():
    with fake_gateway_api(FakeHandler) as server:
        yield server


def test_result_rules_arguments_and_escaping_against_a_fake_gateway(deno_path, fake_gateway):
    code = """
import { tools } from "toolscript";
const out: Record<string, any> = {};
for (const name of ["structured", "json_text", "plain_text", "two_texts", "image", "empty"]) out[name] = await tools.x[name]();
out.builtin = await tools.builtin.time_now();
out.renamed = await tools.x.renamed({ per_page: 5, "from": "a", from_: "b", query: undefined, other: null }).catch((e) => e.code);
out.broken = await tools.x.broken().catch((e) => e.message);
out.search = await tools.search("say hello", 2);
out.hostile = [typeof tools.hostile.__proto__, typeof tools.hostile.constructor, (globalThis as any).x ?? null];
console.log(JSON.stringify(out));
"""
    result, out, err = run_ts(deno_path, code, gateway_url=fake_gateway.url)
    assert result.exit_code == 0, err
    got = json.loads(out)
    assert got["structured"] == {"b": 2}
    assert got["json_text"] == {"a": [1, 2]}
    assert got["plain_text"] == "hello"
    assert got["two_texts"] == "one\ntwo"
    assert got["image"] == FAKE_TOOL_RESULTS["x__image"]["content"]
    assert got["empty"] == []
    assert got["builtin"] == {"content": "raw builtin data"}
    assert got["renamed"] == "upstream_error"
    assert got["broken"] == "x__broken: gateway answered HTTP 500: something broke"
    assert got["search"] == [{"id": "x__plain_text", "score": 0.9}]
    assert got["hostile"] == ["function", "function", None]
    calls = {c["tool"]: c for c in fake_gateway.calls if isinstance(c, dict)}
    # Python keyword spellings map back to JSON names; JSON names pass through; undefined is left out.
    assert calls["x__renamed"]["arguments"] == {"per-page": 5, "from": "b", "other": None}
    assert calls["x__structured"] == {"tool": "x__structured", "arguments": {}, "source": "exec-ts"}
    assert "/t/tok/search?q=say%20hello&limit=2" in fake_gateway.calls


def test_runtime_module_type_checks(deno_path, tmp_path):
    """Under --check (which exec skips: it costs about a second a run), results are `any`: `result.url` compiles."""
    main_ts = (
        'import { tools, ToolError } from "./tools.ts";\n'
        "const r = await tools.x.plain_text();\n"
        "console.log(r.url, r.deeply.nested, new ToolError('a', 'b', 'c').reason);\n"
        "const hits = await tools.search('q'); console.log(hits[0].id);\n"
    )
    proc = deno_on_runtime(deno_path, tmp_path, FAKE_NAMES, main_ts, "check", "--no-config", "tools.ts", "main.ts")
    assert proc.returncode == 0, proc.stderr


def test_typescript_runtime_escapes_every_name():
    text = tsruntime.typescript_runtime(FAKE_NAMES)
    assert text.isascii()  # U+2028 and every other non-ASCII character escaped, never raw
    (line,) = [l for l in text.splitlines() if l.startswith("const NAMES: any = JSON.parse(")]
    literal = line[len("const NAMES: any = JSON.parse("):-len(");")]
    assert json.loads(json.loads(literal)) == {**FAKE_NAMES, "unavailable": {}}  # the data is one string literal
    assert "globalThis.x" not in text.replace(line, "")
    empty = tsruntime.typescript_runtime({})
    assert "export const tools: Tools" in empty and 'JSON.parse("{\\"servers\\":{},\\"unavailable\\":{}}")' in empty


# -- permissions ------------------------------------------------------------------------------

ESCAPES = {
    "read": ('await Deno.readTextFile("/etc/passwd")', 'Requires read access to "/etc/passwd"'),
    "fetch_file": ('await fetch("file:///etc/passwd")', 'Requires read access to "/etc/passwd"'),
    "write": ('await Deno.writeTextFile("/tmp/toolscript-deno-escape", "x")', "Requires write access"),
    # A bare name ("id") fails earlier: with no PATH in the environment Deno cannot find it.
    "run": ('await new Deno.Command("/bin/sh", {{ args: ["-c", "id"] }}).output()', 'Requires run access to "/bin/sh"'),
    "env": ('Deno.env.get("PATH")', 'Requires env access to "PATH"'),
    "sys": ("Deno.hostname()", 'Requires sys access to "hostname"'),
    "ffi": ('Deno.dlopen("/lib/x86_64-linux-gnu/libc.so.6", {{}})', "Requires ffi access"),
    "other_port": ('await fetch("http://127.0.0.1:{port}/")', 'Requires net access to "127.0.0.1:{port}"'),
    "connect": ('await Deno.connect({{ hostname: "127.0.0.1", port: {port} }})', 'Requires net access to "127.0.0.1:{port}"'),
    "remote_import": ('await import("https://deno.land/std/version.ts")', 'Requires import access to "deno.land:443"'),
    "npm": ('await import("npm:left-pad@1.3.0")', "--no-npm is specified"),
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_attempts_are_refused_with_a_clear_message(deno_path, gateway_url, listener, name):
    statement, message = ESCAPES[name]
    code = 'import { tools } from "toolscript";\n' + statement.format(port=listener) + ";\nconsole.log('escaped');\n"
    result, out, err = run_ts(deno_path, code, gateway_url=gateway_url)
    assert result.exit_code == 1 and "escaped" not in out
    assert message.format(port=listener) in err, err
    assert not os.path.exists("/tmp/toolscript-deno-escape")


def test_static_imports_cannot_read_local_files(deno_path, gateway_url, tmp_path):
    """Deno does not check --allow-read for static imports; the import map closes that."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "s3cret"}')
    for url in (gateway_url, None):
        for statement in [
            'import t from "/etc/passwd" with { type: "text" };',
            'import t from "../../../../../../../../etc/passwd" with { type: "text" };',
            'import t from "file://localhost/etc/passwd" with { type: "text" };',
            f'import t from "{secret}" with {{ type: "json" }};',
            f'import t from "{secret.as_uri()}" with {{ type: "json" }};',
        ]:
            result, out, err = run_ts(deno_path, statement + "\nconsole.log(JSON.stringify(t));\n", gateway_url=url)
            assert result.exit_code == 1 and out == "", out
            assert "root:" not in err and "s3cret" not in err
            assert "toolscript-exec-cannot-import-local-files" in err, err


def test_without_a_gateway_there_is_no_network_and_no_remote_import(deno_path, listener):
    for statement, message in [
        (f'await fetch("http://127.0.0.1:{listener}/")', f'Requires net access to "127.0.0.1:{listener}"'),
        ('await import("https://deno.land/std/version.ts")', "--no-remote is specified"),
        ('await import("jsr:@std/assert@1")', "--no-remote is specified"),
    ]:
        result, out, err = run_ts(deno_path, statement + ";\n")
        assert result.exit_code == 1 and message in err, err


def test_no_gateway_needed_without_the_import(deno_path):
    result, out, err = run_ts(deno_path, "const n: number = 6 * 7;\nconsole.log(n, Deno.args.length);\n")
    assert (result.exit_code, out, err) == (0, "42 0\n", "")
    result, out, err = run_ts(deno_path, 'import { tools } from "toolscript";\nconsole.log(tools);\n')
    assert result.exit_code == 1 and "this script has no gateway" in err and "toolscript gateway start" in err


def test_command_line_gives_no_broad_permission(deno_path):
    for url in ("http://127.0.0.1:4567/t/abc", None):
        argv = deno.deno_argv(deno_path, "/tmp/x/exec.ts", "/tmp/x/map.json", url)
        joined = " ".join(argv)
        for flag in ("--allow-read", "--allow-write", "--allow-run", "--allow-ffi", "--allow-sys", "--allow-env", "--allow-all", "-A", "--check "):
            assert flag not in argv and flag not in joined.replace("--allow-net", "").replace("--allow-import", "")
        assert "--no-check" in argv and "--no-prompt" in argv and "--no-npm" in argv
        if url:
            assert "--allow-net=127.0.0.1:4567" in argv and "--allow-import=127.0.0.1:4567" in argv
        else:
            assert not any(a.startswith(("--allow-net", "--allow-import")) for a in argv) and "--no-remote" in argv


# -- process semantics ----------------------------------------------------------------------------


def test_exit_status_passes_through(deno_path):
    assert run_ts(deno_path, "Deno.exit(3);")[0].exit_code == 3
    result, out, err = run_ts(deno_path, 'throw new Error("bad");')
    assert result.exit_code == 1 and "Uncaught (in promise) Error: bad" in err
    result, out, err = run_ts(deno_path, "const x: number = ;", filename="broken.ts")
    assert result.exit_code == 1 and "SyntaxError" in err and "broken.ts:1:" in err


def test_timeout_kills_deno_even_when_it_ignores_sigterm(deno_path):
    code = 'Deno.addSignalListener("SIGTERM", () => console.log("ignored"));\nconsole.log("started");\nwhile (true) {}\n'
    started = time.monotonic()
    result, out, err = run_ts(deno_path, code, timeout=1.5)
    elapsed = time.monotonic() - started
    assert result.exit_code == 124 and result.timed_out
    assert "started" in out and "toolscript: script timed out after 1.5s (--timeout)" in err
    assert elapsed < 10
    assert_group_gone(result)


def test_output_is_capped_and_deno_stopped(deno_path):
    code = 'const line = "x".repeat(1000);\nwhile (true) console.log(line);\n'
    result, out, err = run_ts(deno_path, code, max_output=50_000, timeout=20)
    assert result.truncated and result.exit_code == 1 and not result.timed_out
    assert len(out.encode()) + len(err.encode()) <= 50_000 + 200
    assert "[toolscript: output truncated after 50000 bytes]" in err
    assert_group_gone(result)


def test_output_streams_as_it_is_produced(deno_path):
    code = 'console.log("first");\nawait new Promise((r) => setTimeout(r, 800));\nconsole.log("second");\n'
    out, err = Output(), Output()
    result = deno.run(code, stdout=out, stderr=err, deno=deno_path)
    assert result.exit_code == 0 and out.text == "first\nsecond\n"
    assert out.chunks[-1][0] - out.chunks[0][0] > 0.5  # "first" arrived before the script ended


def test_temp_dir_and_environment(deno_path):
    code = 'console.log(Deno.cwd());\n'
    result, out, err = run_ts(deno_path, code)
    assert result.exit_code == 0, err
    work = out.splitlines()[0]
    assert os.path.basename(os.path.dirname(work)).startswith("toolscript-deno-")
    assert not os.path.exists(os.path.dirname(work)), "the temp dir (code, import map, DENO_DIR) was not removed"
    assert_group_gone(result)


def test_heap_is_capped_like_the_python_runner(deno_path):
    code = 'const keep: string[] = [];\nwhile (true) keep.push("x".repeat(1 << 16) + keep.length);\n'
    result, out, err = run_ts(deno_path, code, timeout=60, heap_mib=64)  # the 1 GiB default takes longer to fill
    assert result.exit_code >= 128 and not result.timed_out
    assert "out of memory" in err.lower()
    assert_group_gone(result)


def test_missing_deno_is_a_user_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match=r"TypeScript needs Deno: install it \(https://deno.com\) or use Python"):
        deno.run("console.log(1)", stdout=io.BytesIO(), stderr=io.BytesIO())


# -- the command line --------------------------------------------------------------------------


def cli(*args, url, cwd, path, timeout=60):
    env = {"PATH": path, "HOME": str(cwd), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(cwd / "state")}
    if url:
        env["TOOLSCRIPT_GATEWAY_URL"] = url
    return subprocess.run([sys.executable, "-m", "toolscript", *args], env=env, cwd=str(cwd), capture_output=True, text=True, timeout=timeout)


def test_exec_lang_ts_from_the_command_line(deno_path, gateway_url, tmp_path):
    path = os.path.dirname(deno_path) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
    code = 'import { tools } from "toolscript";\nconst r = await tools.fixture.add({ a: 20, b: 22 });\nconsole.log(r.sum);\nDeno.exit(r.sum === 42 ? 5 : 6);\n'
    proc = cli("exec", "--lang", "ts", code, url=gateway_url, cwd=tmp_path, path=path)
    assert (proc.returncode, proc.stdout) == (5, "42\n"), proc.stderr
    as_json = cli("exec", "--lang", "ts", "--json", 'console.log("captured")', url=None, cwd=tmp_path, path=path)
    report = json.loads(as_json.stdout)
    assert report["exitCode"] == 0 and report["stdout"] == "captured\n" and report["mode"] == expected_mode()
    script = tmp_path / "script.ts"
    script.write_text('import { tools } from "toolscript";\nconsole.log((await tools.fixture.echo({ message: "from a file" })));\n')
    from_file = cli("exec", "--lang", "ts", "-f", str(script), url=gateway_url, cwd=tmp_path, path=path)
    assert (from_file.returncode, from_file.stdout) == (0, "Echo: from a file\n"), from_file.stderr
    no_deno = cli("exec", "--lang", "ts", "console.log(1)", url=None, cwd=tmp_path, path="/nonexistent")
    assert no_deno.returncode == 1 and "TypeScript needs Deno: install it (https://deno.com) or use Python" in no_deno.stderr


# -- a configured server that failed says why, and where the runtime module comes from ------------

UNAVAILABLE_NAMES = {
    "servers": {"fixture": {"add": {"id": "fixture__add", "args": {"a": "a", "b": "b"}}}},
    "unavailable": {"crashy": "exited with status 3 during the handshake: boom"},
}


@pytest.mark.timeout(120)
def test_a_failed_server_says_why_in_typescript(deno_path, tmp_path):
    main_ts = (
        'import { tools, ToolError } from "./tools.ts";\n'
        'console.log(typeof tools.fixture.add);\n'
        'try { tools.crashy.x; } catch (e) { console.log(e instanceof ToolError, e.code, e.message); }\n'
        'try { tools.fixtur; } catch (e) { console.log(e.message); }\n'
    )
    proc = deno_on_runtime(deno_path, tmp_path, UNAVAILABLE_NAMES, main_ts, "run", "--no-config", "main.ts")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert lines[0] == "function"
    assert lines[1] == 'true server_unavailable tools.crashy: the server "crashy" is configured but not available: exited with status 3 during the handshake: boom'
    assert 'tools has no server "fixtur"; did you mean fixture?' in lines[2]


def test_the_typescript_runtime_is_package_data():
    with open(os.path.join(REPO_ROOT, "toolscript", "gateway", "runtime.ts"), encoding="utf-8") as f:
        source = f.read()
    assert source.count(tsruntime.NAMES_LINE) == 1
    served = tsruntime.typescript_runtime(UNAVAILABLE_NAMES)
    (line,) = [l for l in served.splitlines() if l.startswith("const NAMES: any = JSON.parse(")]
    assert served.replace(line, tsruntime.NAMES_LINE) == source
    assert json.loads(json.loads(line[len("const NAMES: any = JSON.parse("):-len(");")])) == UNAVAILABLE_NAMES


def test_the_typescript_runtime_loads_from_the_zipapp(pyz):
    code = "from toolscript.gateway import tsruntime; print(tsruntime.typescript_runtime({'servers': {'s': {}}})[-60:])"
    proc = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {pyz!r}); {code}"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "export default tools;" in proc.stdout, proc.stderr


def test_deno_heap_cap_and_kill_grace_are_parameters(deno_path):
    argv = deno.deno_argv("deno", "main.ts", "map.json", None, heap_mib=48)
    assert "--v8-flags=--max-old-space-size=48" in argv
    out, err = Output(), Output()
    code = "const keep: string[] = [];\nwhile (true) keep.push(\"x\".repeat(1 << 16) + keep.length);\n"
    result = deno.run(code, stdout=out, stderr=err, deno=deno_path, timeout=60, heap_mib=48, kill_grace=0.05)
    assert result.exit_code >= 128 and not result.timed_out
    assert "out of memory" in err.text.lower() and "48 MiB heap" in err.text
