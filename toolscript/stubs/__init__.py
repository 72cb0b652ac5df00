"""Typed stubs for tools: Python and TypeScript declarations, and the names tools get in them."""
