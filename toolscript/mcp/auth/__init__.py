"""OAuth 2.1 for remote MCP servers.

- ``flow``     discovery, client registration, the authorization code flow with PKCE, refresh, revocation
- ``bearer``   ``BearerAuth``: the Authorization header of each request, and what a 401 or 403 means
- ``store``    grants kept between runs (0600 files, a cross-process refresh lock) and ``StoredBearerAuth``
- ``login``    the interactive sign-in: the browser or a pasted URL, the loopback callback listener
"""
