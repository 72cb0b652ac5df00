"""What memory records from Claude Code's hook events: one line per action, the answer, a session summary.

Pure functions from the fields of a hook's stdin JSON to a ``Captured``
(what ``Store.add`` is given); the hook handlers call them and store the
result.  Payload shapes (as Claude Code 2.x sends them):

* PostToolUse: ``tool_name``, ``tool_input``, ``tool_response``.  Bash
  ``{command, description}`` -> ``{stdout, stderr, interrupted, ...}``; Edit
  ``{file_path, old_string, new_string, replace_all}``; MultiEdit
  ``{file_path, edits}``; Write ``{file_path, content}`` -> ``{type:
  "create"|"update", ...}``; Read/Grep/Glob/LS (read-only: skipped unless
  ``capture_read_only``); WebFetch ``{url, prompt}`` -> ``{code, codeText,
  result}``; WebSearch ``{query}``; Task/Agent ``{description, prompt,
  subagent_type}`` -> ``{status, content: [{type: text, text}]}``; TodoWrite
  (skipped: the plan, not work); ``mcp__server__tool`` -> content blocks or
  a string.  A failed tool's ``tool_response`` may be a plain string
  ("Error: ...").
* Stop: ``last_assistant_message`` (a string, or content blocks).
* SessionEnd: no text of its own; ``session_summary`` condenses the
  session's memories, offline and without a model.

One line per action: what was done, the salient input (command, file,
pattern, arguments abbreviated), a short outcome (the first meaningful line,
an error, "interrupted"), files touched relative to ``cwd`` when inside it.
Nothing here raises, whatever the payload (None, lists, numbers, deep
nesting, NULs, lone surrogates): an event that cannot be read is not stored.

Secrets and ``<private>`` spans are removed from every text as it is read,
before anything is shortened: a token cut first would no longer be
recognisable and its first characters would be kept (``Store.add`` cleans
again).  What comes from a tool's output (a command's stdout, an MCP
result, a fetched page, an agent's answer) is kept short and quoted, as
``output "..."``: later sessions see it as what a tool printed, not as words
of the user's or of Claude's.
"""

import os
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from toolscript.memory.redact import REDACTED, clean as _without_secrets, is_placeholder, is_secret_name

if TYPE_CHECKING:  # only needed for the hints
    from toolscript.memory import Memory

__all__ = ["Captured", "from_tool_use", "from_response", "session_summary", "MAX_CONTENT",
           "MAX_ACTION", "MAX_RESPONSE", "MAX_SUMMARY", "OUTPUT_CHARS", "READ_ONLY_TOOLS"]

MAX_ACTION = 600      # one action line
MAX_RESPONSE = 1500   # Claude's answer at Stop
MAX_SUMMARY = 800     # the SessionEnd summary
OUTPUT_CHARS = 120    # what is kept of a tool's output: an error line or a test summary, not a page
MAX_CONTENT = max(MAX_ACTION, MAX_RESPONSE, MAX_SUMMARY)  # no Captured is longer than this

# Tools that only look: their actions are noise in memory unless asked for.
READ_ONLY_TOOLS = frozenset({"Read", "Grep", "Glob", "LS", "NotebookRead", "TodoRead", "BashOutput",
                             "ListMcpResourcesTool", "ReadMcpResourceTool"})
# Tools whose calls are bookkeeping, not work.
SKIPPED_TOOLS = frozenset({"TodoWrite", "ExitPlanMode", "EnterPlanMode"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})

# Bounds on what is looked at, so a megabyte payload costs no more than a small one.  A longer
# text is cut back to a space within _SCAN_MARGIN of the bound, so no secret is cut in half.
_SCAN_CHARS = 64 * 1024
_SCAN_MARGIN = 4096
_MAX_DEPTH = 6


class Captured(NamedTuple):
    kind: str         # "action" | "response" | "summary"
    tool: str
    content: str
    files: List[str]


