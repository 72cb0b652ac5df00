"""Claude Code's own memory ("auto memory") beside toolscript's: where it is, what it loads, importing it.

Claude Code keeps, per project, a folder of markdown files it writes at the
model's discretion: ``MEMORY.md``, an index whose first ``LOADED_LINES`` lines
(at most ``LOADED_CHARS`` characters) are put into every session's context at its
start, and topic files beside it that the model reads on demand.  The folder
is found as Claude Code finds it:

1. ``$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE``;
2. ``autoMemoryDirectory`` in the managed, the local (``.claude/settings.local.json``)
   or the user's settings file, in that order (``~/`` is the home directory;
   the checked-in ``.claude/settings.json`` is not asked: Claude Code ignores
   it there, so a repository cannot point its memory elsewhere);
3. ``<base>/projects/<key>/memory`` where ``<base>`` is
   ``$CLAUDE_CODE_REMOTE_MEMORY_DIR``, else Claude Code's config directory
   (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``), and ``<key>`` is the
   canonical git root (the main checkout's, for a worktree; else the
   directory) with every character but ASCII letters and digits made ``-``
   (a key over KEY_CHARS characters is cut and ends with a hash of the path).

``import_folder`` turns the files into memories of a toolscript project: one
per bullet (with the lines that continue it) or paragraph, prefixed with the
heading it sits under, the file's front matter left out.  Each records where
it came from: tool ``claude-code:<file>:<line>``, files ``[<absolute path>]``.
Running it again mirrors the files: an entry already stored is kept (its line
number follows it if it moved), a new or changed one is added, and one no
longer in the files is forgotten.

``drop_loaded`` is what keeps the hooks from saying again what Claude Code
said at session start: a memory imported from the index is left out of what
is injected while its text is still in the index's loaded head and Claude
Code's auto memory is on (``loads_index``).
"""

import json
import os
import re
import sqlite3
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar

INDEX = "MEMORY.md"
LOADED_LINES = 200  # the index lines Claude Code puts into a session's context at its start...
LOADED_CHARS = 25_000  # ...and no more than this many characters (UTF-16 code units, as JavaScript counts) of them
REDACTED = "[redacted"  # what the store puts where a secret was (toolscript.memory.redact)
SOURCE_PREFIX = "claude-code:"  # a memory's tool when it was imported from Claude Code's memory folder
MAX_FILES = 200  # files of one folder imported at most (Claude Code's own scan lists 200)
MAX_FILE_BYTES = 1_000_000  # a bigger file is not a memory someone wrote; it is skipped with a warning
KEY_CHARS = 200  # a longer project key is cut here and ends with a hash of the whole path
MANAGED_SETTINGS = "/etc/claude-code/managed-settings.json"

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


class Entry(NamedTuple):
    """One memory-to-be from a markdown file: its first line (1-based) and its text (the heading it sits under first)."""

    line: int
    text: str


# -- where the folder is -----------------------------------------------------------------------------


