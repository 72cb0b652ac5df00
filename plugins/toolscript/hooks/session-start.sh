#!/bin/sh
exec python3 -I -S "$(dirname "$0")/../bin/toolscript.pyz" hook session-start
