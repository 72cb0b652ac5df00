"""Python stubs of MCP tools, for an agent about to write a script against them.

Code mode shows the agent compact stubs of the few tools it needs; the agent
then writes ``from toolscript import tools`` and
``tools.github.search_issues(query="...")``.  :func:`python_stubs` turns
catalog entries (``{"id", "server", "name", "description", "inputSchema",
"outputSchema", ...}``) into a Python module: one class per server, one
keyword-only function per tool, ``TypedDict``s for objects and ``$ref``
targets, ``Literal`` for enums.  It always compiles, whatever the catalog
holds, and ``typing.get_type_hints`` resolves every annotation in it.
:func:`usage_example` is one line calling the first tool.

Names come from ``toolscript.stubs.names`` (the same map the sandbox runtime
uses), types from ``toolscript.stubs.model``; all text from a server is
escaped before it goes into a docstring, comment or string literal.
"""

import math
import re
from typing import Any, Dict, List, Optional, Tuple

from toolscript.stubs.model import (
    MAX_INT_BITS, NULL, SHORT_DEFAULT, SHORT_FIELD, Decl, ToolPlan, TypeBuilder, clean_text, description_of,
    grouped_by_server, json_text, plain_key, plan_tools, schema_details, short_text, tool_summary, union_of,
)
from toolscript.stubs.names import STUB_NAMES, names_for, tool_entries

_SHORT_PARAM = 160  # compact mode: characters of an argument's description
_WRAP_AT = 100  # a longer signature gets one parameter per line

_PY_PRIMITIVES = {"str": "str", "int": "int", "float": "float", "bool": "bool", "null": "None"}


# --- Python source text ---------------------------------------------------------------


def _docstring_text(text: str) -> str:
    """``text`` made safe inside ``\"\"\"...\"\"\"``: no escape sequences, no closing quotes."""
    text = text.replace("\\", "\\\\")
    # Three quotes would end the string, and so would quotes right before the
    # closing ones; both become \" (the docstring's value is unchanged).
    return re.sub('"{3,}|"+\\Z', lambda m: '\\"' * len(m.group()), text)


def _docstring(lines: List[str], indent: str) -> str:
    """A docstring block at ``indent`` from cleaned lines (first one the summary)."""
    if len(lines) == 1:
        return f'{indent}"""{_docstring_text(lines[0])}"""'
    first, *rest = _docstring_text("\n".join(lines)).split("\n")
    inner = "\n".join(f"{indent}{line}" if line else "" for line in rest)
    return f'{indent}"""{first}\n{inner}\n{indent}"""'


def _comment(text: str) -> str:
    """A trailing ``# ...`` comment, or "" for no text (the text is one cleaned line)."""
    return f"  # {text}" if text else ""


def _py_str(text: str) -> str:
    """A double-quoted Python string literal of ``text``, printable and ASCII-safe for control characters."""
    out = ['"']
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _py_value(value: Any, depth: int = 0) -> Optional[str]:
    """``value`` as a Python literal, or None when it has none (NaN, a huge int, a non-JSON object)."""
    if depth > 20:
        return None
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value) if value.bit_length() <= MAX_INT_BITS else None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return _py_str(value)
    if isinstance(value, list):
        items = [_py_value(item, depth + 1) for item in value]
        return None if None in items else "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    if isinstance(value, dict):
        pairs = [(k, _py_value(v, depth + 1)) for k, v in value.items()]
        if any(not isinstance(k, str) or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{_py_str(k)}: {v}" for k, v in pairs) + "}"
    return None


def _default(schema: Any, full: bool) -> Optional[str]:
    """The Python default of an optional argument: the schema's, else None (meaning: not sent)."""
    if isinstance(schema, dict) and "default" in schema:
        text = _py_value(schema["default"])
        if text is not None and (full or len(text) <= SHORT_DEFAULT):
            return text
    return None


_PY_HEADER = (
    "from typing import Any, Dict, List, Literal, Optional, TypedDict, Union\n"
    "\n"
    "# Call as tools.<server>.<tool>(name=value, ...) after `from toolscript import tools`; None = not sent.\n"
)

_NEW, _BUSY, _DONE = 0, 1, 2


