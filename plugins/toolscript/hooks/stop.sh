#!/bin/sh
# Memory: records what this event says about the session's work. Always exits 0; TOOLSCRIPT_MEMORY=0 turns it off.
exec python3 -I -S "$(dirname "$0")/../bin/toolscript.pyz" hook stop
