"""The timing the PyTorch sides of ember's benchmarks share: a warm-up call, then the median of
`rounds` rounds of `inner` calls each, in milliseconds per call. With `min_seconds`, `inner` is
doubled from 1 until one round takes at least that long (for ops of very different costs)."""
import statistics
import time


def timed(fn, rounds=7, inner=5, min_seconds=None):
    fn()
    if min_seconds is not None:
        inner = 1
        while True:
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            if time.perf_counter() - start >= min_seconds:
                break
            inner *= 2
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples) * 1e3
