"""Typed stubs of MCP tools, for an agent about to write a script against them.

Code mode shows the agent compact stubs of the few tools it needs; the agent
then writes ``from toolscript import tools`` and
``tools.github.search_issues(query="...")``.  This module turns catalog
entries (``{"id", "server", "name", "description", "inputSchema",
"outputSchema", ...}``) into:

* :func:`python_stubs` -- a Python module: one class per server, one
  keyword-only function per tool, ``TypedDict``s for objects and ``$ref``
  targets, ``Literal`` for enums.  It always compiles, whatever the catalog
  holds, and ``typing.get_type_hints`` resolves every annotation in it.
* :func:`typescript_declarations` -- the same catalog as TypeScript
  declarations, for agents that prefer them.
* :func:`python_names` and :func:`python_arg_names` -- the attribute and
  keyword names the stubs use, which the sandbox runtime uses too, so the
  stubs and the run time never disagree.
* :func:`usage_example` -- one line calling the first tool.

Names.  A server, tool or argument keeps its name when that is already a
plain identifier (``getUserProfile`` stays ``getUserProfile``); otherwise
each run of other characters becomes ``_`` (``foo-bar`` -> ``foo_bar``,
``my.api.server`` -> ``my_api_server``), accents are dropped (``café`` ->
``cafe``), leading and trailing underscores are stripped (no dunders, no
name mangling inside the stub classes), a leading digit gets ``_``
(``_123test``), a keyword gets ``_`` (``class_``), and a name with nothing
left is ``tool_<n>`` / ``server_<n>`` / ``arg_<n>``.  Names that are already
identifiers are claimed first and the rest get ``_2``, ``_3``... in catalog
order, so adding ``foo-bar`` to a server never renames its ``foo_bar``.

The Deno original got several of these wrong (see the project notes): a schema
``title`` renamed or hid types, ``$ref`` targets went undeclared, camelCase
was lowercased, colliding names were not told apart, and ``*/`` in a
description broke the module.  Here types are named from the tool and
property path (never from ``title``), every ``$ref`` target is declared once,
and all text from a server is escaped before it goes into code.
"""

import json
import keyword
import math
import re
import unicodedata
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple
from urllib.parse import unquote

from toolscript.log import terminal_text

__all__ = ["python_names", "python_arg_names", "python_stubs", "typescript_declarations", "usage_example"]

# As in toolscript.gateway.catalog (not imported: this module depends on nothing of the gateway's; only on log.terminal_text).
_SEPARATOR = "__"

# Compact mode keeps each piece of text to about this many characters.
_SHORT_DESCRIPTION = 300
_SHORT_PARAM = 160
_SHORT_FIELD = 100
_SHORT_DEFAULT = 100  # a longer default is shown as None (the server applies it)
_WRAP_AT = 100  # a longer signature gets one parameter per line

# A hostile schema may nest without end or fan out through $ref; past these
# limits the rest of a type is Any.  Well inside Python's recursion limit.
_MAX_DEPTH = 40
_MAX_STEPS = 20000  # schema nodes per tool
_MAX_REF_HOPS = 32
_MAX_INT_BITS = 10000  # str() of a larger int may hit Python's digit limit

_SOFT_KEYWORDS = frozenset({"_", "case", "match", "type"})  # 3.10+ (``type`` 3.12+)
# The stubs' annotations use these names; a class or function of the same name
# in a stub class body would shadow them for the annotations after it.
_STUB_NAMES = frozenset({"Any", "Dict", "List", "Literal", "Optional", "TypedDict", "Union", "str", "int", "float", "bool"})
# The runtime's ``tools`` object has these methods of its own.
_RUNTIME_ATTRIBUTES = frozenset({"call", "search", "list"})
_SERVER_RESERVED = _STUB_NAMES | _RUNTIME_ATTRIBUTES

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

