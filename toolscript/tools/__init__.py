"""Tools as toolscript runs them: the tool contract (spec, call, result), the built-in tools, the argument check."""
