"""Which skills Claude Code would list in a session: discovery, and the SKILL.md frontmatter parser.

The suggestion hook may only suggest skills the model can actually invoke, so
``discover()`` follows what the ``claude`` binary does, not what the docs say.
Observed on ``@anthropic-ai/claude-code`` 2.1.330 (scratch HOME, a local
directory marketplace, the request body a fake Messages API received, and
``claude plugin list --json``), 2026-11-24:

* User skills: ``<config dir>/skills/<dir>/SKILL.md``; config dir = ``$CLAUDE_CONFIG_DIR``
  or ``~/.claude``.
* Project skills: ``.claude/skills/<dir>/SKILL.md`` in the project directory AND every
  parent up to the git root (the directory holding ``.git``), inclusive; nothing above
  the git root.  Outside a git repository every parent up to ``/`` counts.  The nearest
  directory wins a name clash.
* A skill is listed under its DIRECTORY name.  A different frontmatter ``name`` is only
  shown beside it (``- dir-a (other-name): ...``), and the Skill tool wants the listed
  name, so ``Skill.name`` is the directory name.
* No ``description`` (or an empty one): the first non-blank body line, without leading
  ``#`` marks, is the description.  A SKILL.md whose frontmatter does not parse is still
  listed (with that body line); we list it too, and add a warning.
* A SKILL.md with no frontmatter at all is listed too, described by its first line.  We
  list it WITHOUT a description: such a file need not be a skill at all (a link, or a
  hard link, to ``~/.netrc``), and its first line would go to the model as is.
* Claude Code follows symlinks anywhere: a skill directory or SKILL.md linked to a file
  outside every skills directory was listed with that file's first line (2.1.330,
  2026-12-07).  We follow a symlink only while it stays inside the skills directory it is
  in (``~/.claude/skills``, a project's ``.claude/skills``, a plugin's ``skills``; the
  directory itself may be a symlink); a skill that resolves outside it is left out and
  reported in ``skipped`` (a debug line in the log), never read.  A cloned project must
  not be able to put a file of the user's into the model's context or onto the screen.
* ``disable-model-invocation: true`` skills are NOT listed to the model; we skip them.
  (``user-invocable: false`` ones are listed, and kept.)
* Same name for a user and a project skill: the USER one is listed (not project > user).
  Plugin skills are ``<plugin>:<dir>`` and cannot clash with those.
* Plugins: every id in ``<config dir>/plugins/installed_plugins.json`` (v1: one object per
  id; v2: a list of per-scope entries) that is enabled and has an install entry for this
  project: user scope, or project/local scope whose ``projectPath`` is the project or
  contains it (the most specific one is read).  An installed plugin that no
  ``enabledPlugins`` mentions is DISABLED (``plugin list`` says ``enabled: false`` and its
  skills are not listed); ``false`` disables it too.  Layers, later wins: user
  ``<config dir>/settings.json``, project ``<project>/.claude/settings.json`` (the project
  directory only: the git root's settings.json did not apply in a subdirectory), local
  ``<project>/.claude/settings.local.json`` then the git root's ``settings.local.json``
  (that one did apply in a subdirectory, and beat the subdirectory's).
* The plugin part of the name is ``.claude-plugin/plugin.json``'s ``name`` (a plugin
  installed as ``plug-a@m`` whose manifest says ``manifest-a`` is listed as
  ``manifest-a:skill``); without a manifest, the id before ``@``.
* A plugin from a ``directory`` marketplace is read from that folder, not from the
  ``installPath`` copy (``plugin list`` shows it as ``readFromFolder``; an edited
  description in the folder was the one listed).
* Not copied: the binary does not load a plugin whose marketplace it does not know
  (``known_marketplaces.json``), nor one from a ``directory`` marketplace whose folder is
  gone; ``discover()`` lists both from their ``installPath`` (a normal install never
  leaves either state behind, and test fixtures need not write marketplace files).
* A hook's own plugin (``$CLAUDE_PLUGIN_ROOT``) is loaded in its session, installed or
  given with ``--plugin-dir`` (whose skills are listed as ``<plugin>:<skill>`` too), so its
  skills are included.
* Skills nested below the project (listed with a path prefix, ``apps/web:deploy``) and the
  binary's built-in skills are not discovered here.

Everything is bounded: at most ``MAX_SKILL_BYTES`` of each SKILL.md are read (the
frontmatter must end within them), at most ``MAX_SKILL_DIRS`` entries of a skills
directory are looked at, only regular files are opened (a FIFO named SKILL.md cannot
block), and the parser's nesting is capped, so a hostile tree cannot hang the hook.
"""

