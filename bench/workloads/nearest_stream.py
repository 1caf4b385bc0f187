"""nearest_stream.py — the peer of nearest_stream.lua: numpy cannot run the
natural program min(|a[:, None] - b[None, :]|, axis=1) at this size (it
needs two n x m f64 matrices), so its users break it up by hand: blocks of
rows of a whose distance matrix fits the budget, one after another.

    python3 nearest_stream.py lib=numpy n=... m=... budget=256MB reps=...
"""
import time

from common import ALPHA, array_module, checksum, info, params, seq

p = params({"n": 200000, "m": 200000, "budget": "256MB", "reps": 1})
np = array_module(p["lib"])
units = {"KB": 1e3, "MB": 1e6, "GB": 1e9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "B": 1}
text = str(p["budget"]).upper()
unit = next((u for u in sorted(units, key=len, reverse=True) if text.endswith(u)), "B")
budget = float(text[: len(text) - len(unit)] if text.endswith(unit) else text) * units[unit]
a, b = seq(np, p["n"], ALPHA[0]), seq(np, p["m"], ALPHA[1])
info("natural_bytes", 2 * p["n"] * p["m"] * 8)  # the matrix and its abs
rows = max(1, int(budget // (2 * 8 * p["m"])))
info("rows_per_block", rows)


def step():
    d = np.empty(p["n"])
    for lo in range(0, p["n"], rows):
        blk = np.abs(a[lo:lo + rows, None] - b[None, :])
        d[lo:lo + rows] = blk.min(axis=1)
    return d


# no warm-up step: one step is minutes at full size, and a chunked numpy loop
# has nothing to warm (its blocks are allocated afresh every time)
for _ in range(p["reps"]):
    t0 = time.perf_counter()
    d = step()
    print(f"time: {time.perf_counter() - t0:.9f}", flush=True)
checksum(float(d.sum()))