# -- safe text ---------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def _str(value: Any) -> str:
    """``value`` as text when it is text or a number, else ""; never raises."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, str):
        text = value if len(value) <= _SCAN_CHARS else _bounded(value)
    elif isinstance(value, (int, float)):
        text = repr(value)
    else:
        return ""
    # Lone surrogates (from JSON "\udcff") cannot be stored or printed.
    return text.encode("utf-8", "replace").decode("utf-8")


def _bounded(text: str) -> str:
    """The first _SCAN_CHARS of ``text``, ending at whitespace: whatever word the bound fell in is left out whole."""
    head = text[:_SCAN_CHARS]
    space = max(head.rfind(" ", _SCAN_CHARS - _SCAN_MARGIN), head.rfind("\n", _SCAN_CHARS - _SCAN_MARGIN))
    return head[:space] if space > 0 else head[: _SCAN_CHARS - _SCAN_MARGIN]


def _is_binary(text: str) -> bool:
    if "\x00" in text:
        return True
    sample = text[:2048]
    odd = sum(1 for ch in sample if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\r\t\x1b"))
    return len(sample) > 0 and odd / float(len(sample)) > 0.1


def _clean(text: str) -> str:
    """Text without terminal escapes, control characters (newlines and tabs kept), ``<private>`` spans or secrets.

    Escapes go first, so a token split by colour codes is whole when it is looked for.
    """
    plain = _CONTROL.sub("", _ANSI.sub("", text)).replace("\r\n", "\n").replace("\r", "\n")
    return _without_secrets(plain)


def _quoted(text: str, limit: int = OUTPUT_CHARS) -> str:
    """A tool's output as a short quotation: ``output "..."``, its own double quotes made single, so it cannot end the quote."""
    return 'output "%s"' % _cut(text.replace('"', "'"), limit)


def _cut(text: str, limit: int) -> str:
    """One line of at most ``limit`` chars, cut at a word boundary with an ellipsis."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: max(1, limit - 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def _get(mapping: Any, *keys: str) -> Any:
    """The first of ``keys`` present in ``mapping`` when it is a dict, else None."""
    if isinstance(mapping, dict):
        for key in keys:
            if key in mapping and mapping[key] is not None:
                return mapping[key]
    return None


def _block_text(value: Any, depth: int = 0) -> str:
    """Text of a tool response: a string, MCP/Anthropic content blocks, or a dict holding them."""
    if depth > _MAX_DEPTH:
        return ""
    if isinstance(value, str):
        return _str(value)
    if isinstance(value, list):
        parts = []
        for item in value[:50]:
            if isinstance(item, dict) and item.get("type") not in (None, "text"):
                parts.append("[%s]" % _str(item.get("type")))
            else:
                parts.append(_block_text(item, depth + 1))
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        for key in ("text", "content", "result", "output", "stdout", "message", "error"):
            if key in value:
                text = _block_text(value[key], depth + 1)
                if text:
                    return text
    return ""


_ERROR_LINE = re.compile(r"\b(error|exception|traceback|fatal|failed|failure|denied|not found|no such)\b", re.I)
_SUMMARY_LINE = re.compile(r"\b(passed|failed|errors?|ok|done|finished|success|warnings?|built|compiled)\b", re.I)
_DECORATION = re.compile(r"^[\W_]+$")


def _meaningful_lines(text: str) -> List[str]:
    """Non-blank lines that are not just rules or punctuation; of a long text, its head and its tail."""
    lines = text.split("\n")
    if len(lines) > 220:  # the outcome is at the start or the end; the middle only costs time
        lines = lines[:200] + lines[-20:]
    return [line.strip() for line in lines if line.strip() and not _DECORATION.match(line.strip())]


def _outcome_of_output(text: str, limit: int = OUTPUT_CHARS) -> str:
    """How it went, as ``output "<line>"``: an error line, else a summary line near the end, else the first line."""
    if _is_binary(text):
        return "binary output (%d chars)" % len(text)
    line = _outcome_line(_clean(_head_and_tail(text)))
    return _quoted(line, limit) if line else ""


def _head_and_tail(text: str) -> str:
    """The lines an outcome is picked from (the first 200 and the last 20): only they need cleaning.

    The middle of a long output only costs time (redacting 64 KB of log takes
    milliseconds).  Should the middle open a private key block or a
    ``<private>`` span, the tail goes too: it may be that block's end.
    """
    lines = text.split("\n")
    if len(lines) <= 220:
        return text
    middle = "\n".join(lines[200:-20])
    opened = "PRIVATE KEY" in middle or "Private-Lines:" in middle or "<private" in middle.lower()
    return "\n".join(lines[:200] + ([] if opened else lines[-20:]))


def _outcome_line(text: str) -> str:
    lines = _meaningful_lines(text)
    if not lines:
        return ""
    for line in lines:
        if _ERROR_LINE.search(line):
            return line
    for line in reversed(lines[-3:]):  # test runners and builds sum up at the end
        if _SUMMARY_LINE.search(line):
            return line
    return lines[0]


# -- arguments and paths ---------------------------------------------------------


def _abbrev(value: Any, limit: int = 40, depth: int = 0) -> str:
    """A short, JSON-ish rendering of an argument value."""
    if depth > 2:
        return "…"
    if isinstance(value, str):
        text = _cut(_clean(_str(value)), limit)
        return text if text and " " not in text and len(text) < limit else '"%s"' % text
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, (int, float)):
        return _str(value)
    if isinstance(value, list):
        inner = ", ".join(_abbrev(v, 15, depth + 1) for v in value[:3])
        return "[%s%s]" % (inner, ", …" if len(value) > 3 else "")
    if isinstance(value, dict):
        inner = ", ".join("%s: %s" % (_key(k), _keyed(k, v, 15, depth + 1)) for k, v in list(value.items())[:3])
        return "{%s%s}" % (inner, ", …" if len(value) > 3 else "")
    return "…"


def _key(key: Any) -> str:
    return _clean(_str(key))[:60] or "?"


def _keyed(key: Any, value: Any, limit: int, depth: int = 0) -> str:
    """An argument's value, or [redacted] when its name says it is a secret (password, api_key, Authorization)."""
    if isinstance(key, str) and is_secret_name(key) and not (isinstance(value, str) and is_placeholder(value)):
        if isinstance(value, (str, int, float, list, dict)) and not isinstance(value, bool):
            return REDACTED
    return _abbrev(value, limit, depth)


