"""What search reads from a tool: its fields' texts, parameter names, and the texts its vector is made of.

A tool is a dict ``{"id", "server", "name", "title"?, "description"?,
"inputSchema"?, "annotations"?}``; anything missing or of the wrong type
reads as empty, so an odd catalog entry never breaks an index.
"""

import re
from typing import Any, Dict, List, Set

from toolscript.search.text import compact, terms

__all__ = ["schema_text", "field_texts", "index_fields", "tool_text", "parameter_names", "vector_texts"]

_MAX_SCHEMA_DEPTH = 4  # nested object levels looked into for parameters
_IDENTIFIER_SEPARATORS = re.compile(r"[_\-./:]+")


def schema_text(schema: Any, names: List[str], docs: List[str], depth: int = 0) -> None:
    """Collect parameter names and descriptions (with enum values) from a JSON Schema."""
    if not isinstance(schema, dict) or depth > _MAX_SCHEMA_DEPTH:
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            names.append(str(key))
            if isinstance(sub, dict):
                for field in ("description", "title"):
                    if isinstance(sub.get(field), str):
                        docs.append(sub[field])
                if isinstance(sub.get("enum"), list):
                    docs.extend(v for v in sub["enum"] if isinstance(v, str))
                schema_text(sub, names, docs, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        schema_text(items, names, docs, depth + 1)


def field_texts(tool: Dict[str, Any]) -> Dict[str, str]:
    """The text of each field of ``tool`` as written ("" for one it lacks)."""
    title = tool.get("title")
    annotations = tool.get("annotations")
    if not isinstance(title, str) and isinstance(annotations, dict):
        title = annotations.get("title")
    description = tool.get("description")
    names: List[str] = []
    docs: List[str] = []
    schema_text(tool.get("inputSchema"), names, docs)
    return {
        "name": str(tool.get("name", "")),
        "server": str(tool.get("server", "")),
        "title": title if isinstance(title, str) else "",
        "description": description if isinstance(description, str) else "",
        "params": " ".join(names),
        "param_docs": " ".join(docs),
    }


def index_fields(tool: Dict[str, Any], surface: Dict[str, str]) -> Dict[str, List[str]]:
    """The terms of each field of ``tool``; its words go into ``surface`` for typo correction."""
    texts = field_texts(tool)
    name = terms(texts["name"], surface)
    # Adjacent name parts joined as well, so "websearch" meets "web_search".
    name += [a + b for a, b in zip(name, name[1:])]
    fields = {field: terms(text, surface) for field, text in texts.items() if field not in ("name", "param_docs")}
    return dict(fields, name=name, param_docs=terms(texts["param_docs"]))


def tool_text(tool: Dict[str, Any]) -> str:
    """``tool``'s texts that :func:`index_fields` indexes, as one string."""
    return " ".join(field_texts(tool).values())


def parameter_names(tools: List[Dict[str, Any]]) -> Set[str]:
    """Every parameter name of ``tools`` (nested ones too), compacted."""
    out: Set[str] = set()
    for tool in tools:
        names: List[str] = []
        schema_text(tool.get("inputSchema"), names, [])
        out.update(compact(name) for name in names)
    return out


def vector_texts(tool: Dict[str, Any]) -> List[str]:
    """What a tool's vector is made of: ``vectors.tool_texts`` (server and name, first sentence,
    description), then its parameter names as words; Tuning.tool_text_weights weighs them."""
    from toolscript.search import vectors

    names: List[str] = []
    schema_text(tool.get("inputSchema"), names, [])
    return vectors.tool_texts(tool) + [_IDENTIFIER_SEPARATORS.sub(" ", " ".join(names)).strip()]
