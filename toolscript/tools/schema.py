"""Check tool arguments against an MCP tool's ``inputSchema`` (a JSON Schema).

The gateway calls :func:`validate` before it forwards a tool call, so a bad
argument comes back as one precise line (``/count: expected integer, got
string``) instead of whatever the server makes of it.

This is a pragmatic validator for the schemas real MCP servers publish
(draft-07 and 2020-12, with ``$ref`` into ``$defs`` / ``definitions``), not a
full implementation:

* keywords it does not know (``format``, ``title``, ``contains``, ...) are
  ignored, and so are keywords whose value is malformed -- a strange schema
  must never make a good call fail;
* ``$ref`` is followed only inside the same document; a remote or unresolvable
  reference counts as ``{}`` and nothing is ever fetched;
* ``$ref`` next to other keywords applies both (2019-09 and later semantics),
  whatever ``$schema`` says;
* ``nullable: true`` (OpenAPI style) lets ``null`` through the whole schema;
* ``pattern`` and ``patternProperties`` are ECMA-262 searches run in linear
  time by ``ecmaregex`` (never Python's backtracking ``re`` unbounded); a
  pattern it cannot check is skipped and logged (see ``_search``).

It never raises and never loops: instances are checked at most 100 levels
deep, subschemas at most 300 levels deep, a reference cycle that makes no
progress through the instance is cut, and one call does a bounded amount of
work.  Anything cut off that way is treated as valid, and ``not`` / ``oneOf``
/ ``if`` whose outcome depended on a cut-off part report nothing, so every
error returned is a real one.  The exception fails closed: an argument value
nested more than 100 levels deep cannot be compared for ``enum``, ``const`` or
``uniqueItems``, and that is an error ("argument nested too deeply").

Errors are ``"POINTER: message"``, where POINTER is an RFC 6901 JSON Pointer
into the instance (``/`` for the instance itself), in schema keyword order.
"""

import decimal
import json
import math
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Set, Tuple
from urllib.parse import unquote

from toolscript import log
from toolscript.tools import ecmaregex

__all__ = ["validate"]

logger = log.get("tools.schema")

_MAX_DEPTH = 100  # instance levels below the root that are still checked
# Nested subschema applications; two Python frames each, so this stays inside
# the default recursion limit of 1000 with room left for the caller.
_MAX_NESTING = 300
# Subschema applications per call; bounds the fan-out of hostile ``$ref`` graphs.
_MAX_STEPS = 50000
# Pattern matching work per call, in ecmaregex units (a character stepped is one): ~2 s at worst.
_REGEX_BUDGET = 10_000_000
_MAX_ENUM_SHOWN = 20  # enum values spelled out in a message
_MAX_VALUE_CHARS = 80  # a JSON value longer than this is shortened in messages

_TYPE_NAMES = ("null", "boolean", "integer", "number", "string", "array", "object")

# (instance path, message, expected type names when it is a type error)
_Error = Tuple[Tuple[Any, ...], str, Optional[Tuple[str, ...]]]


def validate(instance: Any, schema: Any) -> List[str]:
    """All problems of ``instance`` against ``schema``, each ``'POINTER: message'``; [] when valid."""
    ctx = _Context(schema)
    errors: List[_Error] = []
    try:
        _validate(ctx, instance, schema, (), 0, errors)
    except RecursionError:
        # Only reachable when called with very little stack left.  What was
        # found so far is true, but the rest went unchecked: fail closed.
        errors.append(((), "argument nested too deeply to check", None))
    # A schema can reach the same check twice (e.g. through "$ref": "#"); say it once.
    return list(dict.fromkeys(_pointer(path) + ": " + message for path, message, _ in errors))


# --- the validator ----------------------------------------------------------------


class _Context:
    """State shared by one :func:`validate` call."""

    __slots__ = ("root", "root_id", "steps", "truncated", "active", "refs", "enums", "budget")

    def __init__(self, root: Any) -> None:
        self.root = root
        self.budget = ecmaregex.Budget(_REGEX_BUDGET)  # pattern matching work, for all patterns of the call
        self.root_id = _root_id(root)
        self.steps = 0
        # Bumped whenever a limit stops validation early; lets ``not`` and
        # friends tell "valid" from "not looked at".
        self.truncated = 0
        self.active: Set[Tuple[int, Tuple[Any, ...]]] = set()  # $ref targets in progress
        self.refs: Dict[str, Any] = {}
        self.enums: Dict[int, Tuple[Any, frozenset]] = {}


