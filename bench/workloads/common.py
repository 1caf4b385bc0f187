"""bench/workloads/common.py — what every Python peer of a workload shares.

A peer is run as `python3 <name>.py lib=numpy key=value ...` (lib: numpy,
cupynumeric, numexpr, dask) by bench/run, or under `legate` for
cupynumeric. It builds its inputs (untimed), runs its step once as a
warm-up, then `reps` timed steps, printing `time: <s>` per timed step, then
`checksum: <x>` — the protocol of common.lua, with the same deterministic
inputs: seq(n, alpha)[i] = frac((i + 0.5) * alpha), 0-based i.
"""
import os
import sys
import time

ALPHA = [0.6180339887498949, 0.7548776662466927, 0.5698402909980532,
         0.4142135623730950, 0.7320508075688772, 0.2360679774997897]


def params(defaults):
    p = dict(defaults)
    p.setdefault("lib", "numpy")
    for a in sys.argv[1:]:
        if "=" not in a:
            sys.exit(f"bench: arguments are key=value, got '{a}'")
        k, v = a.split("=", 1)
        if k not in p:
            sys.exit(f"bench: unknown parameter '{k}'")
        for conv in (int, float):
            try:
                v = conv(v)
                break
            except ValueError:
                pass
        p[k] = v
    return p


def array_module(lib):
    """The numpy-like module for `lib` (numexpr and dask peers use numpy for
    set-up and their own module for the work)."""
    if lib == "cupynumeric":
        import cupynumeric as np
    else:
        import numpy as np
    return np


def seq(np, n, alpha, dtype="f64", shape=None):
    u = (np.arange(n, dtype=np.float64) + 0.5) * alpha
    s = u - np.floor(u)
    if shape is not None:
        s = s.reshape(shape)
    if dtype != "f64":
        s = s.astype(np.float32)
    return s


def timed(reps, step, finish):
    """A warm-up step (none with BENCH_WARMUP=0), then `reps` timed steps."""
    r = None
    if os.environ.get("BENCH_WARMUP") != "0":
        r = step()
        finish(r)
    for _ in range(reps):
        r = None
        t0 = time.perf_counter()
        r = step()
        finish(r)
        print(f"time: {time.perf_counter() - t0:.9f}", flush=True)
    return r


def dask_setup():
    """Dask's threaded scheduler, one thread per core bench/run gives us."""
    import dask
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    from concurrent.futures import ThreadPoolExecutor
    dask.config.set(scheduler="threads", pool=ThreadPoolExecutor(threads))
    return threads


def numexpr_setup():
    import numexpr as ne
    ne.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))
    return ne


def checksum(v):
    print(f"checksum: {float(v):.17g}", flush=True)


def info(k, v):
    print(f"info: {k}={v}", flush=True)
