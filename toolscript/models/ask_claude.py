"""``toolscript ask --backend claude``: the ``claude`` CLI is the model, the gateway its only tools.

For people who log in to Claude Code with a subscription and have no API key.  The
gateway's own MCP endpoint (``<gateway URL>/mcp``) is handed to ``claude -p`` with
``--mcp-config`` + ``--strict-mcp-config`` and ``--tools ""``, so the gateway's tools
are the only ones the model sees; ``--allowedTools`` pre-approves the ones the allow
list lets through, ``--disallowedTools`` hides the rest, and ``--permission-mode
dontAsk`` refuses whatever was not pre-approved (a call to a hidden tool comes back
as "No such tool available", an unapproved one as a permission denial: both are
reported as ``tool_not_found``).  Hooks are off (``disableAllHooks`` and
``TOOLSCRIPT_HOOKS_DISABLED``): our own plugin must not start a second gateway
inside this run.

The trace is read from ``--output-format stream-json`` (which needs ``--verbose``),
one JSON object per line: ``assistant`` lines carry the model's ``tool_use`` blocks,
``user`` lines the ``tool_result`` blocks claude got back from the gateway,
``system``/``permission_denied`` lines the calls it refused, and the last line,
``result``, the answer, usage and ``num_turns``.

Claude names an MCP tool ``mcp__<server>__<tool name>`` with every character outside
``[A-Za-z0-9_-]`` replaced by ``_`` (``builtin__time.now`` -> ``mcp__ts__builtin__time_now``);
names are mapped back to toolscript ids with the gateway's ``GET /tools`` list.

The CLI runs in its own process group, killed whole on timeout or Ctrl-C.  The
gateway URL carries its token: it reaches claude in a 0600 ``--mcp-config`` file
(never in an argument, which every local user can read), and is never logged or
put in an error (``redact_text``).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set

from toolscript.gateway.client import GatewayClient, redact_text
from toolscript.models.ask import AskResult, allowed, refusal_message
from toolscript.models.claude_cli import (
    CLAUDE_SETTINGS,
    DEFAULT_CLI_MODEL,
    HOOKS_DISABLED_VAR,
    MAX_ARG_BYTES,
    claude_env,
    kill_group,
    start_group,
)
from toolscript.tools.contract import ERROR_EXECUTION, ERROR_TOOL_NOT_FOUND


MCP_SERVER = "ts"  # the name the gateway gets in claude's --mcp-config, so tools are mcp__ts__*
CLAUDE_PREFIX = f"mcp__{MCP_SERVER}__"
ASK_ENV = {
    HOOKS_DISABLED_VAR: "1",  # the guard toolscript.claude_code.hooks honours, should the plugin load anyway
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no reachability probe, no telemetry
    "CLAUDE_CODE_MAX_RETRIES": "1",  # its default retries for minutes; our budget is seconds
}
MAX_LINE_BYTES = 16 * 1024 * 1024  # one stream-json line over this is skipped, not held in memory
STDERR_TAIL_BYTES = 16 * 1024  # what is kept of claude's stderr, for the error line
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL for the process group
GATEWAY_TIMEOUT = 30.0  # seconds for GET /tools
MAX_ERROR_CHARS = 240


def claude_tool_name(mcp_name: str) -> str:
    """The name claude gives the MCP tool ``mcp_name`` of our ``ts`` server."""
    return CLAUDE_PREFIX + re.sub(r"[^A-Za-z0-9_-]", "_", mcp_name)


def tool_allowed(tool: Mapping[str, Any], patterns: Sequence[str]) -> bool:
    """Whether a gateway tool (``id``) passes the allow-list patterns: ``toolscript.models.ask.allowed``'s rule."""
    return allowed(str(tool.get("id", "")), patterns)


def name_map(tools: Sequence[Mapping[str, Any]]) -> Dict[str, str]:
    """claude's tool name -> toolscript id, for every name the gateway's MCP endpoint may use.

    The endpoint lists tools by id (``mcpToolNames: "prefixed"``, the default) or by
    their own name where no two servers share it (``"plain"``); GET /tools does not say
    which, so both are mapped (ids win where the two could clash).
    """
    counts: Dict[str, int] = {}
    for tool in tools:
        counts[str(tool.get("name"))] = counts.get(str(tool.get("name")), 0) + 1
    mapping: Dict[str, str] = {}
    for tool in tools:
        if counts[str(tool.get("name"))] == 1:
            mapping[claude_tool_name(str(tool.get("name")))] = str(tool["id"])
    for tool in tools:
        mapping[claude_tool_name(str(tool["id"]))] = str(tool["id"])
    return mapping


