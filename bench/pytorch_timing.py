"""The timing the PyTorch sides of ember's benchmarks share: a warm-up call, then the median of
`rounds` rounds of `inner` calls each, in milliseconds per call."""
import statistics
import time


def timed(fn, rounds=7, inner=5):
    fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples) * 1e3
