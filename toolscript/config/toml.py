"""Reading TOML (Codex's ``config.toml``) on every supported Python.

Python 3.11+ has ``tomllib``; on 3.9 and 3.10 :func:`read_minimal` reads the
part of TOML 1.0 a Codex config uses: comments, bare and quoted (dotted) keys,
``[table]`` and ``[[array.of.tables]]`` headers, the four string forms, integers
(decimal, hex, octal, binary, ``_`` separators), floats (``inf``/``nan`` too),
booleans, arrays and one-line inline tables.  It enforces TOML's rules on
redefinition the same way ``tomllib`` does (a key or table defined twice, an
inline table or array extended later), so a file means the same on every
Python.  Dates and times are the one part of TOML it does not read: Codex
writes none, and it says so with the line and column rather than guessing.

Every error is one :class:`TomlError` line, ``file:line:col: message``, from
either reader.
"""

import importlib
import re
from typing import Any, Dict, List, Optional, Set, Tuple

Key = Tuple[str, ...]


class TomlError(ValueError):
    """A file that is not TOML this reader accepts: ``file:line:col: message``."""

    def __init__(self, source: str, line: int, col: int, message: str) -> None:
        super().__init__(f"{source}:{line}:{col}: {message}")
        self.line = line
        self.col = col
        self.message = message


