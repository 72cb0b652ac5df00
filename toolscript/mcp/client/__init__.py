"""The MCP client: a session over one of three transports.

- ``transport``        the ``Transport`` protocol and bounded message reading (``maxMessageBytes``)
- ``sse``              the text/event-stream parser, bounded by line and by event
- ``stdio``            a server subprocess speaking newline-delimited JSON
- ``http_transport``   ``HttpTransport``: what both HTTP transports share (request headers, status wording, OAuth)
- ``streamable_http``  Streamable HTTP (JSON or SSE answers, sessions, the GET stream, resumption)
- ``legacy_sse``       the 2024-11-05 HTTP+SSE transport (endpoint event, POST back)
- ``session``          ``ClientSession``: the protocol era, handshake, concurrent requests, notifications
- ``connect``          ``open_session``: pick and open the transport for a configured server
"""
