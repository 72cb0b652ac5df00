"""The general built-in tools: time.now, tools.echo, shell.pwd, fs.list_dir, fs.read_file.

Memory's three built-ins (``memory.search``, ``memory.timeline``,
``memory.get``) live with memory, in ``toolscript/memory/tools.py``: memory
builds on this layer, not the other way round.  ``gateway.catalog.builtin_tools``
puts the two together for the ``builtinTools`` setting.

They need no server and exist so the tool path (CLI, gateway, MCP endpoint)
can be exercised and so a model can look at the workspace.  The file tools are
confined to the workspace roots, in two steps:

* ``resolve_path`` resolves ``..`` and symlinks and refuses anything whose real
  path is outside every root.  So a symlink inside the workspace keeps working
  when it leads to a file inside a root, and one that leads out is refused.
* The file is then opened by that resolved path *beneath a descriptor of its
  root*, with no symlink allowed on the way (``safe_open.open_beneath``), and
  every directory a recursive listing enters is opened the same way, relative
  to its parent's descriptor.  The check and the open are separate steps, so a
  directory checked in the first can be replaced by a symlink before the
  second (another process sharing the workspace can do that on purpose); this
  way such a swap makes the call fail, and can never lead it out of the root.

Schemas are written for a model to read: every property has a description,
and unknown properties are refused (``additionalProperties: false``) so a
misspelt argument is an ``invalid_args`` error instead of being ignored.
"""

import base64
import contextlib
import datetime
import errno
import os
import stat
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from toolscript import log
from toolscript.system import safe_open
from toolscript.errors import UserError
from toolscript.tools.contract import ToolContext, ToolFailure, ToolSpec

DEFAULT_MAX_BYTES = 204800  # fs.read_file: 200 KiB
DEFAULT_MAX_DEPTH = 4  # fs.list_dir with recursive
MAX_DEPTH_LIMIT = 32
# fs.list_dir returns at most this many entries; read at call time so tests can lower it.
MAX_LIST_ENTRIES = 5000

_log = log.get("tools.builtin")


def builtin_specs() -> Dict[str, ToolSpec]:
    """The general built-in tools by name, in a fixed order; fresh objects on every call."""
    specs = [
        ToolSpec(
            name="time.now",
            description=(
                "The current time: milliseconds since the Unix epoch (timestamp) and the same "
                "instant as an ISO 8601 UTC string with millisecond precision (iso)."
            ),
            input_schema=_no_arguments(),
            handler=_time_now,
            output_schema=_object(
                {
                    "timestamp": {"type": "integer", "description": "Milliseconds since 1970-01-01T00:00:00Z."},
                    "iso": {"type": "string", "description": "The same instant, e.g. 2024-05-01T12:34:56.789Z."},
                },
                required=["timestamp", "iso"],
            ),
        ),
        ToolSpec(
            name="tools.echo",
            description=(
                "Returns its arguments unchanged, as an object. "
                "Use it to check that tool calls work end to end."
            ),
            input_schema={
                "type": "object",
                "description": "Any object; it is returned as is.",
                "additionalProperties": True,
            },
            handler=_echo,
            output_schema={"type": "object", "description": "The arguments, unchanged.", "additionalProperties": True},
        ),
        ToolSpec(
            name="shell.pwd",
            description=(
                "The working directory: the first workspace root. Relative paths given to "
                "fs.list_dir and fs.read_file are resolved against it."
            ),
            input_schema=_no_arguments(),
            handler=_pwd,
            output_schema=_object(
                {"cwd": {"type": "string", "description": "Absolute path of the working directory."}},
                required=["cwd"],
            ),
        ),
        ToolSpec(
            name="fs.list_dir",
            description=(
                "Lists a directory inside the workspace: each entry's name, path relative to the "
                "listed directory, type (file, dir, symlink, other) and, for files, size in bytes, "
                "sorted by path. With recursive, subdirectories are listed too, down to maxDepth "
                "levels; symlinks are reported but never followed. At most "
                f"{MAX_LIST_ENTRIES} entries are returned; truncated is true when there were more."
            ),
            input_schema=_object(
                {
                    "path": {
                        "type": "string",
                        "description": (
                            "The directory to list: relative to the working directory, or absolute "
                            'but inside a workspace root. Default "." (the working directory).'
                        ),
                        "default": ".",
                    },
                    "recursive": {
                        "type": "boolean",
                        "description": "Also list the contents of subdirectories, down to maxDepth levels.",
                        "default": False,
                    },
                    "maxDepth": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_DEPTH_LIMIT,
                        "description": (
                            "With recursive, how many levels to list: 1 is the directory's own entries, "
                            "2 adds the entries of its subdirectories, and so on. Ignored without recursive."
                        ),
                        "default": DEFAULT_MAX_DEPTH,
                    },
                }
            ),
            handler=_list_dir,
            output_schema=_list_dir_output_schema(),
        ),
        ToolSpec(
            name="fs.read_file",
            description=(
                "Reads a whole file inside the workspace. UTF-8 text is returned as is "
                '(encoding "utf-8"), anything else as base64 (encoding "base64"). '
                "A file larger than maxBytes is an error, not a partial read: ask again with "
                "a larger maxBytes if the size is acceptable."
            ),
            input_schema=_object(
                {
                    "path": {
                        "type": "string",
                        "description": (
                            "The file to read: relative to the working directory, or absolute "
                            "but inside a workspace root."
                        ),
                    },
                    "maxBytes": {
                        "type": "integer",
                        "minimum": 1,
                        "description": f"Refuse files larger than this many bytes. Default {DEFAULT_MAX_BYTES}.",
                        "default": DEFAULT_MAX_BYTES,
                    },
                },
                required=["path"],
            ),
            handler=_read_file,
            output_schema=_object(
                {
                    "path": {
                        "type": "string",
                        "description": "The file as resolved (relative to the working directory when inside it).",
                    },
                    "size": {"type": "integer", "description": "Size of the file in bytes."},
                    "encoding": {
                        "type": "string",
                        "enum": ["utf-8", "base64"],
                        "description": "How content is encoded.",
                    },
                    "content": {"type": "string", "description": "The file's content: text, or base64 of the bytes."},
                },
                required=["path", "size", "encoding", "content"],
            ),
        ),
    ]
    return {spec.name: spec for spec in specs}