def _validate(ctx: _Context, instance: Any, schema: Any, path: Tuple[Any, ...], nesting: int,
              errors: List[_Error]) -> None:
    if schema is True:
        return
    if schema is False:
        errors.append((path, "not allowed", None))
        return
    if not isinstance(schema, dict) or not schema:
        return
    if len(path) > _MAX_DEPTH or nesting > _MAX_NESTING or ctx.steps >= _MAX_STEPS:
        ctx.truncated += 1
        return
    ctx.steps += 1
    if instance is None and schema.get("nullable") is True:
        return
    for key, value in schema.items():
        check = _KEYWORDS.get(key)
        if check is not None:
            check(ctx, instance, value, schema, path, nesting, errors)


# Each keyword check: (ctx, instance, keyword value, whole schema, path, nesting, errors).


def _kw_type(ctx, instance, value, schema, path, nesting, errors):
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return
    names = [name for name in value if isinstance(name, str) and name in _TYPE_NAMES]
    if not names or any(_has_type(instance, name) for name in names):
        return
    if schema.get("nullable") is True:
        names.append("null")
    expected = _unique(names)
    errors.append((path, _type_message(expected, instance), tuple(expected)))


def _kw_enum(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(value, list) or not value:
        return  # an empty enum would reject every call; treat it as a schema bug
    cached = ctx.enums.get(id(value))
    if cached is None or cached[0] is not value:
        # Frozen once per call, so a long enum reused across array items stays cheap.
        try:
            cached = (value, frozenset(_freeze(item) for item in value))
        except _TooDeep:
            cached = (value, None)  # the schema's own value: ignore the keyword
        ctx.enums[id(value)] = cached
    if cached[1] is None:
        return
    frozen = _freeze_instance(instance, path, errors)
    if frozen is None or frozen in cached[1]:
        return
    shown = ", ".join(_show(item) for item in value[:_MAX_ENUM_SHOWN])
    if len(value) > _MAX_ENUM_SHOWN:
        shown += ", ... ({} more)".format(len(value) - _MAX_ENUM_SHOWN)
    errors.append((path, "expected one of {}, got {}".format(shown, _show(instance)), None))


def _kw_const(ctx, instance, value, schema, path, nesting, errors):
    try:
        expected = _freeze(value)
    except _TooDeep:
        return  # the schema's own value: ignore the keyword
    frozen = _freeze_instance(instance, path, errors)
    if frozen is not None and frozen != expected:
        errors.append((path, "expected " + _show(value), None))


# objects


def _kw_properties(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(instance, dict) or not isinstance(value, dict):
        return
    for name, subschema in value.items():
        if name in instance:
            _validate(ctx, instance[name], subschema, path + (name,), nesting + 1, errors)


def _kw_pattern_properties(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(instance, dict) or not isinstance(value, dict):
        return
    for pattern, subschema in value.items():
        regex = _regex(pattern)
        if regex is None:
            continue
        for name, item in instance.items():
            found = _search(ctx, regex, str(name))
            if found:
                _validate(ctx, item, subschema, path + (name,), nesting + 1, errors)


def _kw_additional_properties(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(instance, dict) or value is True or not isinstance(value, (dict, bool)):
        return
    known = schema.get("properties")
    if not isinstance(known, dict):
        known = {}
    patterns = schema.get("patternProperties")
    regexes = [_regex(p) for p in patterns] if isinstance(patterns, dict) else []
    compiled = [r for r in regexes if r is not None]
    if len(compiled) != len(regexes):
        return  # which names a broken pattern was meant to cover is unknowable; don't guess "none"
    for name, item in instance.items():
        if name in known:
            continue
        covered: Optional[bool] = False
        for regex in compiled:
            found = _search(ctx, regex, str(name))
            if found:
                covered = True
                break
            if found is None:
                covered = None  # unknown unless another pattern says yes
        if covered is not False:
            continue  # covered, or not known to be: nothing to say about it
        if value is False:
            errors.append((path + (name,), "unexpected property", None))
        else:
            _validate(ctx, item, value, path + (name,), nesting + 1, errors)


def _kw_required(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(instance, dict) or not isinstance(value, list):
        return
    seen = set()
    for name in value:
        if isinstance(name, str) and name not in seen and name not in instance:
            seen.add(name)
            errors.append((path + (name,), "required property is missing", None))


def _count_limit(kinds: Any, bound: str, singular: str, plural: str) -> Callable[..., None]:
    """The check of a min*/max* keyword (``bound`` "at least" or "at most") on how many
    properties, items or characters an instance of ``kinds`` has."""
    at_least = bound == "at least"

    def check(ctx, instance, value, schema, path, nesting, errors):
        if isinstance(instance, kinds) and _is_count(value) and (len(instance) < value if at_least else len(instance) > value):
            errors.append((path, _count_message(bound, value, singular, plural, len(instance)), None))

    return check


_kw_min_properties = _count_limit(dict, "at least", "property", "properties")
_kw_max_properties = _count_limit(dict, "at most", "property", "properties")


# arrays


def _kw_items(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(instance, (list, tuple)):
        return
    if isinstance(value, list):
        # draft-07 tuple form; the rest is additionalItems' business
        for index, (item, subschema) in enumerate(zip(instance, value)):
            _validate(ctx, item, subschema, path + (index,), nesting + 1, errors)
        return
    if not isinstance(value, (dict, bool)):
        return
    prefix = schema.get("prefixItems")
    start = len(prefix) if isinstance(prefix, list) else 0
    _rest_items(ctx, instance, value, start, path, nesting, errors)


def _kw_prefix_items(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(instance, (list, tuple)) or not isinstance(value, list):
        return
    for index, (item, subschema) in enumerate(zip(instance, value)):
        _validate(ctx, item, subschema, path + (index,), nesting + 1, errors)


def _kw_additional_items(ctx, instance, value, schema, path, nesting, errors):
    items = schema.get("items")
    # Only meaningful next to the tuple form of items.
    if not isinstance(instance, (list, tuple)) or not isinstance(items, list):
        return
    if isinstance(value, (dict, bool)):
        _rest_items(ctx, instance, value, len(items), path, nesting, errors)


def _rest_items(ctx, instance, subschema, start, path, nesting, errors):
    for index in range(start, len(instance)):
        if subschema is False:
            errors.append((path + (index,), "unexpected item", None))
        else:
            _validate(ctx, instance[index], subschema, path + (index,), nesting + 1, errors)


_kw_min_items = _count_limit((list, tuple), "at least", "item", "items")
_kw_max_items = _count_limit((list, tuple), "at most", "item", "items")


def _kw_unique_items(ctx, instance, value, schema, path, nesting, errors):
    if value is not True or not isinstance(instance, (list, tuple)):
        return
    seen: Dict[Any, int] = {}
    for index, item in enumerate(instance):
        key = _freeze_instance(item, path, errors)
        if key is None:
            return
        if key in seen:
            message = "expected unique items, item {} equals item {}".format(index, seen[key])
            errors.append((path, message, None))
            return
        seen[key] = index


# strings


# len() of a str counts code points, as JSON Schema asks.
_kw_min_length = _count_limit(str, "at least", "character", "characters")
_kw_max_length = _count_limit(str, "at most", "character", "characters")


def _kw_pattern(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(instance, str):
        return
    regex = _regex(value)
    if regex is not None and _search(ctx, regex, instance) is False:
        errors.append((path, "does not match pattern " + _show(value), None))


# numbers


def _kw_minimum(ctx, instance, value, schema, path, nesting, errors):
    if not _is_number(instance) or not _is_number(value):
        return
    if schema.get("exclusiveMinimum") is True:  # draft-04 boolean form
        if not instance > value:
            errors.append((path, "expected > {}, got {}".format(_show(value), _show(instance)), None))
    elif not instance >= value:
        errors.append((path, "expected >= {}, got {}".format(_show(value), _show(instance)), None))


def _kw_maximum(ctx, instance, value, schema, path, nesting, errors):
    if not _is_number(instance) or not _is_number(value):
        return
    if schema.get("exclusiveMaximum") is True:  # draft-04 boolean form
        if not instance < value:
            errors.append((path, "expected < {}, got {}".format(_show(value), _show(instance)), None))
    elif not instance <= value:
        errors.append((path, "expected <= {}, got {}".format(_show(value), _show(instance)), None))


def _kw_exclusive_minimum(ctx, instance, value, schema, path, nesting, errors):
    # The boolean form is handled by minimum; _is_number rejects booleans.
    if _is_number(instance) and _is_number(value) and not instance > value:
        errors.append((path, "expected > {}, got {}".format(_show(value), _show(instance)), None))


def _kw_exclusive_maximum(ctx, instance, value, schema, path, nesting, errors):
    if _is_number(instance) and _is_number(value) and not instance < value:
        errors.append((path, "expected < {}, got {}".format(_show(value), _show(instance)), None))


def _kw_multiple_of(ctx, instance, value, schema, path, nesting, errors):
    if not _is_number(instance) or not _is_number(value) or not 0 < value < math.inf:
        return  # JSON has no infinity; a non-positive divisor is a schema bug
    if not _is_multiple(instance, value):
        errors.append((path, "expected a multiple of {}, got {}".format(_show(value), _show(instance)), None))


# combinators and references


def _branch_errors(ctx, instance: Any, subschema: Any, path: Tuple[Any, ...], nesting: int) -> List[_Error]:
    """What ``subschema`` alone finds wrong with ``instance``, kept apart for a combinator to weigh."""
    branch_errors: List[_Error] = []
    _validate(ctx, instance, subschema, path, nesting + 1, branch_errors)
    return branch_errors


def _kw_all_of(ctx, instance, value, schema, path, nesting, errors):
    for subschema in _subschemas(value):
        _validate(ctx, instance, subschema, path, nesting + 1, errors)


def _kw_any_of(ctx, instance, value, schema, path, nesting, errors):
    branches = _subschemas(value)
    if not branches:
        return
    failures = []
    for subschema in branches:
        branch_errors = _branch_errors(ctx, instance, subschema, path, nesting)
        if not branch_errors:
            return
        failures.append(branch_errors)
    errors.extend(_no_match(instance, path, failures))


def _kw_one_of(ctx, instance, value, schema, path, nesting, errors):
    branches = _subschemas(value)
    if not branches:
        return
    before = ctx.truncated
    failures = []
    matches = 0
    for subschema in branches:
        branch_errors = _branch_errors(ctx, instance, subschema, path, nesting)
        if branch_errors:
            failures.append(branch_errors)
        else:
            matches += 1
    if matches > 1:
        # A cut-off branch looks like a match; only say so when none was cut.
        if ctx.truncated == before:
            errors.append((path, "matches {} of the allowed schemas, expected exactly one".format(matches), None))
    elif matches == 0:
        errors.extend(_no_match(instance, path, failures))


def _kw_not(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(value, (dict, bool)):
        return
    before = ctx.truncated
    branch_errors = _branch_errors(ctx, instance, value, path, nesting)
    if not branch_errors and ctx.truncated == before:
        errors.append((path, "must not match the excluded schema", None))


def _kw_if(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(value, (dict, bool)):
        return
    before = ctx.truncated
    branch_errors = _branch_errors(ctx, instance, value, path, nesting)
    if ctx.truncated != before:
        return  # don't know which branch applies
    branch = schema.get("else") if branch_errors else schema.get("then")
    _validate(ctx, instance, branch, path, nesting + 1, errors)


def _kw_ref(ctx, instance, value, schema, path, nesting, errors):
    if not isinstance(value, str):
        return
    if value in ctx.refs:
        target = ctx.refs[value]
    else:
        target = ctx.refs[value] = _resolve(ctx.root, ctx.root_id, value)
    if target is None:
        return
    # The same target at the same place in the instance again means a cycle
    # of references that makes no progress; going round it adds nothing.
    key = (id(target), path)
    if key in ctx.active:
        ctx.truncated += 1
        return
    ctx.active.add(key)
    try:
        _validate(ctx, instance, target, path, nesting + 1, errors)
    finally:
        ctx.active.discard(key)


_KEYWORDS: Dict[str, Callable[..., None]] = {
    "type": _kw_type,
    "enum": _kw_enum,
    "const": _kw_const,
    "properties": _kw_properties,
    "patternProperties": _kw_pattern_properties,
    "additionalProperties": _kw_additional_properties,
    "required": _kw_required,
    "minProperties": _kw_min_properties,
    "maxProperties": _kw_max_properties,
    "items": _kw_items,
    "prefixItems": _kw_prefix_items,
    "additionalItems": _kw_additional_items,
    "minItems": _kw_min_items,
    "maxItems": _kw_max_items,
    "uniqueItems": _kw_unique_items,
    "minLength": _kw_min_length,
    "maxLength": _kw_max_length,
    "pattern": _kw_pattern,
    "minimum": _kw_minimum,
    "maximum": _kw_maximum,
    "exclusiveMinimum": _kw_exclusive_minimum,
    "exclusiveMaximum": _kw_exclusive_maximum,
    "multipleOf": _kw_multiple_of,
    "allOf": _kw_all_of,
    "anyOf": _kw_any_of,
    "oneOf": _kw_one_of,
    "not": _kw_not,
    "if": _kw_if,
    "$ref": _kw_ref,
}


def _no_match(instance: Any, path: Tuple[Any, ...], failures: List[List[_Error]]) -> List[_Error]:
    """The errors for an anyOf / oneOf none of whose branches matched.

    If every branch wants another type, say which types would do; if exactly
    one branch accepts the type, its errors are the useful ones; otherwise
    there is nothing more precise to say than "no match".
    """
    expected: List[str] = []
    right_type = []
    for branch_errors in failures:
        type_errors = [e for e in branch_errors if e[0] == path and e[2] is not None]
        if type_errors:
            for error in type_errors:
                expected.extend(error[2] or ())
        elif not all(e[0] == path and e[1] == "not allowed" for e in branch_errors):
            right_type.append(branch_errors)
    if not right_type and expected:
        names = _unique(expected)
        return [(path, _type_message(names, instance), tuple(names))]
    if len(right_type) == 1:
        return right_type[0]
    return [(path, "does not match any of the allowed schemas", None)]


def _resolve(root: Any, root_id: Optional[str], ref: str) -> Any:
    """The schema ``ref`` points to inside ``root``, or None (remote, unresolvable, not a schema)."""
    pointer = _local_pointer(ref, root_id)
    if pointer is None:
        return None
    target = _walk(root, pointer)
    return target if isinstance(target, (dict, bool)) else None


def _local_pointer(ref: str, root_id: Optional[str]) -> Optional[str]:
    """The decoded JSON Pointer of a same-document ``ref``, or None when it is not one."""
    base, hash_sign, fragment = ref.partition("#")
    # "other.json#/x" or "https://..." is another document, unless it names this one.
    if base and (root_id is None or base != root_id):
        return None
    if not hash_sign:
        return ""
    fragment = unquote(fragment)
    if fragment and not fragment.startswith("/"):
        return None  # a plain-name anchor ("#foo"); not supported
    return fragment


_MISSING = object()


def _walk(root: Any, pointer: str) -> Any:
    """Follow an RFC 6901 pointer from ``root``; ``_MISSING`` when it leads nowhere."""
    node = root
    if not pointer:
        return node
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


def _root_id(schema: Any) -> Optional[str]:
    """The root's ``$id`` (draft-04: ``id``) without its fragment, for refs that name the document."""
    if not isinstance(schema, dict):
        return None
    value = schema.get("$id", schema.get("id"))
    if not isinstance(value, str):
        return None
    base = value.partition("#")[0]
    return base or None


# --- small helpers ------------------------------------------------------------------


def _has_type(instance: Any, name: str) -> bool:
    if name == "null":
        return instance is None
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "integer":
        return _is_integer(instance)
    if name == "number":
        return _is_number(instance)
    if name == "string":
        return isinstance(instance, str)
    if name == "array":
        return isinstance(instance, (list, tuple))
    if name == "object":
        return isinstance(instance, dict)
    return False


def json_type(instance: Any) -> str:
    """The JSON type name of ``instance``, as users see it (3 is integer, 3.0 and 3.5 number)."""
    if instance is None:
        return "null"
    if isinstance(instance, bool):
        return "boolean"
    if isinstance(instance, int):
        return "integer"
    if isinstance(instance, float):
        return "number"
    if isinstance(instance, str):
        return "string"
    if isinstance(instance, (list, tuple)):
        return "array"
    if isinstance(instance, dict):
        return "object"
    return type(instance).__name__


def _is_number(value: Any) -> bool:
    # bool is an int subclass in Python, but true is not a number in JSON.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    return _is_number(value)


def _is_count(value: Any) -> bool:
    """True for a non-negative integer (2.0 included), the only usable limit for a length or size."""
    return _is_integer(value) and value >= 0


def _is_multiple(number: Any, divisor: Any) -> bool:
    if isinstance(number, int) and isinstance(divisor, int):
        return number % divisor == 0
    # Binary floats make 0.3 % 0.1 non-zero; compare the decimal spellings instead.
    try:
        with decimal.localcontext() as context:
            context.prec = 1000  # enough for any quotient of two finite doubles
            return decimal.Decimal(repr(number)) % decimal.Decimal(repr(divisor)) == 0
    except (decimal.DecimalException, ValueError, OverflowError):
        return True  # infinities and such: not something to complain about


class _TooDeep(Exception):
    """A value nests arrays/objects deeper than ``_MAX_DEPTH``: too deep to compare."""


def _freeze_instance(instance: Any, path: Tuple[Any, ...], errors: List[_Error]) -> Any:
    """``_freeze(instance)``, or None after reporting it too deep.

    Fails closed: a comparison that cannot be made is an error, never a silent pass.
    """
    try:
        return _freeze(instance)
    except _TooDeep:
        errors.append((path, "argument nested too deeply to compare (more than {} levels of arrays and objects)".format(_MAX_DEPTH), None))
        return None


def _freeze(value: Any) -> Any:
    """A hashable key equal for JSON-equal values (1 == 1.0, but true != 1, key order ignored).

    Iterative, so no depth exhausts the stack; raises _TooDeep past ``_MAX_DEPTH`` levels.
    """
    if not isinstance(value, (list, tuple, dict)):
        return _freeze_leaf(value)
    # Each entry: a container, the iterator over its children, their keys (objects), the frozen children so far.
    stack = [_freeze_frame(value)]
    while True:
        container, children, keys, frozen = stack[-1]
        for child in children:
            if isinstance(child, (list, tuple, dict)):
                if len(stack) >= _MAX_DEPTH:
                    raise _TooDeep()
                stack.append(_freeze_frame(child))
                break
            frozen.append(_freeze_leaf(child))
        else:
            stack.pop()
            done = ("object", frozenset(zip(keys, frozen))) if keys is not None else ("array", tuple(frozen))
            if not stack:
                return done
            stack[-1][3].append(done)


def _freeze_frame(container: Any) -> Tuple[Any, Any, Optional[List[str]], List[Any]]:
    if isinstance(container, dict):
        return container, iter(list(container.values())), [str(k) for k in container], []
    return container, iter(container), None, []


def _freeze_leaf(value: Any) -> Any:
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    return ("other", repr(value))


@lru_cache(maxsize=64)  # each holds its DFA cache (bounded, see ecmaregex): a few MB at worst
def _compile(pattern: str) -> Optional[ecmaregex.Pattern]:
    try:
        return ecmaregex.compile_pattern(pattern)
    except (ecmaregex.RegexError, RecursionError):
        return None  # not a regular expression: ignore the keyword


def _regex(pattern: Any) -> Optional[ecmaregex.Pattern]:
    return _compile(pattern) if isinstance(pattern, str) else None


def _search(ctx: _Context, regex: ecmaregex.Pattern, text: str) -> Optional[bool]:
    """Does ``regex`` occur in ``text``?  None when it could not be checked.

    Patterns are searched in linear time (``ecmaregex``) within one work
    budget per call; one that needs backtracking too costly for ``text``, or
    syntax the matcher does not know, or a search past the budget, leaves the
    keyword unchecked.  That fails open on purpose: the server checks its own
    arguments against its own schema, this check only gives earlier and
    clearer errors, and a schema the gateway cannot fully read must not make
    its tool uncallable.  It counts as a cut-off, so ``not`` / ``oneOf`` /
    ``if`` that depended on it say nothing either, and it is logged.
    """
    found = regex.search(text, ctx.budget)
    if found is None:
        ctx.truncated += 1
        reason = regex.unchecked or "too much matching work for one call"
        if (regex.source, reason) not in _UNCHECKED_SAID and len(_UNCHECKED_SAID) < 1000:
            _UNCHECKED_SAID.add((regex.source, reason))
            logger.info("a tool's schema pattern %s is not checked here (%s); the server checks it", _show(regex.source), reason)
    return found


_UNCHECKED_SAID: Set[Tuple[str, str]] = set()  # (pattern, reason) already logged


def _subschemas(value: Any) -> List[Any]:
    """The schemas of an allOf/anyOf/oneOf array; entries that are no schema are dropped."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, (dict, bool))]


def _unique(names: List[str]) -> List[str]:
    return list(dict.fromkeys(names))


def _type_message(expected: List[str], instance: Any) -> str:
    if len(expected) == 1:
        wanted = expected[0]
    else:
        wanted = ", ".join(expected[:-1]) + " or " + expected[-1]
    return "expected {}, got {}".format(wanted, json_type(instance))


def _count_message(bound: str, limit: Any, singular: str, plural: str, actual: int) -> str:
    limit = int(limit)
    return "expected {} {} {}, got {}".format(bound, limit, singular if limit == 1 else plural, actual)


def _show(value: Any) -> str:
    """``value`` as JSON for a message, shortened when long."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[:_MAX_VALUE_CHARS - 3] + "..."
    return text


def _pointer(path: Tuple[Any, ...]) -> str:
    if not path:
        return "/"
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in path)
