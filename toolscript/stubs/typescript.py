"""TypeScript declarations of MCP tools, for agents that prefer them to Python stubs.

:func:`typescript_declarations` declares ``export declare const tools:
{server: {tool(params): Promise<...>}}``: member names are the same as the
Python stubs' (``toolscript.stubs.names``), the keys of ``params`` are the
tools' own JSON argument names, and types come from ``toolscript.stubs.model``.
All text from a server is cleaned and escaped before it goes into a comment
(``*/`` cannot end one) or a string.
"""

import json
import re
from typing import Any, Dict, List, Optional, Set, Tuple

from toolscript.stubs.model import (
    SHORT_DEFAULT, SHORT_FIELD, Decl, ToolPlan, TypeBuilder, clean_text, description_of, grouped_by_server,
    json_text, plan_tools, schema_details, short_text, tool_summary,
)
from toolscript.stubs.names import names_for, tool_entries

# Type names a TypeScript declaration must not redefine: the language's own
# words and the global types the declarations use.
_TS_RESERVED = frozenset(
    """any unknown never string number boolean object symbol bigint undefined null void
    break case catch class const continue debugger default delete do else enum export extends
    false finally for function if import in instanceof new return super switch this throw true
    try typeof var while with as implements interface let package private protected public
    static yield type declare namespace module keyof infer readonly is asserts abstract async
    await get set from of require global tools Array Record Promise Object String Number Boolean
    Symbol Function Date Error Map Set JSON Math Partial Required Readonly Pick Omit""".split()
)

_TS_IDENTIFIER = re.compile(r"[A-Za-z_$][0-9A-Za-z_$]*\Z")
_TS_PRIMITIVES = {"str": "string", "int": "number", "float": "number", "bool": "boolean", "null": "null"}


def _jsdoc(lines: List[str], indent: str) -> List[str]:
    """A ``/** ... */`` block; ``*/`` in the text cannot end it."""
    lines = [line.replace("*/", "*\\/") for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        return []
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**"] + [f"{indent} * {line}".rstrip() for line in lines] + [f"{indent} */"]


def _ts_key(key: str) -> str:
    return key if _TS_IDENTIFIER.match(key) else json.dumps(key)


class _TsRenderer:
    def __init__(self, full: bool) -> None:
        self.full = full
        self.blocks: List[str] = []
        self.declared: Set[int] = set()

    def type(self, t: Any) -> str:
        kind = t[0]
        if kind == "prim":
            return _TS_PRIMITIVES[t[1]]
        if kind == "lit":
            return " | ".join(json.dumps(v) for v in t[1])
        if kind == "list":
            inner = self.type(t[1])
            return f"{inner}[]" if re.match(r"[\w$]+\Z", inner) else f"Array<{inner}>"
        if kind == "map":
            return f"Record<string, {self.type(t[1])}>"
        if kind == "union":
            return " | ".join(self.type(m) for m in t[1])
        if kind == "decl":
            if id(t[1]) not in self.declared:
                self.declare(t[1])
            return t[1].name
        return "any"

    def doc(self, schema: Any, default: Optional[str] = None) -> List[str]:
        text = clean_text(description_of(schema), one_line=False) if self.full else short_text(description_of(schema), SHORT_FIELD)
        lines = text.split("\n") if text else []
        if self.full and schema_details(schema):
            lines.append(schema_details(schema))
        if default is not None:
            lines.append(f"@default {clean_text(default, one_line=True)}")
        return lines

    def declare(self, decl: Decl) -> None:
        self.declared.add(id(decl))  # before the fields: interfaces may refer to themselves
        lines = _jsdoc(self.doc(decl.schema), "")
        if decl.kind == "alias":
            lines.append(f"export type {decl.name} = {self.type(decl.target)};")
        else:
            lines.append(f"export interface {decl.name} {{")
            lines += self.members([(key, t, req, schema, None) for key, t, req, schema in decl.fields], "  ")
            lines.append("}")
        self.blocks.append("\n".join(lines))

    def members(self, fields: List[Tuple[str, Any, bool, Any, Optional[str]]], indent: str) -> List[str]:
        lines = []
        for key, t, required, schema, default in fields:
            lines += _jsdoc(self.doc(schema, default), indent)
            lines.append(f"{indent}{_ts_key(key)}{'' if required else '?'}: {self.type(t)};")
        return lines

    def function(self, plan: ToolPlan) -> List[str]:
        spec = plan.entry.spec
        if self.full:
            doc = [clean_text(plan.entry.id, one_line=True)]
            if isinstance(spec.get("title"), str) and spec["title"].strip():
                doc.append(f"Title: {clean_text(spec['title'], one_line=True)}")
            description = clean_text(spec.get("description"), one_line=False)
            if description:
                doc += [""] + description.split("\n")
        else:
            doc = [tool_summary(plan.entry, False)]
        lines = _jsdoc(doc, "    ")
        fields = []
        for key, _py, t, required, schema in plan.params:
            default = None
            if not required and isinstance(schema, dict) and "default" in schema:
                default = json_text(schema["default"])
                if not self.full and len(default) > SHORT_DEFAULT:
                    default = None
            fields.append((key, t, required, schema, default))
        if not fields and plan.extra is None:
            lines.append(f"    {plan.attr}(): Promise<{self.type(plan.result)}>;")
            return lines
        optional = "" if any(required for _k, _t, required, _s, _d in fields) else "?"
        lines.append(f"    {plan.attr}(params{optional}: {{")
        lines += self.members(fields, "      ")
        if plan.extra is not None:
            # An index signature must admit every named member's type too.
            lines.append(f"      [key: string]: {'any' if fields else self.type(plan.extra)};")
        lines.append(f"    }}): Promise<{self.type(plan.result)}>;")  # after the params: declarations in reading order
        return lines


def typescript_declarations(tools: List[Dict[str, Any]], *, full: bool = False, names: Optional[Dict[str, Tuple[str, str]]] = None) -> str:
    """TypeScript declarations of ``tools``: ``export declare const tools: {server: {tool(params): Promise<...>}}``.

    Member names are the same as in :func:`python_stubs`; the keys of
    ``params`` are the tools' own JSON argument names.
    """
    header = "// Call a tool as: const result = await tools.<server>.<tool>({ name: value });\n"
    entries = tool_entries(tools)
    if not entries:
        return header + "export declare const tools: {};\n"
    names = names_for(tools, names)
    plans = plan_tools(entries, names, TypeBuilder(set(), _TS_RESERVED))
    renderer = _TsRenderer(full)
    body = ["export declare const tools: {"]
    for server, server_attr, own in grouped_by_server(plans):
        body += _jsdoc([f"MCP server {json.dumps(clean_text(server, one_line=True), ensure_ascii=False)}"], "  ")
        body.append(f"  {server_attr}: {{")
        for plan in own:
            body += renderer.function(plan)
        body.append("  };")
    body.append("};")
    return "\n\n".join([header.rstrip("\n")] + renderer.blocks + ["\n".join(body)]) + "\n"