import json
import os
import stat
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from toolscript import paths

MAX_SKILL_BYTES = 64 * 1024  # of one SKILL.md: the frontmatter and the first body lines live here
MAX_SKILL_DIRS = 1000  # entries looked at in one skills directory
MAX_DESCRIPTION = 1024  # characters kept of a description (the Agent Skills format's limit for the field)
MAX_DEPTH = 32  # nesting levels the frontmatter parser accepts


class Skill(NamedTuple):
    name: str  # as Claude Code lists it: "skill" for user/project skills, "plugin:skill" for plugin skills
    description: str  # frontmatter ``description`` (or the first body line after one), whitespace-collapsed, <= 1024 chars
    source: str  # "project" | "user" | "plugin"
    path: str  # absolute path of the SKILL.md


class FrontmatterError(ValueError):
    """The frontmatter is not the YAML subset skills use; the message says which line and what is wrong."""


# -- the frontmatter parser ----------------------------------------------------------------
#
# The YAML subset SKILL.md files use: block mappings and sequences, plain, single- and
# double-quoted scalars (one or several lines), ``|``/``>`` block scalars with chomping and
# indentation indicators, one-level flow sequences/mappings, ``#`` comments.  Plain scalars:
# true/false -> bool, null/~/empty -> None, decimal integers -> int, everything else a str
# (YAML 1.2 core schema; ``yes``/``no`` and dates stay strings).  Quoted scalars are always
# strings.  Anchors, aliases, tags and multiple documents are refused.  Deliberately more
# lenient than YAML in one way Claude Code is too: a plain value may contain ``: `` (the
# common ``description: Use when: ...``).

_TRUE = ("true", "True", "TRUE")
_FALSE = ("false", "False", "FALSE")
_NULL = ("null", "Null", "NULL", "~", "")
_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
    "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def split_frontmatter(text: str) -> Tuple[Optional[List[str]], str]:
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


def parse_frontmatter(text: str) -> Dict[str, Any]:
    """The frontmatter of a SKILL.md as a dict (``{}`` when there is none); raises ``FrontmatterError``."""
    lines, _ = split_frontmatter(text)
    return {} if lines is None else _parse_lines(lines)


def _parse_lines(lines: List[str]) -> Dict[str, Any]:
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


# -- discovery -------------------------------------------------------------------------------


claude_config_dir = paths.claude_config_dir  # doctor reads it from here too


def plugin_entries(document: Any) -> Dict[str, List[Dict[str, Any]]]:
    """``{plugin id: [install entries]}`` from installed_plugins.json, v1 or v2.

    v1 maps each id to one object, v2 to a list of them (one per scope);
    fields are read by key.  Raises ``ValueError`` for an unexpected shape.
    """
    if not isinstance(document, dict) or not isinstance(document.get("plugins"), dict):
        raise ValueError('expected an object with a "plugins" object')
    found: Dict[str, List[Dict[str, Any]]] = {}
    for plugin_id, value in document["plugins"].items():
        entries = value if isinstance(value, list) else [value]
        found[plugin_id] = [entry for entry in entries if isinstance(entry, dict)]
    return found


