"""The MCP server side: the gateway's Streamable HTTP endpoint, both protocol eras."""