class _PyRenderer:
    """Renders types; declares each TypedDict / alias once, before its first use."""

    def __init__(self, full: bool) -> None:
        self.full = full
        self.blocks: List[str] = []
        self.state: Dict[int, int] = {}

    def type(self, t: Any) -> str:
        kind = t[0]
        if kind == "prim":
            return _PY_PRIMITIVES[t[1]]
        if kind == "lit":
            return "Literal[" + ", ".join(_py_value(v) or "None" for v in t[1]) + "]"
        if kind == "list":
            return f"List[{self.type(t[1])}]"
        if kind == "map":
            return f"Dict[str, {self.type(t[1])}]"
        if kind == "union":
            parts = [self.type(m) for m in t[1] if m != NULL]
            inner = parts[0] if len(parts) == 1 else f"Union[{', '.join(parts)}]"
            return f"Optional[{inner}]" if len(parts) < len(t[1]) else inner
        if kind == "decl":
            decl = t[1]
            state = self.state.get(id(decl), _NEW)
            if state == _BUSY:
                return f'"{decl.name}"'  # a cycle: a forward reference resolved at run time
            if state == _NEW:
                self.declare(decl)
            return decl.name
        return "Any"

    def declare(self, decl: Decl) -> None:
        self.state[id(decl)] = _BUSY
        lines = []
        description = description_of(decl.schema)
        if description:
            text = clean_text(description, one_line=True) if self.full else short_text(description, SHORT_FIELD)
            lines.append(f"# {text}")
        if self.full and schema_details(decl.schema):
            lines.append(f"# {schema_details(decl.schema)}")
        if decl.kind == "alias":
            lines.append(f"{decl.name} = {self.type(decl.target)}")
        else:
            lines.extend(self.typeddict(decl))
        self.blocks.append("\n".join(lines))
        self.state[id(decl)] = _DONE

    def field_comment(self, schema: Any) -> str:
        text = clean_text(description_of(schema), one_line=True) if self.full else short_text(description_of(schema), SHORT_FIELD)
        if self.full and schema_details(schema):
            text = f"{text} [{schema_details(schema)}]" if text else schema_details(schema)
        return _comment(text)

    def typeddict(self, decl: Decl) -> List[str]:
        fields = [(key, self.type(t), required, schema) for key, t, required, schema in decl.fields]
        if decl.base_name:
            required = [f for f in fields if f[2]]
            lines = self.typeddict_form(decl.base_name, "TypedDict", required, total=True)
            return lines + ["", ""] + self.typeddict_form(decl.name, decl.base_name, [f for f in fields if not f[2]], total=False)
        all_required = all(required for _k, _t, required, _s in fields)
        return self.typeddict_form(decl.name, "TypedDict", fields, total=all_required)

    def typeddict_form(self, name: str, base: str, fields: List[Tuple[str, str, bool, Any]], total: bool) -> List[str]:
        if fields and all(plain_key(key) for key, *_rest in fields):
            lines = [f"class {name}({base}{'' if total else ', total=False'}):"]
            return lines + [f"    {key}: {t}{self.field_comment(s)}" for key, t, _req, s in fields]
        # Keys that are not identifiers (or are keywords) need the functional
        # form.  It cannot mix required and optional keys: a comment says which.
        mixed = not total and any(required for _k, _t, required, _s in fields)
        lines = [f"{name} = TypedDict({_py_str(name)}, {{"]
        for key, t, required, schema in fields:
            comment = self.field_comment(schema)
            if mixed and required:
                comment = "  # required" + (f"; {comment[4:]}" if comment else "")
            lines.append(f"    {_py_str(key)}: {t},{comment}")
        lines.append("})" if total else "}, total=False)")
        return lines

    def function(self, plan: ToolPlan) -> str:
        full = self.full
        pieces = []
        for key, py, t, required, schema in plan.params:
            if required:
                pieces.append((f"{py}: {self.type(t)}", schema))
                continue
            default = _default(schema, full)
            if default is None or default == "None":
                t, default = union_of([t, NULL]), "None"
            pieces.append((f"{py}: {self.type(t)} = {default}", schema))
        star = ["*"] if pieces else []
        if plan.extra is not None:
            pieces.append((f"**{plan.extra_name}: {self.type(plan.extra)}", None))
        result = self.type(plan.result)
        texts = star + [text for text, _schema in pieces]
        one_line = f"    def {plan.attr}({', '.join(texts)}) -> {result}:"
        if pieces and (full or len(one_line) > _WRAP_AT):
            lines = [f"    def {plan.attr}("] + (["        *,"] if star else [])
            for text, schema in pieces:
                lines.append(f"        {text},{_comment(schema_details(schema)) if full else ''}")
            lines.append(f"    ) -> {result}:")
        else:
            lines = [one_line]
        lines.append(_docstring(self.doc_lines(plan), "        "))
        return "\n".join(lines)

    def doc_lines(self, plan: ToolPlan) -> List[str]:
        spec = plan.entry.spec
        if not self.full:
            lines = [tool_summary(plan.entry, False)]
            notes = []
            for key, py, _t, _required, schema in plan.params:
                text = short_text(description_of(schema), _SHORT_PARAM)
                if py != key:
                    text = f"JSON name {_py_str(key)}." + (f" {text}" if text else "")
                if text:
                    notes.append(f"{py}: {text}")
            return lines + ([""] + notes if notes else [])
        lines = [clean_text(plan.entry.id, one_line=True)]
        if isinstance(spec.get("title"), str) and clean_text(spec["title"], one_line=True):
            lines.append(f"Title: {clean_text(spec['title'], one_line=True)}")
        description = clean_text(spec.get("description"), one_line=False)
        if description:
            lines += [""] + description.split("\n")
        args = []
        for key, py, _t, _required, schema in plan.params:
            described = clean_text(description_of(schema), one_line=False).split("\n")
            head = f"JSON name {_py_str(key)}. " if py != key else ""
            if not head and not described[0]:
                continue
            args.append(f"    {py}: {head}{described[0]}".rstrip())
            args += [f"        {line}" if line else "" for line in described[1:]]
        if args:
            lines += ["", "Args:"] + args
        if isinstance(spec.get("annotations"), dict) and spec["annotations"]:
            lines += ["", f"Annotations: {clean_text(json_text(spec['annotations']), one_line=True)}"]
        return lines