def tool_flags(tools: Sequence[Mapping[str, Any]], allow: Sequence[str]) -> List[str]:
    """``--allowedTools`` for what the allow list lets through, ``--disallowedTools`` for the rest."""
    if not allow:
        return ["--allowedTools", CLAUDE_PREFIX + "*"]
    by_id = {str(t["id"]): t for t in tools}
    names = name_map(tools)
    allowed = sorted(name for name, ident in names.items() if tool_allowed(by_id[ident], allow))
    denied = sorted(set(names) - set(allowed))
    flags: List[str] = []
    if allowed:
        flags += ["--allowedTools", ",".join(allowed)]
    if denied:
        flags += ["--disallowedTools", ",".join(denied)]
    return flags


def mcp_config(gateway_url: str) -> str:
    """The ``--mcp-config`` document: the gateway's MCP endpoint as claude's one server, ``ts``."""
    return json.dumps({"mcpServers": {MCP_SERVER: {"type": "http", "url": gateway_url.rstrip("/") + "/mcp"}}})


def claude_argv(
    claude: str, mcp_config_file: str, flags: Sequence[str], model: Optional[str], max_steps: int, system_arg: Sequence[str]
) -> List[str]:
    """The argv of the ``claude -p`` run (the question goes on stdin).

    The MCP config goes in a file, not in an argument: its URL carries the gateway's
    token, and any local user can read a process's arguments.
    """
    return [
        claude,
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",  # stream-json with -p refuses to run without it
        "--model",
        model or DEFAULT_CLI_MODEL,
        "--mcp-config",
        mcp_config_file,
        "--strict-mcp-config",
        "--tools",
        "",
        *flags,
        # Whatever the user's settings say (bypassPermissions, broad allow rules): a call
        # that --allowedTools did not pre-approve is refused, never run.
        "--permission-mode",
        "dontAsk",
        "--settings",
        CLAUDE_SETTINGS,
        "--no-session-persistence",
        "--max-turns",
        str(max_steps),
        *system_arg,
    ]


def gateway_tools(gateway_url: str) -> List[Dict[str, Any]]:
    """The gateway's tool descriptions (GET /tools)."""
    answer = GatewayClient(gateway_url, timeout=GATEWAY_TIMEOUT).get("/tools")
    tools = answer.get("tools") if isinstance(answer, dict) else None
    return [t for t in tools or [] if isinstance(t, dict) and isinstance(t.get("id"), str)]


# --- reading the stream ---------------------------------------------------------------------


class Trace:
    """What the stream has said so far; ``feed`` one parsed line at a time."""

    def __init__(self, names: Mapping[str, str], secrets: Sequence[str], allow: Sequence[str] = ()) -> None:
        self.names = names
        self.allow = list(allow)
        self.secrets = [s for s in secrets if s]
        self.tool_calls: List[Dict[str, Any]] = []
        self.tool_results: List[Dict[str, Any]] = []
        self.called_at: Dict[str, float] = {}
        self.tool_of: Dict[str, str] = {}
        self.denied: Dict[str, str] = {}  # tool_use_id -> claude's tool name, for calls claude refused
        self.last_text = ""  # the latest assistant message's text: the answer when no result line comes
        self.turns = 0
        self._message_ids: Set[str] = set()  # claude streams one line per content block: one message, many lines
        self._text_of = ""  # the message id last_text belongs to
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.result: Optional[Dict[str, Any]] = None

    def feed(self, line: Any, now: float) -> None:
        if not isinstance(line, dict):
            return
        kind = line.get("type")
        if kind == "assistant":
            self._assistant(line, now)
        elif kind == "user":
            self._user(line, now)
        elif kind == "system" and line.get("subtype") == "permission_denied":
            self.denied[str(line.get("tool_use_id"))] = str(line.get("tool_name") or "")
        elif kind == "result":
            self.result = line

    def tool_id(self, claude_name: str, meta_name: Optional[str]) -> str:
        """The toolscript id for claude's tool name (``meta_name``: the MCP name claude saw, when it says)."""
        if claude_name in self.names:
            return self.names[claude_name]
        if meta_name and claude_tool_name(meta_name) in self.names:
            return self.names[claude_tool_name(meta_name)]
        if meta_name:
            return meta_name
        return claude_name[len(CLAUDE_PREFIX):] if claude_name.startswith(CLAUDE_PREFIX) else claude_name

    def _assistant(self, line: Dict[str, Any], now: float) -> None:
        message = line.get("message")
        if not isinstance(message, dict):
            return
        message_id = str(message.get("id") or f"line-{len(self._message_ids)}")
        if message_id not in self._message_ids:
            self._message_ids.add(message_id)
            self.turns += 1
            usage = message.get("usage")
            if isinstance(usage, dict):
                for key in self.usage:
                    self.usage[key] += _int(usage.get(key), 0)
        meta = {
            str(m.get("id")): m.get("tool_name")
            for m in line.get("tool_use_meta") or []
            if isinstance(m, dict) and isinstance(m.get("tool_name"), str)
        }
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                same = self._text_of == message_id
                self.last_text = self.last_text + block["text"] if same else block["text"]
                self._text_of = message_id
            elif block.get("type") == "tool_use":
                call_id = str(block.get("id"))
                tool = self.tool_id(str(block.get("name")), meta.get(call_id))
                args = block.get("input") if isinstance(block.get("input"), dict) else {}
                self.tool_calls.append({"id": call_id, "tool": tool, "args": args})
                self.called_at[call_id] = now
                self.tool_of[call_id] = tool

    def _user(self, line: Dict[str, Any], now: float) -> None:
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return
        blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        structured = line.get("tool_use_result")
        for block in blocks:
            call_id = str(block.get("tool_use_id"))
            tool = self.tool_of.get(call_id, "")
            started = self.called_at.get(call_id, now)
            entry: Dict[str, Any] = {"id": call_id, "tool": tool, "ok": not block.get("is_error")}
            text = _result_text(block.get("content"))
            if entry["ok"]:
                # The line's tool_use_result is the MCP result claude got; its structuredContent
                # is the tool's data as the gateway sent it (only unambiguous for one result).
                if len(blocks) == 1 and isinstance(structured, dict) and "structuredContent" in structured:
                    entry["data"] = structured["structuredContent"]
                else:
                    entry["data"] = _maybe_json(text)
            else:
                entry["error"] = self._error(call_id, tool, text)
            entry["ms"] = int(round((now - started) * 1000))
            entry["cached"] = False
            self.tool_results.append(entry)

    def _error(self, call_id: str, tool: str, text: str) -> Dict[str, str]:
        if call_id in self.denied or "No such tool available" in text:
            # The same words as the API backend (toolscript.models.ask) for the same refusal.
            if self.allow:
                message = refusal_message(tool, self.allow)
            else:
                message = f'unknown tool "{tool}": the gateway has no such tool'
            return {"code": ERROR_TOOL_NOT_FOUND, "message": message}
        text = re.sub(r"</?tool_use_error>", "", text)
        return {"code": ERROR_EXECUTION, "message": _one_line(text, self.secrets) or "the tool failed"}


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _one_line(text: str, secrets: Sequence[str]) -> str:
    text = redact_text(" ".join(str(text).split()))
    for secret in secrets:
        if len(secret) >= 8:  # short values (a test's "test" key) would blank out ordinary words
            text = text.replace(secret, "****")
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


