"""Code mode as three MCP tools: search the catalog, get typed stubs, run a script.

Any MCP client (Claude Desktop, Cursor, Codex, Claude Code without the
plugin) gets toolscript's code mode from these three tools instead of every
upstream tool's schema: ``search_tools`` ranks the catalog, ``get_types``
prints the stubs of the few tools that fit, ``run_script`` runs one Python
script in the same sandbox as ``toolscript exec``, calling tools through the
gateway.  ``CodeModeTools`` is a tool provider for both MCP servers of the
package: ``toolscript mcp`` on stdio (``mcp.server.stdio``), which reaches
the gateway over its JSON API (``HttpBackend``), and the gateway's own
``/mcp/code`` endpoint (``mcp.server.endpoint``), which asks the gateway in
process (``GatewayBackend``).

Each tool carries ``_meta["anthropic/alwaysLoad"]``: Claude Code defers MCP
tools behind its own tool search, and these three are the ones that must stay
loaded.  Descriptions stay far below Claude Code's 2 KB cut.  Results are
text only: Claude Code hands the model a result's ``structuredContent`` in
place of its text when there is one (seen on 2.1.337), and the text is the
compact form, with the next step in it.  Every failure is a tool error
(``isError``) whose first line says what went wrong and what to do; a
script's own output follows when there is some.
"""

import io
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from toolscript import log
from toolscript.errors import UserError
from toolscript.mcp.server.provider import CallContext, UnknownTool
from toolscript.tools import schema as jsonschema

logger = log.get("gateway.codemode_tools")

SEARCH_TOOL = "search_tools"
TYPES_TOOL = "get_types"
RUN_TOOL = "run_script"
ALWAYS_LOAD = {"anthropic/alwaysLoad": True}

DEFAULT_LIMIT = 5
MAX_LIMIT = 20
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 300.0
# A script's output is for a model to read: past this the script is stopped and told to print less.
MAX_OUTPUT_BYTES = 100_000
DESCRIPTION_WIDTH = 120  # characters of a tool's description in a search result
# A script that never names the runtime needs no gateway (as in ``toolscript exec``).
_USES_TOOLS = re.compile(r"\btoolscript\b")

INSTRUCTIONS = (
    "Code mode over the user's MCP servers: find tools with search_tools, read the stubs of the few that fit "
    "with get_types, then do the whole task in one run_script script and print a compact result."
)

TOOLS: List[Dict[str, Any]] = [
    {
        "name": SEARCH_TOOL,
        "title": "Search tools",
        "description": (
            "Find the tools a task needs among all tools of the user's MCP servers, ranked by what they do. "
            "Use it first, with the task in a few words. Then call get_types with the ids that fit."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "what the tools should do, e.g. \"create a github issue\""},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": f"how many results (default {DEFAULT_LIMIT})"},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
        "_meta": dict(ALWAYS_LOAD),
    },
    {
        "name": TYPES_TOOL,
        "title": "Get tool stubs",
        "description": (
            "Typed Python stubs (arguments, types, docs) of a few tools: pass the ids search_tools found, "
            "or a server name. Read them before writing the run_script script."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "tools": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                          "description": "tool ids (server__tool) from search_tools, or server names"},
                "filter": {"type": "string", "description": "the same, comma-separated"},
            },
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
        "_meta": dict(ALWAYS_LOAD),
    },
    {
        "name": RUN_TOOL,
        "title": "Run a script",
        "description": (
            "Run a Python script in a sandbox; it calls tools as "
            "`from toolscript import tools; print(tools.<server>.<tool>(arg=...))` (names as in get_types). "
            "Do the whole task in one script (loops, filtering, joining results) and print only the compact result: "
            "stdout is what you get back. A failed tool call raises toolscript.ToolError."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "minLength": 1, "description": "the Python script"},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT,
                            "description": f"seconds before the script is stopped (default {DEFAULT_TIMEOUT:g})"},
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": False, "openWorldHint": True},
        "_meta": dict(ALWAYS_LOAD),
    },
]


