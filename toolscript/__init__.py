"""toolscript: MCP code mode, per-prompt suggestions and memory for Claude Code.

The package is stdlib-only and ships as one zipapp (``dist/toolscript.pyz``).
"""

__version__ = "0.1.0"
