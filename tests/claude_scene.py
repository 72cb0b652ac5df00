"""The scratch world the end-to-end tests run the real ``claude`` CLI in, shared by tests/e2e/.

``Scene`` is one run's HOME, project (with a trusted ``.toolscript.json`` naming
the fixture MCP server), state directory and environment; ``claude_binary()``
is the pinned CLI from tests/peers (skip, or fail under
``TOOLSCRIPT_REQUIRE_PEERS=1``, when it is missing).
"""

import json
import os
import shutil
import subprocess
import sys
import uuid
from typing import Any, Dict, List, Optional, Tuple

import peers
from conftest import REPO_ROOT, missing_prerequisite, trust_project_file
from fake_anthropic import FakeAnthropic

PLUGIN_DIR = os.path.join(REPO_ROOT, "plugins", "toolscript")
FIXTURE_SERVER = os.path.join(REPO_ROOT, "tests", "mcp_servers", "fixture_server.py")
CLAUDE_TIMEOUT = 90.0  # seconds for one `claude -p` run (about 2-5 s when healthy)
GONE_TIMEOUT = 10.0  # seconds for the gateway and its servers to be gone after the run


def claude_binary() -> str:
    """The pinned ``claude`` CLI (tests/peers); skips the test, or fails it under TOOLSCRIPT_REQUIRE_PEERS=1, without it."""
    try:
        return peers.claude_binary()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
        raise  # not reached: missing_prerequisite skips or fails


def path_without_toolscript() -> str:
    """This process's PATH minus every directory holding a ``toolscript`` command."""
    keep = []
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if directory and not os.path.exists(os.path.join(directory, "toolscript")):
            keep.append(directory)
    path = os.pathsep.join(keep)
    assert shutil.which("toolscript", path=path) is None
    assert shutil.which("python3", path=path), "the plugin's hooks need python3 on PATH"
    return path


def tail(path: str, limit: int = 6000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"<{path}: {exc.strerror or exc}>"


def marked_processes(marker: str) -> List[Tuple[int, str]]:
    """(pid, cmdline) of every live process whose environment contains ``marker``.

    The marker is in claude's environment (inherited by the hooks and so by the
    gateway) and in the fixture server's configured ``env``.  Linux only: an
    empty list elsewhere.
    """
    found = []
    needle = marker.encode()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read()
            if needle not in environ:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[-1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":  # a zombie is dead already; its parent reaps it
            found.append((pid, cmdline))
    return found


class Scene:
    """The scratch world of one run: HOME, project, state dir, environment."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.home = os.path.join(root, "home")
        self.project = os.path.join(root, "project")
        self.state_dir = os.path.join(root, "state")
        self.gateways_dir = os.path.join(self.state_dir, "gateways")
        self.debug_log = os.path.join(root, "claude-debug.log")
        self.request_log = os.path.join(root, "fake-api-requests.jsonl")
        self.marker = f"TOOLSCRIPT_E2E_MARKER={uuid.uuid4().hex}"
        for directory in (self.home, self.project):
            os.makedirs(directory)
        config = {
            "mcpServers": {
                "fixture": {
                    "command": sys.executable,
                    "args": [FIXTURE_SERVER, "stdio"],
                    "env": {self.marker.split("=", 1)[0]: self.marker.split("=", 1)[1]},
                }
            }
        }
        with open(os.path.join(self.project, ".toolscript.json"), "w", encoding="utf-8") as fh:
            json.dump(config, fh, indent=2)
        # The user approved this project's file (toolscript trust), so its server runs.
        trust_project_file(os.path.join(self.project, ".toolscript.json"), {"HOME": self.home, "TOOLSCRIPT_STATE_DIR": self.state_dir})

    def env(self, api_url: str = "http://127.0.0.1:9") -> Dict[str, str]:
        name, value = self.marker.split("=", 1)
        env = {
            "HOME": self.home,
            "PATH": path_without_toolscript(),
            "ANTHROPIC_BASE_URL": api_url,
            "ANTHROPIC_API_KEY": "test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "1",  # an API failure fails fast instead of retrying for minutes
            "TOOLSCRIPT_STATE_DIR": self.state_dir,
            # The prompt hook's model call would be one more request to the fake; its own e2e is tests/e2e/test_claude_suggest_e2e.py.
            "TOOLSCRIPT_SUGGEST_BACKEND": "local",
            name: value,
        }
        for keep in ("LANG", "LC_ALL", "TMPDIR", "USER", "LOGNAME"):
            if keep in os.environ:
                env[keep] = os.environ[keep]
        return env

    def state_files(self) -> Dict[str, Any]:
        """The gateway state files now in the scratch state dir: name -> parsed JSON (or the error)."""
        result: Dict[str, Any] = {}
        try:
            names = sorted(os.listdir(self.gateways_dir))
        except FileNotFoundError:
            return result
        for name in names:
            if name.endswith(".json"):
                try:
                    with open(os.path.join(self.gateways_dir, name), encoding="utf-8") as fh:
                        result[name] = json.load(fh)
                except (OSError, ValueError) as exc:
                    result[name] = f"<unreadable: {exc}>"
        return result

    def diagnostics(self, api: Optional[FakeAnthropic], proc: Optional["subprocess.CompletedProcess[str]"]) -> str:
        parts = []
        if proc is not None:
            parts.append(f"claude exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
        if api is not None:
            parts.append("--- fake API requests\n" + api.summary())
            observed = [r.get("observed") for r in api.message_requests()]
            parts.append("--- state files seen at each /v1/messages request\n" + json.dumps(observed, indent=1)[:3000])
        parts.append("--- state files now\n" + json.dumps(self.state_files(), indent=1)[:2000])
        parts.append("--- hooks.log tail\n" + tail(os.path.join(self.state_dir, "hooks.log"), 3000))
        try:
            logs = [n for n in os.listdir(self.gateways_dir) if n.endswith(".log")]
        except OSError:
            logs = []
        for name in logs:
            parts.append(f"--- {name} tail\n" + tail(os.path.join(self.gateways_dir, name), 2000))
        parts.append("--- claude debug log tail\n" + tail(self.debug_log, 6000))
        return "\n".join(parts)