class ToolFailure(Exception):
    """A tool call that failed in a way the model can act on: one line, returned as ``isError``."""


class GatewayBackend:
    """What the tools ask of a gateway served by this process (the gateway's ``/mcp/code``)."""

    def __init__(self, gateway: Any, url: Callable[[], str]) -> None:
        self.gateway = gateway
        self._url = url
        self.require_isolation = bool(getattr(gateway.config, "require_isolation", False))

    def search(self, query: str, limit: int) -> Dict[str, Any]:
        pending = self.gateway.wait_for_servers()
        return {"results": self.gateway.derived.search(query, limit=limit, threshold=0.0, servers=None), "pending": pending}

    def types(self, selection: List[str]) -> Dict[str, Any]:
        pending = self.gateway.wait_for_servers()
        return dict(self.gateway.derived.types(lang="python", selection=selection), pending=pending)

    def runtime(self) -> Tuple[str, Dict[str, Any]]:
        """The URL scripts call tools at, and the runtime's name map."""
        self.gateway.wait_for_servers()
        return self._url(), self.gateway.derived.names()


class HttpBackend:
    """What the tools ask of a gateway over its JSON API (``toolscript mcp``).

    ``connect`` returns a ``GatewayClient`` once the gateway is up (it may wait
    for the gateway to start), or raises ``UserError`` with the reason it is not.
    """

    def __init__(self, connect: Callable[[], Any], *, require_isolation: bool = False) -> None:
        self._connect = connect
        self.require_isolation = require_isolation

    def search(self, query: str, limit: int) -> Dict[str, Any]:
        answer: Dict[str, Any] = self._connect().get("/search", q=query, limit=str(limit))
        return answer

    def types(self, selection: List[str]) -> Dict[str, Any]:
        answer: Dict[str, Any] = self._connect().get("/types", lang="python", filter=",".join(selection))
        return answer

    def runtime(self) -> Tuple[str, Dict[str, Any]]:
        client = self._connect()
        return client.url, client.get("/runtime/names")