def select_builtins(setting: Union[bool, List[str]], specs: Dict[str, ToolSpec]) -> Dict[str, ToolSpec]:
    """The tools of ``specs`` (every built-in) a setting enables: True all, False none, a list only those names (in ``specs``' order)."""
    if setting is True:
        return specs
    if setting is False:
        return {}
    if not isinstance(setting, (list, tuple)) or not all(isinstance(name, str) for name in setting):
        raise UserError("the built-in tools setting must be true, false or a list of tool names")
    unknown = [name for name in setting if name not in specs]
    if unknown:
        quoted = ", ".join(f'"{name}"' for name in unknown)
        noun = "tool" if len(unknown) == 1 else "tools"
        raise UserError(f"unknown built-in {noun} {quoted}; known built-in tools: {', '.join(specs)}")
    wanted = set(setting)
    return {name: spec for name, spec in specs.items() if name in wanted}


def resolve_path(path: str, context: ToolContext) -> str:
    """The real absolute path of ``path`` if it is inside a workspace root; else ToolFailure.

    Relative paths are taken from the first root.  ``..`` and symlinks are
    resolved before the check, so neither can lead out of the workspace.  This
    only says where the path leads now: open it with ``_parent_dir``, which
    does not follow a symlink that appears after this check.
    """
    roots = _roots(context)
    # Checked here because realpath() treats a NUL differently across Python versions.
    if "\x00" in path:
        raise ToolFailure(f'path "{path}" is not usable: it contains a NUL byte')
    try:
        # join() keeps ``path`` as is when it is absolute.
        real = os.path.realpath(os.path.join(roots[0], path))
    except (OSError, ValueError) as err:
        raise ToolFailure(f'path "{path}" is not usable: {err}') from None
    if _root_of(real, roots) is None:
        raise ToolFailure(_outside(path, roots))
    return real


# --- handlers ---------------------------------------------------------------


def _time_now(args: Dict[str, Any], context: ToolContext) -> Dict[str, Any]:
    millis = time.time_ns() // 1_000_000
    # Built from the integer, not a float, so iso and timestamp are the same millisecond.
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=millis)
    iso = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"timestamp": millis, "iso": iso}


def _echo(args: Dict[str, Any], context: ToolContext) -> Dict[str, Any]:
    return args


def _pwd(args: Dict[str, Any], context: ToolContext) -> Dict[str, Any]:
    return {"cwd": _roots(context)[0]}


def _list_dir(args: Dict[str, Any], context: ToolContext) -> Dict[str, Any]:
    path = args.get("path", ".")
    max_depth = args.get("maxDepth", DEFAULT_MAX_DEPTH) if args.get("recursive", False) else 1
    real = resolve_path(path, context)
    with _parent_dir(path, real, context) as (parent_fd, name):
        info = _stat_at(path, parent_fd, name)
        if not stat.S_ISDIR(info.st_mode):
            raise ToolFailure(f'path "{path}" is not a directory')
        fd = _open_at(path, "list", parent_fd, name, safe_open.READ_DIRECTORY)
    try:
        try:
            top = _scan(fd)
        except OSError as err:
            raise ToolFailure(f'cannot list "{path}": {err.strerror or err}') from None
        entries: List[Dict[str, Any]] = []
        truncated = _walk(fd, top, "", 1, max_depth, entries, MAX_LIST_ENTRIES)
    finally:
        os.close(fd)
    return {"path": _display_path(real, context), "entries": entries, "truncated": truncated}


