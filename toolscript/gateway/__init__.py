"""The gateway: one local, token-protected endpoint for all of a user's MCP servers.

- ``upstream``   one configured server: connection, state, restarts, tools
- ``servers``    which of a server's tools are shown, and probing servers (``servers check``, ``doctor``)
- ``eras``       the protocol era each server spoke last time, so reconnecting skips the probe
- ``catalog``    every tool under one ``server__tool`` id space
- ``derived``    search index, stubs and name map, rebuilt when the catalog changes
- ``service``    ``Gateway``: built-ins + upstreams + calls, independent of HTTP
- ``http_api``   the HTTP server: token, Host/Origin checks, JSON API, MCP endpoints (every tool; code mode)
- ``codemode_tools``  code mode as three MCP tools (search, stubs, run a script), for ``/mcp/code`` and ``toolscript mcp``
- ``tsruntime``  the TypeScript module ``exec --lang ts`` scripts import (``runtime.ts``)
- ``daemon``     the gateway process: start lock, serve until a signal, clean stop
- ``launch``     starting (or reusing) and stopping a session's gateway in the background
- ``state``      the per-session state files and start lock that let commands and hooks find a gateway
- ``client``     how CLI commands find and talk to a gateway
"""
