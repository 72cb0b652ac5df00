#!/bin/sh
# Suggests the skills and MCP tools that fit the prompt (toolscript context claude-usage-suggestion).
# Always exits 0 and prints nothing or one JSON object; TOOLSCRIPT_SUGGEST=0 turns it off.
exec python3 -I -S "$(dirname "$0")/../bin/toolscript.pyz" hook user-prompt-submit
