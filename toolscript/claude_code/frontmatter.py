"""The SKILL.md frontmatter parser: the YAML subset skills use, without a YAML library.

What it reads: block mappings and sequences, plain, single- and
double-quoted scalars (one or several lines), ``|``/``>`` block scalars with chomping and
indentation indicators, one-level flow sequences/mappings, ``#`` comments.  Plain scalars:
true/false -> bool, null/~/empty -> None, decimal integers -> int, everything else a str
(YAML 1.2 core schema; ``yes``/``no`` and dates stay strings).  Quoted scalars are always
strings.  Anchors, aliases, tags and multiple documents are refused.  Deliberately more
lenient than YAML in one way Claude Code is too: a plain value may contain ``: `` (the
common ``description: Use when: ...``).

Bounded for hostile files: nesting deeper than ``MAX_DEPTH`` is refused, and
long lines and flow collections are read in linear time.  Every error is a
``FrontmatterError`` whose message starts with the line it is about.
"""

from typing import Any, Dict, List, Optional, Tuple

MAX_DEPTH = 32  # nesting levels the parser accepts


class FrontmatterError(ValueError):
    """The frontmatter is not the YAML subset skills use; the message says which line and what is wrong."""


_TRUE = ("true", "True", "TRUE")
_FALSE = ("false", "False", "FALSE")
_NULL = ("null", "Null", "NULL", "~", "")
_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
    "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def split(text: str) -> Tuple[Optional[List[str]], str]:
    """(the frontmatter's lines, the body) of a SKILL.md; (None, text) when it has no frontmatter.

    Strips a UTF-8 BOM and reads CRLF and CR line ends as LF.  Raises
    ``FrontmatterError`` when the opening ``---`` is never closed.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    first, _, rest = text.partition("\n")
    if first.rstrip() != "---":
        return None, text
    lines = rest.split("\n")
    for index, line in enumerate(lines):
        if line.rstrip() == "---":
            return lines[:index], "\n".join(lines[index + 1 :])
    raise FrontmatterError("line 1: the frontmatter opened by '---' is never closed by a '---' line")


def parse(lines: List[str]) -> Dict[str, Any]:
    """The frontmatter lines ``split`` gave, as a dict; raises ``FrontmatterError``."""
    value = _Parser(lines).document()
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontmatterError("line 2: the frontmatter must be 'key: value' lines, not a list or a lone value")
    return value


class _Parser:
    """A recursive-descent parser over the frontmatter lines (file line numbers start at 2)."""

    def __init__(self, lines: List[str]) -> None:
        self.lines = lines
        self.pos = 0

    # lines --------------------------------------------------------------------------------

    def lineno(self, index: int) -> int:
        return index + 2  # the opening '---' is line 1

    def error(self, index: int, message: str) -> FrontmatterError:
        return FrontmatterError(f"line {self.lineno(index)}: {message}")

    def peek(self) -> Optional[Tuple[int, int, str]]:
        """The next line with content: (index, indent, text without indent); skips blanks and comments."""
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            stripped = line.lstrip(" ")
            content = stripped.strip(" \t")
            if not content or content.startswith("#"):
                self.pos += 1
                continue
            if stripped[0] == "\t":
                raise self.error(self.pos, "a tab in the indentation; YAML allows only spaces there, replace it with spaces")
            return self.pos, len(line) - len(stripped), stripped.rstrip(" \t")
        return None

    # structure ------------------------------------------------------------------------------

    def document(self) -> Any:
        head = self.peek()
        if head is None:
            return None
        index, indent, text = head
        if text.startswith("---") or text.startswith("..."):
            raise self.error(index, "a second YAML document; a SKILL.md frontmatter holds one")
        value = self.node(index, indent, text, depth=1)
        tail = self.peek()
        if tail is not None:
            raise self.error(tail[0], "unexpected indentation or text after the frontmatter's top level")
        return value

    def node(self, index: int, indent: int, text: str, depth: int) -> Any:
        """The block collection starting at this line (a list when it starts with '- ', else a mapping)."""
        if depth > MAX_DEPTH:
            raise self.error(index, f"nested more than {MAX_DEPTH} levels deep")
        if _is_item(text):
            return self.sequence(indent, depth)
        if _split_key(text) is None:
            # A lone value (the whole document, or under a key on lines of its own).
            self.pos = index + 1
            return self.value(index, text, indent - 1, depth, in_list=True)
        return self.mapping(indent, depth)

    def child(self, parent_indent: int, depth: int, list_at_same_indent: bool) -> Any:
        """The value on the lines under ``key:`` or ``-`` (None when there is none)."""
        head = self.peek()
        if head is None:
            return None
        index, indent, text = head
        if indent > parent_indent or (list_at_same_indent and indent == parent_indent and _is_item(text)):
            return self.node(index, indent, text, depth + 1)
        return None

    def next_in_block(self, indent: int, above: str) -> Optional[Tuple[int, str]]:
        """The next line of the block at ``indent``: (index, text), or None where the block ends.

        A line indented deeper than the block belongs to nothing: an error that names ``above``."""
        head = self.peek()
        if head is None or head[1] < indent:
            return None
        index, at, text = head
        if at > indent:
            raise self.error(index, f"unexpected indentation (a line indented deeper than {above})")
        return index, text

    def mapping(self, indent: int, depth: int) -> Dict[str, Any]:
        result: Dict[str, Any] = {}
        while True:
            line = self.next_in_block(indent, "the key above it")
            if line is None:
                return result
            index, text = line
            if _is_item(text):
                raise self.error(index, "a list item where a 'key: value' line was expected")
            split = _split_key(text)
            if split is None:
                raise self.error(index, f"expected 'key: value', found {_show(text)}")
            key, rest = split
            if key.startswith(('"', "'")):
                key = self.quoted_key(index, key)
            if key in result:
                raise self.error(index, f"duplicate key {key!r}")
            self.pos = index + 1
            result[key] = self.value(index, rest, indent, depth)

    def sequence(self, indent: int, depth: int) -> List[Any]:
        result: List[Any] = []
        while True:
            line = self.next_in_block(indent, "the list item above it")
            if line is None:
                return result
            index, text = line
            if not _is_item(text):
                return result  # the mapping this list is a value of goes on
            rest = text[1:]
            content = rest.lstrip(" ")
            if not content or content.startswith("#"):
                self.pos = index + 1
                result.append(self.child(indent, depth, list_at_same_indent=False))
                continue
            column = indent + 1 + len(rest) - len(content)
            if _is_item(content) or (_split_key(content) is not None and not content.startswith(("[", "{"))):
                # "- key: value" or "- - x": a collection starting inside the item; parse it
                # as if it began on a line of its own at that column.
                if depth + 1 > MAX_DEPTH:
                    raise self.error(index, f"nested more than {MAX_DEPTH} levels deep")
                self.lines[index] = " " * column + content
                result.append(self.node(index, column, content, depth + 1))
                continue
            self.pos = index + 1
            result.append(self.value(index, content, indent, depth, in_list=True))

    # scalars ----------------------------------------------------------------------------------

    def value(self, index: int, rest: str, indent: int, depth: int, in_list: bool = False) -> Any:
        """The value after ``key:`` (or ``- ``) on line ``index``; ``indent`` is the key's column."""
        rest = rest.strip(" ")
        if rest[:1] == "\t":
            rest = rest.strip()
        if not rest or rest.startswith("#"):
            return self.child(indent, depth, list_at_same_indent=not in_list)
        first = rest[0]
        if first in "|>":
            return self.block_scalar(index, rest, indent)
        if first in "\"'":
            text, end_index, after = self.quoted(index, rest)
            self.expect_end(end_index, after)
            return text
        if first in "[{":
            return self.flow(index, rest, depth)
        if first in "&*!":
            raise self.error(index, "anchors, aliases and tags (&, *, !) are not supported in a SKILL.md frontmatter; quote the value")
        if first in "@`":
            raise self.error(index, f"a plain value cannot start with {first!r}; quote it")
        if first == "%":
            raise self.error(index, "YAML directives are not supported; quote the value")
        return self.scalar(index, rest, indent)

    def scalar(self, index: int, text: str, indent: int) -> Any:
        """A plain scalar, with its continuation lines (indented deeper than ``indent``) folded in."""
        words = [_strip_comment(text)]
        commented = words[0] != text.rstrip()
        blanks = 0
        while not commented and self.pos < len(self.lines):
            line = self.lines[self.pos]
            stripped = line.lstrip(" ")
            if not stripped.strip():
                blanks += 1
                self.pos += 1
                continue
            at = len(line) - len(stripped)
            if at <= indent or stripped.startswith("#"):
                break
            if stripped[0] == "\t":
                raise self.error(self.pos, "a tab in the indentation; YAML allows only spaces there, replace it with spaces")
            part = _strip_comment(stripped)
            commented = part != stripped.rstrip()
            words.append("\n" * blanks if blanks else " ")
            words.append(part)
            blanks = 0
            self.pos += 1
        if blanks:
            # The blank lines belong to whatever follows; step back over them.
            self.pos -= blanks
        plain = "".join(words).strip()
        if len(words) == 1:
            return _resolve(plain)
        return plain

    def expect_end(self, index: int, after: str) -> None:
        after = after.strip()
        if after and not after.startswith("#"):
            raise self.error(index, f"unexpected text after the closing quote: {_show(after)}")

    def quoted_key(self, index: int, key: str) -> str:
        text, end_index, after = _Parser([key]).quoted(0, key)
        if after.strip():
            raise self.error(index, f"unexpected text after the quoted key: {_show(after)}")
        return text

    def quoted(self, index: int, rest: str) -> Tuple[str, int, str]:
        """A quoted scalar starting at ``rest[0]`` on line ``index`` (possibly over several lines).

        Returns (its value, the index of the line it ends on, the text after the closing quote).
        """
        quote = rest[0]
        out: List[str] = []
        line = rest[1:]
        current = index
        while True:
            try:
                end, escaped_break = _quoted_part(line, 0, quote, out)
            except ValueError as exc:
                raise self.error(current, str(exc)) from None
            if end is not None:
                self.pos = current + 1
                return "".join(out), current, line[end:]
            # The string goes on past the line end: fold the break (YAML flow folding).
            blanks = 0
            current += 1
            while current < len(self.lines) and not self.lines[current].strip(" \t"):
                blanks += 1
                current += 1
            if current >= len(self.lines):
                kind = "double" if quote == '"' else "single"
                raise self.error(index, f"a {kind}-quoted string opened here is never closed")
            if not escaped_break:
                while out and out[-1] in (" ", "\t"):
                    out.pop()
                out.append("\n" * blanks if blanks else " ")
            elif blanks:
                out.append("\n" * blanks)
            line = self.lines[current].lstrip(" \t")

    def block_scalar(self, index: int, header: str, indent: int) -> str:
        """A ``|`` or ``>`` block scalar; ``indent`` is the column of its key (or list dash)."""
        style = header[0]
        indicators, _, comment = header[1:].replace("\t", " ").partition(" ")
        if comment.strip() and not comment.strip().startswith("#"):
            raise self.error(index, f"unexpected text after the block scalar header {style!r}: {_show(comment.strip())}")
        chomp = "clip"
        explicit = 0
        for ch in indicators:
            if ch in "+-" and chomp == "clip":
                chomp = "keep" if ch == "+" else "strip"
            elif ch in "123456789" and not explicit:
                explicit = int(ch)
            else:
                raise self.error(index, f"invalid block scalar header {_show(header)}: after | or > only one of - or +, and one digit 1-9")
        content_indent = indent + explicit if explicit else 0
        raw: List[str] = []
        i = index + 1
        while i < len(self.lines):
            line = self.lines[i]
            at = len(line) - len(line.lstrip(" "))
            if not line.strip(" \t"):
                raw.append(line)
                i += 1
                continue
            if not content_indent:
                if at <= indent:
                    break
                content_indent = at
            if at < content_indent:
                break
            raw.append(line)
            i += 1
        self.pos = i
        content = [line[content_indent:] if line.strip(" \t") else "" for line in raw]
        trailing = 0
        while content and content[-1] == "":
            content.pop()
            trailing += 1
        if not content:
            return "\n" * trailing if chomp == "keep" else ""
        body = "\n".join(content) if style == "|" else _fold(content)
        if chomp == "strip":
            return body
        if chomp == "keep":
            return body + "\n" * (trailing + 1)
        return body + "\n"

    def flow(self, index: int, rest: str, depth: int) -> Any:
        """A one-level flow sequence ``[a, b]`` or mapping ``{a: b}``, possibly over several lines.

        Quoted entries must close on the line they open on.  Linear in the input:
        plain text is collected in a list of pieces, not by growing a string.
        """
        opener = rest[0]
        closer = "]" if opener == "[" else "}"
        kind = "list" if opener == "[" else "mapping"
        items: List[Any] = []
        pairs: Dict[str, Any] = {}
        current = index
        text = rest[1:]
        key: Optional[str] = None  # a mapping entry's key, once its ':' is read
        plain: List[str] = []  # the pieces of the entry's plain text
        quoted: Optional[str] = None  # the entry's quoted value, once read

        def has_text() -> bool:
            return any(piece.strip(" \t") for piece in plain)

        def finish(final: bool) -> None:
            nonlocal key, plain, quoted
            words = "".join(plain).strip(" \t")
            if quoted is None and not words and key is None:
                if not final:
                    raise self.error(current, f"an empty entry in a flow {kind} (two commas in a row?)")
            else:
                value = quoted if quoted is not None else _resolve(words)
                if opener == "[":
                    items.append(value)
                elif key is None:
                    raise self.error(current, f"a flow mapping entry must be 'key: value', found {_show(words or str(quoted))}")
                elif key in pairs:
                    raise self.error(current, f"duplicate key {key!r}")
                else:
                    pairs[key] = value
            key, plain, quoted = None, [], None

        while True:
            i = 0
            n = len(text)
            while i < n:
                ch = text[i]
                if ch in "\"'" and quoted is None and not has_text():
                    out: List[str] = []
                    try:
                        end, _ = _quoted_part(text, i + 1, ch, out)
                    except ValueError as exc:
                        raise self.error(current, str(exc)) from None
                    if end is None:
                        raise self.error(current, f"a quoted entry of a flow {kind} must close on its own line")
                    quoted = "".join(out)
                    plain = []
                    i = end
                    continue
                if ch in "[{":
                    raise self.error(current, f"nested flow collections ({opener}...{ch}...) are not supported; use a block list or mapping")
                if ch == "#" and (i == 0 or text[i - 1] in " \t"):
                    break
                if ch == ":" and opener == "{" and key is None and text[i + 1 : i + 2] in ("", " ", "\t", ",", "}"):
                    key = quoted if quoted is not None else "".join(plain).strip(" \t")
                    plain, quoted = [], None
                elif ch in (",", closer):
                    finish(final=ch == closer)
                    if ch == closer:
                        self.pos = current + 1
                        self.expect_end(current, text[i + 1 :])
                        return items if opener == "[" else pairs
                elif quoted is not None:
                    if ch not in " \t":
                        raise self.error(current, f"unexpected text after the closing quote: {_show(text[i:])}")
                else:
                    # A run of ordinary characters in one slice.
                    end = i + 1
                    while end < n and text[end] not in "\"'[{#:,]}":
                        end += 1
                    plain.append(text[i:end])
                    i = end
                    continue
                i += 1
            current += 1
            if current >= len(self.lines):
                raise self.error(index, f"a flow {kind} opened here with {opener!r} is never closed with {closer!r}")
            plain.append(" ")
            text = self.lines[current].strip(" \t")


