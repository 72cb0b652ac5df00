"""Code mode: running model-written Python or TypeScript against the gateway's tools.

``sandbox`` is the runner behind ``toolscript exec`` (a child interpreter with
an empty environment, a temp working directory, resource limits, a wall-clock
timeout, output caps, Linux namespaces when available, and a runtime guard);
``deno`` runs TypeScript under Deno's permissions; ``process`` is what both
share (supervising the child, dying with the parent, temp dirs).
``guard.py`` and ``runtime.py`` are not imported here: they are copied into
the sandbox and run inside the child interpreter, where toolscript itself is
not importable, so they are self-contained stdlib modules.  The TypeScript
runtime module is the gateway's (``gateway/tsruntime.py``): Deno imports it by URL.
"""
