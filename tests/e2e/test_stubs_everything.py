"""Python stubs of a live peer's catalog: server-everything, listed through toolscript's own MCP client."""

import json

from conftest import missing_prerequisite
from stub_checks import load, signature
from toolscript.stubs.python import python_stubs, usage_example


def test_server_everything_live(capsys):
    """Record server-everything's catalog through our own client; report stub size vs JSON."""
    import peers
    from toolscript.config.load import ServerConfig
    from toolscript.mcp.client.connect import open_session

    try:
        entry, node = peers.everything_entry(), peers.node_binary()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    config = ServerConfig(name="everything", type="stdio", source="test", command=node, args=[entry, "stdio"])
    session = open_session(config)
    try:
        listed = session.list_tools()
    finally:
        session.close()
    entries = [dict(t, id=f"everything__{t['name']}", server="everything") for t in listed]
    source = python_stubs(entries)
    namespace = load(source)
    assert hasattr(namespace["everything"], "echo") and hasattr(namespace["everything"], "get_sum")
    assert signature(source, "everything", "get_sum").annotations == {"a": "float", "b": "float"}
    assert usage_example(entries) == 'result = tools.everything.echo(message="...")'
    sizes = (len(source), len(python_stubs(entries, full=True)), len(json.dumps(entries)))
    assert sizes[0] < sizes[2] * 0.7
    with capsys.disabled():
        print(f"\nserver-everything: {len(entries)} tools; compact stubs {sizes[0]} chars, full {sizes[1]}, json.dumps(tools) {sizes[2]}")