def _quoted_part(line: str, start: int, quote: str, out: List[str]) -> Tuple[Optional[int], bool]:
    """Append the quoted text of ``line`` from ``start`` (just after an opening ``quote``) to ``out``.

    Returns (the index just past the closing quote, or None when the line ends
    first; True when it ended with an escaped line break).  Raises ValueError
    for a bad escape.
    """
    i = start
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == quote:
            if quote == "'" and i + 1 < n and line[i + 1] == "'":
                out.append("'")
                i += 2
                continue
            return i + 1, False
        if ch == "\\" and quote == '"':
            if i + 1 >= n:
                return None, True  # an escaped line break: joined with the next line, no space
            code = line[i + 1]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                i += 2
                continue
            if code in _HEX_ESCAPES:
                width = _HEX_ESCAPES[code]
                digits = line[i + 2 : i + 2 + width]
                if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise ValueError(f"bad escape \\{code}{digits}: needs {width} hex digits")
                try:
                    out.append(chr(int(digits, 16)))
                except (ValueError, OverflowError):
                    raise ValueError(f"bad escape \\{code}{digits}: not a Unicode code point") from None
                i += 2 + width
                continue
            raise ValueError(f"unknown escape \\{code} in a double-quoted string (write \\\\ for a backslash)")
        out.append(ch)
        i += 1
    return None, False