def _args(tool_input: Any, limit: int = 200) -> str:
    if not isinstance(tool_input, dict):
        return _abbrev(tool_input) if tool_input not in (None, "", [], {}) else ""
    parts = ["%s=%s" % (_key(k), _keyed(k, v, 40)) for k, v in list(tool_input.items())[:5]]
    if len(tool_input) > 5:
        parts.append("…")
    return _cut(_clean(", ".join(parts)), limit)


def _rel(path: Any, cwd: str) -> str:
    """``path`` relative to ``cwd`` when it lies inside it, else as given; "" when not a path."""
    text = _clean(_str(path)).strip()
    if not text or "\n" in text:
        return ""
    try:
        if cwd and os.path.isabs(text) and os.path.isabs(cwd):
            norm, root = os.path.normpath(text), os.path.normpath(cwd)
            if norm == root:
                return "."
            if norm.startswith(root.rstrip(os.sep) + os.sep):
                return os.path.relpath(norm, root)
    except (ValueError, TypeError):
        pass
    return text[:300]


_PATHLIKE = re.compile(r"(?<![\w/.~:-])((?:~|\.{1,2})?/?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.([A-Za-z][A-Za-z0-9]{0,5}))(?![\w/(])")
# Suffixes that make a word without a "/" a file name rather than code ("os.path", "tools.call").
_FILE_SUFFIXES = frozenset(
    """py pyi pyz js mjs cjs ts tsx jsx json jsonl md mdx rst txt rs go java kt c h cc cpp hpp cs rb php sh bash
    zsh fish ps1 yaml yml toml ini cfg conf env lock html htm css scss sql csv tsv xml ipynb whl gz tgz zip tar log
    swift lua pl vue svelte tf dockerfile gradle mk patch diff pem""".split()
)


