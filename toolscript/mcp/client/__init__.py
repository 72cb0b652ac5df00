"""The MCP client: a session over one of the transports (stdio, Streamable HTTP, legacy SSE)."""
