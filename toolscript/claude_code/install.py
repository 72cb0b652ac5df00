"""What ``toolscript setup`` writes where: Claude Code's hooks in a project that does not use the plugin.

Writes the ``hooks`` block of ``<project>/.claude/settings.json`` (merging: every
other key and every foreign hook stays), installs one small shell script per
hook into ``<project>/.claude/hooks/`` and, when run from the zipapp, a copy of
it under ``<project>/.claude/toolscript/`` for those scripts to run.  ``undo``
takes exactly that back out, helped by a manifest of what setup created
(``.claude/toolscript/setup.json``).

The scripts are package data, ``hook_scripts/<event>.sh`` beside this module
(read with pkgutil, so the zipapp, a checkout and an installed package all
carry them): each hands its stdin to ``toolscript hook <event>``.

setup writes only inside the project: a symlink that leads out of it is
refused (``UserError`` naming the link) before anything is written.  The
command module (``toolscript.cli.commands.setup``) parses the arguments and
prints the report these functions return.
"""

import difflib
import json
import os
import re
import time
from typing import Any, Dict, List, Optional, Tuple

from toolscript import paths
from toolscript.errors import UserError

# Claude Code's event name, our script's event name, matcher, timeout in seconds.
# (Claude Code's hook timeouts are seconds; SessionEnd's default budget is ~1.5 s,
# too little for a cold Python start, hence an explicit 5.)
HOOKS: Tuple[Tuple[str, str, Optional[str], int], ...] = (
    ("SessionStart", "session-start", None, 10),
    ("UserPromptSubmit", "user-prompt-submit", None, 5),
    ("PreToolUse", "pre-tool-use", "Edit|Write|Bash", 5),
    ("PostToolUse", "post-tool-use", "*", 5),
    ("Stop", "stop", None, 5),
    ("SessionEnd", "session-end", None, 5),
)
# Hooks Claude Code runs in the background ("async": true): the user does not wait for their
# Python start.  Only capture that answers nothing: PostToolUse's line of memory (measured with
# bench/hooks_mechanisms.py: about +0.06 s felt per tool call instead of +0.4 s on a loaded machine).
# Stop stays in the foreground: in `claude -p` the CLI exits right after it and would cancel it.
ASYNC_EVENTS = ("PostToolUse",)
SETTINGS = "settings.json"
SCRIPT_PREFIX = "toolscript-"
SCRIPTS_DIR = "hook_scripts"  # package data beside this module: <event>.sh
# A hook entry is ours when its command names one of our scripts (any event name, so
# entries of an older or newer toolscript are recognised too).
OURS = re.compile(r"\.claude/hooks/toolscript-[a-z0-9-]+\.sh\b")
SCRIPT_MARKER = "# Claude Code hook installed by `toolscript setup`"  # the second line of each script: undo removes only those
ZIPAPP_DIR = "toolscript"  # under .claude/
ZIPAPP = "toolscript.pyz"
LAUNCHER = "toolscript"
MANIFEST = "setup.json"  # what setup created, for undo
GITIGNORE = ".gitignore"
LAUNCHER_TEXT = """\
#!/bin/sh
# Runs the toolscript.pyz beside it with the system Python 3 (installed by `toolscript setup`).
exec python3 -I -S "$(dirname "$0")/toolscript.pyz" "$@"
"""
GITIGNORE_TEXT = "# Written by `toolscript setup`: a local copy of toolscript, not for the repository.\n*\n"


def hook_script(event: str) -> bytes:
    """The hook script setup installs for ``toolscript hook <event>`` (``hook_scripts/<event>.sh``)."""
    import pkgutil

    name = f"{SCRIPTS_DIR}/{event}.sh"
    try:
        data = pkgutil.get_data(__name__.rpartition(".")[0], name)
    except OSError:
        data = None
    if data is None:  # an installation without its package data
        raise UserError(f"toolscript's hook script {name} is missing from this installation; reinstall toolscript")
    return data


def enabled_plugin(project: str) -> Optional[str]:
    """The ``toolscript@...`` plugin id enabledPlugins turns on for ``project`` (user, project or local settings)."""
    from toolscript.claude_code.skills import enabled_plugins

    enabled = enabled_plugins(paths.claude_config_dir(os.environ), project, None, lambda message: None)
    return next((plugin_id for plugin_id, on in enabled.items() if on and plugin_id.split("@", 1)[0] == "toolscript"), None)


