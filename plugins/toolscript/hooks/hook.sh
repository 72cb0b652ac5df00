#!/bin/sh
# Runs `toolscript hook EVENT` (EVENT: session-start, user-prompt-submit, pre-tool-use, post-tool-use, stop,
# session-end) with the event JSON on stdin. It always exits 0 and prints nothing or one JSON object.
# While this Claude Code process's hook server runs (the plugin's MCP server, called through
# hooks/mcp-hooks.json), it answers the events in between, so this ends before any Python starts.
# The interpreter is the one an earlier hook noted in the state dir (the real one behind a pyenv or
# asdf shim, which would cost tens of ms per hook), else python3 from PATH.
s="${TOOLSCRIPT_STATE_DIR:-}"
if [ -z "$s" ]; then case "${XDG_STATE_HOME:-}" in /*) s="$XDG_STATE_HOME/toolscript" ;; *) s="$HOME/.local/state/toolscript" ;; esac; fi
case "$1" in session-start|session-end) ;; *)
  h="$s/hook-servers/${CLAUDE_PID:-none}"
  if [ -r "$h" ] && read -r pid < "$h" && kill -0 "$pid" 2>/dev/null; then exit 0; fi ;;
esac
py=python3
if [ -r "$s/python" ] && read -r p < "$s/python" && [ -x "$p" ]; then py="$p"; fi
exec "$py" -I -S "$(dirname "$0")/../bin/toolscript.pyz" hook "$1"