def _scan(dir_fd: int) -> List[os.DirEntry]:
    """The entries of the directory open as ``dir_fd``, sorted by name (the descriptor stays open)."""
    with os.scandir(dir_fd) as it:
        return sorted(it, key=lambda entry: entry.name)


def _walk(
    dir_fd: int,
    children: List[os.DirEntry],
    prefix: str,
    depth: int,
    max_depth: int,
    entries: List[Dict[str, Any]],
    limit: int,
) -> bool:
    """Append ``children`` (and, below max_depth, their contents) to entries; True if the limit cut it short.

    Children are visited by name and a directory's contents follow it, so the
    result is sorted by path component by component, and the entries kept at
    the limit are the first ones in that order.  A subdirectory is opened by
    name relative to ``dir_fd``, its parent's descriptor, refusing a symlink:
    one swapped in for it since it was listed is skipped, not entered.
    """
    for entry in children:
        if len(entries) >= limit:
            return True
        item = _entry(entry, prefix + entry.name)
        entries.append(item)
        if item["type"] != "dir" or depth >= max_depth:
            continue
        try:
            child_fd = safe_open.open_beneath(dir_fd, entry.name, safe_open.READ_DIRECTORY)
        except OSError as err:
            # One unreadable subdirectory should not hide the rest of the listing.
            _log.debug("not listing %s: %s", item["path"], err)
            continue
        try:
            try:
                below = _scan(child_fd)
            except OSError as err:
                _log.debug("not listing %s: %s", item["path"], err)
                continue
            if _walk(child_fd, below, item["path"] + "/", depth + 1, max_depth, entries, limit):
                return True
        finally:
            os.close(child_fd)
    return False


def _entry(entry: os.DirEntry, rel: str) -> Dict[str, Any]:
    item: Dict[str, Any] = {"name": entry.name, "path": rel}
    try:
        # is_symlink first: a symlink to a directory is reported, never entered.
        if entry.is_symlink():
            item["type"] = "symlink"
        elif entry.is_dir(follow_symlinks=False):
            item["type"] = "dir"
        elif entry.is_file(follow_symlinks=False):
            item["type"] = "file"
            item["size"] = entry.stat(follow_symlinks=False).st_size
        else:
            item["type"] = "other"
    except OSError:  # removed while we looked at it
        item.setdefault("type", "other")
    return item


def _read_file(args: Dict[str, Any], context: ToolContext) -> Dict[str, Any]:
    path = args["path"]
    max_bytes = args.get("maxBytes", DEFAULT_MAX_BYTES)
    real = resolve_path(path, context)
    with _parent_dir(path, real, context) as (parent_fd, name):
        info = _stat_at(path, parent_fd, name)
        _require_regular(path, info.st_mode)
        if info.st_size > max_bytes:
            raise ToolFailure(_too_large(info.st_size, max_bytes))
        # O_NONBLOCK: a FIFO put in the file's place since the check must not hang the call
        # (fstat below refuses it); O_NOCTTY: nor may a terminal become ours.
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
        fd = _open_at(path, "read", parent_fd, name, flags)
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        _require_regular(path, opened.st_mode)
        # One byte more than allowed tells a file that grew since stat() from one that fits.
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ToolFailure(_too_large(max(opened.st_size, len(data)), max_bytes))

    text = _as_text(data)
    if text is None:
        encoding, content = "base64", base64.b64encode(data).decode("ascii")
    else:
        encoding, content = "utf-8", text
    return {"path": _display_path(real, context), "size": len(data), "encoding": encoding, "content": content}


# --- helpers ----------------------------------------------------------------


def _roots(context: ToolContext) -> List[str]:
    if not context.workspace_roots:
        raise ToolFailure("no workspace roots are configured")
    # Callers promise realpath'd roots; doing it again is cheap and makes the check hold regardless.
    return [os.path.realpath(root) for root in context.workspace_roots]


def _root_of(real: str, roots: List[str]) -> Optional[str]:
    """The first root containing ``real`` (a root contains itself), or None."""
    for root in roots:
        try:
            # commonpath, not startswith: /work2 is not inside /work.
            if os.path.commonpath([real, root]) == root:
                return root
        except ValueError:  # different drives on Windows
            continue
    return None


def _display_path(real: str, context: ToolContext) -> str:
    """``real`` relative to the working directory when inside it, else absolute.

    A path inside another root stays absolute: relative, it would be read
    against the working directory and name a different file.
    """
    roots = _roots(context)
    if _root_of(real, roots[:1]) is None:
        return real
    return os.path.relpath(real, roots[0]).replace(os.sep, "/")