class CodeModeTools:
    """The three tools as an MCP tool provider (``list_tools``, ``call_tool``, ``add_listener``)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def list_tools(self) -> List[Dict[str, Any]]:
        return [dict(tool, _meta=dict(tool["_meta"])) for tool in TOOLS]

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        return lambda: None  # the three tools never change

    def call_tool(self, name: str, arguments: Dict[str, Any], call: Optional[CallContext] = None) -> Dict[str, Any]:
        handlers = {SEARCH_TOOL: self._search, TYPES_TOOL: self._types, RUN_TOOL: self._run}
        handler = handlers.get(name)
        if handler is None:
            raise UnknownTool(name)
        spec = next(tool for tool in TOOLS if tool["name"] == name)
        problems = jsonschema.validate(arguments, spec["inputSchema"])
        try:
            if problems:
                raise ToolFailure(f"invalid arguments for {name}: {'; '.join(problems)}")
            return handler(arguments)
        except ToolFailure as failure:
            return error_result(str(failure))
        except UserError as exc:  # the gateway is unreachable, did not start, refused the request
            return error_result(_one_line(str(exc)))

    # -- the tools ---------------------------------------------------------------------

    def _search(self, arguments: Dict[str, Any]) -> Dict[str, Any]:
        query = " ".join(str(arguments["query"]).split())
        if not query:
            raise ToolFailure('the query is empty: say what the tool should do, e.g. "create a github issue"')
        limit = int(arguments.get("limit", DEFAULT_LIMIT))
        answer = self.backend.search(query, limit)
        results = [
            {"id": r["id"], "score": round(float(r.get("score", 0.0)), 3), "description": _first_line(r.get("description"), DESCRIPTION_WIDTH)}
            for r in answer.get("results") or []
        ]
        pending = list(answer.get("pending") or [])
        if results:
            lines = [f"{r['id']} ({r['score']:.2f})" + (f": {r['description']}" if r["description"] else "") for r in results]
            lines.append("Next: get_types with the ids that fit, then one run_script.")
        else:
            lines = [f"No tools matched {query!r}: try other or fewer words."]
        if pending:
            lines.append(f"(still connecting, not searched: {', '.join(pending)})")
        return {"content": [_text("\n".join(lines))]}

    def _types(self, arguments: Dict[str, Any]) -> Dict[str, Any]:
        wanted = [str(t).strip() for t in arguments.get("tools") or [] if str(t).strip()]
        wanted += [part.strip() for part in str(arguments.get("filter") or "").split(",") if part.strip()]
        wanted = list(dict.fromkeys(wanted))
        if not wanted:
            raise ToolFailure("name the tools: pass tools: [ids from search_tools] (or a server name)")
        answer = self.backend.types(wanted)
        found = list(answer.get("tools") or [])
        pending = set(answer.get("pending") or [])
        servers = {tool.split("__", 1)[0] for tool in found}
        missing = [w for w in wanted if w not in found and w not in servers and w.split("__", 1)[0] not in pending]
        if not found:
            if pending and not missing:
                raise ToolFailure(f"{', '.join(wanted)}: the server is still connecting; try again in a moment")
            raise ToolFailure(f"no tool or server named {', '.join(missing)}: use the ids search_tools returns (server__tool)")
        text = str(answer.get("code") or "").rstrip()
        if answer.get("usage"):
            text += f"\n\n# usage: {answer['usage']}"
        if missing:
            text += f"\n# not found: {', '.join(missing)} (use the ids search_tools returns)"
        return {"content": [_text(text)]}

    def _run(self, arguments: Dict[str, Any]) -> Dict[str, Any]:
        from toolscript.codemode import sandbox

        code = str(arguments["code"])
        timeout = float(arguments.get("timeout", DEFAULT_TIMEOUT))
        problem = sandbox.check_syntax(code, "<script>")
        if problem:
            raise ToolFailure(f"syntax error, nothing was run: {problem}")
        url, names = (None, None)
        if _USES_TOOLS.search(code):
            url, names = self.backend.runtime()
        out, err = io.BytesIO(), io.BytesIO()
        result = sandbox.run(
            code, filename="<script>", gateway_url=url, names=names, timeout=timeout, max_output=MAX_OUTPUT_BYTES,
            stdout=out, stderr=err, require_isolation=self.backend.require_isolation,
        )
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
        logger.info("run_script: exit %d after %d ms (%s)", result.exit_code, result.duration_ms, result.mode)
        if result.exit_code == 0 and not result.truncated:
            text = stdout if stdout.strip() else "(the script printed nothing: print the result you need)"
            if stderr.strip():
                text = text.rstrip("\n") + "\n[stderr]\n" + stderr
            return {"content": [_text(text)]}
        if result.timed_out:
            head = f"The script timed out after {timeout:g}s: do less per script, or pass a larger timeout (up to {MAX_TIMEOUT:g})."
        elif result.truncated:
            head = f"The script printed more than {MAX_OUTPUT_BYTES // 1000} kB and was stopped: print a compact result."
        else:
            head = f"The script failed with exit status {result.exit_code}."
        parts = [head]
        if stdout.strip():
            parts.append("[stdout]\n" + stdout.rstrip("\n"))
        if stderr.strip():
            parts.append("[stderr]\n" + stderr.rstrip("\n"))
        return {"content": [_text("\n".join(parts))], "isError": True}


def error_result(message: str) -> Dict[str, Any]:
    """A tool error: one line of text."""
    return {"content": [_text(_one_line(message))], "isError": True}


def _text(text: str) -> Dict[str, Any]:
    return {"type": "text", "text": text}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _first_line(text: Any, width: int) -> str:
    """The start of a description: its first line, at most ``width`` characters."""
    line = str(text or "").strip().split("\n", 1)[0].strip()
    return line if len(line) <= width else line[: width - 3].rstrip() + "..."
