"""``toolscript.mcp.jsonrpc``: decoding what a peer sends."""

import pytest

from toolscript.mcp import jsonrpc


def test_deeply_nested_json_is_a_value_error():
    with pytest.raises(ValueError):
        jsonrpc.decode(b"[" * 100000 + b"]" * 100000)
