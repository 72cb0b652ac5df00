#!/bin/sh
# Claude Code hook installed by `toolscript setup`: runs `toolscript hook pre-tool-use` with the event JSON on stdin.
# Uses the copy of toolscript.pyz setup put in .claude/toolscript/, else `toolscript` on PATH, else does nothing.
pyz="$(dirname "$0")/../toolscript/toolscript.pyz"
if [ -f "$pyz" ] && command -v python3 >/dev/null 2>&1; then exec python3 -I -S "$pyz" hook pre-tool-use; fi
if command -v toolscript >/dev/null 2>&1; then exec toolscript hook pre-tool-use; fi
exit 0