# --- the settings document ------------------------------------------------------------------


def display_path(path: str, project: str) -> str:
    """``.claude/settings.json`` when the project is this directory, else the full path: how messages name a file."""
    if os.path.abspath(project) == os.path.abspath(os.getcwd()):
        return os.path.relpath(path, project)
    return path


def _read_settings(path: str, shown: str, force: bool) -> Tuple[Optional[str], Dict[str, Any]]:
    """(the file's text or None when there is none, its JSON object); invalid JSON is an error unless forced."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None, {}
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"Cannot read {shown}: {exc}")
    if not text.strip():
        return text, {}
    try:
        document = json.loads(text)
    except ValueError as exc:
        if force:
            return text, {}
        lineno, colno, msg = getattr(exc, "lineno", 0), getattr(exc, "colno", 0), getattr(exc, "msg", str(exc))
        raise UserError(f"Invalid JSON in {shown} at line {lineno}, column {colno}: {msg}; fix it or run with --force")
    if not isinstance(document, dict):
        if force:
            return text, {}
        raise UserError(f"Invalid settings in {shown}: the top level is not a JSON object; fix it or run with --force")
    return text, document


def _hooks_block(document: Dict[str, Any], shown: str, force: bool) -> Dict[str, Any]:
    """The document's ``hooks`` object (created when missing); a malformed one is an error unless forced."""
    hooks = document.get("hooks")
    if hooks is None or (force and not isinstance(hooks, dict)):
        hooks = document["hooks"] = {}
    if not isinstance(hooks, dict):
        raise UserError(f'Invalid settings in {shown}: "hooks" is not a JSON object; fix it or run with --force')
    for event, _, _, _ in HOOKS:
        groups = hooks.get(event)
        if groups is not None and not isinstance(groups, list):
            if not force:
                raise UserError(f'Invalid settings in {shown}: "hooks.{event}" is not a list; fix it or run with --force')
            del hooks[event]
    return hooks


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and OURS.search(hook["command"]) is not None


def _command(event: str) -> str:
    # $CLAUDE_PROJECT_DIR: a session started in a subdirectory still finds the scripts.
    return f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{SCRIPT_PREFIX}{event}.sh'


def _our_group(claude_event: str, event: str, matcher: Optional[str], timeout: int) -> Dict[str, Any]:
    group: Dict[str, Any] = {}
    if matcher is not None:
        group["matcher"] = matcher
    hook: Dict[str, Any] = {"type": "command", "command": _command(event), "timeout": timeout}
    if claude_event in ASYNC_EVENTS:
        hook["async"] = True
    group["hooks"] = [hook]
    return group


def _remove_ours(hooks: Dict[str, Any], events: Optional[List[str]] = None) -> None:
    """Drop our hook entries, then groups, event lists and (last) nothing else that removal left empty."""
    for event in list(hooks):
        groups = hooks[event]
        if (events is not None and event not in events) or not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(_is_ours(h) for h in inner):
                kept.append(group)
                continue
            remaining = [h for h in inner if not _is_ours(h)]
            if remaining:
                kept.append(dict(group, hooks=remaining))
        if kept:
            hooks[event] = kept
        elif groups:  # only an event list that held ours goes; an empty one the user wrote stays
            del hooks[event]


def _merged(document: Dict[str, Any], shown: str, force: bool) -> Dict[str, Any]:
    """A copy of the settings with our hooks registered (replacing ours under force)."""
    document = json.loads(json.dumps(document))  # a deep copy: the caller compares old and new
    hooks = _hooks_block(document, shown, force)
    if force:
        _remove_ours(hooks)
    for event, script_event, matcher, timeout in HOOKS:
        groups = hooks.setdefault(event, [])
        script = f"/.claude/hooks/{SCRIPT_PREFIX}{script_event}.sh"
        present = any(
            _is_ours(h) and script in h["command"]
            for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"]
        )
        if not present:
            groups.append(_our_group(event, script_event, matcher, timeout))
    return document


