"""``toolscript ask``: a model with tools, looped to an answer.

The loop over the Messages API lives here; the ``claude`` CLI backend is in
``toolscript.models.ask_claude`` and returns the same ``AskResult``.

One run: the visible tools (built-ins + the gateway's MCP tools, the
``--tool-allow`` patterns applied) go to the model under provider-safe names;
every ``tool_use`` block of a turn runs (several at once in parallel threads),
and the results go back in the order asked as ``tool_result`` blocks -- a
failure is an ``is_error`` result the model can read, never a crash -- until
the model ends its turn or ``max_steps`` model turns are spent.

Limits: each tool call gets ``tool_timeout`` seconds, the whole run
``timeout`` seconds (model calls included), and what goes back to the model is
capped at ``MAX_RESULT_BYTES`` per result.  Ctrl-C cancels the gateway calls
in flight by closing their connections (the gateway cancels the upstream call
when its client hangs up) and ends the run as ``interrupted``.

A saved conversation (``--session NAME``, ``toolscript.models.history``) gives
the run the conversation so far and keeps what it adds; it also caches the results
of read-only tool calls, so an identical call later in it is answered without
running the tool.
"""

import json
import os
import re
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from toolscript import http1
from toolscript.models.history import Conversation

DEFAULT_MAX_STEPS = 8
DEFAULT_TOOL_TIMEOUT = 8.0  # seconds per tool call
DEFAULT_TIMEOUT = 120.0  # seconds for the whole run, model calls included
MAX_RESULT_BYTES = 16 * 1024  # of one tool result, as the model sees it
MAX_TOKENS = 4096
BUILTIN_PREFIX = "builtin__"
# Built-ins whose answer depends only on their arguments and the disk, not the clock:
# time.now and tools.echo are cheap and not cached (time changes; echo is a probe).
READ_ONLY_BUILTINS = ("fs.read_file", "fs.list_dir", "shell.pwd")
READ_ONLY_BUILTIN_PREFIXES = ("memory.",)

STOP_ANSWERED = "answered"
STOP_MAX_STEPS = "max_steps"
STOP_ERROR = "error"
STOP_INTERRUPTED = "interrupted"


class AskResult(NamedTuple):
    answer: str  # the model's final text ("" when it stopped without one)
    tool_calls: List[Dict[str, Any]]  # [{"id", "tool", "args"}] in call order; tool is the toolscript id
    tool_results: List[Dict[str, Any]]  # [{"id", "tool", "ok", "data" | "error", "ms", "cached"}]
    steps: int  # model turns taken
    usage: Dict[str, int]  # input_tokens / output_tokens summed
    stopped: str  # "answered" | "max_steps" | "error" | "interrupted"
    error: Optional[str]  # one line when stopped != "answered"


def as_json(result: AskResult, conversation_updated: bool) -> Dict[str, Any]:
    """The ``--json`` document; ``toolError`` only when a call failed (the first failure).

    ``sessionContextUpdated``: whether the run added to a saved conversation (``--session``).
    """
    doc: Dict[str, Any] = {
        "answer": result.answer,
        "toolCalls": result.tool_calls,
        "toolResults": result.tool_results,
    }
    failed = next((r for r in result.tool_results if not r.get("ok")), None)
    if failed is not None:
        error = failed.get("error") or {}
        doc["toolError"] = {"tool": failed.get("tool"), "code": error.get("code"), "message": error.get("message")}
    doc.update(
        {
            "sessionContextUpdated": bool(conversation_updated),
            "usage": result.usage,
            "steps": result.steps,
            "stopped": result.stopped,
        }
    )
    if result.error:
        doc["error"] = result.error
    return doc


# --- the allow-list ------------------------------------------------------------------------


