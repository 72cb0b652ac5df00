"""MCP protocol constants shared by the client session and the server endpoint.

Two eras: the handshake revisions (``initialize`` + sessions, up to
2025-11-25) and the modern ones (2026-07-28: no handshake, every request
carries its version and client capabilities in ``params._meta``).
"""

LATEST_PROTOCOL_VERSION = "2025-11-25"  # the newest handshake revision (what initialize offers)
SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # handshake era
HANDSHAKE_PROTOCOL_VERSIONS = SUPPORTED_PROTOCOL_VERSIONS
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
LATEST_MODERN_VERSION = MODERN_PROTOCOL_VERSIONS[-1]

# The per-request envelope of the modern era, in params._meta / result._meta.
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_META_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"

# Error codes the modern era added.
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