def _paths_in_command(command: str, cwd: str) -> List[str]:
    """File-looking words of a shell command's first line (``src/x.py``, ``/abs/a.md``), at most 5.

    Only the first line: the rest of a multi-line command is usually a
    heredoc or inline script, whose dotted names are code, not files.
    """
    found: List[str] = []
    for match in _PATHLIKE.finditer(command.split("\n", 1)[0][:2000]):
        word, suffix = match.group(1), match.group(2).lower()
        if "://" in command[max(0, match.start(1) - 12):match.start(1) + 3]:
            continue  # part of a URL
        if suffix not in _FILE_SUFFIXES and "/" not in word:
            continue
        rel = _rel(word, cwd)
        if rel and rel not in found:
            found.append(rel)
        if len(found) == 5:
            break
    return found


# -- one line per action ---------------------------------------------------------

_EXEC = re.compile(r"\btoolscript(?:\.pyz)?\s+(?:-\S+\s+)*exec\b")
_TOOLS_ATTR = re.compile(r"\btools\.([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s*\(")
_TOOLS_CALL = re.compile(r"""\btools\.call\(\s*["']([^"']+)["']""")


def _exec_tools(command: str) -> List[str]:
    """The tools a ``toolscript exec`` script calls, when its code is in the command (inline or heredoc)."""
    seen: Dict[str, None] = {}
    for server, tool in _TOOLS_ATTR.findall(command):
        if server != "call":
            seen.setdefault("%s.%s" % (server, tool))
    for name in _TOOLS_CALL.findall(command):
        seen.setdefault(name)
    return list(seen)[:8]


def _bash(tool_input: Any, tool_response: Any, cwd: str) -> Optional[Tuple[str, List[str]]]:
    command = _clean(_str(_get(tool_input, "command")))
    if not command.strip():
        return None
    description = _cut(_clean(_str(_get(tool_input, "description"))), 100)
    if isinstance(tool_response, dict):
        if tool_response.get("interrupted") is True:
            outcome = "interrupted"
        else:
            stdout = _str(tool_response.get("stdout"))
            stderr = _str(tool_response.get("stderr"))
            outcome = _outcome_of_output(stdout)
            if stderr.strip() and (not outcome or _ERROR_LINE.search(stderr) and not _ERROR_LINE.search(outcome)):
                outcome = _outcome_of_output(stderr) or outcome
            code = _get(tool_response, "exitCode", "returncode")
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                outcome = "exit %d" % code + (", " + outcome if outcome else "")
            # Claude Code's reading of a non-zero status, e.g. "No matches found" for grep.
            meaning = _cut(_clean(_str(tool_response.get("returnCodeInterpretation"))), 80)
            if meaning:
                outcome = meaning + (", " + outcome if outcome else "")
            if not outcome:
                outcome = "no output"
            if tool_response.get("isImage") is True:
                outcome = "image output"
            if _get(tool_input, "run_in_background") is True or tool_response.get("backgroundTaskId"):
                outcome = "started in the background"
    else:
        outcome = _outcome_of_output(_block_text(tool_response)) or "no output"
    if _EXEC.search(command):
        called = _exec_tools(command)
        first = command.strip().split("\n", 1)[0]
        line = "Ran toolscript exec `%s`" % _cut(first, 120)
        if called:
            line += " calling %s" % ", ".join(called)
    else:
        line = "Ran `%s`" % _cut(command, 200)
    if description:
        line += " (%s)" % description
    return "%s: %s" % (line, outcome), _paths_in_command(command, cwd)


def _snippet(text: Any, limit: int = 60) -> str:
    lines = _meaningful_lines(_clean(_str(text)))
    return _cut(lines[0], limit) if lines else ""