def discover(
    cwd: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    warnings: Optional[List[str]] = None,
    skipped: Optional[List[str]] = None,
) -> List[Skill]:
    """Every skill Claude Code would list to the model in a session started in ``cwd``, sorted by name.

    The project is ``$CLAUDE_PROJECT_DIR`` when set, else ``cwd`` (default: the
    current directory).  ``$CLAUDE_PLUGIN_ROOT`` (set for a plugin's hooks) adds
    that plugin's skills: the session has it loaded, even with ``--plugin-dir``.  A name listed twice keeps the first of: user skills,
    project skills (nearest directory first), plugin skills.  Never raises for
    bad files: each unreadable or malformed one adds a line to ``warnings``
    naming its path (and is logged at info level); missing directories are fine.
    A skill whose SKILL.md resolves outside its skills directory (a symlink) is
    not read: a line naming it goes to ``skipped`` (and the log, at debug level).
    """
    env = os.environ if env is None else env
    project = os.path.abspath(env.get("CLAUDE_PROJECT_DIR") or (os.getcwd() if cwd is None else cwd))
    found = warnings if warnings is not None else []

    def warn(message: str) -> None:
        found.append(message)
        from toolscript import log  # only when there is something to say: keeps the hook's imports small

        log.get("skills").info("%s", message)

    left_out = skipped if skipped is not None else []

    def skip(message: str) -> None:
        left_out.append(message)
        from toolscript import log

        log.get("skills").debug("%s", message)

    config_dir = claude_config_dir(env)
    project_dirs, git_root = _project_dirs(project)
    chosen: Dict[str, Skill] = {}
    scanned = set()
    roots = [(os.path.join(config_dir, "skills"), "user")]
    roots += [(os.path.join(directory, ".claude", "skills"), "project") for directory in project_dirs]
    for directory, source in roots:
        key = _real(directory)
        if key in scanned:
            continue  # e.g. a project under HOME reaching ~/.claude/skills again
        scanned.add(key)
        for skill in _scan(directory, source, "", warn, skip):
            chosen.setdefault(skill.name, skill)
    plugin_roots = _enabled_plugin_roots(config_dir, project, git_root, warn)
    own = env.get("CLAUDE_PLUGIN_ROOT")
    if own and os.path.isdir(own) and _real(own) not in {_real(root) for root, _ in plugin_roots}:
        # A hook runs from a plugin the session has loaded, installed or not (--plugin-dir):
        # its skills are listed too.  Without a manifest, --plugin-dir names it by its directory.
        plugin_roots.append((own, _plugin_name(own, os.path.basename(os.path.normpath(own)))))
    for root, plugin_name in plugin_roots:
        for skill in _scan(os.path.join(root, "skills"), "plugin", plugin_name + ":", warn, skip):
            chosen.setdefault(skill.name, skill)
    return sorted(chosen.values(), key=lambda skill: skill.name)


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _project_dirs(project: str) -> Tuple[List[str], Optional[str]]:
    """(the project directory and its parents up to the git root, nearest first; the git root or None)."""
    dirs: List[str] = []
    directory = project
    while True:
        dirs.append(directory)
        if os.path.exists(os.path.join(directory, ".git")):
            return dirs, directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return dirs, None
        directory = parent