def loads(text: str, source: str = "<toml>") -> Dict[str, Any]:
    """Parse ``text``: with ``tomllib`` where Python has it, else :func:`read_minimal`."""
    try:
        tomllib: Any = importlib.import_module("tomllib")  # 3.11+; imported by name so 3.9 tooling never looks for it
    except ImportError:
        return read_minimal(text, source)
    try:
        return dict(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = re.search(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$", message)
        if where is None:
            raise TomlError(source, 1, 1, message) from None
        message = message[: where.start()]
        if where.group(1):
            raise TomlError(source, int(where.group(1)), int(where.group(2)), message) from None
        lines = text.split("\n")
        raise TomlError(source, len(lines), len(lines[-1]) + 1, message) from None


def read_minimal(text: str, source: str = "<toml>") -> Dict[str, Any]:
    """Parse ``text`` with this module's own reader (what :func:`loads` uses before Python 3.11)."""
    return _Reader(text, source).document()


_BARE_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_WHITESPACE = " \t"
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
# A character that may not appear raw in a string or comment: the C0 controls but tab, and DEL.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_DIGITS = r"[0-9](?:_?[0-9])*"
_DECIMAL = rf"[+-]?(?:0|[1-9](?:_?[0-9])*)"
_NUMBER = re.compile(
    rf"0x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*|0o[0-7](?:_?[0-7])*|0b[01](?:_?[01])*"
    rf"|(?P<float>{_DECIMAL}(?:\.{_DIGITS}(?:[eE][+-]?{_DIGITS})?|[eE][+-]?{_DIGITS}))"
    rf"|{_DECIMAL}"
    r"|(?P<special>[+-]?(?:inf|nan))"
)
_DATE_OR_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}:[0-9]{2}")
# What may follow a value: where a number, boolean or date ends.
_VALUE_END = re.compile(r"[A-Za-z0-9_.:+-]*")


class _Flags:
    """What each key path may still become: the redefinition rules of TOML, as ``tomllib`` keeps them.

    ``frozen``: an inline table or array value, complete where it was written (recursive).
    ``explicit``: a table a header declared, or one a dotted key created (not declarable again).
    """

    FROZEN = "frozen"
    EXPLICIT = "explicit"

    def __init__(self) -> None:
        self._tree: Dict[str, Any] = {}
        self._pending: List[Tuple[Key, str]] = []

    def _node(self, key: Key) -> Dict[str, Any]:
        tree = self._tree
        node: Dict[str, Any] = {}
        for part in key:
            node = tree.setdefault(part, {"flags": set(), "recursive": set(), "nested": {}})
            tree = node["nested"]
        return node

    def set(self, key: Key, flag: str, recursive: bool = False) -> None:
        self._node(key)["recursive" if recursive else "flags"].add(flag)

    def has(self, key: Key, flag: str) -> bool:
        tree = self._tree
        for i, part in enumerate(key):
            node = tree.get(part)
            if node is None:
                return False
            if flag in node["recursive"] or (i == len(key) - 1 and flag in node["flags"]):
                return True
            tree = node["nested"]
        return False

    def unset_all(self, key: Key) -> None:
        tree = self._tree
        for part in key[:-1]:
            if part not in tree:
                return
            tree = tree[part]["nested"]
        tree.pop(key[-1], None)

    def add_pending(self, key: Key, flag: str) -> None:
        self._pending.append((key, flag))

    def finalize_pending(self) -> None:
        for key, flag in self._pending:
            self.set(key, flag)
        self._pending = []


class _Reader:
    """One pass over the text; ``pos`` is the index of the next character to read."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.data: Dict[str, Any] = {}
        self.flags = _Flags()

    # -- errors and small helpers ---------------------------------------------

    def fail(self, message: str, pos: Optional[int] = None) -> TomlError:
        at = self.pos if pos is None else pos
        line = self.text.count("\n", 0, at) + 1
        col = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return TomlError(self.source, line, col, message)

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def _advance(self) -> bool:
        self.pos += 1
        return True

    def skip_whitespace(self) -> None:
        while self.peek() and self.peek() in _WHITESPACE:
            self.pos += 1

    def skip_comment(self) -> None:
        if self.peek() != "#":
            return
        end = self.text.find("\n", self.pos)
        end = len(self.text) if end < 0 else end
        comment = self.text[self.pos:end]
        if comment.endswith("\r"):
            comment = comment[:-1]
        bad = _CONTROL.search(comment)
        if bad:
            raise self.fail(f"control character {bad.group(0)!r} in a comment", self.pos + bad.start())
        self.pos += len(comment)

    def at_newline(self) -> bool:
        return self.peek() == "\n" or (self.peek() == "\r" and self.peek(1) == "\n")

    def skip_newline(self) -> bool:
        if self.peek() == "\n":
            self.pos += 1
            return True
        if self.peek() == "\r" and self.peek(1) == "\n":
            self.pos += 2
            return True
        return False

    def skip_blank(self) -> None:
        """Whitespace, newlines and comments: what may sit between the items of an array."""
        while True:
            self.skip_whitespace()
            self.skip_comment()
            if not self.skip_newline():
                return

    def end_of_line(self) -> None:
        self.skip_whitespace()
        self.skip_comment()
        if self.pos < len(self.text) and not self.skip_newline():
            raise self.fail(f"expected the end of the line, found {self.peek()!r}")

    # -- the document ------------------------------------------------------------

    def document(self) -> Dict[str, Any]:
        header: Key = ()
        while True:
            self.skip_whitespace()
            if self.pos >= len(self.text):
                return self.data
            char = self.peek()
            if char == "#" or self.at_newline():
                self.end_of_line()
                continue
            if char == "[":
                self.flags.finalize_pending()
                header = self.array_table() if self.peek(1) == "[" else self.table()
            else:
                self.key_value(header)
            self.end_of_line()

    def table(self) -> Key:
        start = self.pos
        self.pos += 1
        self.skip_whitespace()
        key = self.key()
        self.skip_whitespace()
        if self.peek() != "]":
            raise self.fail("expected ']' to close the table header")
        self.pos += 1
        if self.flags.has(key, _Flags.FROZEN):
            raise self.fail(f"{_shown(key)} was written in full as an inline table or array; a header cannot extend it", start)
        if self.flags.has(key, _Flags.EXPLICIT):
            raise self.fail(f"table {_shown(key)} is defined twice", start)
        self.flags.set(key, _Flags.EXPLICIT)
        self.nest(key, start)
        return key

    def array_table(self) -> Key:
        start = self.pos
        self.pos += 2
        self.skip_whitespace()
        key = self.key()
        self.skip_whitespace()
        if not self.text.startswith("]]", self.pos):
            raise self.fail("expected ']]' to close the array-of-tables header")
        self.pos += 2
        if self.flags.has(key, _Flags.FROZEN):
            raise self.fail(f"{_shown(key)} is an array or inline table written in full; it cannot be extended", start)
        self.flags.unset_all(key)
        self.flags.set(key, _Flags.EXPLICIT)
        parent = self.nest(key[:-1], start)
        existing = parent.get(key[-1])
        if existing is None:
            parent[key[-1]] = [{}]
        elif isinstance(existing, list) and not self.flags.has(key, _Flags.FROZEN):
            existing.append({})
        else:
            raise self.fail(f"{_shown(key)} is already a value; it cannot become an array of tables", start)
        return key

    def key_value(self, header: Key) -> None:
        start = self.pos
        key, value = self.pair()
        for i in range(1, len(key)):
            prefix = header + key[:i]
            if self.flags.has(prefix, _Flags.EXPLICIT):
                raise self.fail(f"{_shown(prefix)} is a table defined elsewhere; a dotted key cannot add to it", start)
            self.flags.add_pending(prefix, _Flags.EXPLICIT)
        parent_key = header + key[:-1]
        if self.flags.has(parent_key, _Flags.FROZEN):
            raise self.fail(f"{_shown(parent_key)} is an inline table written in full; it cannot be extended", start)
        parent = self.nest(parent_key, start)
        if key[-1] in parent:
            raise self.fail(f"{_shown(header + key)} is defined twice", start)
        if isinstance(value, (dict, list)):
            self.flags.set(header + key, _Flags.FROZEN, recursive=True)
        parent[key[-1]] = value

    def nest(self, key: Key, pos: int, into_arrays: bool = True, root: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The table at ``key`` (created where missing); the last table of an array of tables is entered."""
        table = self.data if root is None else root
        for i, part in enumerate(key):
            child = table.setdefault(part, {})
            if into_arrays and isinstance(child, list) and child and isinstance(child[-1], dict):
                child = child[-1]
            if not isinstance(child, dict):
                raise self.fail(f"{_shown(key[:i + 1])} is already a value, not a table", pos)
            table = child
        return table

    # -- keys ----------------------------------------------------------------------

    def pair(self) -> Tuple[Key, Any]:
        key = self.key()
        self.skip_whitespace()
        if self.peek() != "=":
            found = "the end of the line" if self.at_newline() or not self.peek() else repr(self.peek())
            raise self.fail(f"expected '=' after the key {_shown(key)}, found {found}")
        self.pos += 1
        self.skip_whitespace()
        return key, self.value()

    def key(self) -> Key:
        parts = [self.simple_key()]
        while True:
            save = self.pos
            self.skip_whitespace()
            if self.peek() != ".":
                self.pos = save
                return tuple(parts)
            self.pos += 1
            self.skip_whitespace()
            parts.append(self.simple_key())

    def simple_key(self) -> str:
        char = self.peek()
        if char == '"':
            if self.text.startswith('"""', self.pos):
                raise self.fail("a key cannot be a multi-line string")
            return self.basic_string()
        if char == "'":
            if self.text.startswith("'''", self.pos):
                raise self.fail("a key cannot be a multi-line string")
            return self.literal_string()
        start = self.pos
        while self.peek() and self.peek() in _BARE_KEY_CHARS:
            self.pos += 1
        if self.pos == start:
            found = "the end of the line" if self.at_newline() or not char else repr(char)
            raise self.fail(f"expected a key, found {found} (keys other than A-Z a-z 0-9 _ - need quotes)")
        return self.text[start:self.pos]

    # -- values --------------------------------------------------------------------

    def value(self) -> Any:
        char = self.peek()
        if char == '"':
            return self.multiline_basic_string() if self.text.startswith('"""', self.pos) else self.basic_string()
        if char == "'":
            return self.multiline_literal_string() if self.text.startswith("'''", self.pos) else self.literal_string()
        if char == "[":
            return self.array()
        if char == "{":
            return self.inline_table()
        start = self.pos
        word = _VALUE_END.match(self.text, self.pos)
        token = word.group(0) if word else ""
        if token in ("true", "false"):
            self.pos += len(token)
            return token == "true"
        if _DATE_OR_TIME.match(self.text, self.pos):
            raise self.fail("dates and times are not supported by this reader (Codex writes none); quote the value or use Python 3.11+")
        number = _NUMBER.match(self.text, self.pos)
        if number is None or number.end() != start + len(token) or not token:
            found = repr(token) if token else ("the end of the line" if self.at_newline() or not char else repr(char))
            raise self.fail(f"expected a value (a string, number, true/false, array or inline table), found {found}")
        self.pos = number.end()
        text = number.group(0).replace("_", "")
        if number.group("special"):
            return float(text)
        if number.group("float"):
            return float(text)
        if text[:2] in ("0x", "0o", "0b"):
            return int(text[2:], {"0x": 16, "0o": 8, "0b": 2}[text[:2]])
        return int(text)

    def array(self) -> List[Any]:
        self.pos += 1
        items: List[Any] = []
        while True:
            self.skip_blank()
            if self.peek() == "]":
                self.pos += 1
                return items
            if not self.peek():
                raise self.fail("unterminated array: expected ']'")
            items.append(self.value())
            self.skip_blank()
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() == "]":
                self.pos += 1
                return items
            else:
                found = "the end of the file" if not self.peek() else repr(self.peek())
                raise self.fail(f"expected ',' or ']' in an array, found {found}")

    def inline_table(self) -> Dict[str, Any]:
        self.pos += 1
        table: Dict[str, Any] = {}
        flags = _Flags()
        self.skip_whitespace()
        if self.peek() == "}":
            self.pos += 1
            return table
        while True:
            start = self.pos
            key, value = self.pair()
            if flags.has(key, _Flags.FROZEN):
                raise self.fail(f"{_shown(key)} is written in full already; it cannot be extended", start)
            parent = self.nest(key[:-1], start, into_arrays=False, root=table)
            if key[-1] in parent:
                raise self.fail(f"{_shown(key)} is defined twice in an inline table", start)
            parent[key[-1]] = value
            if isinstance(value, (dict, list)):
                flags.set(key, _Flags.FROZEN, recursive=True)
            self.skip_whitespace()
            if self.peek() == "}":
                self.pos += 1
                return table
            if self.peek() != ",":
                found = "a line break (an inline table stays on one line)" if self.at_newline() else (
                    repr(self.peek()) if self.peek() else "the end of the file")
                raise self.fail(f"expected ',' or '}}' in an inline table, found {found}")
            self.pos += 1
            self.skip_whitespace()
            if self.peek() == "}":
                raise self.fail("a trailing comma is not allowed in an inline table")

    # -- strings ---------------------------------------------------------------------

    def basic_string(self) -> str:
        start = self.pos
        self.pos += 1
        out: List[str] = []
        while True:
            char = self.peek()
            if not char or char == "\n" or (char == "\r" and self.peek(1) == "\n"):
                raise self.fail('unterminated string: a "..." string ends on its own line', start)
            if char == '"':
                self.pos += 1
                return "".join(out)
            if char == "\\":
                out.append(self.escape(multiline=False))
                continue
            if _CONTROL.match(char):
                raise self.fail(f"control character {char!r} in a string (write it as an escape)")
            out.append(char)
            self.pos += 1

    def multiline_basic_string(self) -> str:
        start = self.pos
        self.pos += 3
        self.skip_newline()  # a newline right after the opening quotes is not part of the string
        out: List[str] = []
        while True:
            if self.text.startswith('"""', self.pos):
                extra = 0
                while extra < 2 and self.peek(3 + extra) == '"':  # up to two quotes may end the content
                    extra += 1
                out.append('"' * extra)
                self.pos += 3 + extra
                return "".join(out)
            char = self.peek()
            if not char:
                raise self.fail('unterminated multi-line string: expected """', start)
            if char == "\\":
                out.append(self.escape(multiline=True))
                continue
            if self.skip_newline():
                out.append("\n")
                continue
            if _CONTROL.match(char):
                raise self.fail(f"control character {char!r} in a string (write it as an escape)")
            out.append(char)
            self.pos += 1

    def literal_string(self) -> str:
        start = self.pos
        end = self.pos + 1
        while end < len(self.text) and self.text[end] not in "'\n":
            end += 1
        if end >= len(self.text) or self.text[end] != "'":
            raise self.fail("unterminated string: a '...' string ends on its own line", start)
        content = self.text[self.pos + 1:end]
        if content.endswith("\r"):
            raise self.fail("unterminated string: a '...' string ends on its own line", start)
        bad = _CONTROL.search(content)
        if bad:
            raise self.fail(f"control character {bad.group(0)!r} in a string", self.pos + 1 + bad.start())
        self.pos = end + 1
        return content

    def multiline_literal_string(self) -> str:
        start = self.pos
        self.pos += 3
        self.skip_newline()  # a newline right after the opening quotes is not part of the string
        end = self.text.find("'''", self.pos)
        if end < 0:
            raise self.fail("unterminated multi-line string: expected '''", start)
        extra = 0
        while extra < 2 and self.text.startswith("'", end + 3 + extra):  # up to two quotes may end the content
            extra += 1
        content = self.text[self.pos:end + extra]
        bad = _CONTROL.search(content.replace("\r\n", "\n").replace("\n", ""))
        if bad:
            raise self.fail(f"control character {bad.group(0)!r} in a string", self.pos + content.find(bad.group(0)))
        self.pos = end + 3 + extra
        return content.replace("\r\n", "\n")

    def escape(self, multiline: bool) -> str:
        """One escape sequence at ``pos`` (a backslash); what it stands for."""
        start = self.pos
        code = self.peek(1)
        if multiline:
            # A backslash ending a line joins it to the next: the line break and the blanks around it go.
            probe = self.pos + 1
            while probe < len(self.text) and self.text[probe] in _WHITESPACE:
                probe += 1
            if self.text.startswith("\n", probe) or self.text.startswith("\r\n", probe):
                self.pos = probe
                while self.skip_newline() or (self.peek() != "" and self.peek() in _WHITESPACE and self._advance()):
                    pass
                return ""
        if code in _ESCAPES:
            self.pos += 2
            return _ESCAPES[code]
        if code in ("u", "U"):
            length = 4 if code == "u" else 8
            digits = self.text[self.pos + 2:self.pos + 2 + length]
            if len(digits) != length or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise self.fail(f"\\{code} needs {length} hex digits (a Windows path needs '...' quotes or doubled backslashes)", start)
            number = int(digits, 16)
            if number > 0x10FFFF or 0xD800 <= number <= 0xDFFF:
                raise self.fail(f"\\{code}{digits} is not a Unicode scalar value", start)
            self.pos += 2 + length
            return chr(number)
        shown = code if code and code not in "\r\n" else "a line break"
        raise self.fail(
            f"invalid escape '\\{shown}' in a \"...\" string (a Windows path needs '...' quotes or doubled backslashes)", start)


def _shown(key: Key) -> str:
    """A key path as TOML writes it: bare parts as they are, the others quoted."""
    return ".".join(part if part and all(c in _BARE_KEY_CHARS for c in part) else '"' + part.replace('"', '\\"') + '"'
                    for part in key)
