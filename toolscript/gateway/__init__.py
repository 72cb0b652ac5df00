"""The gateway: one local, token-protected endpoint for all of a user's MCP servers.

- ``upstream``  one configured server: connection, state, restarts, tools
- ``catalog``   every tool under one ``server__tool`` id space
- ``service``   ``Gateway``: built-ins + upstreams + calls, independent of HTTP
- ``http_api``  the HTTP server: token, Host/Origin checks, JSON API, MCP endpoint
- ``state``     state files that let commands and hooks find a gateway
- ``client``    how CLI commands find and talk to a gateway
"""
