"""The type model both stub languages render: JSON Schema -> a small tree of types, one plan per tool.

A type is a tuple: ``("any",)``, ``("prim", "str"|"int"|"float"|"bool"|"null")``,
``("lit", values)``, ``("list", item)``, ``("map", value)``, ``("union", members)``
or ``("decl", Decl)`` -- a declared TypedDict / interface or type alias.
:class:`TypeBuilder` turns schemas into these, naming and sharing declarations
across tools; :func:`plan_tools` gives each tool its names (``toolscript.stubs.names``)
and types, which ``toolscript.stubs.python`` and ``toolscript.stubs.typescript``
then write out.

Types are named from the tool and property path, never from a schema's
``title`` (a title would let a server rename or hide a type); every ``$ref``
target is declared once; names keep their case; colliding names are told
apart.  A hostile schema may nest without end or fan out through ``$ref``:
past fixed limits the rest of a type is ``Any``.

The server's text (descriptions, titles, constraints) reaches generated code
only through :func:`clean_text`, which both renderers use before escaping it
for their own language.
"""

import json
import keyword
import re
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from toolscript.log import terminal_text
from toolscript.stubs.names import PLAIN_IDENTIFIER, SOFT_KEYWORDS, ToolEntry, chase_ref, input_shape, pascal

# Compact mode keeps each piece of text to about this many characters.
_SHORT_DESCRIPTION = 300
SHORT_FIELD = 100
SHORT_DEFAULT = 100  # a longer default is shown as None (the server applies it)

# A hostile schema may nest without end or fan out through $ref; past these
# limits the rest of a type is Any.  Well inside Python's recursion limit.
_MAX_DEPTH = 40
_MAX_STEPS = 20000  # schema nodes per tool
MAX_INT_BITS = 10000  # str() of a larger int may hit Python's digit limit

# Everything a reader of the source would take as a line break.
_LINE_BREAKS = re.compile("\r\n|[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

_PRIMITIVES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "null"}
# Keywords that give a $ref target a structure worth a name of its own.
_STRUCTURE_KEYS = ("$ref", "prefixItems", "anyOf", "oneOf", "allOf", "enum", "const")
_NESTED_KEYS = ("properties", "items", "additionalProperties")
_TYPE_INFO_KEYS = ("type", "$ref", "enum", "const", "properties", "items", "prefixItems", "anyOf", "oneOf", "allOf", "additionalProperties")
# Shown by full=True next to a parameter or field (as ``key=value``).
_DETAIL_KEYS = (
    "title", "format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "contains",
    "minProperties", "maxProperties", "patternProperties", "propertyNames", "dependentRequired",
    "contentMediaType", "contentEncoding", "examples", "deprecated", "readOnly", "writeOnly",
    "not", "$comment",
)  # fmt: skip


ANY = ("any",)
NULL = ("prim", "null")


