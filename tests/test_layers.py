"""The package's layers: one table of the imports allowed between folders, and no import cycle.

Each folder of ``toolscript/`` is a layer (docs/architecture.md draws the map).  A
module may import from its own folder, from the foundations (``toolscript``,
``errors``, ``log``, ``paths``, ``http1``) and from the folders its row in ALLOWED
names; any other edge fails the test with the file and line.  Imports inside
functions count: a lazy import keeps a hook fast, not a layer clean.  The MCP
layer's three sub-packages are rows of their own, so their direction is checked too.
"""

import ast
import glob
import os
from typing import Dict, Iterator, List, Set, Tuple

import toolscript.cli.frame
from conftest import REPO_ROOT

PACKAGE_DIR = os.path.join(REPO_ROOT, "toolscript")
FOUNDATIONS = {"toolscript", "toolscript.errors", "toolscript.log", "toolscript.paths", "toolscript.http1"}

# importer -> the layers it may import besides its own and the foundations.
ALLOWED: Dict[str, Set[str]] = {
    "foundations": set(),
    "entry": {"claude_code", "cli"},  # __main__: the hook fast path, else the command line
    "system": set(),  # cgroups, opening files beneath a root
    "config": set(),
    "tools": {"system"},  # the file built-ins open beneath the workspace
    "search": set(),
    "stubs": set(),
    "mcp": set(),  # jsonrpc, protocol, errors, cancel, httpconn: what client, auth and server share
    "mcp.auth": {"mcp"},
    "mcp.client": {"mcp", "mcp.auth", "system"},  # an http transport signs in; a stdio server gets a cgroup
    "mcp.server": {"mcp"},  # never the client: the gateway's endpoint knows no upstream
    "memory": {"config", "search", "tools"},  # the memory tools are tools; search's word rules
    # codemode: the code-mode MCP tools run scripts in the sandbox, in the gateway's process for /mcp/code.
    "gateway": {"config", "system", "tools", "search", "stubs", "mcp", "mcp.auth", "mcp.client", "mcp.server", "memory", "codemode"},
    "codemode": {"system"},  # the runtime talks to the gateway over HTTP itself
    "models": {"tools", "memory", "gateway"},  # ask calls tools, in-process or through the gateway
    "claude_code": {"config", "search", "memory", "gateway", "models"},
    "cli": {"system", "config", "tools", "search", "stubs", "mcp", "mcp.auth", "mcp.client", "mcp.server", "memory",
            "gateway", "codemode", "models", "claude_code"},
}


def module_name(path: str) -> str:
    parts = os.path.relpath(path, REPO_ROOT)[: -len(".py")].split(os.sep)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_sources() -> List[str]:
    return sorted(glob.glob(os.path.join(PACKAGE_DIR, "**", "*.py"), recursive=True))


