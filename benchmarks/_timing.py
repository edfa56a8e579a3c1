"""Wall-clock median used by the benchmark modules' script mode (asv does its own timing)."""

import statistics
import time


def median_seconds(fn, repeat: int = 7, clock=time.perf_counter) -> float:
    """Median seconds of ``repeat`` calls of ``fn()`` by ``clock`` (wall clock by default;
    ``time.process_time`` gives CPU seconds, less sensitive to other processes' load)."""
    times = []
    for _ in range(repeat):
        t = clock()
        fn()
        times.append(clock() - t)
    return statistics.median(times)
