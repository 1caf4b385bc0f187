"""stream.py — STREAM triad a = b + s * c; the peers of stream.lua.

    python3 stream.py lib=numpy|cupynumeric|numexpr|dask n=... reps=... [sweep=n1,n2,...]
"""
import time

from common import array_module, checksum, dask_setup, numexpr_setup, params, timed

p = params({"n": 160_000_000, "reps": 5, "sweep": ""})
lib = p["lib"]
np = array_module(lib)
S = 3.0


def make(n):
    b, c = np.full(n, 2.0), np.full(n, 1.0)  # STREAM's constants: a = 5
    if lib == "dask":
        import dask.array as da
        threads = dask_setup()
        chunk = max(1, -(-n // (4 * threads)))
        b, c = da.from_array(b, chunks=chunk).persist(), da.from_array(c, chunks=chunk).persist()
        return b, c, lambda: (b + S * c).persist(), lambda a: a.sum().compute()
    if lib == "numexpr":
        ne = numexpr_setup()
        return b, c, lambda: ne.evaluate("b + S * c"), lambda a: float(a[-1])
    return b, c, lambda: b + S * c, lambda a: float(a[-1])


if p["sweep"] != "":
    for n in str(p["sweep"]).split(","):
        b, c, step, finish = make(int(n))
        best = float("inf")
        for r in range(max(p["reps"], min(1000, 10_000_000 // int(n))) + 1):  # as stream.lua
            t0 = time.perf_counter()
            finish(step())
            if r > 0:
                best = min(best, time.perf_counter() - t0)
        print(f"sweep: {n} {best:.9f}", flush=True)
    checksum(0)
else:
    b, c, step, finish = make(p["n"])
    a = timed(p["reps"], step, finish)
    checksum(a.sum().compute() if lib == "dask" else a.sum())