def parse_allow(text: Optional[str]) -> List[str]:
    """``"a, b,server__*"`` -> ``["a", "b", "server__*"]`` (empty: no restriction)."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _pattern(pattern: str) -> "re.Pattern[str]":
    return re.compile("^" + ".*".join(re.escape(piece) for piece in pattern.split("*")) + "$")


def allowed(tool_id: str, patterns: Sequence[str]) -> bool:
    """Whether ``tool_id`` (``server__tool``) passes ``patterns`` (``*`` globs; none = everything).

    A pattern matches the id, or for a built-in its bare name too (``time.now``,
    ``fs.*``), as everywhere else built-ins may be named without their prefix.
    """
    if not patterns:
        return True
    names = [tool_id]
    if tool_id.startswith(BUILTIN_PREFIX):
        names.append(tool_id[len(BUILTIN_PREFIX):])
    return any(_pattern(p).match(name) for p in patterns for name in names)


def refusal_message(tool_id: str, patterns: Sequence[str]) -> str:
    return f'tool "{tool_id}" is not in --tool-allow ({", ".join(patterns)}): add it there, or use a listed tool'


# --- tools ---------------------------------------------------------------------------------


class Tool(NamedTuple):
    id: str  # toolscript id: server__tool (built-ins: builtin__name)
    description: str
    input_schema: Dict[str, Any]
    read_only: bool


def is_read_only(tool_id: str, annotations: Any = None) -> bool:
    """MCP ``annotations.readOnlyHint``, or what we know of the built-ins."""
    if isinstance(annotations, dict) and annotations.get("readOnlyHint") is True:
        return True
    if tool_id.startswith(BUILTIN_PREFIX):
        name = tool_id[len(BUILTIN_PREFIX):]
        return name in READ_ONLY_BUILTINS or name.startswith(READ_ONLY_BUILTIN_PREFIXES)
    return False


class LocalTools:
    """Built-in tools run in this process (no gateway answers)."""

    def __init__(self, builtins: Mapping[str, Any], roots: List[str]) -> None:
        self.builtins = dict(builtins)
        self.roots = roots

    def list(self) -> List[Tool]:
        return [
            Tool(BUILTIN_PREFIX + name, spec.description, spec.input_schema, is_read_only(BUILTIN_PREFIX + name))
            for name, spec in self.builtins.items()
        ]

    def call(self, tool_id: str, args: Any, timeout: float) -> Dict[str, Any]:
        import dataclasses

        from toolscript.tools.contract import ToolCall, ToolContext, execute

        name = tool_id[len(BUILTIN_PREFIX):] if tool_id.startswith(BUILTIN_PREFIX) else tool_id
        registry = {n: dataclasses.replace(s, timeout=min(s.timeout, timeout)) for n, s in self.builtins.items()}
        call = ToolCall(name=name, args=args, source="ask")
        return execute(registry, call, ToolContext(workspace_roots=list(self.roots))).to_dict()

    def cancel_all(self) -> None:
        pass  # a thread cannot be killed; the handler's result is dropped


class GatewayTools:
    """Tools behind a gateway: GET /tools, POST /call on connections we can close to cancel."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._open: List[socket.socket] = []
        self._lock = threading.Lock()

    def list(self) -> List[Tool]:
        listed = self.client.get("/tools").get("tools") or []
        return [
            Tool(t["id"], t.get("description") or "", t.get("inputSchema") or {"type": "object"}, is_read_only(t["id"], t.get("annotations")))
            for t in listed
            if isinstance(t, dict) and isinstance(t.get("id"), str)
        ]

    def call(self, tool_id: str, args: Any, timeout: float) -> Dict[str, Any]:
        payload = json.dumps({"tool": tool_id, "arguments": args, "source": "ask", "timeout": timeout}).encode("utf-8")
        try:
            status, body = self._exchange(payload, timeout + 5)
            answer = json.loads(body.decode("utf-8")) if body else None
        except RecursionError:  # json recurses: a result nested this deep is no usable answer
            return _failure("execution_error", f"the result of {tool_id} is nested too deeply to read")
        except (OSError, ValueError) as exc:
            return _failure("execution_error", f"the gateway call of {tool_id} failed: {exc}")
        if status != 200 or not isinstance(answer, dict):
            said = answer.get("error") if isinstance(answer, dict) else ""
            return _failure("execution_error", f"the gateway answered {status} to the call of {tool_id}: {said}")
        return answer

    def _exchange(self, payload: bytes, timeout: float) -> Tuple[int, bytes]:
        """One POST /call on its own connection, registered so ``cancel_all`` can close it.

        The answer is read up to the gateway client's cap (``MAX_RESPONSE_BYTES``): a
        gateway, or whatever else answers on its port, that never stops sending is cut off
        there with an error naming the limit.  Raises OSError or ValueError.
        """
        from toolscript.gateway import client as gateway_client

        client = self.client
        head = http1.request_head(
            "POST", f"{client.prefix}/call", http1.authority(client.host, client.port), {"Content-Type": "application/json"}, len(payload)
        )
        sock = http1.connect(client.host, client.port, timeout=timeout)
        with self._lock:
            self._open.append(sock)
        try:
            status, _, body = http1.exchange(sock, head + payload, timeout=timeout, max_body=gateway_client.MAX_RESPONSE_BYTES)
        finally:
            with self._lock:
                if sock in self._open:
                    self._open.remove(sock)
            sock.close()
        return status, body

    def cancel_all(self) -> None:
        """Hang up every call in flight: the gateway cancels each upstream."""
        with self._lock:
            open_now, self._open = list(self._open), []
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _failure(code: str, message: str) -> Dict[str, Any]:
    return {"ok": False, "data": None, "error": {"code": code, "message": " ".join(message.split())}, "meta": {}}