@contextlib.contextmanager
def _parent_dir(path: str, real: str, context: ToolContext) -> Iterator[Tuple[int, str]]:
    """(a descriptor of the directory holding ``real``, ``real``'s last name) -- ``"."`` for a root itself.

    The directory is opened beneath a descriptor of the root that holds
    ``real``, following no symlink at all (``safe_open.open_beneath``): ``real``
    is already resolved, so a symlink met now was put there after
    ``resolve_path`` checked it, and the call fails instead of following it.
    The last name is for ``_stat_at`` and ``_open_at``, which do not follow a
    symlink either.
    """
    root = _root_of(real, _roots(context))
    if root is None:  # resolve_path refused it already; kept so this can never open outside a root
        raise ToolFailure(_outside(path, _roots(context)))
    rel = os.path.relpath(real, root)
    parent, name = ("", ".") if rel == "." else os.path.split(rel)
    try:
        root_fd = safe_open.open_directory(root)
    except OSError as err:
        raise _open_failure(path, "access", err) from None
    try:
        parent_fd = safe_open.open_beneath(root_fd, parent, safe_open.SEARCH_DIRECTORY)
    except OSError as err:
        raise _open_failure(path, "access", err) from None
    finally:
        os.close(root_fd)
    try:
        yield parent_fd, name
    finally:
        os.close(parent_fd)


def _stat_at(path: str, dir_fd: int, name: str) -> os.stat_result:
    """The entry ``name`` in ``dir_fd`` itself (a symlink is not followed, and refused)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise ToolFailure(f'path "{path}" does not exist') from None
    except OSError as err:
        raise ToolFailure(f'cannot access "{path}": {err.strerror or err}') from None
    if stat.S_ISLNK(info.st_mode):
        raise ToolFailure(_symlink_changed(path))
    return info


def _open_at(path: str, verb: str, dir_fd: int, name: str, flags: int) -> int:
    """``name`` in ``dir_fd`` opened with ``flags``, not following a symlink; ToolFailure saying ``cannot <verb>``."""
    try:
        return safe_open.open_beneath(dir_fd, name, flags)
    except OSError as err:
        raise _open_failure(path, verb, err) from None


def _open_failure(path: str, verb: str, err: OSError) -> ToolFailure:
    if err.errno == errno.ENOENT:
        return ToolFailure(f'path "{path}" does not exist')
    if err.errno == errno.ELOOP:
        return ToolFailure(_symlink_changed(path))
    return ToolFailure(f'cannot {verb} "{path}": {err.strerror or err}')


def _outside(path: str, roots: List[str]) -> str:
    return (
        f'path "{path}" is outside the workspace ({", ".join(roots)}); '
        "only files under the workspace roots are allowed"
    )


def _symlink_changed(path: str) -> str:
    return (
        f'path "{path}" is not usable: a symlink on it changed while it was opened, or loops; '
        "symlinks are followed only when they lead inside the workspace"
    )


def _require_regular(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise ToolFailure(f'path "{path}" is a directory, not a regular file; use fs.list_dir to list it')
    if not stat.S_ISREG(mode):
        raise ToolFailure(f'path "{path}" is not a regular file')


def _too_large(size: int, max_bytes: int) -> str:
    return f"file is {size} bytes, over maxBytes {max_bytes}; ask for a larger maxBytes or read a smaller file"


def _as_text(data: bytes) -> Optional[str]:
    """``data`` as text if it is UTF-8 without NUL bytes (NULs mean binary in practice), else None."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _no_arguments() -> Dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


def _object(properties: Dict[str, Any], required: Optional[List[str]] = None) -> Dict[str, Any]:
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _list_dir_output_schema() -> Dict[str, Any]:
    entry = _object(
        {
            "name": {"type": "string", "description": "The entry's file name."},
            "path": {"type": "string", "description": 'Path relative to the listed directory, with "/" separators.'},
            "type": {
                "type": "string",
                "enum": ["file", "dir", "symlink", "other"],
                "description": "What the entry is; symlinks are not followed.",
            },
            "size": {"type": "integer", "description": "Size in bytes (files only)."},
        },
        required=["name", "path", "type"],
    )
    return _object(
        {
            "path": {
                "type": "string",
                "description": "The directory as resolved (relative to the working directory when inside it).",
            },
            "entries": {"type": "array", "items": entry, "description": "The entries, sorted by path."},
            "truncated": {
                "type": "boolean",
                "description": f"True when there were more than {MAX_LIST_ENTRIES} entries.",
            },
        },
        required=["path", "entries", "truncated"],
    )
