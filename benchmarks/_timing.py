"""Wall-clock median used by the benchmark modules' script mode (asv does its own timing)."""

import statistics
import time


def median_seconds(fn, repeat: int = 7) -> float:
    """Median wall-clock seconds of ``repeat`` calls of ``fn()``."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)