def _indent_of(text: Optional[str]) -> Any:
    """The file's own indentation (so untouched parts stay byte-identical); 2 spaces for a new file."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def _serialise(document: Dict[str, Any], old_text: Optional[str]) -> str:
    return json.dumps(document, indent=_indent_of(old_text), ensure_ascii=False) + "\n"


# --- files ----------------------------------------------------------------------------------


def _write_atomic(path: str, data: bytes, mode: int) -> None:
    """Write ``path`` through a temporary file in the same directory and a rename.

    ``path`` is a target ``_inside_project`` resolved: a symlink there now is replaced, not followed.
    """
    paths.write_private(path, data, mode=mode)


def _inside_project(path: str, project: str) -> str:
    """``path`` with every symlink resolved, when that is inside ``project``; else a UserError naming the link.

    setup writes only inside the project it was given.  A symlink that stays
    inside (settings.json linked to a tracked file of the repository) is
    followed; one that leads out is refused, since following it would write
    somewhere else than the report says: a settings.json linked to
    ``~/.claude/settings.json`` would get hooks that run in every project.
    """
    real_project = os.path.realpath(project)
    real = os.path.realpath(path)
    if _contains(real_project, real):
        return real
    link, target = path, real
    current = project
    for name in os.path.relpath(path, project).split(os.sep):
        current = os.path.join(current, name)
        if os.path.islink(current) and not _contains(real_project, os.path.realpath(current)):
            link, target = current, os.path.realpath(current)
            break
    shown = display_path(link, project)
    raise UserError(
        f"{shown} is a symlink to {target}, outside the project; setup writes only inside the project, so nothing "
        "was changed: make the change there yourself, or replace the link with a copy of what it points to "
        "and run setup again"
    )


def _contains(directory: str, path: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _backup(path: str) -> str:
    """Copy ``path`` (a resolved target) to ``<path>.bak-<UTC time>`` beside it; the backup's path."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = f"{path}.bak-{stamp}"
    n = 1
    while os.path.lexists(backup):
        backup = f"{path}.bak-{stamp}-{n}"
        n += 1
    with open(path, "rb") as src:
        data = src.read()
    with open(backup, "xb") as dst:
        dst.write(data)
    os.chmod(backup, os.stat(path).st_mode & 0o777)
    return backup