def _edit(tool_name: str, tool_input: Any, tool_response: Any, cwd: str) -> Optional[Tuple[str, List[str]]]:
    path = _rel(_get(tool_input, "file_path", "notebook_path", "path") or _get(tool_response, "filePath"), cwd)
    if not path:
        return None
    error = _failure(tool_response)
    if tool_name == "Write":
        content = _str(_get(tool_input, "content"))
        verb = "Created" if _get(tool_response, "type") == "create" else "Wrote"
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        line = "%s %s (%d line%s)" % (verb, path, lines, "" if lines == 1 else "s")
        first = _snippet(content)
        if first:
            line += ": %s" % first
    elif tool_name == "MultiEdit":
        edits = _get(tool_input, "edits")
        count = len(edits) if isinstance(edits, list) else 0
        line = "Edited %s (%d change%s)" % (path, count, "" if count == 1 else "s")
        if count and isinstance(edits[0], dict):
            line += ": %s" % _change(edits[0])
    elif tool_name == "NotebookEdit":
        mode = _str(_get(tool_input, "edit_mode")) or "replace"
        line = "Edited notebook %s (%s cell)" % (path, mode)
        first = _snippet(_get(tool_input, "new_source"))
        if first:
            line += ": %s" % first
    else:
        line = "Edited %s: %s" % (path, _change(tool_input))
        if _get(tool_input, "replace_all") is True:
            line += " (all occurrences)"
    if error:
        line += " - failed, %s" % _quoted(error)
    return line, [path]


def _change(edit: Any) -> str:
    old, new = _snippet(_get(edit, "old_string"), 60), _snippet(_get(edit, "new_string"), 60)
    if old and new:
        return "`%s` -> `%s`" % (old, new)
    if new:
        return "added `%s`" % new
    if old:
        return "removed `%s`" % old
    return "changed"


def _failure(tool_response: Any) -> str:
    """An error the response reports ("Error: ...", ``is_error``/``isError``, ``error``), unquoted, else ""."""
    if isinstance(tool_response, str):
        text = _clean(_str(tool_response)).strip()
        if re.match(r"^(<tool_use_error>|error\b)", text, re.I):
            return re.sub(r"</?tool_use_error>", "", text).strip()
        return ""
    if isinstance(tool_response, dict):
        if tool_response.get("isError") is True or tool_response.get("is_error") is True:
            return _outcome_line(_clean(_block_text(tool_response))) or "error"
        error = tool_response.get("error")
        if isinstance(error, str) and error.strip():
            return _clean(_str(error)).strip()
    return ""


def _read_only(tool_name: str, tool_input: Any, tool_response: Any, cwd: str) -> Tuple[str, List[str]]:
    if tool_name == "Read":
        path = _rel(_get(tool_input, "file_path"), cwd)
        offset, limit = _get(tool_input, "offset"), _get(tool_input, "limit")
        line = "Read %s" % (path or "a file")
        if isinstance(offset, int) and isinstance(limit, int) and not isinstance(offset, bool):
            line += " (lines %d-%d)" % (offset, offset + limit - 1)
        elif isinstance(offset, int) and not isinstance(offset, bool):
            line += " (from line %d)" % offset
        elif isinstance(limit, int) and not isinstance(limit, bool):
            line += " (first %d lines)" % limit
        return line, [path] if path else []
    if tool_name == "Grep":
        pattern = _cut(_clean(_str(_get(tool_input, "pattern"))), 80)
        where = _rel(_get(tool_input, "path"), cwd)
        count = _get(tool_response, "numFiles")
        line = "Searched for `%s`%s" % (pattern, " in %s" % where if where else "")
        if isinstance(count, int):
            line += ": %d file%s" % (count, "" if count == 1 else "s")
        return line, []
    if tool_name == "Glob":
        pattern = _cut(_clean(_str(_get(tool_input, "pattern"))), 80)
        count = _get(tool_response, "numFiles")
        line = "Listed `%s`" % pattern
        if isinstance(count, int):
            line += ": %d file%s" % (count, "" if count == 1 else "s")
        return line, []
    return _generic(tool_name, tool_input, tool_response), []


def _web(tool_name: str, tool_input: Any, tool_response: Any) -> str:
    if tool_name == "WebFetch":
        url = _cut(_clean(_str(_get(tool_input, "url"))), 200)
        prompt = _cut(_clean(_str(_get(tool_input, "prompt"))), 100)
        line = "Fetched %s" % (url or "a URL")
        if prompt:
            line += " (%s)" % prompt
        code = _get(tool_response, "code")
        result = _outcome_of_output(_str(_get(tool_response, "result")) or _block_text(tool_response))
        outcome = ("HTTP %s" % _str(code)) if isinstance(code, int) else ""
        if result:
            outcome = (outcome + ", " if outcome else "") + result
        return line + (": %s" % outcome if outcome else "")
    query = _cut(_clean(_str(_get(tool_input, "query"))), 150)
    results = _get(tool_response, "results")
    line = "Searched the web for `%s`" % query
    titles: List[str] = []
    if isinstance(results, list):
        for item in results[:20]:
            for hit in (_get(item, "content") if isinstance(_get(item, "content"), list) else [item]):
                title = _str(_get(hit, "title"))
                if title and len(titles) < 3:
                    titles.append(_cut(_clean(title), 60))
    if titles:
        line += ": %s" % _quoted("; ".join(titles))
    return line