class Decl:
    """A named type both renderers declare once: a TypedDict (``fields``) or an alias (``target``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kind = "typeddict"
        self.fields: List[Tuple[str, Any, bool, Any]] = []  # (JSON key, type, required, schema)
        self.target: Any = ANY
        self.schema: Any = {}
        self.base_name = ""  # the required-keys base class of a mixed class-form TypedDict


class _Doc:
    """One schema document (a tool's input or output schema) and how to name its types."""

    def __init__(self, root: Any, hint: str, prefix: str, root_hint: str) -> None:
        self.root = root
        self.hint = hint  # the tool, in PascalCase
        self.prefix = prefix  # the server, in PascalCase: disambiguates colliding names
        self.root_hint = root_hint


def union_of(members: Sequence[Any]) -> Any:
    """One type for all of ``members``: flattened, without repeats, literals merged, Any absorbing."""
    flat: List[Any] = []
    literals: List[Any] = []
    has_null = False
    for member in members:
        for part in member[1] if member[0] == "union" else (member,):
            if part[0] == "any":
                return ANY
            if part[0] == "lit":
                literals.extend(part[1])
            elif part == NULL:
                has_null = True
            elif part not in flat:
                flat.append(part)
    if literals:
        flat.insert(0, ("lit", _distinct(literals)))
    if has_null:
        flat.append(NULL)  # last, so it renders as Optional[...] / "| null"
    if not flat:
        return ANY
    return flat[0] if len(flat) == 1 else ("union", tuple(flat))


def _distinct(values: Sequence[Any]) -> Tuple[Any, ...]:
    # By type too: 1 and True are equal in Python but different JSON values.
    seen: Set[Tuple[str, Any]] = set()
    result = []
    for value in values:
        key = (type(value).__name__, value)
        if key not in seen:
            seen.add(key)
            result.append(value)
    return tuple(result)


def _has_type_info(schema: Any) -> bool:
    return not isinstance(schema, dict) or any(key in schema for key in _TYPE_INFO_KEYS)


def plain_key(key: str) -> bool:
    """A TypedDict key that class syntax can hold as written (no keyword, no name mangling)."""
    return bool(PLAIN_IDENTIFIER.match(key)) and not keyword.iskeyword(key) and key not in SOFT_KEYWORDS and not key.startswith("__")


class TypeBuilder:
    """Turns schemas into the type model, naming and sharing declarations across tools."""

    def __init__(self, taken: Set[str], reserved: frozenset) -> None:
        self.taken = set(taken) | set(reserved)
        self.by_ref: Dict[Tuple[int, str], Any] = {}
        self.by_content: Dict[str, Any] = {}
        self.roots: List[Any] = []  # keeps documents alive while id(root) keys are in use
        self.steps = 0

    def new_name(self, hint: str, prefix: str = "") -> str:
        """A fresh type name from ``hint``; on collision the server prefix, then a number."""
        if not hint or not PLAIN_IDENTIFIER.match(hint):
            hint = pascal(hint) or "Type"
        if hint[0].isdigit():
            hint = "_" + hint
        if hint.startswith("__"):
            hint = hint.lstrip("_") or "Type"
        candidates = [hint] + ([prefix + hint] if prefix and not hint.startswith("_") else [])
        for candidate in candidates:
            if self._free(candidate):
                self.taken.add(candidate)
                return candidate
        counter = 2
        while not self._free(f"{hint}_{counter}"):
            counter += 1
        self.taken.add(f"{hint}_{counter}")
        return f"{hint}_{counter}"

    def _free(self, name: str) -> bool:
        return name not in self.taken and not keyword.iskeyword(name) and name not in SOFT_KEYWORDS

    def document(self, root: Any, hint: str, prefix: str, root_hint: str) -> _Doc:
        self.roots.append(root)
        self.steps = 0  # each tool gets its own budget
        return _Doc(root, hint, prefix, root_hint)

    def root(self, doc: _Doc) -> Any:
        """The type of a whole document (an output schema): as if it were ``{"$ref": "#"}``."""
        if not isinstance(doc.root, dict):
            return ANY
        return self.ref("#", doc, 0)

    def node(self, schema: Any, doc: _Doc, hint: str, depth: int) -> Any:
        self.steps += 1
        if depth > _MAX_DEPTH or self.steps > _MAX_STEPS or not isinstance(schema, dict):
            return ANY
        nullable = schema.get("nullable") is True  # OpenAPI style
        if isinstance(schema.get("$ref"), str):
            result = self.ref(schema["$ref"], doc, depth)
            return union_of([result, NULL]) if nullable else result
        types = schema.get("type")
        if isinstance(types, str):
            types = [types]
        elif not isinstance(types, list):
            types = None
        if types is not None and "null" in types:
            nullable = True
        alternatives = self._alternatives(schema)
        if "const" in schema:
            result = self.literal([schema["const"]])
        elif isinstance(schema.get("enum"), list) and schema["enum"]:
            result = self.literal(schema["enum"])
        elif alternatives is not None:
            result = union_of([self.node(alt, doc, f"{hint}Option{i}", depth + 1) for i, alt in enumerate(alternatives, 1)])
        elif isinstance(schema.get("allOf"), list) and schema["allOf"]:
            result = self.all_of(schema, doc, hint, depth)
        elif types:
            result = union_of([self.typed(schema, t, doc, hint, depth) for t in types if isinstance(t, str)])
        elif isinstance(schema.get("properties"), dict) or "additionalProperties" in schema:
            result = self.typed(schema, "object", doc, hint, depth)
        elif "items" in schema or "prefixItems" in schema:
            result = self.typed(schema, "array", doc, hint, depth)
        else:
            result = ANY
        return union_of([result, NULL]) if nullable else result

    def _alternatives(self, schema: Dict[str, Any]) -> Optional[List[Any]]:
        # anyOf members that only add constraints ({"required": [...]}) refine
        # the parent's type rather than replace it; then the parent decides.
        for key in ("anyOf", "oneOf"):
            members = schema.get(key)
            if isinstance(members, list) and members and all(_has_type_info(m) for m in members):
                return members
        return None

    def literal(self, values: Sequence[Any]) -> Any:
        members: List[Any] = []
        literals = []
        for value in values:
            if value is None:
                members.append(NULL)
            elif isinstance(value, (bool, str)) or (isinstance(value, int) and value.bit_length() <= MAX_INT_BITS):
                literals.append(value)
            elif isinstance(value, (int, float)):
                members.append(("prim", "int" if isinstance(value, int) else "float"))
            elif isinstance(value, list):
                members.append(("list", ANY))
            elif isinstance(value, dict):
                members.append(("map", ANY))
            else:
                return ANY
        if literals:
            members.insert(0, ("lit", _distinct(literals)))
        return union_of(members)

    def typed(self, schema: Dict[str, Any], name: str, doc: _Doc, hint: str, depth: int) -> Any:
        if name in _PRIMITIVES:
            return ("prim", _PRIMITIVES[name])
        if name == "array":
            items = schema.get("prefixItems", schema.get("items"))
            if isinstance(items, list):  # tuple form: any of the positions
                return ("list", union_of([self.node(i, doc, f"{hint}Item", depth + 1) for i in items]) if items else ANY)
            return ("list", self.node(items, doc, f"{hint}Item", depth + 1))
        if name == "object":
            if isinstance(schema.get("properties"), dict) and schema["properties"]:
                decl = Decl(self.new_name(hint, doc.prefix))
                self.typeddict(schema, doc, decl, depth)
                return ("decl", decl)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return ("map", self.node(extra, doc, f"{hint}Value", depth + 1))
            return ("map", ANY)
        return ANY

    def typeddict(self, schema: Dict[str, Any], doc: _Doc, decl: Decl, depth: int) -> None:
        decl.kind, decl.schema = "typeddict", schema
        declared = schema.get("properties")
        props: Dict[Any, Any] = declared if isinstance(declared, dict) else {}
        listed = schema.get("required")
        required_list: List[Any] = listed if isinstance(listed, list) else []
        required = {key for key in required_list if isinstance(key, str)}
        for index, (key, sub) in enumerate(props.items(), 1):
            if isinstance(key, str):
                sub_hint = decl.name.lstrip("_") + (pascal(key) or f"Field{index}")
                decl.fields.append((key, self.node(sub, doc, sub_hint, depth + 1), key in required, sub))
        for key in sorted(required - set(props)):
            decl.fields.append((key, ANY, True, {}))
        flags = {req for _key, _type, req, _schema in decl.fields}
        # Mixed required and optional keys: the optional ones go into a class-form
        # total=False subclass of a base holding the required ones (Python 3.9 has
        # no Required[]), possible whenever the optional keys are identifiers.
        if len(flags) == 2 and all(plain_key(key) for key, _type, req, _schema in decl.fields if not req):
            decl.base_name = self.new_name(f"_{decl.name.lstrip('_')}Required")

    def all_of(self, schema: Dict[str, Any], doc: _Doc, hint: str, depth: int) -> Any:
        parts = [chase_ref(doc.root, part)[1] for part in schema["allOf"]]
        objects = [p for p in parts if isinstance(p, dict) and (isinstance(p.get("properties"), dict) or p.get("type") == "object")]
        if isinstance(schema.get("properties"), dict) or (objects and len(parts) > 1):
            # The usual "base model plus more fields": one TypedDict with all of them.
            merged: Dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for part in [schema] + objects:
                if isinstance(part.get("properties"), dict):
                    for key, value in part["properties"].items():
                        merged["properties"].setdefault(key, value)
                if isinstance(part.get("required"), list):
                    merged["required"].extend(part["required"])
            return self.typed(merged, "object", doc, hint, depth)
        for part in schema["allOf"]:
            if _has_type_info(part):
                return self.node(part, doc, hint, depth + 1)
        return ANY

    def ref(self, ref: str, doc: _Doc, depth: int) -> Any:
        pointer, target = chase_ref(doc.root, {"$ref": ref})
        if pointer is None or not isinstance(target, dict):
            return ANY  # remote, dangling or cyclic: nothing is fetched
        key = (id(doc.root), pointer)
        if key in self.by_ref:
            return self.by_ref[key]
        if not any(k in target for k in _STRUCTURE_KEYS) and not any(isinstance(target.get(k), dict) and target[k] for k in _NESTED_KEYS):
            # A bare primitive (or an object / array of anything) needs no name of its own.
            self.by_ref[key] = result = self.node(target, doc, doc.hint, depth + 1)
            return result
        content = None
        if pointer:  # the same definition in many tools is declared once
            try:
                dumped = json.dumps(target, sort_keys=True)
            except (TypeError, ValueError, RecursionError):
                dumped = '"$ref"'
            if '"$ref"' not in dumped:  # a reference inside means something else in another document
                content = dumped
                if content in self.by_content:
                    self.by_ref[key] = self.by_content[content]
                    return self.by_ref[key]
        segment = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~") if pointer else ""
        hint = doc.root_hint if not pointer else (pascal(segment) or doc.hint + "Type")
        decl = Decl(self.new_name(hint, doc.prefix))
        self.by_ref[key] = result = ("decl", decl)
        if content is not None:
            self.by_content[content] = result
        types = target.get("type")
        plain_object = (
            isinstance(target.get("properties"), dict)
            and target["properties"]
            and types in (None, "object")
            and not any(k in target for k in ("anyOf", "oneOf", "allOf", "enum", "const"))
            and target.get("nullable") is not True
        )
        if plain_object:
            self.typeddict(target, doc, decl, depth + 1)
        else:
            decl.kind, decl.schema = "alias", target
            decl.target = self.node(target, doc, decl.name.lstrip("_") + "Value", depth + 1)
        return result


# --- the server's text, as both languages show it ---------------------------------------


def clean_text(text: Any, one_line: bool) -> str:
    """Server-provided text without escape sequences, control characters, lone surrogates or bidi controls.

    ``log.terminal_text`` does the cleaning (the stubs are printed to terminals
    and read by models); a tab becomes a space, and every line break Python's
    ``str.splitlines`` knows becomes a newline first.
    """
    if not isinstance(text, str):
        return ""
    text = terminal_text(_LINE_BREAKS.sub("\n", text)).replace("\t", " ")
    if one_line:
        return " ".join(text.split())
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def short_text(text: Any, limit: int) -> str:
    text = clean_text(text, one_line=True)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + " ..."


def json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return "?"


def schema_details(schema: Any, depth: int = 0) -> str:
    """Constraints a type cannot carry (``minimum=1, format=uri``), for full=True; one line."""
    if not isinstance(schema, dict) or depth > 3:
        return ""
    parts = [f"{key}={json_text(schema[key])}" for key in _DETAIL_KEYS if key in schema]
    if schema.get("additionalProperties") is False:
        parts.append("additionalProperties=false")
    items = schema.get("items")
    if isinstance(items, dict):
        inner = schema_details(items, depth + 1)
        if inner:
            parts.append(f"items: {inner}")
    return clean_text(", ".join(parts), one_line=True)


def description_of(schema: Any) -> Any:
    return schema.get("description") if isinstance(schema, dict) else None


# --- one plan per tool, shared by both languages -------------------------------------


class ToolPlan:
    """A tool with its names and types worked out."""

    def __init__(self, entry: ToolEntry, server_attr: str, attr: str) -> None:
        self.entry = entry
        self.server_attr = server_attr
        self.attr = attr
        self.params: List[Tuple[str, str, Any, bool, Any]] = []  # (JSON name, keyword, type, required, schema)
        self.extra: Any = None  # type of **kwargs, when the tool takes any argument
        self.extra_name = "kwargs"
        self.result: Any = ANY


def plan_tools(entries: List[ToolEntry], names: Dict[str, Tuple[str, str]], builder: TypeBuilder) -> List[ToolPlan]:
    plans = []
    for entry in entries:
        server_attr, attr = names[entry.id]
        plan = ToolPlan(entry, server_attr, attr)
        tool_hint = pascal(attr) or "Tool"
        prefix = pascal(server_attr)
        root, params, extra = input_shape(entry.spec.get("inputSchema"))
        doc = builder.document(root, tool_hint, prefix, tool_hint + "Params")
        for key, py, schema, required in params:
            plan.params.append((key, py, builder.node(schema, doc, tool_hint + (pascal(key) or "Arg"), 1), required, schema))
        if extra is not None:
            plan.extra = builder.node(extra, doc, tool_hint + "Extra", 1) if isinstance(extra, dict) else ANY
            taken = {py for _key, py, *_rest in plan.params}
            while plan.extra_name in taken:
                plan.extra_name += "_"
        output = entry.spec.get("outputSchema")
        if isinstance(output, dict):
            plan.result = builder.root(builder.document(output, tool_hint, prefix, tool_hint + "Result"))
        plans.append(plan)
    return plans


def grouped_by_server(plans: List[ToolPlan]) -> List[Tuple[str, str, List[ToolPlan]]]:
    """(server name, server attribute, its plans) in catalog order."""
    groups: Dict[str, Tuple[str, str, List[ToolPlan]]] = {}
    for plan in plans:
        groups.setdefault(plan.server_attr, (plan.entry.server, plan.server_attr, []))[2].append(plan)
    return list(groups.values())


def tool_summary(entry: ToolEntry, full: bool) -> str:
    description = entry.spec.get("description")
    if not isinstance(description, str) or not description.strip():
        description = entry.spec.get("title")
    text = clean_text(description, one_line=True) if full else short_text(description, _SHORT_DESCRIPTION)
    return f"{clean_text(entry.id, one_line=True)}: {text}" if text else clean_text(entry.id, one_line=True)