_NOT_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]+")
_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][0-9A-Za-z_]*\Z")
_TS_IDENTIFIER = re.compile(r"[A-Za-z_$][0-9A-Za-z_$]*\Z")
# Everything a reader of the source would take as a line break.
_LINE_BREAKS = re.compile("\r\n|[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

_PRIMITIVES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "null"}
_PY_PRIMITIVES = {"str": "str", "int": "int", "float": "float", "bool": "bool", "null": "None"}
_TS_PRIMITIVES = {"str": "string", "int": "number", "float": "number", "bool": "boolean", "null": "null"}
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


# --- names --------------------------------------------------------------------------


class _Tool:
    """One catalog entry, with the fields this module reads made safe to use."""

    __slots__ = ("id", "server", "name", "spec")

    def __init__(self, ident: str, server: str, name: str, spec: Dict[str, Any]) -> None:
        self.id = ident
        self.server = server
        self.name = name
        self.spec = spec


def _entries(tools: Sequence[Any]) -> List[_Tool]:
    """The usable entries of ``tools``, first of each id only, in order."""
    result: List[_Tool] = []
    seen: Set[str] = set()
    for spec in tools:
        if not isinstance(spec, dict):
            continue
        server, name, ident = spec.get("server"), spec.get("name"), spec.get("id")
        if not isinstance(ident, str):
            ident = f"{server if isinstance(server, str) else ''}{_SEPARATOR}{name if isinstance(name, str) else ''}"
        if not isinstance(server, str) or not isinstance(name, str):
            # A bare MCP tool or an odd entry: the id is the best source there is.
            head, sep, tail = ident.partition(_SEPARATOR)
            server = server if isinstance(server, str) else (head if sep else "")
            name = name if isinstance(name, str) else (tail if sep else ident)
        if ident not in seen:
            seen.add(ident)
            result.append(_Tool(ident, server, name, spec))
    return result


def _identifier(raw: str, reserved: frozenset = frozenset(), soft: bool = True) -> str:
    """``raw`` as a safe ASCII identifier, or "" when nothing of it is left."""
    # Compatibility decomposition turns "café" into "cafe" and "ｆｏｏ" into "foo".
    text = "".join(ch for ch in unicodedata.normalize("NFKD", raw) if not unicodedata.combining(ch))
    text = _NOT_IDENTIFIER.sub("_", text).strip("_")
    if not text:
        return ""
    if text[0].isdigit():
        text = "_" + text
    if keyword.iskeyword(text) or (soft and text in _SOFT_KEYWORDS) or text in reserved:
        text += "_"
    return text


def _assign(raws: Sequence[str], reserved: frozenset, fallback: str, soft: bool = True) -> List[str]:
    """A distinct identifier for each of ``raws``, deterministic in their order."""
    names: List[Optional[str]] = [None] * len(raws)
    used: Set[str] = set()
    # Names that need no change are claimed first, so they never depend on
    # what else the namespace holds.
    for index, raw in enumerate(raws):
        if raw and _identifier(raw, reserved, soft) == raw and raw not in used:
            names[index] = raw
            used.add(raw)
    for index, raw in enumerate(raws):
        if names[index] is not None:
            continue
        base = _identifier(raw, reserved, soft) or f"{fallback}_{index + 1}"
        candidate, counter = base, 2
        while candidate in used:
            candidate = f"{base.rstrip('_')}_{counter}"
            counter += 1
        names[index] = candidate
        used.add(candidate)
    return [name for name in names if name is not None]


def python_names(tools: List[Dict[str, Any]]) -> Dict[str, Tuple[str, str]]:
    """Tool id -> ``(server attribute, function attribute)``: where ``tools.<a>.<b>`` finds it.

    Compute it over the whole catalog: the sandbox runtime and the stubs must
    use the same map (pass it as ``names=`` to the stub functions when they
    get only a few of the tools).
    """
    entries = _entries(tools)
    servers = list(dict.fromkeys(entry.server for entry in entries))
    server_attrs = dict(zip(servers, _assign(servers, _SERVER_RESERVED, "server")))
    result: Dict[str, Tuple[str, str]] = {}
    for server in servers:
        own = [entry for entry in entries if entry.server == server]
        for entry, attr in zip(own, _assign([entry.name for entry in own], _STUB_NAMES, "tool")):
            result[entry.id] = (server_attrs[server], attr)
    return result