def _agent(tool_input: Any, tool_response: Any) -> str:
    kind = _cut(_clean(_str(_get(tool_input, "subagent_type"))), 40) or "general-purpose"
    description = _cut(_clean(_str(_get(tool_input, "description"))), 100)
    prompt = _cut(_clean(_str(_get(tool_input, "prompt"))), 100)
    line = "Delegated to a %s agent: %s" % (kind, description or prompt or "a task")
    result = _block_text(_get(tool_response, "content") if isinstance(tool_response, dict) else tool_response)
    if result:
        return line + " -> %s" % _quoted(_first_sentences(_clean(result), OUTPUT_CHARS), OUTPUT_CHARS)
    status = _cut(_clean(_str(_get(tool_response, "status"))), 40)
    return line + (" -> %s" % status if status else "")


def _mcp_name(tool_name: str) -> str:
    """``mcp__github__search_issues`` -> ``github.search_issues`` (a server name may itself hold ``__``)."""
    parts = tool_name.split("__")
    if len(parts) >= 3:
        return "%s.%s" % ("__".join(parts[1:-1]), parts[-1])
    return tool_name


def _generic(tool_name: str, tool_input: Any, tool_response: Any) -> str:
    name = _mcp_name(tool_name) if tool_name.startswith("mcp__") else tool_name
    line = "Called %s(%s)" % (name, _args(tool_input))
    error = _failure(tool_response)
    if error:
        return "%s -> error, %s" % (line, _quoted(error))
    outcome = _outcome_of_output(_block_text(tool_response))
    if not outcome and isinstance(tool_response, dict):
        outcome = _quoted(_args(tool_response, OUTPUT_CHARS)) if tool_response else ""
    return line + (" -> %s" % outcome if outcome else "")


def from_tool_use(tool_name: str, tool_input: Any, tool_response: Any, *, cwd: str = "",
                  capture_read_only: bool = False) -> Optional[Captured]:
    """One line for a PostToolUse event, or None when it is not worth storing (or cannot be read).

    ``cwd``: the event's working directory; files inside it are stored relative to it.
    """
    try:
        name = _clean(_str(tool_name)).strip()
        cwd = _str(cwd)
        if not name or name in SKIPPED_TOOLS:
            return None
        if name in READ_ONLY_TOOLS and not capture_read_only:
            return None
        files: List[str] = []
        if name == "Bash":
            done = _bash(tool_input, tool_response, cwd)
            if done is None:
                return None
            line, files = done
        elif name in EDIT_TOOLS:
            done = _edit(name, tool_input, tool_response, cwd)
            if done is None:
                return None
            line, files = done
        elif name in READ_ONLY_TOOLS:
            line, files = _read_only(name, tool_input, tool_response, cwd)
        elif name in ("WebFetch", "WebSearch"):
            line = _web(name, tool_input, tool_response)
        elif name in ("Task", "Agent"):
            line = _agent(tool_input, tool_response)
        else:
            line = _generic(name, tool_input, tool_response)
        content = _cut(_clean(line), MAX_ACTION)
        if not content:
            return None
        return Captured("action", name[:200], content, [f for f in files if f][:10])
    except Exception:  # a hook must never fail on an odd payload: such an event is just not stored
        return None


# -- Stop and SessionEnd -----------------------------------------------------------


_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n\n")
# Spaces and tabs before a line end, from the run's first one only: tried from
# each of a long run's characters it was quadratic (100,000 spaces in an
# answer took 10 s of the Stop hook).
_TRAILING_BLANKS = re.compile(r"(?<![ \t])[ \t]+\n")


