"""Claude Code glue: the hook contract and event table, the gateway's and memory's hook handlers, suggestions, skills, setup."""
