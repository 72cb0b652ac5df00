"""Claude Code glue: the hook contract and event table, session start and end, suggestions, skills, memory's hooks."""
