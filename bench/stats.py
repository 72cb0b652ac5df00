"""The figures every benchmark prints: sample count, median and p95 in milliseconds."""

import statistics
from typing import Dict, Sequence


def summary(samples_ms: Sequence[float], digits: int = 3) -> Dict[str, float]:
    """``{"n", "median_ms", "p95_ms"}`` of ``samples_ms`` (p95 by nearest rank)."""
    ordered = sorted(samples_ms)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"n": len(ordered), "median_ms": round(statistics.median(ordered), digits), "p95_ms": round(p95, digits)}
