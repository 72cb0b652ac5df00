"""Config files that change under a running gateway: the tests of live configuration.

* ``fixture_entry(marker, *options)``: a ``mcpServers`` entry running tests/mcp_servers/fixture_server.py on
  stdio, with ``marker`` among its arguments (``gateway_processes.pids_with(marker)`` finds its process).
* ``marker(tmp_path, name)``: a marker no other test (or xdist worker) uses.
* ``write_json(path, document)`` / ``write_text(path, text)``: replace a file whole, as editors and
  Claude Code do (a temporary file and a rename), so a reader never sees half of it.
* ``server_pids(marker)``: the pids of the live processes carrying ``marker``.
"""

import json
import os
import sys
from typing import Any, Dict, List

import gateway_processes
from mcp_servers.launch import FIXTURE


def marker(tmp_path: Any, name: str) -> str:
    return f"live-{name}-{os.getpid()}-{os.path.basename(str(tmp_path))}"


def fixture_entry(marker: str, *options: str) -> Dict[str, Any]:
    return {"command": sys.executable, "args": [FIXTURE, "stdio", "--name", marker, *options]}


def write_text(path: Any, text: str) -> None:
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = path + ".writing"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)


def write_json(path: Any, document: Any) -> None:
    write_text(path, json.dumps(document, indent=2))


def server_pids(marker: str) -> List[int]:
    return gateway_processes.pids_with(marker)