def _is_item(text: str) -> bool:
    return text == "-" or text.startswith("- ") or text.startswith("-\t")


def _split_key(text: str) -> Optional[Tuple[str, str]]:
    """(key, rest) of a ``key: value`` line, or None when the line is not one."""
    if text[:1] in ("'", '"'):
        quote = text[0]
        i = 1
        while i < len(text):
            if text[i] == "\\" and quote == '"':
                i += 2
                continue
            if text[i] == quote:
                if quote == "'" and text[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                after = text[i + 1 :].lstrip(" ")
                if after == ":" or after.startswith(": ") or after.startswith(":\t"):
                    return text[: i + 1], after[1:]
                return None
            i += 1
        return None
    if text[:1] in ("[", "{", "#", "|", ">", "&", "*", "!", "%", "@", "`"):
        return None
    for i, ch in enumerate(text):
        if ch == "#" and i and text[i - 1] in " \t":
            return None
        if ch == ":" and (i + 1 == len(text) or text[i + 1] in " \t"):
            key = text[:i].rstrip()
            return (key, text[i + 1 :]) if key else None
    return None


def _strip_comment(text: str) -> str:
    """``text`` without a `` #`` comment (YAML: ``#`` after whitespace starts one)."""
    for i, ch in enumerate(text):
        if ch == "#" and i and text[i - 1] in " \t":
            return text[:i].rstrip()
    return text.rstrip()


def _resolve(text: str) -> Any:
    """A plain scalar's value under the YAML 1.2 core schema (bools, null, decimal ints; else str)."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text in _NULL:
        return None
    digits = text[1:] if text[:1] in "+-" else text
    if digits.isdigit() and digits.isascii() and len(digits) <= 18:
        return int(text)
    return text


def _fold(lines: List[str]) -> str:
    """The lines of a ``>`` block scalar, folded: line breaks become spaces, blank lines newlines."""
    if not lines:
        return ""
    out = [lines[0]]
    previous = lines[0]
    blanks = 0
    for line in lines[1:]:
        if line == "":
            blanks += 1
            continue
        # More-indented lines (and the breaks around them) are kept as they are.
        kept = line[:1] in (" ", "\t") or previous[:1] in (" ", "\t")
        if kept:
            out.append("\n" * (blanks + 1))
        else:
            out.append("\n" * blanks if blanks else " ")
        out.append(line)
        previous = line
        blanks = 0
    return "".join(out)


def _show(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