def python_arg_names(tool: Dict[str, Any]) -> Dict[str, str]:
    """Keyword name in the stubs -> argument name in the tool's JSON, for every declared argument.

    Usually the two are equal; ``per-page`` is ``per_page``, ``from`` is
    ``from_``.  A keyword not in the map (caught by a ``**kwargs`` of a tool
    that accepts any argument) goes through under its own name.
    """
    _root, params, _extra = _input_shape(tool.get("inputSchema") if isinstance(tool, dict) else None)
    return {py: key for key, py, _schema, _required in params}


def _names_for(tools: Sequence[Any], names: Optional[Dict[str, Tuple[str, str]]]) -> Dict[str, Tuple[str, str]]:
    """:func:`python_names` of ``tools``, overridden by the caller's map of the whole catalog."""
    computed = python_names(list(tools))
    if names:
        computed.update({ident: pair for ident, pair in names.items() if ident in computed})
    return computed


def _pascal(raw: str) -> str:
    """``search_issues`` -> ``SearchIssues``, ``getUserProfile`` -> ``GetUserProfile``."""
    parts = [part for part in _identifier(raw, soft=False).split("_") if part]
    return "".join(part[0].upper() + part[1:] for part in parts)


def _input_shape(schema: Any) -> Tuple[Any, List[Tuple[str, str, Any, bool]], Any]:
    """(document root, [(JSON name, keyword name, schema, required)], schema of extra arguments or None).

    Required arguments come first, each group in schema order.  ``allOf``
    parts are merged; properties of ``anyOf``/``oneOf`` alternatives are all
    offered, none of them required.
    """
    root = schema if isinstance(schema, dict) else {}
    properties: Dict[str, Any] = {}
    required: List[str] = []
    extra: Any = None

    def collect(node: Any, depth: int, alternative: bool) -> None:
        nonlocal extra
        node = _chase(root, node)[1]
        if not isinstance(node, dict) or depth > 8:
            return
        props = node.get("properties")
        if isinstance(props, dict):
            for key, value in props.items():
                if isinstance(key, str):
                    properties.setdefault(key, value)
        if not alternative and isinstance(node.get("required"), list):
            required.extend(key for key in node["required"] if isinstance(key, str))
        more = node.get("additionalProperties")
        if depth == 0 and (more is True or (isinstance(more, dict) and more)):
            extra = more
        for key, alt in (("allOf", alternative), ("anyOf", True), ("oneOf", True)):
            if isinstance(node.get(key), list):
                for part in node[key]:
                    collect(part, depth + 1, alt)

    collect(root, 0, False)
    for key in required:
        properties.setdefault(key, {})
    wanted = set(required)
    keys = [key for key in properties if key in wanted] + [key for key in properties if key not in wanted]
    pynames = dict(zip(keys, _assign(keys, frozenset(), "arg", soft=False)))
    return root, [(key, pynames[key], properties[key], key in wanted) for key in keys], extra


def _chase(root: Any, schema: Any) -> Tuple[Optional[str], Any]:
    """Follow ``$ref`` from ``schema``: (JSON pointer of the target or None, target or None)."""
    pointer = None
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
            return pointer, schema
        pointer = _pointer(schema["$ref"])
        schema = _resolve(root, pointer) if pointer is not None else None
        if schema is None:
            return None, None
    return None, None  # a cycle of references that never reaches a schema


def _pointer(ref: str) -> Optional[str]:
    """The JSON pointer of a reference within the same document, or None (remote)."""
    return unquote(ref[1:]) if ref.startswith("#") else None


