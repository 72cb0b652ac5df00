"""The MCP protocol layer: JSON-RPC, the client, OAuth for remote servers, and the server endpoint.

It knows nothing of gateways, hooks or Claude.  Bottom up:

- ``errors``     the MCP layer's errors (each ``str()`` is one line a user can act on)
- ``jsonrpc``    message shapes, the wire encoding, error codes
- ``protocol``   protocol versions and the 2026-07-28 envelope, shared by client and server
- ``cancel``     ``Cancel``: a flag whose ``set()`` wakes whoever waits on it
- ``httpconn``   HTTP client connections (keep-alive pool, bounded reads, error wording), for client/ and auth/
- ``auth/``      OAuth 2.1 for remote servers: the flow, ``BearerAuth``, the token store, the sign-in
- ``client/``    the client: transports (stdio, Streamable HTTP, legacy SSE), ``ClientSession``, ``open_session``
- ``server/``    the server side: a Streamable HTTP endpoint serving a tool provider, both protocol eras

auth/ uses only the modules above it; client/ uses auth/ (its transports hold a
``BearerAuth``); server/ uses neither, only the modules above and ``toolscript.http1``.
"""
