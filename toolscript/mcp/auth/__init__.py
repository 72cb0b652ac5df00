"""OAuth 2.1 for remote MCP servers: the flow, the browser sign-in, the token store."""