def _resolve(root: Any, pointer: str) -> Any:
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        return None  # "#anchor" style; not supported
    node = root
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isascii() and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


# --- the type model: JSON Schema -> a small tree both languages render ----------------
#
# A type is a tuple: ("any",), ("prim", "str"|"int"|"float"|"bool"|"null"),
# ("lit", values), ("list", item), ("map", value), ("union", members) or
# ("decl", _Decl) -- a declared TypedDict / interface or type alias.

_ANY = ("any",)
_NULL = ("prim", "null")


class _Decl:
    """A named type both renderers declare once: a TypedDict (``fields``) or an alias (``target``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kind = "typeddict"
        self.fields: List[Tuple[str, Any, bool, Any]] = []  # (JSON key, type, required, schema)
        self.target: Any = _ANY
        self.schema: Any = {}
        self.base_name = ""  # the required-keys base class of a mixed class-form TypedDict


class _Doc:
    """One schema document (a tool's input or output schema) and how to name its types."""

    def __init__(self, root: Any, hint: str, prefix: str, root_hint: str) -> None:
        self.root = root
        self.hint = hint  # the tool, in PascalCase
        self.prefix = prefix  # the server, in PascalCase: disambiguates colliding names
        self.root_hint = root_hint


def _union(members: Sequence[Any]) -> Any:
    """One type for all of ``members``: flattened, without repeats, literals merged, Any absorbing."""
    flat: List[Any] = []
    literals: List[Any] = []
    has_null = False
    for member in members:
        for part in member[1] if member[0] == "union" else (member,):
            if part[0] == "any":
                return _ANY
            if part[0] == "lit":
                literals.extend(part[1])
            elif part == _NULL:
                has_null = True
            elif part not in flat:
                flat.append(part)
    if literals:
        flat.insert(0, ("lit", _distinct(literals)))
    if has_null:
        flat.append(_NULL)  # last, so it renders as Optional[...] / "| null"
    if not flat:
        return _ANY
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


def _plain_key(key: str) -> bool:
    """A TypedDict key that class syntax can hold as written (no keyword, no name mangling)."""
    return bool(_PLAIN_IDENTIFIER.match(key)) and not keyword.iskeyword(key) and key not in _SOFT_KEYWORDS and not key.startswith("__")


class _Builder:
    """Turns schemas into the type model, naming and sharing declarations across tools."""

    def __init__(self, taken: Set[str], reserved: frozenset) -> None:
        self.taken = set(taken) | set(reserved)
        self.by_ref: Dict[Tuple[int, str], Any] = {}
        self.by_content: Dict[str, Any] = {}
        self.roots: List[Any] = []  # keeps documents alive while id(root) keys are in use
        self.steps = 0

    def new_name(self, hint: str, prefix: str = "") -> str:
        """A fresh type name from ``hint``; on collision the server prefix, then a number."""
        if not hint or not _PLAIN_IDENTIFIER.match(hint):
            hint = _pascal(hint) or "Type"
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
        return name not in self.taken and not keyword.iskeyword(name) and name not in _SOFT_KEYWORDS

    def document(self, root: Any, hint: str, prefix: str, root_hint: str) -> _Doc:
        self.roots.append(root)
        self.steps = 0  # each tool gets its own budget
        return _Doc(root, hint, prefix, root_hint)

    def root(self, doc: _Doc) -> Any:
        """The type of a whole document (an output schema): as if it were ``{"$ref": "#"}``."""
        if not isinstance(doc.root, dict):
            return _ANY
        return self.ref("#", doc, 0)

    def node(self, schema: Any, doc: _Doc, hint: str, depth: int) -> Any:
        self.steps += 1
        if depth > _MAX_DEPTH or self.steps > _MAX_STEPS or not isinstance(schema, dict):
            return _ANY
        nullable = schema.get("nullable") is True  # OpenAPI style
        if isinstance(schema.get("$ref"), str):
            result = self.ref(schema["$ref"], doc, depth)
            return _union([result, _NULL]) if nullable else result
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
            result = _union([self.node(alt, doc, f"{hint}Option{i}", depth + 1) for i, alt in enumerate(alternatives, 1)])
        elif isinstance(schema.get("allOf"), list) and schema["allOf"]:
            result = self.all_of(schema, doc, hint, depth)
        elif types:
            result = _union([self.typed(schema, t, doc, hint, depth) for t in types if isinstance(t, str)])
        elif isinstance(schema.get("properties"), dict) or "additionalProperties" in schema:
            result = self.typed(schema, "object", doc, hint, depth)
        elif "items" in schema or "prefixItems" in schema:
            result = self.typed(schema, "array", doc, hint, depth)
        else:
            result = _ANY
        return _union([result, _NULL]) if nullable else result

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
                members.append(_NULL)
            elif isinstance(value, (bool, str)) or (isinstance(value, int) and value.bit_length() <= _MAX_INT_BITS):
                literals.append(value)
            elif isinstance(value, (int, float)):
                members.append(("prim", "int" if isinstance(value, int) else "float"))
            elif isinstance(value, list):
                members.append(("list", _ANY))
            elif isinstance(value, dict):
                members.append(("map", _ANY))
            else:
                return _ANY
        if literals:
            members.insert(0, ("lit", _distinct(literals)))
        return _union(members)

    def typed(self, schema: Dict[str, Any], name: str, doc: _Doc, hint: str, depth: int) -> Any:
        if name in _PRIMITIVES:
            return ("prim", _PRIMITIVES[name])
        if name == "array":
            items = schema.get("prefixItems", schema.get("items"))
            if isinstance(items, list):  # tuple form: any of the positions
                return ("list", _union([self.node(i, doc, f"{hint}Item", depth + 1) for i in items]) if items else _ANY)
            return ("list", self.node(items, doc, f"{hint}Item", depth + 1))
        if name == "object":
            if isinstance(schema.get("properties"), dict) and schema["properties"]:
                decl = _Decl(self.new_name(hint, doc.prefix))
                self.typeddict(schema, doc, decl, depth)
                return ("decl", decl)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return ("map", self.node(extra, doc, f"{hint}Value", depth + 1))
            return ("map", _ANY)
        return _ANY

    def typeddict(self, schema: Dict[str, Any], doc: _Doc, decl: _Decl, depth: int) -> None:
        decl.kind, decl.schema = "typeddict", schema
        declared = schema.get("properties")
        props: Dict[Any, Any] = declared if isinstance(declared, dict) else {}
        listed = schema.get("required")
        required_list: List[Any] = listed if isinstance(listed, list) else []
        required = {key for key in required_list if isinstance(key, str)}
        for index, (key, sub) in enumerate(props.items(), 1):
            if isinstance(key, str):
                sub_hint = decl.name.lstrip("_") + (_pascal(key) or f"Field{index}")
                decl.fields.append((key, self.node(sub, doc, sub_hint, depth + 1), key in required, sub))
        for key in sorted(required - set(props)):
            decl.fields.append((key, _ANY, True, {}))
        flags = {req for _key, _type, req, _schema in decl.fields}
        # Mixed required and optional keys: the optional ones go into a class-form
        # total=False subclass of a base holding the required ones (Python 3.9 has
        # no Required[]), possible whenever the optional keys are identifiers.
        if len(flags) == 2 and all(_plain_key(key) for key, _type, req, _schema in decl.fields if not req):
            decl.base_name = self.new_name(f"_{decl.name.lstrip('_')}Required")

    def all_of(self, schema: Dict[str, Any], doc: _Doc, hint: str, depth: int) -> Any:
        parts = [_chase(doc.root, part)[1] for part in schema["allOf"]]
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
        return _ANY

    def ref(self, ref: str, doc: _Doc, depth: int) -> Any:
        pointer, target = _chase(doc.root, {"$ref": ref})
        if pointer is None or not isinstance(target, dict):
            return _ANY  # remote, dangling or cyclic: nothing is fetched
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
        hint = doc.root_hint if not pointer else (_pascal(segment) or doc.hint + "Type")
        decl = _Decl(self.new_name(hint, doc.prefix))
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


# --- text that goes into generated code -----------------------------------------------


def _clean(text: Any, one_line: bool) -> str:
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


def _short(text: Any, limit: int) -> str:
    text = _clean(text, one_line=True)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + " ..."


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
        return str(value) if value.bit_length() <= _MAX_INT_BITS else None
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


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return "?"


def _details(schema: Any, depth: int = 0) -> str:
    """Constraints a type cannot carry (``minimum=1, format=uri``), for full=True; one line."""
    if not isinstance(schema, dict) or depth > 3:
        return ""
    parts = [f"{key}={_json_text(schema[key])}" for key in _DETAIL_KEYS if key in schema]
    if schema.get("additionalProperties") is False:
        parts.append("additionalProperties=false")
    items = schema.get("items")
    if isinstance(items, dict):
        inner = _details(items, depth + 1)
        if inner:
            parts.append(f"items: {inner}")
    return _clean(", ".join(parts), one_line=True)


def _describe(schema: Any) -> Any:
    return schema.get("description") if isinstance(schema, dict) else None


# --- one plan per tool, shared by both languages -------------------------------------


class _Plan:
    """A tool with its names and types worked out."""

    def __init__(self, entry: _Tool, server_attr: str, attr: str) -> None:
        self.entry = entry
        self.server_attr = server_attr
        self.attr = attr
        self.params: List[Tuple[str, str, Any, bool, Any]] = []  # (JSON name, keyword, type, required, schema)
        self.extra: Any = None  # type of **kwargs, when the tool takes any argument
        self.extra_name = "kwargs"
        self.result: Any = _ANY


def _plan(entries: List[_Tool], names: Dict[str, Tuple[str, str]], builder: _Builder) -> List[_Plan]:
    plans = []
    for entry in entries:
        server_attr, attr = names[entry.id]
        plan = _Plan(entry, server_attr, attr)
        tool_hint = _pascal(attr) or "Tool"
        prefix = _pascal(server_attr)
        root, params, extra = _input_shape(entry.spec.get("inputSchema"))
        doc = builder.document(root, tool_hint, prefix, tool_hint + "Params")
        for key, py, schema, required in params:
            plan.params.append((key, py, builder.node(schema, doc, tool_hint + (_pascal(key) or "Arg"), 1), required, schema))
        if extra is not None:
            plan.extra = builder.node(extra, doc, tool_hint + "Extra", 1) if isinstance(extra, dict) else _ANY
            taken = {py for _key, py, *_rest in plan.params}
            while plan.extra_name in taken:
                plan.extra_name += "_"
        output = entry.spec.get("outputSchema")
        if isinstance(output, dict):
            plan.result = builder.root(builder.document(output, tool_hint, prefix, tool_hint + "Result"))
        plans.append(plan)
    return plans


def _grouped(plans: List[_Plan]) -> List[Tuple[str, str, List[_Plan]]]:
    """(server name, server attribute, its plans) in catalog order."""
    groups: Dict[str, Tuple[str, str, List[_Plan]]] = {}
    for plan in plans:
        groups.setdefault(plan.server_attr, (plan.entry.server, plan.server_attr, []))[2].append(plan)
    return list(groups.values())


def _summary(entry: _Tool, full: bool) -> str:
    description = entry.spec.get("description")
    if not isinstance(description, str) or not description.strip():
        description = entry.spec.get("title")
    text = _clean(description, one_line=True) if full else _short(description, _SHORT_DESCRIPTION)
    return f"{_clean(entry.id, one_line=True)}: {text}" if text else _clean(entry.id, one_line=True)


def _default(schema: Any, full: bool) -> Optional[str]:
    """The Python default of an optional argument: the schema's, else None (meaning: not sent)."""
    if isinstance(schema, dict) and "default" in schema:
        text = _py_value(schema["default"])
        if text is not None and (full or len(text) <= _SHORT_DEFAULT):
            return text
    return None


# --- Python ---------------------------------------------------------------------------

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
            parts = [self.type(m) for m in t[1] if m != _NULL]
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

    def declare(self, decl: _Decl) -> None:
        self.state[id(decl)] = _BUSY
        lines = []
        description = _describe(decl.schema)
        if description:
            text = _clean(description, one_line=True) if self.full else _short(description, _SHORT_FIELD)
            lines.append(f"# {text}")
        if self.full and _details(decl.schema):
            lines.append(f"# {_details(decl.schema)}")
        if decl.kind == "alias":
            lines.append(f"{decl.name} = {self.type(decl.target)}")
        else:
            lines.extend(self.typeddict(decl))
        self.blocks.append("\n".join(lines))
        self.state[id(decl)] = _DONE

    def field_comment(self, schema: Any) -> str:
        text = _clean(_describe(schema), one_line=True) if self.full else _short(_describe(schema), _SHORT_FIELD)
        if self.full and _details(schema):
            text = f"{text} [{_details(schema)}]" if text else _details(schema)
        return _comment(text)

    def typeddict(self, decl: _Decl) -> List[str]:
        fields = [(key, self.type(t), required, schema) for key, t, required, schema in decl.fields]
        if decl.base_name:
            required = [f for f in fields if f[2]]
            lines = self.typeddict_form(decl.base_name, "TypedDict", required, total=True)
            return lines + ["", ""] + self.typeddict_form(decl.name, decl.base_name, [f for f in fields if not f[2]], total=False)
        all_required = all(required for _k, _t, required, _s in fields)
        return self.typeddict_form(decl.name, "TypedDict", fields, total=all_required)

    def typeddict_form(self, name: str, base: str, fields: List[Tuple[str, str, bool, Any]], total: bool) -> List[str]:
        if fields and all(_plain_key(key) for key, *_rest in fields):
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

    def function(self, plan: _Plan) -> str:
        full = self.full
        pieces = []
        for key, py, t, required, schema in plan.params:
            if required:
                pieces.append((f"{py}: {self.type(t)}", schema))
                continue
            default = _default(schema, full)
            if default is None or default == "None":
                t, default = _union([t, _NULL]), "None"
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
                lines.append(f"        {text},{_comment(_details(schema)) if full else ''}")
            lines.append(f"    ) -> {result}:")
        else:
            lines = [one_line]
        lines.append(_docstring(self.doc_lines(plan), "        "))
        return "\n".join(lines)

    def doc_lines(self, plan: _Plan) -> List[str]:
        spec = plan.entry.spec
        if not self.full:
            lines = [_summary(plan.entry, False)]
            notes = []
            for key, py, _t, _required, schema in plan.params:
                text = _short(_describe(schema), _SHORT_PARAM)
                if py != key:
                    text = f"JSON name {_py_str(key)}." + (f" {text}" if text else "")
                if text:
                    notes.append(f"{py}: {text}")
            return lines + ([""] + notes if notes else [])
        lines = [_clean(plan.entry.id, one_line=True)]
        if isinstance(spec.get("title"), str) and _clean(spec["title"], one_line=True):
            lines.append(f"Title: {_clean(spec['title'], one_line=True)}")
        description = _clean(spec.get("description"), one_line=False)
        if description:
            lines += [""] + description.split("\n")
        args = []
        for key, py, _t, _required, schema in plan.params:
            described = _clean(_describe(schema), one_line=False).split("\n")
            head = f"JSON name {_py_str(key)}. " if py != key else ""
            if not head and not described[0]:
                continue
            args.append(f"    {py}: {head}{described[0]}".rstrip())
            args += [f"        {line}" if line else "" for line in described[1:]]
        if args:
            lines += ["", "Args:"] + args
        if isinstance(spec.get("annotations"), dict) and spec["annotations"]:
            lines += ["", f"Annotations: {_clean(_json_text(spec['annotations']), one_line=True)}"]
        return lines


def python_stubs(tools: List[Dict[str, Any]], *, full: bool = False, names: Optional[Dict[str, Tuple[str, str]]] = None) -> str:
    """Python stubs of ``tools``: one class per server, one keyword-only function per tool.

    Compact by default (descriptions cut to about 300 characters, one line per
    argument); ``full=True`` keeps whole descriptions and adds every schema
    constraint as a comment.  ``names`` is :func:`python_names` of the whole
    catalog when ``tools`` is a selection of it.
    """
    entries = _entries(tools)
    if not entries:
        return _PY_HEADER + "\n# (no tools)\n"
    names = _names_for(tools, names)
    taken = {name for pair in names.values() for name in pair}
    plans = _plan(entries, names, _Builder(taken, _STUB_NAMES))
    renderer = _PyRenderer(full)
    classes = []
    for server, server_attr, own in _grouped(plans):
        body = [f"class {server_attr}:", _docstring([f"MCP server {_py_str(_clean(server, one_line=True))}."], "    ")]
        for plan in own:
            body += ["", renderer.function(plan)]
        classes.append("\n".join(body))
    parts = [_PY_HEADER.rstrip("\n")] + renderer.blocks + classes
    return "\n\n\n".join(parts) + "\n"


def usage_example(tools: List[Dict[str, Any]], *, names: Optional[Dict[str, Tuple[str, str]]] = None) -> str:
    """One line calling the first tool with its required arguments, e.g. ``result = tools.github.search_issues(query="...")``."""
    entries = _entries(tools)
    if not entries:
        return ""
    names = _names_for(tools, names)
    taken = {name for pair in names.values() for name in pair}
    plan = _plan(entries[:1], names, _Builder(taken, _STUB_NAMES))[0]
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


# --- TypeScript -----------------------------------------------------------------------


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
        text = _clean(_describe(schema), one_line=False) if self.full else _short(_describe(schema), _SHORT_FIELD)
        lines = text.split("\n") if text else []
        if self.full and _details(schema):
            lines.append(_details(schema))
        if default is not None:
            lines.append(f"@default {_clean(default, one_line=True)}")
        return lines

    def declare(self, decl: _Decl) -> None:
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

    def function(self, plan: _Plan) -> List[str]:
        spec = plan.entry.spec
        if self.full:
            doc = [_clean(plan.entry.id, one_line=True)]
            if isinstance(spec.get("title"), str) and spec["title"].strip():
                doc.append(f"Title: {_clean(spec['title'], one_line=True)}")
            description = _clean(spec.get("description"), one_line=False)
            if description:
                doc += [""] + description.split("\n")
        else:
            doc = [_summary(plan.entry, False)]
        lines = _jsdoc(doc, "    ")
        fields = []
        for key, _py, t, required, schema in plan.params:
            default = None
            if not required and isinstance(schema, dict) and "default" in schema:
                default = _json_text(schema["default"])
                if not self.full and len(default) > _SHORT_DEFAULT:
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
    entries = _entries(tools)
    if not entries:
        return header + "export declare const tools: {};\n"
    names = _names_for(tools, names)
    plans = _plan(entries, names, _Builder(set(), _TS_RESERVED))
    renderer = _TsRenderer(full)
    body = ["export declare const tools: {"]
    for server, server_attr, own in _grouped(plans):
        body += _jsdoc([f"MCP server {json.dumps(_clean(server, one_line=True), ensure_ascii=False)}"], "  ")
        body.append(f"  {server_attr}: {{")
        for plan in own:
            body += renderer.function(plan)
        body.append("  };")
    body.append("};")
    return "\n\n".join([header.rstrip("\n")] + renderer.blocks + ["\n".join(body)]) + "\n"
