"""What the stubs and the sandbox runtime call each server, tool and argument.

``tools.<server>.<tool>(<argument>=...)`` needs Python identifiers, and the
stubs (``toolscript.stubs.python``, ``toolscript.stubs.typescript``) and the
sandbox runtime must use the same ones:

* :func:`python_names` -- tool id -> (server attribute, function attribute),
  computed over the whole catalog (a server's function attributes depend on
  its own tools only, its attribute on the servers' names only:
  :func:`server_attributes`);
* :func:`python_arg_names` -- a tool's keyword names -> its JSON argument names.

A server, tool or argument keeps its name when that is already a plain
identifier (``getUserProfile`` stays ``getUserProfile``); otherwise each run
of other characters becomes ``_`` (``foo-bar`` -> ``foo_bar``,
``my.api.server`` -> ``my_api_server``), accents are dropped (``café`` ->
``cafe``), leading and trailing underscores are stripped (no dunders, no name
mangling inside the stub classes), a leading digit gets ``_`` (``_123test``),
a keyword gets ``_`` (``class_``), and a name with nothing left is
``tool_<n>`` / ``server_<n>`` / ``arg_<n>``.  Names that are already
identifiers are claimed first and the rest get ``_2``, ``_3``... in catalog
order, so adding ``foo-bar`` to a server never renames its ``foo_bar``.

The arguments are the input schema's properties, so this module also reads
input schemas: ``allOf`` parts merged, ``anyOf``/``oneOf`` alternatives
offered, local ``$ref``s followed (:func:`chase_ref`, which the type model
uses too).
"""

import keyword
import re
import unicodedata
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple
from urllib.parse import unquote

# As in toolscript.gateway.catalog (not imported: the stubs depend on nothing of the gateway's).
_SEPARATOR = "__"

# A cycle of $refs (or a long chain) is given up on after this many hops.
_MAX_REF_HOPS = 32

SOFT_KEYWORDS = frozenset({"_", "case", "match", "type"})  # 3.10+ (``type`` 3.12+)
# The stubs' annotations use these names; a class or function of the same name
# in a stub class body would shadow them for the annotations after it.
STUB_NAMES = frozenset({"Any", "Dict", "List", "Literal", "Optional", "TypedDict", "Union", "str", "int", "float", "bool"})
# The runtime's ``tools`` object has these methods of its own.
_RUNTIME_ATTRIBUTES = frozenset({"call", "search", "list"})
_SERVER_RESERVED = STUB_NAMES | _RUNTIME_ATTRIBUTES

_NOT_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]+")
PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][0-9A-Za-z_]*\Z")


class ToolEntry:
    """One catalog entry, with the fields this module reads made safe to use."""

    __slots__ = ("id", "server", "name", "spec")

    def __init__(self, ident: str, server: str, name: str, spec: Dict[str, Any]) -> None:
        self.id = ident
        self.server = server
        self.name = name
        self.spec = spec


def tool_entries(tools: Sequence[Any]) -> List[ToolEntry]:
    """The usable entries of ``tools``, first of each id only, in order."""
    result: List[ToolEntry] = []
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
            result.append(ToolEntry(ident, server, name, spec))
    return result


def safe_identifier(raw: str, reserved: frozenset = frozenset(), soft: bool = True) -> str:
    """``raw`` as a safe ASCII identifier, or "" when nothing of it is left."""
    # Compatibility decomposition turns "café" into "cafe" and "ｆｏｏ" into "foo".
    text = "".join(ch for ch in unicodedata.normalize("NFKD", raw) if not unicodedata.combining(ch))
    text = _NOT_IDENTIFIER.sub("_", text).strip("_")
    if not text:
        return ""
    if text[0].isdigit():
        text = "_" + text
    if keyword.iskeyword(text) or (soft and text in SOFT_KEYWORDS) or text in reserved:
        text += "_"
    return text


def assign_names(raws: Sequence[str], reserved: frozenset, fallback: str, soft: bool = True) -> List[str]:
    """A distinct identifier for each of ``raws``, deterministic in their order."""
    names: List[Optional[str]] = [None] * len(raws)
    used: Set[str] = set()
    # Names that need no change are claimed first, so they never depend on
    # what else the namespace holds.
    for index, raw in enumerate(raws):
        if raw and safe_identifier(raw, reserved, soft) == raw and raw not in used:
            names[index] = raw
            used.add(raw)
    for index, raw in enumerate(raws):
        if names[index] is not None:
            continue
        base = safe_identifier(raw, reserved, soft) or f"{fallback}_{index + 1}"
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
    by_server: Dict[str, List[ToolEntry]] = {}
    for entry in tool_entries(tools):
        by_server.setdefault(entry.server, []).append(entry)
    server_attrs = server_attributes(list(by_server))
    result: Dict[str, Tuple[str, str]] = {}
    for server, own in by_server.items():
        for entry, attr in zip(own, assign_names([entry.name for entry in own], STUB_NAMES, "tool")):
            result[entry.id] = (server_attrs[server], attr)
    return result


def server_attributes(servers: Sequence[str]) -> Dict[str, str]:
    """Server name -> its attribute ``tools.<attr>``, for the catalog's servers in order (a name listed again counts once).

    What :func:`python_names` gives each server: a server's attribute depends
    on the other servers' names only, never on any server's tools.
    """
    names = list(dict.fromkeys(servers))
    return dict(zip(names, assign_names(names, _SERVER_RESERVED, "server")))


def python_arg_names(tool: Dict[str, Any]) -> Dict[str, str]:
    """Keyword name in the stubs -> argument name in the tool's JSON, for every declared argument.

    Usually the two are equal; ``per-page`` is ``per_page``, ``from`` is
    ``from_``.  A keyword not in the map (caught by a ``**kwargs`` of a tool
    that accepts any argument) goes through under its own name.
    """
    _root, params, _extra = input_shape(tool.get("inputSchema") if isinstance(tool, dict) else None)
    return {py: key for key, py, _schema, _required in params}


def names_for(tools: Sequence[Any], names: Optional[Dict[str, Tuple[str, str]]]) -> Dict[str, Tuple[str, str]]:
    """:func:`python_names` of ``tools``, overridden by the caller's map of the whole catalog."""
    computed = python_names(list(tools))
    if names:
        computed.update({ident: pair for ident, pair in names.items() if ident in computed})
    return computed


def pascal(raw: str) -> str:
    """``search_issues`` -> ``SearchIssues``, ``getUserProfile`` -> ``GetUserProfile``."""
    parts = [part for part in safe_identifier(raw, soft=False).split("_") if part]
    return "".join(part[0].upper() + part[1:] for part in parts)


def input_shape(schema: Any) -> Tuple[Any, List[Tuple[str, str, Any, bool]], Any]:
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
        node = chase_ref(root, node)[1]
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
    pynames = dict(zip(keys, assign_names(keys, frozenset(), "arg", soft=False)))
    return root, [(key, pynames[key], properties[key], key in wanted) for key in keys], extra


def chase_ref(root: Any, schema: Any) -> Tuple[Optional[str], Any]:
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
