"""The MCP server side: the gateway's Streamable HTTP endpoint (both protocol eras), and stdio.

- ``provider``   what every server here serves: a tool provider, what a call gets
- ``endpoint``   ``McpHttpEndpoint``: requests and sessions, over a tool provider
- ``envelope``   what a request's headers say, and the 2026-07-28 envelope's rules
- ``streams``    JSON answers and SSE streams: a session's GET stream, a tools/call that turns into a stream
- ``stdio``      ``serve_stdio``: a tool provider on stdin/stdout (``toolscript mcp``)
"""
