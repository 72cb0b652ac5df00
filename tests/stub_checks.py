"""Checks the stub tests share: catalog entries to feed the generators, and ways to read what they write.

Every generated Python module is compiled and executed, and
``typing.get_type_hints`` must resolve every annotation in it (forward
references included); the shape of each function is checked with ``ast``.
TypeScript cannot be compiled here, so its structure and escaping are checked
as text (``check_typescript``).
"""

import ast
import glob
import itertools
import json
import os
import re
import sys
import types
import typing
from typing import Any, Dict, List, Optional

from conftest import REPO_ROOT
from toolscript.stubs.python import python_stubs
from toolscript.stubs.typescript import _TS_RESERVED

CATALOGS = sorted(glob.glob(os.path.join(REPO_ROOT, "bench", "search", "sets", "set00", "catalogs", "*.json")))
_MODULE_COUNTER = itertools.count()


def tool(server: str, name: str, schema: Any = None, description: Any = None, **extra: Any) -> Dict[str, Any]:
    """A catalog entry as the gateway describes it."""
    entry: Dict[str, Any] = {"id": f"{server}__{name}", "server": server, "name": name}
    if schema is not None:
        entry["inputSchema"] = schema
    if description is not None:
        entry["description"] = description
    entry.update(extra)
    return entry


def obj(properties: Dict[str, Any], required: Optional[List[str]] = None, **extra: Any) -> Dict[str, Any]:
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    schema.update(extra)
    return schema


def load(source: str) -> Dict[str, Any]:
    """Compile and run ``source`` as a module; resolve every annotation in it; return its namespace."""
    assert "\x00" not in source
    code = compile(source, "<stubs>", "exec")
    name = f"_generated_stubs_{next(_MODULE_COUNTER)}"
    module = types.ModuleType(name)
    # get_type_hints(SomeTypedDict) looks the module up to resolve forward
    # references (on 3.9 it fails without it), so it stays registered.
    sys.modules[name] = module
    exec(code, module.__dict__)
    namespace = dict(module.__dict__)
    for value in namespace.values():
        if isinstance(value, type) and issubclass(value, dict) and hasattr(value, "__total__"):
            typing.get_type_hints(value)
        elif isinstance(value, type) and value.__module__ == name:
            for attr, member in vars(value).items():
                if callable(member) and not attr.startswith("__"):
                    typing.get_type_hints(member)
    return namespace


def hints(source: str, server: str, function: str) -> Dict[str, Any]:
    namespace = load(source)
    return typing.get_type_hints(getattr(namespace[server], function))


class Signature:
    """One stub function as ``ast`` sees it."""

    def __init__(self, node: ast.FunctionDef) -> None:
        self.node = node
        args = node.args
        assert not args.args and not args.posonlyargs and args.vararg is None, "only keyword arguments"
        self.names = [a.arg for a in args.kwonlyargs]
        self.annotations = {a.arg: ast.unparse(a.annotation) for a in args.kwonlyargs}  # type: ignore[arg-type]
        self.defaults = {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults)}
        self.required = [n for n in self.names if self.defaults[n] is None]
        self.kwargs = args.kwarg.arg if args.kwarg else None
        self.returns = ast.unparse(node.returns) if node.returns else None
        self.doc = ast.get_docstring(node) or ""

    def default(self, name: str) -> Any:
        return ast.literal_eval(self.defaults[name])  # type: ignore[arg-type]


def signature(source: str, server: str, function: str) -> Signature:
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == server:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == function:
                    return Signature(item)
    raise AssertionError(f"no function {server}.{function} in the stubs")


def functions(source: str) -> Dict[str, List[str]]:
    """Server class -> its function names, from the stubs' ``ast``."""
    tree = ast.parse(source)
    return {
        node.name: [item.name for item in node.body if isinstance(item, ast.FunctionDef)]
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not any(isinstance(b, ast.Name) and b.id == "TypedDict" for b in node.bases)
    }


def identifiers(source: str) -> set:
    """Every name the stubs define or use in code (not in strings or comments)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return found


def expr(text: str) -> str:
    """An annotation as ``ast.unparse`` writes it (quote style and all)."""
    return ast.unparse(ast.parse(text, mode="eval"))


def literal_values(annotation: Any) -> List[Any]:
    """The values of a Literal, also inside Optional[...]."""
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    values: List[Any] = []
    for arg in typing.get_args(annotation):
        if arg is type(None):
            values.append(None)
        else:
            values.extend(literal_values(arg))
    return values


def both(entries: List[Dict[str, Any]]) -> List[str]:
    """Compact and full stubs; both must load."""
    sources = [python_stubs(entries), python_stubs(entries, full=True)]
    for source in sources:
        load(source)
    return sources


# Comments and string literals, whichever starts first (as a TypeScript scanner reads them).
_TS_TOKEN = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"', re.S)


def check_typescript(ts: str) -> str:
    """The declarations with comments and strings removed; brackets balanced, no stray comment markers."""
    code = _TS_TOKEN.sub(lambda m: '""' if m.group().startswith('"') else "", ts)
    assert "*/" not in code and "/*" not in code, "a comment ended early"
    assert '"' not in code.replace('""', ""), "an unterminated string"
    for open_, close in ("{}", "()", "[]"):
        depth = 0
        for ch in code:
            depth += (ch == open_) - (ch == close)
            assert depth >= 0
        assert depth == 0, f"unbalanced {open_}{close}"
    assert "export declare const tools:" in code
    for name in re.findall(r"export (?:interface|type) (\S+)", code):
        assert re.fullmatch(r"[A-Za-z_$][\w$]*", name) and name not in _TS_RESERVED, name
    return code


def catalog_tools(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    server = data["server"]
    return [dict(t, id=f"{server}__{t['name']}", server=server) for t in data["tools"]]