def _first_sentences(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` chars at a sentence end when one is past the first third, else at a word."""
    text = text.strip()
    if len(text) <= limit:
        return text
    window = text[:limit]
    ends = [m.end() for m in _SENTENCE_END.finditer(window)]
    if ends and ends[-1] >= limit // 3:
        return window[: ends[-1]].rstrip()
    return _cut(window + " x", limit)  # the " x" forces _cut's word-boundary cut with an ellipsis


def from_response(last_assistant_message: Any) -> Optional[Captured]:
    """The Stop event's answer, cut to MAX_RESPONSE chars at a sentence boundary; None when empty."""
    try:
        text = _clean(_block_text(last_assistant_message))
        if _is_binary(text):
            return None
        # Keep paragraphs, drop runs of blank lines and trailing spaces.
        text = _TRAILING_BLANKS.sub("\n", text)
        text = re.sub(r"\n{3,}", "\n\n", text).strip()
        if not text:
            return None
        return Captured("response", "", _first_sentences(text, MAX_RESPONSE), [])
    except Exception:  # see from_tool_use
        return None


_BACKTICKED = re.compile(r"`([^`]+)`")


def session_summary(memories: Sequence["Memory"]) -> Optional[Captured]:
    """An extractive summary of a session's memories (no model): files edited, commands run, tools used,
    counts, and the start of the last answer; at most MAX_SUMMARY chars; None for an empty session."""
    try:
        ordered = sorted((m for m in memories if getattr(m, "kind", "") != "summary"),
                         key=lambda m: (float(m.created or 0), _str(m.id)))
        if not ordered:
            return None
        actions = [m for m in ordered if m.kind == "action"]
        edited: Counter = Counter()
        commands: List[str] = []
        tools: Counter = Counter()
        for m in actions:
            tool = _str(m.tool)
            if tool in EDIT_TOOLS:
                for path in m.files or ():
                    edited[_str(path)] += 1
            elif tool == "Bash":
                found = _BACKTICKED.search(_str(m.content))
                if found and found.group(1) not in commands:
                    commands.append(found.group(1))
            if tool.startswith("mcp__"):
                tools[_mcp_name(tool)] += 1
            elif tool not in EDIT_TOOLS and tool != "Bash" and tool:
                tools[tool] += 1
        parts = []
        if edited:
            names = ["%s%s" % (path, " x%d" % n if n > 1 else "") for path, n in edited.most_common(6)]
            more = len(edited) - len(names)
            parts.append("edited %d file%s (%s%s)" % (len(edited), "" if len(edited) == 1 else "s",
                                                     ", ".join(names), ", …" if more > 0 else ""))
        bash = sum(1 for m in actions if m.tool == "Bash")
        if bash:
            shown = ", ".join("`%s`" % _cut(c, 50) for c in commands[:3])
            parts.append("ran %d command%s (%s)" % (bash, "" if bash == 1 else "s", shown) if shown
                         else "ran %d command%s" % (bash, "" if bash == 1 else "s"))
        if tools:
            parts.append("used %s" % ", ".join("%s%s" % (t, " x%d" % n if n > 1 else "")
                                               for t, n in tools.most_common(5)))
        notes = [m for m in ordered if m.kind == "note"]
        head = "Session: %d action%s" % (len(actions), "" if len(actions) == 1 else "s")
        if notes:
            head += ", %d note%s" % (len(notes), "" if len(notes) == 1 else "s")
        text = head + (": " + "; ".join(parts) if parts else "") + "."
        responses = [m for m in ordered if m.kind == "response" and _str(m.content).strip()]
        if responses:
            room = MAX_SUMMARY - len(text) - len(" Last answer: ")
            if room > 80:
                answer = _first_sentences(" ".join(_str(responses[-1].content).split()), min(room, 400))
                text += " Last answer: %s" % answer
        elif not actions and notes:
            text += " Last note: %s" % _cut(_str(notes[-1].content), 300)
        files = [path for path, _ in edited.most_common(10)]
        return Captured("summary", "", _cut(_clean(text), MAX_SUMMARY), files)
    except Exception:  # see from_tool_use
        return None
