#!/bin/sh
# Claude Code hook installed by `toolscript setup`: runs `toolscript hook session-start` with the event JSON on stdin.
# Uses the copy of toolscript.pyz setup put in .claude/toolscript/, else `toolscript` on PATH, else does nothing.
pyz="$(dirname "$0")/../toolscript/toolscript.pyz"
if [ -f "$pyz" ] && command -v python3 >/dev/null 2>&1; then exec python3 -I -S "$pyz" hook session-start; fi
if command -v toolscript >/dev/null 2>&1; then exec toolscript hook session-start; fi
exit 0