def toolscript_imports(tree: ast.AST, importer: str, is_package: bool, known: Set[str]) -> List[Tuple[int, str]]:
    """``(line, module)`` for every import of a toolscript module in ``tree``, resolved to the module.

    ``from toolscript import log`` is ``toolscript.log`` (a module), while
    ``from toolscript import __version__`` is ``toolscript``.  Imports inside
    functions count too, and relative imports are resolved.
    """
    found = []
    package = importer if is_package else importer.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "toolscript" or alias.name.startswith("toolscript."):
                    found.append((node.lineno, alias.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not (base == "toolscript" or base.startswith("toolscript.")):
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.append((node.lineno, candidate if candidate in known else base))
    return found


def all_imports() -> Dict[str, List[Tuple[int, str]]]:
    sources = package_sources()
    known = {module_name(p) for p in sources}
    result = {}
    for path in sources:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        result[module_name(path)] = toolscript_imports(tree, module_name(path), path.endswith("__init__.py"), known)
    return result


def layer_of(module: str) -> str:
    if module == "toolscript.__main__":
        return "entry"
    if module in FOUNDATIONS:
        return "foundations"
    parts = module.split(".")
    if parts[1] == "mcp" and len(parts) > 2 and parts[2] in ("client", "auth", "server"):
        return f"mcp.{parts[2]}"
    return parts[1]


def forbidden_edges(imports: Dict[str, List[Tuple[int, str]]]) -> List[str]:
    bad = []
    for importer, found in sorted(imports.items()):
        layer = layer_of(importer)
        for line, target in found:
            into = layer_of(target)
            if into not in (layer, "foundations") and into not in ALLOWED.get(layer, set()):
                bad.append(f"{importer} line {line} imports {target} ({layer} -> {into})")
    return bad


def cycles(imports: Dict[str, List[Tuple[int, str]]]) -> List[List[str]]:
    """The module groups that import each other round in a circle (Tarjan's strongly connected components)."""
    graph = {m: sorted({t for _, t in found if t in imports and t != m}) for m, found in imports.items()}
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    groups: List[List[str]] = []

    def visit(start: str) -> None:
        # Iterative, so a deep import chain cannot hit the recursion limit.
        work: List[Tuple[str, Iterator[str]]] = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return groups


def test_the_import_reader_resolves_each_form():
    known = {"toolscript", "toolscript.log", "toolscript.cli.commands", "toolscript.cli.commands.servers", "toolscript.mcp.client.stdio"}
    snippet = (
        "from toolscript.cli.commands import servers\n"
        "import toolscript.mcp.client.stdio\n"
        "from toolscript import log, __version__\n"
        "def later():\n"
        "    from .commands.servers import run_check\n"
        "import json\n"
    )
    assert toolscript_imports(ast.parse(snippet), "toolscript.cli.frame", False, known) == [
        (1, "toolscript.cli.commands.servers"),
        (2, "toolscript.mcp.client.stdio"),
        (3, "toolscript.log"),
        (3, "toolscript"),
        (5, "toolscript.cli.commands.servers"),
    ]


def test_the_checks_bite():
    planted = {
        "toolscript.mcp.client.connect": [(5, "toolscript.config.load")],  # the MCP layer takes no app config
        "toolscript.mcp.server.endpoint": [(7, "toolscript.mcp.client.session")],
        "toolscript.gateway.http_api": [(9, "toolscript.models.ask")],
        "toolscript.memory.store": [(11, "toolscript.cli.output")],  # nothing below cli/ imports it
        "toolscript.cli.frame": [(1, "toolscript.cli.args"), (2, "toolscript.gateway.state")],  # allowed
    }
    assert forbidden_edges(planted) == [
        "toolscript.gateway.http_api line 9 imports toolscript.models.ask (gateway -> models)",
        "toolscript.mcp.client.connect line 5 imports toolscript.config.load (mcp.client -> config)",
        "toolscript.mcp.server.endpoint line 7 imports toolscript.mcp.client.session (mcp.server -> mcp.client)",
        "toolscript.memory.store line 11 imports toolscript.cli.output (memory -> cli)",
    ]
    ring = {"toolscript.a": [(1, "toolscript.b")], "toolscript.b": [(1, "toolscript.c")], "toolscript.c": [(1, "toolscript.a")],
            "toolscript.d": [(1, "toolscript.a")]}
    assert cycles(ring) == [["toolscript.a", "toolscript.b", "toolscript.c"]]


def test_imports_follow_the_table_of_layers():
    imports = all_imports()
    assert {layer_of(m) for m in imports} <= set(ALLOWED), "a folder has no row in ALLOWED: add it, and say what it may import"
    bad = forbidden_edges(imports)
    assert bad == [], "imports the table of layers does not allow:\n" + "\n".join(bad)


def test_no_module_is_in_an_import_cycle():
    assert cycles(all_imports()) == []


def test_commands_are_loaded_by_name_only():
    """cli/frame.py loads a command module by name when it runs; no import statement names one."""
    imports = all_imports()
    named = [f"{importer} line {line} imports {target}" for importer, found in sorted(imports.items()) for line, target in found
             if target.startswith("toolscript.cli.commands.")]
    assert named == []
    for name, (module, _summary) in toolscript.cli.frame.COMMANDS.items():
        assert module in imports and module.startswith("toolscript.cli.commands."), (name, module)
