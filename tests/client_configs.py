"""The other clients' fixture configs (tests/config/fixtures/clients/), set up as a user's machine.

A plain module shared by the import tests in tests/config/ (test files never import each other).
``scratch(client, tmp_path)`` copies one client's fake home and project into
``tmp_path`` and returns ``(home, project)``; ``expected(client, scope, home,
project)`` reads what the import must write and report there.
"""

import json
import os
import shutil
from typing import Any, Dict, Tuple

CLIENTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config", "fixtures", "clients")
# (client, scope) of every fixture with an expected result.
CASES = [("cursor", "home"), ("cursor", "project"), ("vscode", "home"), ("vscode", "project"), ("claude-desktop", "home"),
         ("codex", "home"), ("codex", "project"), ("windsurf", "home")]
# Variables that would point a client's reader somewhere else than the scratch home.
CLIENT_VARS = ("XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA", "USERPROFILE", "CODEX_HOME", "TOOLSCRIPT_CONFIG", "TOOLSCRIPT_STATE_DIR")


def scratch(client: str, tmp_path: Any) -> Tuple[str, str]:
    """A copy of ``client``'s fake home and project under ``tmp_path`` (real paths, each its own git repository root)."""
    root = os.path.realpath(str(tmp_path))
    home, project = os.path.join(root, "home"), os.path.join(root, "project")
    for name, target in (("home", home), ("project", project)):
        source = os.path.join(CLIENTS_DIR, client, name)
        if os.path.isdir(source):
            shutil.copytree(source, target)
        else:
            os.makedirs(target)
    os.makedirs(os.path.join(project, ".git"))  # Codex looks for project files up to the repository root
    return home, project


def environment(home: str, base: Any = None) -> Dict[str, str]:
    """``base`` (default: this process's environment) with ``HOME`` at ``home`` and no variable that moves a client's files."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in CLIENT_VARS}
    env["HOME"] = home
    return env


def _filled(value: Any, home: str, project: str) -> Any:
    if isinstance(value, dict):
        return {k: _filled(v, home, project) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, home, project) for v in value]
    if isinstance(value, str):
        return value.replace("<PROJECT>", project).replace("<HOME>", home)
    return value


def expected(client: str, scope: str, home: str, project: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """``(the mcpServers the import writes, what it reports)`` for one fixture, placeholders filled in."""
    folder = os.path.join(CLIENTS_DIR, client, "expected")
    with open(os.path.join(folder, f"{scope}.toolscript.json"), encoding="utf-8") as f:
        servers = json.load(f)["mcpServers"]
    with open(os.path.join(folder, f"{scope}.notes.json"), encoding="utf-8") as f:
        notes = json.load(f)
    return _filled(servers, home, project), _filled(notes, home, project)


def check_warnings(warnings_by_server: Dict[str, list], notes: Dict[str, Any]) -> None:
    """Each server has exactly the warnings ``notes`` lists for it, each found by its part."""
    for name, warnings in warnings_by_server.items():
        wanted = notes["warnings"].get(name, [])
        assert len(warnings) == len(wanted), f"{name}: {warnings} (expected parts: {wanted})"
        for part in wanted:
            assert any(part in warning for warning in warnings), f"{name}: no warning holds {part!r}: {warnings}"
