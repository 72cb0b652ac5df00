"""Code mode: running model-written Python or TypeScript against the gateway's tools.

``sandbox`` is the runner behind ``toolscript exec`` (a child interpreter with
an empty environment, a temp working directory, resource limits, a wall-clock
timeout, output caps, the best kernel layer this system offers, and a runtime
guard); ``deno`` runs TypeScript under Deno's permissions; ``process`` is what
both share (supervising the child, dying with the parent, temp dirs, the
kernel probe, the package files a run copies).
``confine.py``, ``guard.py`` and ``runtime.py`` are copied into a run's temp
dir and run inside the child, where toolscript itself is not importable, so
they are self-contained stdlib modules (the runners import ``confine`` only
for its path lists; Deno starts through it as a launcher).  The TypeScript
runtime module is the gateway's (``gateway/tsruntime.py``): Deno imports it by URL.
"""
