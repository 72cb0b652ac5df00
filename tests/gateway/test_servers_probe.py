"""``toolscript.gateway.servers.probe``: what ``servers check`` reports of one server."""

from mcp_servers.launch import stdio_command
from toolscript.config.load import ServerConfig


def test_probe_reports_hidden_tools(tmp_path):
    from toolscript.gateway.servers import probe

    cmd = stdio_command()
    server = ServerConfig(name="f", type="stdio", source="test", command=cmd[0], args=cmd[1:], exclude_tools=["crash", "hang"])
    report = probe(server)
    assert report["ok"] and report["toolsTotal"] == report["tools"] + 2
    assert report["hidden"] == {"includeTools/excludeTools": 2}
