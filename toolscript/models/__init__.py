"""Model backends (the Messages API, the claude CLI) and the ask loop that lets a model call tools."""