def _read_bytes(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def running_zipapp() -> Optional[str]:
    """The toolscript.pyz this process runs from, or None (a checkout or an installed package)."""
    import zipfile

    import toolscript

    parent = os.path.dirname(os.path.dirname(os.path.abspath(toolscript.__file__)))
    return parent if os.path.isfile(parent) and zipfile.is_zipfile(parent) else None


def _files_to_install(claude_dir: str) -> List[Tuple[str, bytes, int]]:
    """(path, content, mode) of every file setup installs."""
    files = [
        (os.path.join(claude_dir, "hooks", f"{SCRIPT_PREFIX}{event}.sh"), hook_script(event), 0o755)
        for _, event, _, _ in HOOKS
    ]
    pyz = running_zipapp()
    if pyz is not None:
        with open(pyz, "rb") as fh:
            files.append((os.path.join(claude_dir, ZIPAPP_DIR, ZIPAPP), fh.read(), 0o644))
        files.append((os.path.join(claude_dir, ZIPAPP_DIR, LAUNCHER), LAUNCHER_TEXT.encode(), 0o755))
        files.append((os.path.join(claude_dir, ZIPAPP_DIR, GITIGNORE), GITIGNORE_TEXT.encode(), 0o644))
    return files


def _install(path: str, data: bytes, mode: int, project: str) -> None:
    """Write one file (atomically) and give it ``mode``; a failing chmod says which script could not be made executable."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    real = _inside_project(path, project)  # again: the directories made just now may be links
    if _read_bytes(real) != data:
        _write_atomic(real, data, 0o644)
    try:
        os.chmod(real, mode)
    except OSError as exc:
        if mode & 0o111:
            raise UserError(f"Cannot set execute permission on {display_path(path, project)}: {exc}")
        raise


def _needs_install(path: str, data: bytes, mode: int) -> bool:
    try:
        return _read_bytes(path) != data or (os.stat(path).st_mode & 0o777) != mode
    except OSError:
        return True


def _read_manifest(claude_dir: str) -> Dict[str, Any]:
    try:
        with open(_manifest_path(claude_dir), encoding="utf-8") as fh:
            manifest = json.load(fh)
        return manifest if isinstance(manifest, dict) else {}
    except (OSError, ValueError):
        return {}


# --- setup ----------------------------------------------------------------------------------


def setup(project: str, force: bool = False, dry_run: bool = False) -> Dict[str, Any]:
    """Register our hooks in ``project`` and install the scripts; the report (``--json``'s object)."""
    claude_dir = os.path.join(project, ".claude")
    settings = os.path.join(claude_dir, SETTINGS)
    shown = display_path(settings, project)
    files = _files_to_install(claude_dir)
    # Every path this run may write, checked before anything is read or written.
    real_settings = _inside_project(settings, project)
    for path in [_manifest_path(claude_dir), os.path.join(claude_dir, ZIPAPP_DIR, GITIGNORE)] + [f[0] for f in files]:
        _inside_project(path, project)
    old_text, document = _read_settings(real_settings, shown, force)
    new_document = _merged(document, shown, force)
    new_text = _serialise(new_document, old_text)
    # A forced run over invalid JSON read it as {}, so the new document differs and the file is replaced.
    settings_changes = old_text is None or new_document != document
    pending = [(path, data, mode) for path, data, mode in files if _needs_install(path, data, mode)]
    report: Dict[str, Any] = {
        "action": "setup",
        "project": project,
        "settings": settings,
        "settingsTarget": real_settings,
        "scripts": [path for path, _, _ in files if path.endswith(".sh")],
        "zipapp": next((path for path, _, _ in files if path.endswith(ZIPAPP)), None),
        "backup": None,
        "changed": bool(settings_changes or pending),
        "dryRun": dry_run,
        "written": [],
    }
    if dry_run:
        report["diff"] = "".join(difflib.unified_diff(
            (old_text or "").splitlines(True), new_text.splitlines(True), fromfile=shown, tofile=shown,
        )) if settings_changes else ""
        report["written"] = ([settings] if settings_changes else []) + [path for path, _, _ in pending]
        return report
    if not report["changed"]:
        return report
    created = []
    manifest = _read_manifest(claude_dir)
    if settings_changes:
        if not os.path.isdir(claude_dir):
            try:
                os.makedirs(claude_dir)
            except OSError as exc:
                raise UserError(f"Cannot write to {shown}: {exc}")
            created.append(".claude")
        try:
            real_settings = _inside_project(settings, project)  # .claude/ may be new
            if old_text is not None:
                report["backup"] = _backup(real_settings)
            else:
                created.append(f".claude/{SETTINGS}")
            mode = (os.stat(real_settings).st_mode & 0o777) if old_text is not None else 0o644
            _write_atomic(real_settings, new_text.encode("utf-8"), mode)
        except OSError as exc:
            if ".claude" in created:
                _rmdir_quietly(claude_dir)
            raise UserError(f"Cannot write to {shown}: {exc}")
        report["written"].append(settings)
    if not os.path.isdir(os.path.join(claude_dir, "hooks")):
        created.append(".claude/hooks")
    for path, data, mode in pending:
        try:
            _install(path, data, mode, project)
        except OSError as exc:
            raise UserError(f"Cannot write to {display_path(path, project)}: {exc}")
        report["written"].append(path)
    _write_manifest(claude_dir, project, manifest, created, report["backup"])
    return report


def _manifest_path(claude_dir: str) -> str:
    return os.path.join(claude_dir, ZIPAPP_DIR, MANIFEST)


def _write_manifest(claude_dir: str, project: str, manifest: Dict[str, Any], created: List[str], backup: Optional[str]) -> None:
    """Remember what this and earlier runs created, and the first backup (the settings before setup)."""
    manifest = dict(manifest)
    manifest["created"] = sorted(set(manifest.get("created") or []) | set(created))
    if backup and not manifest.get("firstBackup"):
        manifest["firstBackup"] = os.path.basename(backup)
    path = _manifest_path(claude_dir)
    gitignore = os.path.join(claude_dir, ZIPAPP_DIR, GITIGNORE)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write_atomic(_inside_project(path, project), (json.dumps(manifest, indent=2) + "\n").encode(), 0o644)
        if not os.path.exists(gitignore):
            _write_atomic(_inside_project(gitignore, project), GITIGNORE_TEXT.encode(), 0o644)
    except OSError:
        pass  # only --undo's precision depends on it; the hooks work without


# --- undo -----------------------------------------------------------------------------------


def undo(project: str, dry_run: bool = False) -> Dict[str, Any]:
    """Remove our hook entries, scripts and zipapp copy from ``project``; the report."""
    claude_dir = os.path.join(project, ".claude")
    settings = os.path.join(claude_dir, SETTINGS)
    shown = display_path(settings, project)
    # What undo rewrites, and the directories it removes files from, checked first; the files
    # themselves are unlinked, never followed, so a link among them only loses the link.
    real_settings = _inside_project(settings, project)
    for directory in (os.path.join(claude_dir, "hooks"), os.path.join(claude_dir, ZIPAPP_DIR)):
        _inside_project(directory, project)
    manifest = _read_manifest(claude_dir)
    created = set(manifest.get("created") or [])
    old_text, document = _read_settings(real_settings, shown, force=False)
    new_document = json.loads(json.dumps(document))
    hooks = new_document.get("hooks")
    if isinstance(hooks, dict):
        _remove_ours(hooks)
        if not hooks and document.get("hooks"):
            del new_document["hooks"]
    settings_action = None  # None: untouched; "write", "restore" (the first backup's bytes) or "delete"
    restore_from = None
    if old_text is not None and new_document != document:
        first = manifest.get("firstBackup")
        # setup put it beside the file it really wrote: the link's target when settings.json is a link.
        backup_path = os.path.join(os.path.dirname(real_settings), first) if isinstance(first, str) and "/" not in first else None
        backup_bytes = _read_bytes(backup_path) if backup_path else None
        if backup_bytes is not None and _same_json(backup_bytes, new_document):
            settings_action, restore_from = "restore", backup_bytes
        elif not new_document and f".claude/{SETTINGS}" in created:
            settings_action = "delete"
        else:
            settings_action = "write"
    removals = []
    for _, event, _, _ in HOOKS:
        path = os.path.join(claude_dir, "hooks", f"{SCRIPT_PREFIX}{event}.sh")
        data = _read_bytes(path)
        if data is not None and SCRIPT_MARKER.encode() in data:
            removals.append(path)
    for name in (ZIPAPP, LAUNCHER, GITIGNORE, MANIFEST):
        path = os.path.join(claude_dir, ZIPAPP_DIR, name)
        if os.path.lexists(path):
            removals.append(path)
    report: Dict[str, Any] = {
        "action": "undo",
        "project": project,
        "settings": settings,
        "settingsTarget": real_settings,
        "scripts": [p for p in removals if p.endswith(".sh")],
        "zipapp": next((p for p in removals if p.endswith(ZIPAPP)), None),
        "backup": None,
        "changed": bool(settings_action or removals),
        "dryRun": dry_run,
        "removed": list(removals),
    }
    if dry_run:
        new_text = "" if settings_action == "delete" else (
            restore_from.decode("utf-8", "replace") if restore_from is not None else _serialise(new_document, old_text))
        report["diff"] = "".join(difflib.unified_diff(
            (old_text or "").splitlines(True), new_text.splitlines(True), fromfile=shown, tofile=shown,
        )) if settings_action else ""
        if settings_action == "delete":
            report["removed"].insert(0, settings)
        return report
    if settings_action:
        try:
            if settings_action == "delete":
                # setup created this file and nothing but ours was ever in it: no backup worth keeping.
                os.unlink(settings)
                report["removed"].insert(0, settings)
            else:
                report["backup"] = _backup(real_settings)
                data = restore_from if restore_from is not None else _serialise(new_document, old_text).encode("utf-8")
                _write_atomic(real_settings, data, os.stat(real_settings).st_mode & 0o777)
        except OSError as exc:
            raise UserError(f"Cannot write to {shown}: {exc}")
    for path in removals:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise UserError(f"Cannot remove {display_path(path, project)}: {exc}")
    _rmdir_quietly(os.path.join(claude_dir, ZIPAPP_DIR))
    if ".claude/hooks" in created:
        _rmdir_quietly(os.path.join(claude_dir, "hooks"))
    if ".claude" in created and settings_action == "delete":
        # The backups are kept, so .claude/ goes only when nothing at all is left in it.
        _rmdir_quietly(claude_dir)
    return report


def _same_json(data: bytes, document: Dict[str, Any]) -> bool:
    try:
        return json.loads(data.decode("utf-8")) == document
    except (ValueError, UnicodeDecodeError):
        return False


def _rmdir_quietly(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass  # not empty (the user's files, or backups), or already gone