def provider_names(tool_ids: Sequence[str]) -> Dict[str, str]:
    """provider-safe name -> toolscript id: ``^[a-zA-Z0-9_-]{1,64}$``, unique."""
    mapping: Dict[str, str] = {}
    for tool_id in tool_ids:
        base = re.sub(r"[^a-zA-Z0-9_-]", "_", tool_id)[:64] or "tool"
        name, n = base, 1
        while name in mapping:
            n += 1
            suffix = f"_{n}"
            name = base[: 64 - len(suffix)] + suffix
        mapping[name] = tool_id
    return mapping


# --- the loop ---------------------------------------------------------------------------------


def result_text(result: Dict[str, Any]) -> str:
    """What the model reads of a ToolResult dict, capped at MAX_RESULT_BYTES."""
    if result.get("ok"):
        text = _data_text(result.get("data"))
    else:
        error = result.get("error") or {}
        text = f"{error.get('code', 'execution_error')}: {error.get('message', '')}"
        detail = _data_text(result.get("data")) if result.get("data") is not None else ""
        if detail:
            text += "\n" + detail
    return cap(text, MAX_RESULT_BYTES)


def _data_text(data: Any) -> str:
    # An MCP CallToolResult: its text blocks are what the tool meant to say.
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        blocks = data["content"]
        if blocks and all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
            text = "\n".join(str(b.get("text", "")) for b in blocks)
            if data.get("structuredContent") is not None:
                text += "\n" + json.dumps(data["structuredContent"], ensure_ascii=False)
            return text
    if isinstance(data, str):
        return data
    return json.dumps(data, ensure_ascii=False)


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes, with a note saying how much was left out."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    kept = data[: limit - 120].decode("utf-8", "ignore")
    return kept + f"\n[truncated by toolscript: {len(data) - len(kept.encode('utf-8'))} more bytes of {len(data)}; ask for less]"


