#!/bin/sh
# Claude Code hook installed by `toolscript setup`: runs `toolscript hook stop` with the event JSON on stdin.
# Uses the copy of toolscript.pyz setup put in .claude/toolscript/, else `toolscript` on PATH, else does nothing.
# The interpreter is the one an earlier hook noted in the state dir (the real one behind a pyenv or asdf shim), else python3.
pyz="$(dirname "$0")/../toolscript/toolscript.pyz"
s="${TOOLSCRIPT_STATE_DIR:-}"
if [ -z "$s" ]; then case "${XDG_STATE_HOME:-}" in /*) s="$XDG_STATE_HOME/toolscript" ;; *) s="$HOME/.local/state/toolscript" ;; esac; fi
py=python3
if [ -r "$s/python" ] && read -r p < "$s/python" && [ -x "$p" ]; then py="$p"; fi
if [ -f "$pyz" ] && command -v "$py" >/dev/null 2>&1; then exec "$py" -I -S "$pyz" hook stop; fi
if command -v toolscript >/dev/null 2>&1; then exec toolscript hook stop; fi
exit 0
