"""What every benchmark shares: the figures it prints (sample count, median and p95 in
milliseconds), and how it stops when killed."""

import signal
import statistics
from typing import Dict, Sequence


def summary(samples_ms: Sequence[float], digits: int = 3) -> Dict[str, float]:
    """``{"n", "median_ms", "p95_ms"}`` of ``samples_ms`` (p95 by nearest rank)."""
    ordered = sorted(samples_ms)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"n": len(ordered), "median_ms": round(statistics.median(ordered), digits), "p95_ms": round(p95, digits)}


def exit_on_sigterm() -> None:
    """Make SIGTERM (a timeout, a cancelled job) exit through the ``finally`` blocks, so they stop
    every process the benchmark started."""

    def on_sigterm(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_sigterm)
