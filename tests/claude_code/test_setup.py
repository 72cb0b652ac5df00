"""``toolscript setup`` (``toolscript.claude_code.install``): hooks in ``.claude/settings.json`` for a project without the plugin.

The command runs as a real process (the checkout through ``run_cli``, or the
zipapp, which also copies itself into the project).  Covered: a fresh project,
a merge that keeps custom keys and foreign hooks, idempotence, ``--force``,
``--undo`` back to the original bytes, invalid JSON, an unwritable
``.claude/``, a failing chmod, symlinks (followed inside the project, refused
when they lead out), ``--dry-run`` and the installed scripts themselves.  The
real ``claude`` CLI running the hooks from the written settings is
tests/e2e/test_claude_setup_e2e.py.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from typing import Any, Dict, List, Optional

import pytest

from conftest import REPO_ROOT, missing_prerequisite, run_cli, run_pyz
from toolscript.claude_code import install

EVENTS = {  # Claude Code event -> (script event, matcher, timeout in seconds)
    "SessionStart": ("session-start", None, 10),
    "UserPromptSubmit": ("user-prompt-submit", None, 5),
    "PreToolUse": ("pre-tool-use", "Edit|Write|Bash", 5),
    "PostToolUse": ("post-tool-use", "*", 5),
    "Stop": ("stop", None, 5),
    "SessionEnd": ("session-end", None, 5),
}

FOREIGN_SESSION_START = {"matcher": "startup", "hooks": [{"type": "command", "command": "echo mine", "timeout": 3}]}
FOREIGN_POST_TOOL_USE = {"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/audit.sh"}]}
EXISTING = {
    "model": "claude-sonnet-4-5",
    "env": {"FOO": "bar", "ÜNICODE": "✓"},
    "permissions": {"allow": ["Bash(npm test)"], "deny": []},
    "hooks": {
        "SessionStart": [FOREIGN_SESSION_START],
        "PostToolUse": [FOREIGN_POST_TOOL_USE],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
    "enabledPlugins": {"other@market": True},
}


def _project(tmp_path, settings: Optional[Any] = None, text: Optional[str] = None) -> str:
    project = tmp_path / "project"
    project.mkdir()
    if settings is not None or text is not None:
        (project / ".claude").mkdir()
        body = text if text is not None else json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
        (project / ".claude" / "settings.json").write_text(body, encoding="utf-8")
    return str(project)


def _settings_path(project: str) -> str:
    return os.path.join(project, ".claude", "settings.json")


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _load(project: str) -> Dict[str, Any]:
    with open(_settings_path(project), encoding="utf-8") as fh:
        return json.load(fh)


def _tree(root: str) -> Dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes); links as ``b'-> target'``."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = b"-> " + os.readlink(path).encode()
            elif os.path.isfile(path):
                found[rel] = _read(path)
            else:
                found[rel + "/"] = b""
    return found


def _ours(settings: Dict[str, Any], event: str) -> List[Dict[str, Any]]:
    """Our hook entries under ``event`` (each with its group's matcher)."""
    found = []
    for group in settings.get("hooks", {}).get(event, []):
        for hook in group.get("hooks", []):
            if ".claude/hooks/toolscript-" in hook.get("command", ""):
                found.append(dict(hook, matcher=group.get("matcher")))
    return found


def _setup(project: str, *args: str, pyz: Optional[str] = None, cwd: Optional[str] = None, env=None):
    argv = ["setup", "--project", project, *args]
    if pyz:
        return run_pyz(pyz, *argv, cwd=cwd or project, env=env)
    return run_cli(*argv, cwd=cwd or project, env=env)


def _assert_registered(settings: Dict[str, Any], project: str) -> None:
    for event, (script_event, matcher, timeout) in EVENTS.items():
        ours = _ours(settings, event)
        assert len(ours) == 1, f"{event}: expected exactly one toolscript hook, got {ours}"
        hook = ours[0]
        assert hook["type"] == "command" and hook["timeout"] == timeout and hook["matcher"] == matcher
        # Only the capture that answers nothing runs in the background: no one waits for its Python start.
        assert hook.get("async", False) is (event == "PostToolUse")
        assert hook["command"] == f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/toolscript-{script_event}.sh'
        script = os.path.join(project, ".claude", "hooks", f"toolscript-{script_event}.sh")
        mode = os.stat(script).st_mode
        assert stat.S_ISREG(mode) and mode & 0o111 == 0o111, f"{script} is not executable: {oct(mode)}"
        assert _read(script) == install.hook_script(script_event)


# --- a fresh project ------------------------------------------------------------------------------


def test_fresh_project_gets_valid_settings_executable_scripts_and_the_zipapp(tmp_path, pyz):
    project = _project(tmp_path)
    proc = _setup(project, "--json", pyz=pyz)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["changed"] is True and report["backup"] is None
    assert report["settings"] == _settings_path(project)
    assert sorted(report["scripts"]) == sorted(
        os.path.join(project, ".claude", "hooks", f"toolscript-{e}.sh") for e, _, _ in EVENTS.values()
    )
    settings = _load(project)  # valid JSON
    assert list(settings) == ["hooks"] and list(settings["hooks"]) == list(EVENTS)
    _assert_registered(settings, project)
    assert oct(os.stat(_settings_path(project)).st_mode & 0o777) == oct(0o644)
    # The zipapp copy the scripts run, its launcher, and a .gitignore that keeps both out of git.
    copy = os.path.join(project, ".claude", "toolscript", "toolscript.pyz")
    assert report["zipapp"] == copy and _read(copy) == _read(pyz)
    launcher = os.path.join(project, ".claude", "toolscript", "toolscript")
    assert os.stat(launcher).st_mode & 0o111
    assert "*" in _read(os.path.join(project, ".claude", "toolscript", ".gitignore")).decode().splitlines()


def test_run_from_a_checkout_installs_no_zipapp_and_says_so(tmp_path):
    project = _project(tmp_path)
    proc = _setup(project)
    assert proc.returncode == 0, proc.stderr
    _assert_registered(_load(project), project)
    assert not os.path.exists(os.path.join(project, ".claude", "toolscript", "toolscript.pyz"))
    assert "not run from toolscript.pyz" in proc.stdout and "PATH" in proc.stdout


# --- merging -------------------------------------------------------------------------------------


def test_merge_keeps_custom_keys_and_foreign_hooks(tmp_path):
    project = _project(tmp_path, EXISTING)
    original = _read(_settings_path(project))
    proc = _setup(project, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    settings = _load(project)
    # Every other key is unchanged, in its place.
    assert list(settings) == list(EXISTING)
    for key in ("model", "env", "permissions", "enabledPlugins"):
        assert settings[key] == EXISTING[key]
    # Foreign hooks stay first in their events; an event we do not use is untouched.
    assert settings["hooks"]["SessionStart"][0] == FOREIGN_SESSION_START
    assert settings["hooks"]["PostToolUse"][0] == FOREIGN_POST_TOOL_USE
    assert settings["hooks"]["Notification"] == EXISTING["hooks"]["Notification"]
    _assert_registered(settings, project)
    # Byte for byte where untouched: the file keeps its indentation, so each other key's text is as it was.
    text = _read(_settings_path(project)).decode()
    for key in ("env", "permissions", "enabledPlugins"):
        chunk = json.dumps({key: EXISTING[key]}, indent=2, ensure_ascii=False)[2:-2]
        assert chunk in text and chunk in original.decode()
    # The old file was backed up, byte for byte.
    assert report["backup"] and os.path.basename(report["backup"]).startswith("settings.json.bak-")
    assert _read(report["backup"]) == original


def test_merge_keeps_the_files_own_indentation(tmp_path):
    project = _project(tmp_path, text=json.dumps({"model": "x", "env": {"A": "1"}}, indent=4) + "\n")
    assert _setup(project).returncode == 0
    text = _read(_settings_path(project)).decode()
    assert text.startswith('{\n    "model": "x",\n    "env": {\n        "A": "1"\n    },\n    "hooks"'), text[:200]


def test_second_run_changes_nothing_and_says_so(tmp_path):
    project = _project(tmp_path, EXISTING)
    assert _setup(project).returncode == 0
    before = _tree(project)
    mtime = os.stat(_settings_path(project)).st_mtime_ns
    proc = _setup(project)
    assert proc.returncode == 0, proc.stderr
    assert "nothing changed" in proc.stdout
    assert _tree(project) == before  # no new backup, no rewrite
    assert os.stat(_settings_path(project)).st_mtime_ns == mtime
    report = json.loads(_setup(project, "--json").stdout)
    assert report["changed"] is False and report["backup"] is None


def test_an_edited_entry_of_ours_is_kept_and_force_replaces_it(tmp_path):
    project = _project(tmp_path, EXISTING)
    assert _setup(project).returncode == 0
    settings = _load(project)
    # The user tunes our SessionStart timeout and moves our Stop hook into a group of their own.
    for group in settings["hooks"]["SessionStart"]:
        for hook in group["hooks"]:
            if "toolscript-" in hook["command"]:
                hook["timeout"] = 99
    ours_stop = settings["hooks"]["Stop"].pop()["hooks"][0]
    settings["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "echo theirs"}, ours_stop]}]
    with open(_settings_path(project), "w", encoding="utf-8") as fh:
        json.dump(settings, fh, indent=2)
    proc = _setup(project)
    assert proc.returncode == 0 and "nothing changed" in proc.stdout
    assert [h["timeout"] for h in _ours(_load(project), "SessionStart")] == [99]  # not duplicated, not reset

    proc = _setup(project, "--force")
    assert proc.returncode == 0, proc.stderr
    forced = _load(project)
    _assert_registered(forced, project)  # one each, our timeouts back
    assert forced["hooks"]["SessionStart"][0] == FOREIGN_SESSION_START
    assert forced["hooks"]["Stop"][0] == {"hooks": [{"type": "command", "command": "echo theirs"}]}


# --- invalid JSON --------------------------------------------------------------------------------

INVALID = '{\n  "model": "x",\n  "env": {"A": 1,}\n}\n'


def test_invalid_json_names_line_and_column_and_writes_nothing(tmp_path):
    project = _project(tmp_path, text=INVALID)
    before = _tree(project)
    proc = _setup(project)
    assert proc.returncode == 1
    assert "Invalid JSON in .claude/settings.json at line 3, column 18:" in proc.stderr, proc.stderr
    assert "fix it or run with --force" in proc.stderr
    assert proc.stderr.count("\n") == 1  # one line
    assert _tree(project) == before


@pytest.mark.parametrize("text, what", [("[1, 2]\n", "top level is not a JSON object"), ('{"hooks": []}\n', '"hooks" is not a JSON object')])
def test_settings_of_the_wrong_shape_are_refused(tmp_path, text, what):
    project = _project(tmp_path, text=text)
    before = _tree(project)
    proc = _setup(project)
    assert proc.returncode == 1 and what in proc.stderr and "--force" in proc.stderr
    assert _tree(project) == before


def test_force_replaces_invalid_json_after_backing_it_up(tmp_path):
    project = _project(tmp_path, text=INVALID)
    proc = _setup(project, "--force", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert _read(report["backup"]).decode() == INVALID
    settings = _load(project)
    assert list(settings) == ["hooks"]
    _assert_registered(settings, project)


# --- --undo -------------------------------------------------------------------------------------


def test_undo_restores_the_original_bytes(tmp_path, pyz):
    odd = '{"model":"x",   "hooks": {"Stop": [ {"hooks": [{"type": "command", "command": "echo bye"}]} ]},\n"env": {}}\n'
    project = _project(tmp_path, text=odd)
    original = _tree(project)
    assert _setup(project, pyz=pyz).returncode == 0
    proc = _setup(project, "--undo", "--json", pyz=pyz)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["changed"] is True
    assert _read(_settings_path(project)).decode() == odd
    after = _tree(project)
    backups = [name for name in after if ".bak-" in name]
    assert backups, "the backups are kept"
    assert {k: v for k, v in after.items() if k not in backups} == original


def test_undo_of_a_fresh_setup_leaves_the_directory_empty(tmp_path, pyz):
    project = _project(tmp_path)
    assert _setup(project, pyz=pyz).returncode == 0
    assert _setup(project, "--undo", pyz=pyz).returncode == 0
    assert _tree(project) == {}
    proc = _setup(project, "--undo")
    assert proc.returncode == 0 and "nothing changed" in proc.stdout


def test_undo_keeps_what_the_user_changed_since(tmp_path):
    project = _project(tmp_path, EXISTING)
    assert _setup(project).returncode == 0
    settings = _load(project)
    settings["theme"] = "dark"
    settings["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "echo later"}]})
    with open(_settings_path(project), "w", encoding="utf-8") as fh:
        json.dump(settings, fh, indent=2)
    assert _setup(project, "--undo").returncode == 0
    expected = json.loads(json.dumps(EXISTING))
    expected["theme"] = "dark"
    expected["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "echo later"}]}]
    assert _load(project) == expected
    assert not [n for n in os.listdir(os.path.join(project, ".claude")) if n in ("hooks", "toolscript")]


def test_undo_without_the_manifest_still_removes_ours(tmp_path):
    """A teammate's clone has the settings and scripts but not the git-ignored .claude/toolscript/."""
    project = _project(tmp_path, EXISTING)
    assert _setup(project).returncode == 0
    shutil.rmtree(os.path.join(project, ".claude", "toolscript"))
    assert _setup(project, "--undo").returncode == 0
    assert _load(project) == EXISTING
    assert os.listdir(os.path.join(project, ".claude", "hooks")) == []  # the dir was not known to be ours


# --- where it cannot write ----------------------------------------------------------------------


def _python_anyone_can_run() -> str:
    """A Python 3 that uid 65534 can execute (every directory on its path searchable by others) when we are root."""
    if os.geteuid() != 0:
        return sys.executable
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3", "/usr/local/bin/python3"):
        if not candidate or not os.path.exists(candidate):
            continue
        path = os.path.realpath(candidate)
        parts = [path] + [os.path.dirname(path)]
        while parts[-1] != os.path.dirname(parts[-1]):
            parts.append(os.path.dirname(parts[-1]))
        if all(os.stat(part).st_mode & 0o001 for part in parts):
            return path
    missing_prerequisite("no Python 3 that an unprivileged user can run (needed to test an unwritable directory as root)")
    raise AssertionError("not reached")


def _run_unprivileged(pyz: str, project_parent_setup, args: List[str]) -> "subprocess.CompletedProcess[str]":
    """Run the zipapp's setup as a user who cannot write the project's .claude/ (nobody, when we are root).

    Root ignores directory permissions, so as root the command runs as uid 65534 through
    ``setpriv``, in a world-readable scratch directory (pytest's tmp dirs are 0700).
    """
    python = _python_anyone_can_run()
    scratch = tempfile.mkdtemp(prefix="toolscript-setup-ro-")
    try:
        os.chmod(scratch, 0o755)
        copy = os.path.join(scratch, "toolscript.pyz")
        shutil.copyfile(pyz, copy)
        os.chmod(copy, 0o644)
        project = os.path.join(scratch, "project")
        os.mkdir(project)
        project_parent_setup(project)
        argv = [python, "-I", copy, "setup", "--project", project] + args
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch, "LANG": "C.UTF-8"}
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.fail("running as root needs setpriv (util-linux) to test an unwritable directory")
            argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] + argv
        proc = subprocess.run(argv, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        proc.tree = _tree(project)  # type: ignore[attr-defined]
        return proc
    finally:
        for dirpath, dirnames, _ in os.walk(scratch):
            for name in dirnames:
                os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.parametrize("existing", [None, EXISTING])
def test_read_only_claude_dir_is_a_one_line_error_and_exit_1(pyz, existing):
    def prepare(project: str) -> None:
        claude = os.path.join(project, ".claude")
        os.mkdir(claude)
        if existing is not None:
            with open(os.path.join(claude, "settings.json"), "w", encoding="utf-8") as fh:
                json.dump(existing, fh, indent=2)
        os.chmod(claude, 0o555)

    proc = _run_unprivileged(pyz, prepare, [])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith("toolscript: error: Cannot write to .claude/settings.json: "), proc.stderr
    assert proc.stderr.count("\n") == 1
    expected = {".claude/": b""} if existing is None else {".claude/": b"", ".claude/settings.json": (json.dumps(existing, indent=2)).encode()}
    assert proc.tree == expected  # type: ignore[attr-defined]


def test_read_only_project_without_claude_dir(pyz):
    proc = _run_unprivileged(pyz, lambda project: os.chmod(project, 0o555), [])
    assert proc.returncode == 1
    assert "Cannot write to .claude/settings.json: " in proc.stderr
    assert proc.tree == {}  # type: ignore[attr-defined]


def test_missing_claude_dir_is_created_for_another_project(tmp_path):
    project = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = _setup(project, cwd=str(elsewhere))
    assert proc.returncode == 0, proc.stderr
    assert os.path.join(project, ".claude", "settings.json") in proc.stdout  # another project: full paths
    _assert_registered(_load(project), project)
    assert os.listdir(str(elsewhere)) == []


def test_chmod_failure_names_the_script(tmp_path, monkeypatch, capsys):
    """A script that cannot be made executable is named: "Cannot set execute permission on .claude/hooks/X.sh: [error]"."""
    from toolscript.cli import frame as cli

    project = _project(tmp_path)
    real_chmod = os.chmod

    def chmod(path, mode, *args, **kwargs):
        if str(path).endswith(".sh") and mode & 0o111:
            raise PermissionError(1, "Operation not permitted")
        return real_chmod(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "chmod", chmod)
    monkeypatch.chdir(project)
    assert cli.main(["setup"]) == 1
    err = capsys.readouterr().err
    assert "Cannot set execute permission on .claude/hooks/toolscript-session-start.sh: [Errno 1] Operation not permitted" in err


# --- symlinks and --dry-run ---------------------------------------------------------------------


def test_symlink_inside_the_project_is_followed_stays_a_link_and_gets_its_backup_beside_the_target(tmp_path):
    project = _project(tmp_path)
    shared = os.path.join(project, "config", "claude-settings.json")
    os.makedirs(os.path.dirname(shared))
    original = (json.dumps({"model": "x"}, indent=2) + "\n").encode()
    with open(shared, "wb") as fh:
        fh.write(original)
    os.mkdir(os.path.join(project, ".claude"))
    os.symlink(os.path.join("..", "config", "claude-settings.json"), _settings_path(project))

    proc = _setup(project)
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(_settings_path(project))
    target = json.loads(_read(shared))
    assert target["model"] == "x"
    _assert_registered(target, project)
    # The backup is of the file really written, beside it; none beside the link.
    assert not [n for n in os.listdir(os.path.join(project, ".claude")) if ".bak-" in n]
    beside_target = [n for n in os.listdir(os.path.dirname(shared)) if n.startswith("claude-settings.json.bak-")]
    assert len(beside_target) == 1 and _read(os.path.join(project, "config", beside_target[0])) == original
    assert "write .claude/settings.json (the symlink's target: config/claude-settings.json)" in proc.stdout

    assert _setup(project, "--undo").returncode == 0
    assert os.path.islink(_settings_path(project)) and _read(shared) == original


OUTSIDE_SETTINGS = (json.dumps({"model": "mine", "hooks": {}}, indent=2) + "\n").encode()


def _home_claude(tmp_path, text: bytes = OUTSIDE_SETTINGS) -> str:
    """A ~/.claude outside the project, with a settings.json of ``text``."""
    home_claude = str(tmp_path / "home" / ".claude")
    os.makedirs(home_claude)
    with open(os.path.join(home_claude, "settings.json"), "wb") as fh:
        fh.write(text)
    return home_claude


def _assert_refused(proc, link: str, target: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == (
        f"toolscript: error: {link} is a symlink to {target}, outside the project; setup writes only inside "
        "the project, so nothing was changed: make the change there yourself, or replace the link with a copy of "
        "what it points to and run setup again\n"
    )


@pytest.mark.parametrize("args", [[], ["--force"], ["--dry-run"], ["--undo"]], ids=["plain", "force", "dry-run", "undo"])
@pytest.mark.parametrize("text", [OUTSIDE_SETTINGS, b"not json {"], ids=["json", "not-json"])
def test_settings_linked_out_of_the_project_is_refused_and_nothing_outside_changes(tmp_path, args, text):
    home_claude = _home_claude(tmp_path, text)
    outside_before = _tree(str(tmp_path / "home"))
    project = _project(tmp_path)
    os.mkdir(os.path.join(project, ".claude"))
    os.symlink(os.path.join(home_claude, "settings.json"), _settings_path(project))
    project_before = _tree(project)

    proc = _setup(project, *args)
    assert _tree(str(tmp_path / "home")) == outside_before
    assert _tree(project) == project_before
    _assert_refused(proc, ".claude/settings.json", os.path.join(home_claude, "settings.json"))


def test_claude_dir_linked_out_of_the_project_is_refused(tmp_path):
    home_claude = _home_claude(tmp_path)
    outside_before = _tree(str(tmp_path / "home"))
    project = _project(tmp_path)
    os.symlink(home_claude, os.path.join(project, ".claude"))
    for args in ([], ["--force"], ["--undo"]):
        proc = _setup(project, *args)
        assert _tree(str(tmp_path / "home")) == outside_before
        _assert_refused(proc, ".claude", home_claude)


def test_hooks_dir_or_script_linked_out_of_the_project_is_refused(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "tool.sh").write_text("#!/bin/sh\necho mine\n")
    os.chmod(str(outside / "tool.sh"), 0o644)
    outside_before = _tree(str(outside))
    project = _project(tmp_path)
    os.makedirs(os.path.join(project, ".claude"))

    os.symlink(str(outside), os.path.join(project, ".claude", "hooks"))
    proc = _setup(project)
    assert _tree(str(outside)) == outside_before
    assert not os.path.exists(_settings_path(project))  # refused before anything was written
    _assert_refused(proc, ".claude/hooks", str(outside))
    _assert_refused(_setup(project, "--undo"), ".claude/hooks", str(outside))

    os.unlink(os.path.join(project, ".claude", "hooks"))
    os.makedirs(os.path.join(project, ".claude", "hooks"))
    script = os.path.join(project, ".claude", "hooks", "toolscript-stop.sh")
    os.symlink(str(outside / "tool.sh"), script)
    proc = _setup(project, "--force")
    assert _tree(str(outside)) == outside_before
    assert os.stat(str(outside / "tool.sh")).st_mode & 0o777 == 0o644  # not made executable either
    assert not os.path.exists(_settings_path(project))
    _assert_refused(proc, ".claude/hooks/toolscript-stop.sh", str(outside / "tool.sh"))


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path):
    project = _project(tmp_path, EXISTING)
    before = _tree(project)
    proc = _setup(project, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "--- .claude/settings.json" in proc.stdout and "+++ .claude/settings.json" in proc.stdout
    assert '+            "command": "\\"$CLAUDE_PROJECT_DIR\\"/.claude/hooks/toolscript-stop.sh",' in proc.stdout
    assert "would write .claude/hooks/toolscript-stop.sh" in proc.stdout
    assert _tree(project) == before
    report = json.loads(_setup(project, "--dry-run", "--json").stdout)
    assert report["dryRun"] is True and report["changed"] is True and report["diff"]
    assert _tree(project) == before
    assert _setup(project).returncode == 0
    after = _tree(project)
    proc = _setup(project, "--undo", "--dry-run")
    assert proc.returncode == 0 and "would remove .claude/hooks/toolscript-stop.sh" in proc.stdout
    assert '-            "command": "\\"$CLAUDE_PROJECT_DIR\\"/.claude/hooks/toolscript-stop.sh",' in proc.stdout
    assert _tree(project) == after


# --- the scripts --------------------------------------------------------------------------------


def test_setup_installs_the_packages_hook_scripts_one_per_event():
    """The scripts are package data (hook_scripts/<event>.sh), one per event setup registers: each a thin call
    of ``toolscript hook <event>`` carrying the marker --undo recognises its own scripts by."""
    shipped = os.path.join(REPO_ROOT, "toolscript", "claude_code", install.SCRIPTS_DIR)
    assert sorted(os.listdir(shipped)) == sorted(f"{event}.sh" for event, _, _ in EVENTS.values())
    assert [(claude_event, event, matcher, timeout) for claude_event, (event, matcher, timeout) in EVENTS.items()] == list(install.HOOKS)
    for event, _, _ in EVENTS.values():
        text = install.hook_script(event).decode()
        assert text == _read(os.path.join(shipped, f"{event}.sh")).decode()
        assert text.startswith("#!/bin/sh\n") and text.splitlines()[1].startswith(install.SCRIPT_MARKER)
        commands = [line for line in text.splitlines() if line and not line.startswith("#")]
        assert f"exec toolscript hook {event};" in text and f'"$pyz" hook {event};' in text, text
        assert commands[-1] == "exit 0" and len(commands) == 8, text  # a thin call: all logic is in Python


def test_setup_from_the_zipapp_writes_the_scripts_the_zipapp_carries(tmp_path, pyz):
    with zipfile.ZipFile(pyz) as archive:
        carried = {event: archive.read(f"toolscript/claude_code/{install.SCRIPTS_DIR}/{event}.sh") for event, _, _ in EVENTS.values()}
    project = _project(tmp_path)
    assert _setup(project, pyz=pyz).returncode == 0
    for event, text in carried.items():
        assert _read(os.path.join(project, ".claude", "hooks", f"toolscript-{event}.sh")) == text == install.hook_script(event)


def _path_without_toolscript() -> str:
    keep = [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d and not os.path.exists(os.path.join(d, "toolscript"))]
    return os.pathsep.join(keep)


def test_script_exits_0_silently_with_no_toolscript_anywhere(tmp_path):
    project = _project(tmp_path)
    assert _setup(project).returncode == 0  # from the checkout: no zipapp copy
    env = {"PATH": _path_without_toolscript(), "HOME": str(tmp_path), "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    for event, _, _ in EVENTS.values():
        script = os.path.join(project, ".claude", "hooks", f"toolscript-{event}.sh")
        proc = subprocess.run([script], input='{"session_id": "s1"}\n', env=env, cwd=project, capture_output=True, text=True, timeout=30)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), event
    assert not os.path.exists(str(tmp_path / "state"))


def test_script_runs_the_copied_zipapp(tmp_path, pyz):
    project = _project(tmp_path)
    assert _setup(project, pyz=pyz).returncode == 0
    state = tmp_path / "state"
    env = {"PATH": _path_without_toolscript(), "HOME": str(tmp_path), "TOOLSCRIPT_STATE_DIR": str(state), "TOOLSCRIPT_SUGGEST": "0"}
    script = os.path.join(project, ".claude", "hooks", "toolscript-user-prompt-submit.sh")
    proc = subprocess.run([script], input='{"session_id": "s1", "prompt": "hi"}\n', env=env, cwd=project, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""
    # The launcher beside the copy runs it too (what a session's Bash tool finds on PATH).
    launcher = os.path.join(project, ".claude", "toolscript", "toolscript")
    proc = subprocess.run([launcher, "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("toolscript"), proc.stdout + proc.stderr


def test_warns_when_the_plugin_is_enabled_too(tmp_path):
    project = _project(tmp_path, {"enabledPlugins": {"toolscript@toolscript": True}})
    proc = _setup(project)
    assert proc.returncode == 0, proc.stderr
    assert "warning: the plugin toolscript@toolscript is enabled for this project too" in proc.stderr
    assert "claude plugin disable toolscript@toolscript" in proc.stderr
    _assert_registered(_load(project), project)
    (tmp_path / "other").mkdir()
    quiet = _project(tmp_path / "other", {"enabledPlugins": {"toolscript@toolscript": False}})
    assert _setup(quiet).stderr == ""