def merge_turns(messages: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Consecutive messages of one role joined: a run that stopped after tool results leaves a user turn last."""
    merged: List[Dict[str, Any]] = []
    for message in messages:
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {"role": message["role"], "content": merged[-1]["content"] + list(blocks)}
        else:
            merged.append({"role": message["role"], "content": list(blocks)})
    return merged


def flatten_tool_blocks(messages: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Tool blocks of a kept conversation as text, for a run with no tools (the API refuses tool blocks without tools)."""
    flat = []
    for message in messages:
        blocks = []
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_use":
                args = json.dumps(block.get("input"), ensure_ascii=False)
                blocks.append({"type": "text", "text": cap(f"[called tool {block.get('name')} with {args}]", 2048)})
            elif block.get("type") == "tool_result":
                content = block.get("content")
                text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
                blocks.append({"type": "text", "text": cap(f"[tool result{' (error)' if block.get('is_error') else ''}: {text}]", 4096)})
            else:
                blocks.append(block)
        flat.append({"role": message["role"], "content": blocks or message["content"]})
    return flat


def _cache_key(tool_id: str, args: Any) -> str:
    return tool_id + " " + json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def run_api(
    question: str,
    *,
    tools: Any = None,
    allow: Sequence[str] = (),
    model: Optional[str] = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    system: Optional[str] = None,
    timeout: float = DEFAULT_TIMEOUT,
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
    env: Optional[Mapping[str, str]] = None,
    conversation: Optional[Conversation] = None,
    on_event: Optional[Callable[[str, Dict[str, Any]], None]] = None,
) -> AskResult:
    """Ask through the Messages API with ``tools`` (a LocalTools/GatewayTools, or None: no tools).

    ``conversation``: a saved conversation to continue; the run's messages are added to it.
    Never raises for model or tool trouble: the run ends with ``stopped`` and
    ``error`` saying why.  ``on_event(kind, info)`` sees "model" (ms per model
    call) and "tool" (each result) events, for ``-v`` and the bench.
    """
    from toolscript.models import ModelError, messages

    env = os.environ if env is None else env
    deadline = time.monotonic() + timeout
    emit = on_event or (lambda kind, info: None)
    visible = [t for t in (tools.list() if tools is not None else []) if allowed(t.id, allow)]
    names = provider_names([t.id for t in visible])
    by_id = {t.id: t for t in visible}
    body: Dict[str, Any] = {
        "model": model or (env.get("ANTHROPIC_DEFAULT_HAIKU_MODEL") or "").strip() or messages.DEFAULT_API_MODEL,
        "max_tokens": MAX_TOKENS,
    }
    if system:
        body["system"] = system
    if visible:
        body["tools"] = [
            {"name": name, "description": by_id[tool_id].description or tool_id, "input_schema": by_id[tool_id].input_schema}
            for name, tool_id in names.items()
        ]
    history = conversation.messages() if conversation is not None else []
    # The conversation as stored, then this run's messages; ``saved`` of those are stored.
    new: List[Dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": question}]}]
    saved = 0
    tool_calls: List[Dict[str, Any]] = []
    tool_results: List[Dict[str, Any]] = []
    usage = {"input_tokens": 0, "output_tokens": 0}
    cache: Dict[str, Dict[str, Any]] = {}
    read_only = {t.id for t in visible if t.read_only}
    steps = 0

    def finish(answer: str, stopped: str, error: Optional[str]) -> AskResult:
        return AskResult(answer, tool_calls, tool_results, steps, usage, stopped, error)

    def save() -> None:
        nonlocal saved
        if conversation is not None and saved < len(new):
            conversation.append(new[saved:])
            saved = len(new)

    out_of_time = f"no answer within --timeout {timeout:g} s: raise it, or ask something narrower"
    answer = ""
    try:
        while True:
            if steps >= max_steps:
                return finish(answer, STOP_MAX_STEPS, f"the model did not answer within --max-steps {max_steps}: raise it, or ask something narrower")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return finish(answer, STOP_ERROR, out_of_time)
            body["messages"] = merge_turns(history + new if visible else flatten_tool_blocks(history + new))
            started = time.monotonic()
            try:
                reply = messages.messages(body, timeout=remaining, env=env)
            except ModelError as exc:
                if exc.kind == "timeout" and time.monotonic() >= deadline - 0.05:
                    # The budget ran out inside the call: say which budget, not the call's leftover seconds.
                    return finish(answer, STOP_ERROR, out_of_time)
                return finish(answer, STOP_ERROR, str(exc))
            steps += 1
            emit("model", {"ms": (time.monotonic() - started) * 1000, "step": steps})
            for key in usage:
                value = (reply.get("usage") or {}).get(key)
                if isinstance(value, int):
                    usage[key] += value
            content = [b for b in (reply.get("content") or []) if isinstance(b, dict)]
            answer = "".join(str(b.get("text") or "") for b in content if b.get("type") == "text")
            uses = [b for b in content if b.get("type") == "tool_use"]
            if not uses or reply.get("stop_reason") != "tool_use":
                # A tool_use cut short (max_tokens) never runs; kept without its result it would
                # make the saved conversation one the API refuses.
                # (Empty text blocks are refused too.)
                kept = [b for b in content if b.get("type") != "tool_use" and not (b.get("type") == "text" and not b.get("text"))]
                new.append({"role": "assistant", "content": kept or [{"type": "text", "text": "(no answer)"}]})
                save()
                if reply.get("stop_reason") == "refusal":
                    return finish(answer, STOP_ERROR, "the model declined to answer (stop_reason refusal)")
                return finish(answer, STOP_ANSWERED, None)
            new.append({"role": "assistant", "content": content})
            results = _run_tools(uses, names, tools, allow, read_only, deadline, tool_timeout, conversation, cache, tool_calls, tool_results, emit)
            new.append({"role": "user", "content": results})
            save()
    except KeyboardInterrupt:
        if tools is not None:
            tools.cancel_all()
        return finish(answer, STOP_INTERRUPTED, "interrupted")


def _run_tools(
    uses: List[Dict[str, Any]],
    names: Mapping[str, str],
    tools: Any,
    allow: Sequence[str],
    read_only_ids: Any,
    deadline: float,
    tool_timeout: float,
    conversation: Optional[Conversation],
    cache: Dict[str, Dict[str, Any]],
    tool_calls: List[Dict[str, Any]],
    tool_results: List[Dict[str, Any]],
    emit: Callable[[str, Dict[str, Any]], None],
) -> List[Dict[str, Any]]:
    """Run one turn's tool_use blocks (in parallel when several); tool_result blocks in the order asked."""
    limit = max(0.1, min(tool_timeout, deadline - time.monotonic()))
    outcomes: List[Optional[Dict[str, Any]]] = [None] * len(uses)
    threads: List[Tuple[threading.Thread, int]] = []
    entries: List[Dict[str, Any]] = []
    for index, use in enumerate(uses):
        name = str(use.get("name") or "")
        tool_id = names.get(name, name)
        args = use.get("input")
        call_id = str(use.get("id") or "")
        tool_calls.append({"id": call_id, "tool": tool_id, "args": args})
        entry: Dict[str, Any] = {"id": call_id, "tool": tool_id, "cached": False, "started": time.monotonic()}
        entries.append(entry)
        if name not in names:
            reason = refusal_message(tool_id, allow) if allow and tools is not None else ""
            known = ", ".join(list(names)[:10]) or "none"
            outcomes[index] = _failure("tool_not_found", reason or f'unknown tool "{name}"; known tools: {known}')
            continue
        key = _cache_key(tool_id, args)
        read_only = tool_id in read_only_ids
        if read_only:
            hit = cache.get(key) or (conversation.cached(key) if conversation is not None else None)
            if hit is not None:
                outcomes[index] = hit
                entry["cached"] = True
                continue
        entry["key"] = key if read_only else None

        def work(i: int = index, tid: str = tool_id, a: Any = args) -> None:
            try:
                outcomes[i] = tools.call(tid, a, limit)
            except Exception as exc:  # noqa: BLE001 - a tool source bug is the model's error result, not a crash
                outcomes[i] = _failure("execution_error", f"{type(exc).__name__}: {exc}")

        thread = threading.Thread(target=work, name=f"ask-tool-{index}", daemon=True)
        thread.start()
        threads.append((thread, index))
    for thread, index in threads:
        # A gateway call has its own timeout; this bound covers a source that ignores it.
        thread.join(max(0.0, entries[index]["started"] + limit + 10 - time.monotonic()))
        if thread.is_alive():
            outcomes[index] = _failure("execution_error", f'tool "{entries[index]["tool"]}" timed out after {limit:g}s')
    blocks = []
    for use, entry, outcome in zip(uses, entries, outcomes):
        outcome = outcome or _failure("execution_error", "the tool gave no result")
        meta: Dict[str, Any] = outcome["meta"] if isinstance(outcome.get("meta"), dict) else {}
        # The executor's own duration when it gave one (the tool's time, not our thread's wait).
        ms = 0 if entry["cached"] else int(meta.get("durationMs", (time.monotonic() - entry["started"]) * 1000))
        record: Dict[str, Any] = {"id": entry["id"], "tool": entry["tool"], "ok": bool(outcome.get("ok"))}
        if outcome.get("ok"):
            record["data"] = outcome.get("data")
            if entry.get("key"):
                cache[entry["key"]] = outcome
                if conversation is not None:
                    conversation.remember(entry["key"], outcome)
        else:
            record["error"] = outcome.get("error") or {"code": "execution_error", "message": "failed"}
        record["ms"] = ms
        record["cached"] = entry["cached"]
        tool_results.append(record)
        emit("tool", {"tool": entry["tool"], "args": use.get("input"), "ms": ms, "ok": record["ok"], "cached": entry["cached"],
                      "error": record.get("error")})
        block: Dict[str, Any] = {"type": "tool_result", "tool_use_id": entry["id"], "content": result_text(outcome)}
        if not outcome.get("ok"):
            block["is_error"] = True
        blocks.append(block)
    return blocks
