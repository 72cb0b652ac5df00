"""One ``Transport`` protocol that every transport implements whole, and no app config in the MCP layer."""

import ast
import os

from conftest import REPO_ROOT
from toolscript.mcp.client.stdio import StdioTransport
from toolscript.mcp.client.streamable_http import StreamableHttpTransport
from toolscript.mcp.errors import McpError

TOOLSCRIPT_DIR = os.path.join(REPO_ROOT, "toolscript")


def test_mcp_layer_does_not_import_the_app_config():
    """Every module of toolscript/mcp/ (its packages too): no app config, and no ``hasattr`` on a transport."""
    bad = []
    checked = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(TOOLSCRIPT_DIR, "mcp")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            path = os.path.join(dirpath, filename)
            name = os.path.relpath(path, TOOLSCRIPT_DIR)
            checked.append(name)
            source = open(path).read()
            for node in ast.walk(ast.parse(source)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                bad += [f"{name}: {m}" for m in modules if m == "toolscript.config" or m.startswith("toolscript.config.")]
            assert "type: ignore[attr-defined]" not in source, name
            assert "hasattr(" not in source and "getattr(self.transport" not in source, name
    assert os.path.join("mcp", "client", "stdio.py") in checked  # the walk reaches the packages
    assert bad == []


def test_every_transport_implements_the_whole_protocol():
    from toolscript.mcp.client.legacy_sse import LegacySseTransport
    from toolscript.mcp.client.transport import Transport

    members = [n for n in vars(Transport) if not n.startswith("_")] + list(Transport.__annotations__)
    for cls in (StdioTransport, StreamableHttpTransport, LegacySseTransport):
        missing = [n for n in members if not hasattr(cls, n) and n not in ("protocol_version",)]
        assert missing == [], (cls.__name__, missing)
    assert McpError("x").stderr_tail == ""
