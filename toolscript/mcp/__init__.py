"""The MCP protocol layer: JSON-RPC framing, transports, and the client session.

It knows nothing of gateways, hooks or Claude.  Layers, bottom up:

- ``jsonrpc``          message shapes and error codes
- ``protocol``         protocol versions, shared by client and server
- ``transport``        the ``Transport`` protocol and bounded reading (``maxMessageBytes``)
- ``sse``              the Server-Sent Events wire format
- ``stdio``, ``streamable_http``, ``legacy_sse``   transports (move JSON-RPC messages)
- ``session``          ``ClientSession``: handshake, requests, notifications
- ``connect``          pick and open the transport for a configured server
- ``server``           the server side: a Streamable HTTP endpoint serving a tool provider
"""
