"""Typed stubs for tools: the names tools get (``names``), the type model of their schemas
(``model``), and the Python (``python``) and TypeScript (``typescript``) written from it."""