def read_lines(stream: Any, limit: int = MAX_LINE_BYTES):
    """Yield each line of the binary ``stream``, parsed as JSON; longer-than-``limit`` and malformed lines are skipped."""
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        if len(raw) > limit and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # drop the rest of the oversized line
                raw = stream.readline(limit)
            continue
        try:
            yield json.loads(raw.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError is a ValueError too
            continue


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def result_of(trace: Trace, max_steps: int) -> AskResult:
    """The AskResult once the stream has ended normally (with or without its result line)."""
    result = trace.result
    if result is None:
        raise ValueError("no result line")
    usage = result.get("usage")
    # The result line's usage is the run's total; the assistant lines' are only what streaming started with.
    totals = {k: _int(usage.get(k), 0) for k in trace.usage} if isinstance(usage, dict) else dict(trace.usage)
    steps = _int(result.get("num_turns"), trace.turns)
    raw_text = result.get("result")
    text = raw_text if isinstance(raw_text, str) else ""
    calls, results = trace.tool_calls, trace.tool_results
    if result.get("subtype") == "error_max_turns":
        message = f"stopped after {max_steps} model turns without an answer; raise --max-steps"
        return AskResult("", calls, results, steps, totals, "max_steps", message)
    if result.get("is_error"):
        said = text or "; ".join(str(e) for e in result.get("errors") or []) or str(result.get("subtype") or "")
        status = result.get("api_error_status")
        where = f" (API status {status})" if isinstance(status, int) else ""
        message = f"the claude CLI failed{where}: {_one_line(said, trace.secrets) or 'no reason given'}"
        if "not logged in" in said.lower():
            message = "the claude CLI is not logged in: run 'claude' and /login, or use --backend api with ANTHROPIC_API_KEY"
        return AskResult("", calls, results, steps, totals, "error", message)
    return AskResult(text, calls, results, steps, totals, "answered", None)


# --- running claude ---------------------------------------------------------------------------


def _stop(proc: "subprocess.Popen[bytes]") -> None:
    """End claude and everything in its group: SIGTERM, then SIGKILL after a grace period."""
    kill_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        pass
    # Whatever is left of the group (the leader may have exited while a child lingers).
    kill_group(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        pass


def _drain(stream: Any, tail: List[bytes]) -> None:
    """Read ``stream`` to its end, keeping only its last STDERR_TAIL_BYTES (a chatty claude never blocks)."""
    kept = b""
    for chunk in iter(lambda: stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536), b""):
        kept = (kept + chunk)[-STDERR_TAIL_BYTES:]
    tail.append(kept)


def run_claude(
    question: str,
    *,
    gateway_url: str,
    allow: Sequence[str],
    model: Optional[str],
    max_steps: int,
    system: Optional[str],
    timeout: float,
    env: Mapping[str, str],
    cwd: str,
) -> AskResult:
    """Ask ``question`` through ``claude -p`` with the gateway at ``gateway_url`` as its only tools.

    Never raises for what claude or the model does: a failure is ``stopped="error"``
    with one line in ``error``; Ctrl-C is ``stopped="interrupted"`` (the CLI is gone
    either way).  GatewayUnavailable (a UserError) when the gateway does not answer.
    """
    secrets = [env.get(n, "") for n in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")]
    claude = shutil.which("claude", path=env.get("PATH"))
    if not claude:
        return AskResult("", [], [], 0, {"input_tokens": 0, "output_tokens": 0}, "error",
                         "the claude CLI is not on PATH: install Claude Code, or use --backend api with ANTHROPIC_API_KEY")
    tools = gateway_tools(gateway_url)
    trace = Trace(name_map(tools), secrets, allow)
    scratch = tempfile.mkdtemp(prefix="toolscript-ask-")  # mkdtemp: mode 0700, ours alone
    try:
        config_file = os.path.join(scratch, "mcp.json")
        with open(os.open(config_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as fh:
            fh.write(mcp_config(gateway_url))
        system_arg: List[str] = []
        if system:
            if len(system.encode("utf-8")) > MAX_ARG_BYTES:
                system_file = os.path.join(scratch, "system.txt")
                with open(system_file, "w", encoding="utf-8") as fh:
                    fh.write(system)
                system_arg = ["--system-prompt-file", system_file]
            else:
                system_arg = ["--system-prompt", system]
        argv = claude_argv(claude, config_file, tool_flags(tools, allow), model, max(1, int(max_steps)), system_arg)
        return _run(argv, question, claude_env(env, ASK_ENV), cwd, timeout, trace, max_steps)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(argv: List[str], question: str, env: Dict[str, str], cwd: str, timeout: float, trace: Trace, max_steps: int) -> AskResult:
    def stopped(how: str, message: str) -> AskResult:
        answer = trace.last_text if how != "error" else ""
        return AskResult(answer, trace.tool_calls, trace.tool_results, trace.turns, dict(trace.usage), how, message)

    try:
        proc = start_group(argv, env, cwd)
    except OSError as exc:
        return stopped("error", f"cannot start the claude CLI ({exc.strerror or exc})")
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        kill_group(proc.pid, signal.SIGKILL)  # the reader below then sees the end of the stream

    timer = threading.Timer(timeout, on_timeout)
    timer.daemon = True
    stderr_tail: List[bytes] = []
    drainer = threading.Thread(target=_drain, args=(proc.stderr, stderr_tail), name="claude-stderr", daemon=True)
    try:
        timer.start()
        drainer.start()
        try:
            assert proc.stdin is not None
            proc.stdin.write(question.encode("utf-8"))
            proc.stdin.close()
        except OSError:
            pass  # claude exited (or was killed) before reading it all: the stream says why
        for line in read_lines(proc.stdout):
            trace.feed(line, time.monotonic())
            if trace.result is not None:
                break  # the last line: a claude that lingers after it has nothing more to say
        if timed_out.is_set() and trace.result is None:
            _stop(proc)
            return stopped("error", f"the claude CLI did not finish within {timeout:g} s and was stopped")
        try:
            returncode = proc.wait(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            # Its result is in (or stdout closed) but claude lingers: it has said all it will.
            _stop(proc)
            returncode = proc.returncode
    except KeyboardInterrupt:
        _stop(proc)
        return stopped("interrupted", "interrupted (Ctrl-C): the claude CLI was stopped")
    except BaseException:
        # Anything else that unwinds us (a signal handler raising, SystemExit): no orphan either.
        _stop(proc)
        raise
    finally:
        timer.cancel()
        try:
            if proc.stdout is not None:
                proc.stdout.close()
        except OSError:
            pass
        if drainer.is_alive():
            drainer.join(timeout=KILL_GRACE)
        if not drainer.is_alive() and proc.stderr is not None:
            proc.stderr.close()  # else a grandchild that left our group still holds it: leave the daemon reader be
    if trace.result is not None:
        return result_of(trace, max_steps)
    said = b"".join(stderr_tail).decode("utf-8", "replace").strip().splitlines()
    last = _one_line(said[-1], trace.secrets) if said else "no output"
    return stopped("error", f"the claude CLI exited with status {returncode} without a result: {last}")