def python_stubs(tools: List[Dict[str, Any]], *, full: bool = False, names: Optional[Dict[str, Tuple[str, str]]] = None) -> str:
    """Python stubs of ``tools``: one class per server, one keyword-only function per tool.

    Compact by default (descriptions cut to about 300 characters, one line per
    argument); ``full=True`` keeps whole descriptions and adds every schema
    constraint as a comment.  ``names`` is :func:`python_names` of the whole
    catalog when ``tools`` is a selection of it.
    """
    entries = tool_entries(tools)
    if not entries:
        return _PY_HEADER + "\n# (no tools)\n"
    names = names_for(tools, names)
    taken = {name for pair in names.values() for name in pair}
    plans = plan_tools(entries, names, TypeBuilder(taken, STUB_NAMES))
    renderer = _PyRenderer(full)
    classes = []
    for server, server_attr, own in grouped_by_server(plans):
        body = [f"class {server_attr}:", _docstring([f"MCP server {_py_str(clean_text(server, one_line=True))}."], "    ")]
        for plan in own:
            body += ["", renderer.function(plan)]
        classes.append("\n".join(body))
    parts = [_PY_HEADER.rstrip("\n")] + renderer.blocks + classes
    return "\n\n\n".join(parts) + "\n"


def usage_example(tools: List[Dict[str, Any]], *, names: Optional[Dict[str, Tuple[str, str]]] = None) -> str:
    """One line calling the first tool with its required arguments, e.g. ``result = tools.github.search_issues(query="...")``."""
    entries = tool_entries(tools)
    if not entries:
        return ""
    names = names_for(tools, names)
    taken = {name for pair in names.values() for name in pair}
    plan = plan_tools(entries[:1], names, TypeBuilder(taken, STUB_NAMES))[0]
    args = [f"{py}={_placeholder(t, 0)}" for _key, py, t, required, _schema in plan.params if required]
    return f"result = tools.{plan.server_attr}.{plan.attr}({', '.join(args)})"


def _placeholder(t: Any, depth: int) -> str:
    kind = t[0]
    if kind == "prim":
        return {"str": '"..."', "int": "0", "float": "0.0", "bool": "False", "null": "None"}[t[1]]
    if kind == "lit":
        return _py_value(t[1][0]) or "..."
    if kind == "list":
        return "[]"
    if kind == "map":
        return "{}"
    if kind == "union":
        return _placeholder(t[1][0], depth + 1)
    if kind == "decl" and depth < 10:
        return "{}" if t[1].kind == "typeddict" else _placeholder(t[1].target, depth + 1)
    return "..."