def folder(cwd: str, environ: Optional[Mapping[str, str]] = None) -> str:
    """Claude Code's auto memory folder for the project of ``cwd`` (see the module docstring); it may not exist."""
    env = os.environ if environ is None else environ
    override = env.get("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "")
    if override and os.path.isabs(override):
        return os.path.normpath(override)
    root = canonical_root(cwd)
    from toolscript import paths

    home = env.get("HOME") or os.path.expanduser("~")
    for settings in [MANAGED_SETTINGS] + _project_settings(cwd, "settings.local.json") + [
            os.path.join(paths.claude_config_dir(env), "settings.json")]:
        chosen = _configured_folder(settings, home)
        if chosen:
            return chosen
    base = env.get("CLAUDE_CODE_REMOTE_MEMORY_DIR") or paths.claude_config_dir(env)
    projects = os.path.join(base, "projects")
    return os.path.join(projects, project_key(root), "memory")


def _project_settings(cwd: str, name: str) -> List[str]:
    """``.claude/<name>`` of the directory Claude Code runs in and of its project root (once when they are one)."""
    from toolscript.memory import project_root

    places = dict.fromkeys([os.path.realpath(cwd), project_root(cwd)])
    return [os.path.join(place, ".claude", name) for place in places]


def _configured_folder(settings: str, home: str) -> str:
    """``autoMemoryDirectory`` of one settings file, absolute, or "" (no file, no key, or not a usable path)."""
    value = _setting(settings, "autoMemoryDirectory")
    if not isinstance(value, str) or not value.strip():
        return ""
    value = value.strip()
    if value == "~" or value.startswith("~/"):
        value = os.path.join(home, value[2:])
    return os.path.normpath(value) if os.path.isabs(value) else ""


def canonical_root(cwd: str) -> str:
    """The git root of ``cwd``, the main checkout's for a linked worktree (Claude Code keys memory by it), else ``cwd``'s real path."""
    from toolscript.memory import project_root

    root = project_root(cwd)
    dot_git = os.path.join(root, ".git")
    if not os.path.isfile(dot_git):
        return root
    try:  # a worktree's .git file says "gitdir: <main>/.git/worktrees/<name>", whose commondir leads to <main>/.git
        with open(dot_git, encoding="utf-8") as f:
            line = f.readline(4096).strip()
        if not line.startswith("gitdir:"):
            return root
        gitdir = os.path.normpath(os.path.join(root, line[len("gitdir:"):].strip()))
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as f:
            common = os.path.normpath(os.path.join(gitdir, f.readline(4096).strip()))
    except OSError:
        return root  # a submodule (no commondir) or a broken link: the directory itself
    return os.path.dirname(common) if os.path.basename(common) == ".git" else root


def project_key(root: str) -> str:
    """The folder name Claude Code gives a project: ``root`` with each character but ASCII letters and digits as ``-``.

    A key longer than KEY_CHARS is cut there and ends with ``-`` and a hash of
    the whole path, as Claude Code makes it: the 32-bit string hash
    (``h = 31 * h + code unit``, over UTF-16 code units), its absolute value
    in base 36.
    """
    # JavaScript replaces each UTF-16 code unit: a character outside the Basic Multilingual Plane becomes "--".
    key = "".join(char if char.isascii() and char.isalnum() else "-" * (2 if ord(char) > 0xFFFF else 1) for char in root)
    if len(key) <= KEY_CHARS:
        return key
    return key[:KEY_CHARS] + "-" + _base36(abs(_string_hash(root)))


def _string_hash(text: str) -> int:
    raw = text.encode("utf-16-le", "surrogatepass")
    value = 0
    for index in range(0, len(raw), 2):
        value = (value * 31 + (raw[index] | raw[index + 1] << 8)) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def loads_index(cwd: str, environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether Claude Code loads the index at session start here: its auto memory is on.

    Off with ``CLAUDE_CODE_DISABLE_AUTO_MEMORY`` (1/true/yes/on; 0/false/no/off
    forces it on), with ``CLAUDE_CODE_SIMPLE`` (``--bare``), or with
    ``"autoMemoryEnabled": false`` in the managed, local, project or user
    settings (the first of those that sets it).
    """
    env = os.environ if environ is None else environ
    flag = env.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "").strip().lower()
    if flag in _TRUE:
        return False
    if flag in ("0", "false", "no", "off"):
        return True
    if env.get("CLAUDE_CODE_SIMPLE", "").strip().lower() in _TRUE:
        return False
    from toolscript import paths

    for settings in ([MANAGED_SETTINGS] + _project_settings(cwd, "settings.local.json") + _project_settings(cwd, "settings.json")
                     + [os.path.join(paths.claude_config_dir(env), "settings.json")]):
        value = _setting(settings, "autoMemoryEnabled")
        if isinstance(value, bool):
            return value
    return True


_TRUE = ("1", "true", "yes", "on")


def _setting(path: str, key: str) -> Any:
    """``key`` of the settings file at ``path``, or None (no file, not JSON, not set)."""
    try:
        with open(path, "rb") as f:
            data = f.read(1_000_000)
    except OSError:
        return None
    if key.encode("ascii") not in data:
        return None
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return None
    return document.get(key) if isinstance(document, dict) else None


# -- what is in the files ----------------------------------------------------------------------------


def entries(text: str) -> List[Entry]:
    """The entries of one markdown file: each bullet with its continuation lines, each paragraph; headings prefix them.

    Front matter (between ``---`` lines at the top) is left out, and so are
    headings on their own; a fenced code block stays with the entry it is in.
    """
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        for number in range(1, len(lines)):
            if lines[number].strip() in ("---", "..."):
                start = number + 1
                break
    found: List[Entry] = []
    heading = ""
    current: List[str] = []
    first = 0
    fenced = False

    def close() -> None:
        body = "\n".join(current).strip()
        if body:
            found.append(Entry(first, f"{heading}: {body}" if heading else body))
        current.clear()

    for index in range(start, len(lines)):
        line = lines[index]
        if fenced:
            current.append(line)
            fenced = not _FENCE.match(line)
            continue
        if _FENCE.match(line):
            if not current:
                first = index + 1
            current.append(line)
            fenced = True
            continue
        heading_match = _HEADING.match(line)
        bullet = _BULLET.match(line)
        if heading_match:
            close()
            heading = heading_match.group(2).strip()
        elif not line.strip():
            close()
        elif bullet and (not current or len(bullet.group(1)) <= _indent(current[0])):
            close()  # a bullet at the first one's depth or shallower starts an entry; a deeper one continues it
            first = index + 1
            current.append(bullet.group(2))
        else:
            if not current:
                first = index + 1
            current.append(line.strip() if not bullet else line.rstrip())
    close()
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def loaded_head(text: str) -> str:
    """What Claude Code 2.1.337 loads of an index at session start.

    The text without surrounding blank space, its first LOADED_LINES lines,
    and if that is longer than LOADED_CHARS characters, cut at the last line
    break within them (in the middle of the line when there is none).
    """
    lines = text.strip().split("\n")
    head = "\n".join(lines[:LOADED_LINES])
    if _js_length(head) <= LOADED_CHARS:
        return head
    cut = _js_prefix(head, LOADED_CHARS)
    newline = head.rfind("\n", 0, len(cut) + 1)
    return head[:newline] if newline > 0 else cut


def _js_length(text: str) -> int:
    """The length JavaScript gives ``text``: characters outside the Basic Multilingual Plane count twice."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def _js_prefix(text: str, units: int) -> str:
    """The longest start of ``text`` at most ``units`` JavaScript characters long."""
    if len(text) == _js_length(text):
        return text[:units]
    count = 0
    for index, char in enumerate(text):
        count += 2 if ord(char) > 0xFFFF else 1
        if count > units:
            return text[:index]
    return text


SAME_CHARS = 2000  # two entries whose first this-many characters agree are one (the store caps a memory's text)


def _same_text(text: str) -> str:
    """The comparable form of an entry or a stored memory: spacing folded, a cap's ellipsis gone, the first SAME_CHARS."""
    return " ".join(text.split()).rstrip("\u2026")[:SAME_CHARS]


# -- the hooks' filter -------------------------------------------------------------------------------

_Item = TypeVar("_Item")


def drop_loaded(related: Sequence[_Item], project: str, environ: Optional[Mapping[str, str]] = None) -> List[_Item]:
    """``related`` ((memory, score) pairs, or memories) without what Claude Code loaded at this session's start.

    A memory imported from this project's index whose text is in the index's
    loaded head is already in Claude's context; one from further down the
    index, from a topic file, or whose entry has changed since is kept.  No
    imported memory among them: no file is read.
    """
    def memory_of(item: Any) -> Any:
        return item[0] if isinstance(item, tuple) else item

    def from_index(item: Any) -> bool:
        return str(memory_of(item).tool or "").startswith(SOURCE_PREFIX + INDEX + ":")

    if not any(from_index(item) for item in related) or not loads_index(project, environ):
        return list(related)
    index = os.path.join(folder(project, environ), INDEX)
    try:
        with open(index, encoding="utf-8", errors="replace") as f:
            head = loaded_head(f.read(LOADED_CHARS * 4))
    except OSError:
        return list(related)
    head_entries = entries(head)
    loaded = {_same_text(entry.text) for entry in head_entries}
    redacted: List[str] = []  # the head's entries as the store keeps them, made only when a redacted memory needs them

    def was_loaded(content: str) -> bool:
        text = _same_text(content)
        if text in loaded:
            return True
        if REDACTED not in content:
            return False
        if not redacted:
            from toolscript.memory.redact import clean

            redacted.extend(_same_text(clean(entry.text)) for entry in head_entries)
        return text in redacted

    real_index = os.path.realpath(index)
    return [item for item in related if not (
        from_index(item) and list(memory_of(item).files or ())[:1] in ([index], [real_index])
        and was_loaded(str(memory_of(item).content)))]


# -- importing ---------------------------------------------------------------------------------------


class Imported(NamedTuple):
    """What an import did: counts, the folder and the files it read (relative to the folder), and files it skipped."""

    added: int
    updated: int
    unchanged: int
    removed: int
    folder: str
    files: List[str]
    skipped: List[str]


def folder_files(path: str) -> Tuple[List[str], List[str]]:
    """(the markdown files of a memory folder, the index first, then by name; the ones skipped and why).

    Regular files only, no symbolic links followed, at most MAX_FILES files
    of at most MAX_FILE_BYTES each.
    """
    found: List[str] = []
    skipped: List[str] = []
    for directory, subdirectories, names in os.walk(path):
        subdirectories.sort()
        for name in sorted(names):
            full = os.path.join(directory, name)
            if not name.endswith(".md") or os.path.islink(full) or not os.path.isfile(full):
                continue
            if os.path.getsize(full) > MAX_FILE_BYTES:
                skipped.append(f"{os.path.relpath(full, path)} (over {MAX_FILE_BYTES:,} bytes)")
                continue
            found.append(os.path.relpath(full, path))
    found.sort(key=lambda rel: (rel != INDEX, rel))
    if len(found) > MAX_FILES:
        skipped += [f"{rel} (more than {MAX_FILES} files)" for rel in found[MAX_FILES:]]
    return found[:MAX_FILES], skipped


def import_folder(db: Any, path: str, project: str, now: Optional[float] = None) -> Imported:
    """Mirror the memory folder ``path`` into ``project``'s memories in ``db`` (see the module docstring).

    A new entry at the line of an entry that went is counted as updated (the
    memory is replaced: its text changed); the memories of a file that could
    not be read this time are left as they are.
    """
    from toolscript.memory.redact import clean

    files, skipped = folder_files(path)
    stored = _imported_rows(db, project, path)
    unchanged = 0
    kept: set = set()
    new_at: List[Tuple[str, int]] = []  # (file, line) of each memory added
    unread = {os.path.join(path, note.split(" (", 1)[0]) for note in skipped}
    for rel in files:
        full = os.path.join(path, rel)
        try:
            with open(full, encoding="utf-8", errors="replace") as f:
                text = f.read()
            created = os.path.getmtime(full) if now is None else now
        except OSError as exc:
            skipped.append(f"{rel} ({exc.strerror or exc})")
            unread.add(full)
            continue
        by_text: Dict[str, List[int]] = {}
        for row_id, (file, _, content) in stored.items():
            if file == full:
                by_text.setdefault(_same_text(content), []).append(row_id)
        for entry in entries(text):
            label = f"{SOURCE_PREFIX}{rel}:{entry.line}"
            same = by_text.get(_same_text(clean(entry.text)), [])
            if same:
                row_id = same.pop(0)
                kept.add(row_id)
                unchanged += 1
                if stored[row_id][1] != entry.line:
                    _relabel(db, row_id, label)
                continue
            new_id = db.add(session="", project=project, kind="note", content=entry.text, tool=label, files=[full],
                            created=created)
            if new_id is not None:
                kept.add(new_id)
                new_at.append((full, entry.line))
    stale = [row_id for row_id, (file, _, _) in stored.items() if row_id not in kept and file not in unread]
    if stale:
        db.forget(ids=stale)
    gone_at = [(stored[row_id][0], stored[row_id][1]) for row_id in stale]
    updated = 0
    for place in new_at:
        if place in gone_at:
            gone_at.remove(place)
            updated += 1
    return Imported(len(new_at) - updated, updated, unchanged, len(stale) - updated, path, files, skipped)


def _imported_rows(db: Any, project: str, path: str) -> Dict[int, Tuple[str, int, str]]:
    """{id: (file, line, content)} of the project's memories imported from the folder ``path`` before."""
    from toolscript.memory.store import StoreError

    prefix = os.path.join(path, "")
    try:
        rows = db.conn.execute("SELECT id, tool, files, content FROM memories WHERE project = ? AND tool LIKE ?",
                               (project, SOURCE_PREFIX + "%")).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the memories imported before from {db.path}: {exc}") from exc
    found: Dict[int, Tuple[str, int, str]] = {}
    for row_id, tool, files, content in rows:
        try:
            names = json.loads(files) if files else []
        except ValueError:
            continue
        if not names or not str(names[0]).startswith(prefix):
            continue
        line = str(tool).rsplit(":", 1)[-1]
        found[int(row_id)] = (str(names[0]), int(line) if line.isdigit() else 0, str(content))
    return found


def _relabel(db: Any, row_id: int, label: str) -> None:
    """Point an imported memory at the line its entry moved to (the text is the same, so nothing else changes)."""
    from toolscript.memory.store import StoreError

    try:
        db.conn.execute("UPDATE memories SET tool = ? WHERE id = ?", (label, row_id))
    except sqlite3.Error as exc:
        raise StoreError(f"cannot update memory {row_id} in {db.path}: {exc}") from exc


# -- what a memory's source is -----------------------------------------------------------------------


def source(memory: Any) -> str:
    """Where a memory came from, for people: ``<file>:<line>`` for an imported one, else its tool or kind."""
    tool = str(memory.tool or "")
    if tool.startswith(SOURCE_PREFIX) and memory.files:
        line = tool.rsplit(":", 1)[-1]
        return f"{memory.files[0]}:{line}" if line.isdigit() else str(memory.files[0])
    return tool or str(memory.kind)