def _scan(directory: str, source: str, prefix: str, warn: Callable[[str], None], skip: Callable[[str], None]) -> List[Skill]:
    """The skills in ``directory/<name>/SKILL.md``, named ``prefix + <name>``; none read from outside ``directory``."""
    try:
        with os.scandir(directory) as listing:
            names = []
            for count, entry in enumerate(listing):
                if count >= MAX_SKILL_DIRS:
                    warn(f"{directory}: more than {MAX_SKILL_DIRS} entries; only the first {MAX_SKILL_DIRS} were looked at")
                    break
                names.append(entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        warn(f"{directory}: cannot list the skills there: {exc.strerror or exc}")
        return []
    root = _real(directory)
    skills = []
    for name in sorted(names):
        if name.startswith("."):
            continue
        path = os.path.join(directory, name, "SKILL.md")
        real = _real(path)
        if not real.startswith(root.rstrip(os.sep) + os.sep):
            # A symlink (the skill's directory or its SKILL.md) out of the skills directory: whatever
            # file it names, its words must not reach the model or the screen.
            if os.path.exists(real):
                skip(f"{path}: a symlink to a file outside {directory}; skipped (toolscript reads no SKILL.md outside its skills directory)")
            continue
        skill = _read_skill(path, real, prefix + name, source, warn)
        if skill is not None:
            skills.append(skill)
    return skills


def _read_regular(path: str, limit: int, follow: bool = True) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path`` (one more than allowed tells it was cut).

    Raises ``FileNotFoundError``/``NotADirectoryError`` when there is no such file
    and ``OSError`` otherwise; a FIFO, device or directory is refused without
    blocking (opened with O_NONBLOCK, checked with fstat).  ``follow=False``
    refuses a symlink as the last part of ``path`` (O_NOFOLLOW: ELOOP).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags if follow else flags | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read_skill(path: str, real: str, name: str, source: str, warn: Callable[[str], None]) -> Optional[Skill]:
    """The skill in the SKILL.md at ``path``, read from ``real`` (its resolved path, checked to be in the
    skills directory); None when there is none or the model cannot invoke it."""
    try:
        # Not through a symlink put there since ``real`` was resolved and checked.
        raw = _read_regular(real, MAX_SKILL_BYTES, follow=False)
    except (FileNotFoundError, NotADirectoryError):
        return None  # a directory without a SKILL.md (or not a directory at all) is no skill
    except OSError as exc:
        warn(f"{path}: cannot read it: {exc.strerror or exc}; skipped")
        return None
    truncated = len(raw) > MAX_SKILL_BYTES
    raw = raw[:MAX_SKILL_BYTES]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (truncated and exc.start >= len(raw) - 3):
            warn(f"{path}: not valid UTF-8 (byte {exc.start}); skipped")
            return None
        text = raw[: exc.start].decode("utf-8")  # the cut fell inside a character
    body = ""  # stays empty when the frontmatter is never closed
    try:
        lines, body = split_frontmatter(text)
        if lines is None:
            # No frontmatter: Claude Code lists the file, described by its first line.  The file
            # may be anything (a hard link to ~/.netrc, a secret's first line); listing it keeps
            # the name the model can invoke, and no line of it goes to the model or the screen.
            body = ""
        meta = _parse_lines(lines) if lines is not None else {}
    except FrontmatterError as exc:
        limit = f" (only the first {MAX_SKILL_BYTES // 1024} KiB are read)" if truncated else ""
        # Claude Code still lists such a skill, described by its first body line; so do we.
        warn(f"{path}: {exc}{limit}; listed without its frontmatter")
        meta = {}
    invocation = meta.get("disable-model-invocation")
    if invocation is True or (isinstance(invocation, str) and invocation.strip().lower() == "true"):
        return None
    description = _text_of(meta.get("description"))
    if not description:
        description = _first_line(body)
    return Skill(name, _clip(description), source, os.path.abspath(path))


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(_text_of(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if not isinstance(value, dict) else ""


def _first_line(body: str) -> str:
    """The first non-blank body line without leading ``#`` marks: Claude Code's fallback description."""
    for line in body.split("\n"):
        line = line.strip()
        if line:
            return line.lstrip("#").strip()
    return ""


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1].rstrip() + "\u2026"


MAX_JSON_BYTES = 16 * 1024 * 1024  # of a settings or plugins file


def _read_json(path: str, warn: Callable[[str], None]) -> Any:
    """The JSON document at ``path``; None when it is missing, or (with a warning) unreadable or invalid."""
    try:
        raw = _read_regular(path, MAX_JSON_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        warn(f"{path}: cannot read it: {exc.strerror or exc}; ignored")
        return None
    if len(raw) > MAX_JSON_BYTES:
        warn(f"{path}: larger than {MAX_JSON_BYTES // (1024 * 1024)} MiB; ignored")
        return None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        warn(f"{path}: not valid UTF-8 (byte {exc.start}); ignored")
    except json.JSONDecodeError as exc:
        warn(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg}); ignored")
    except RecursionError:
        warn(f"{path}: invalid JSON (nested too deeply); ignored")
    return None


def enabled_plugins(config_dir: str, project: str, git_root: Optional[str], warn: Callable[[str], None]) -> Dict[str, bool]:
    """``{plugin id: enabled}`` from ``enabledPlugins`` in the user, project and local settings (later wins)."""
    layers = [
        os.path.join(config_dir, "settings.json"),
        os.path.join(project, ".claude", "settings.json"),
        os.path.join(project, ".claude", "settings.local.json"),
    ]
    if git_root is not None and git_root != project:
        layers.append(os.path.join(git_root, ".claude", "settings.local.json"))
    merged: Dict[str, bool] = {}
    for path in layers:
        document = _read_json(path, warn)
        section = document.get("enabledPlugins") if isinstance(document, dict) else None
        if isinstance(section, dict):
            merged.update({plugin_id: value for plugin_id, value in section.items() if isinstance(value, bool)})
    return merged


def install_applies(entry: Dict[str, Any], project: str) -> bool:
    """Whether an install entry is this project's own (user scope: every project's)."""
    scope = entry.get("scope") or "user"
    if scope == "user":
        return True
    there = entry.get("projectPath")
    if not isinstance(there, str) or not there:
        return False
    here, there = _real(project), _real(there)
    return here == there or here.startswith(there.rstrip(os.sep) + os.sep)


_SCOPE_RANK = {"local": 0, "project": 1, "user": 2}


def _install_path(entries: List[Dict[str, Any]], project: str) -> Optional[str]:
    """The installPath to read: this project's local, then project, then the user install; None when none applies.

    Claude Code 2.1.330, given a plugin enabled in user settings whose only install entry
    was a project-scope one for ANOTHER project, did not load it ("not cached") in that
    session; it added a user-scope entry to installed_plugins.json, which later sessions
    (and ``discover()``) then use.
    """
    usable = [entry for entry in entries if isinstance(entry.get("installPath"), str) and entry["installPath"] and install_applies(entry, project)]
    if not usable:
        return None
    return str(min(usable, key=lambda entry: _SCOPE_RANK.get(str(entry.get("scope") or "user"), 3))["installPath"])


def _enabled_plugin_roots(config_dir: str, project: str, git_root: Optional[str], warn: Callable[[str], None]) -> List[Tuple[str, str]]:
    """(plugin directory, plugin name) for every installed plugin enabled in this project, by id."""
    path = os.path.join(config_dir, "plugins", "installed_plugins.json")
    document = _read_json(path, warn)
    if document is None:
        return []
    try:
        installed = plugin_entries(document)
    except ValueError as exc:
        warn(f"{path}: unexpected format ({exc}); plugin skills skipped")
        return []
    enabled = enabled_plugins(config_dir, project, git_root, warn)
    markets: Dict[str, Any] = {}
    roots = []
    for plugin_id in sorted(installed):
        if enabled.get(plugin_id) is not True:
            continue  # installed but in no enabledPlugins (or false): disabled, as `claude plugin list` says
        install_path = _install_path(installed[plugin_id], project)
        if install_path is None:
            continue
        root = _folder_of(plugin_id, config_dir, markets, warn) or install_path
        roots.append((root, _plugin_name(root, plugin_id)))
    return roots


def _folder_of(plugin_id: str, config_dir: str, markets: Dict[str, Any], warn: Callable[[str], None]) -> Optional[str]:
    """The source folder of a plugin from a ``directory`` marketplace (what Claude Code reads), or None."""
    name, _, market = plugin_id.partition("@")
    if not market:
        return None
    if "known" not in markets:
        markets["known"] = _read_json(os.path.join(config_dir, "plugins", "known_marketplaces.json"), warn)
    known = markets["known"]
    record = known.get(market) if isinstance(known, dict) else None
    if not isinstance(record, dict):
        return None
    source = record.get("source")
    if not isinstance(source, dict) or source.get("source") != "directory":
        return None
    base = record.get("installLocation") or source.get("path")
    if not isinstance(base, str) or not base:
        return None
    if market not in markets:
        markets[market] = _read_json(os.path.join(base, ".claude-plugin", "marketplace.json"), warn)
    manifest = markets[market]
    plugins = manifest.get("plugins") if isinstance(manifest, dict) else None
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    plugin_root = metadata.get("pluginRoot") if isinstance(metadata, dict) else None
    for item in plugins if isinstance(plugins, list) else []:
        if isinstance(item, dict) and item.get("name") == name and isinstance(item.get("source"), str):
            candidates = [os.path.join(base, item["source"])]
            if isinstance(plugin_root, str) and plugin_root:
                candidates.append(os.path.join(base, plugin_root, item["source"]))
            for candidate in candidates:
                if os.path.isdir(candidate):
                    return os.path.normpath(candidate)
    return None


def _plugin_name(root: str, plugin_id: str) -> str:
    """``.claude-plugin/plugin.json``'s ``name`` (what Claude Code prefixes skills with), else the id before ``@``."""
    manifest = os.path.join(root, ".claude-plugin", "plugin.json")
    try:
        name = json.loads(_read_regular(manifest, 1024 * 1024).decode("utf-8-sig")).get("name")
        if isinstance(name, str) and name.strip():
            return name.strip()
    except (OSError, ValueError, AttributeError, RecursionError):
        pass
    return plugin_id.partition("@")[0]
