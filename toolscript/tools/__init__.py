"""Tools as toolscript runs them: the tool contract (``contract``: spec, call, result, error codes, execute), the built-in tools, the argument check (``schema``)."""
