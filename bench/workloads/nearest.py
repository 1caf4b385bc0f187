"""nearest.py — the peers of nearest.lua: min(|a[:, None] - b[None, :]|, axis=1).

    python3 nearest.py lib=numpy|cupynumeric|dask n=... m=... reps=...
"""
from common import ALPHA, array_module, checksum, dask_setup, params, seq, timed

p = params({"n": 16384, "m": 16384, "reps": 5})
lib = p["lib"]
np = array_module(lib)
a, b = seq(np, p["n"], ALPHA[0]), seq(np, p["m"], ALPHA[1])
if lib == "dask":
    import dask.array as da
    threads = dask_setup()
    a = da.from_array(a, chunks=-(-p["n"] // (4 * threads)))
    b = da.from_array(b, chunks=-(-p["m"] // 4))
    step = lambda: da.min(abs(a[:, None] - b[None, :]), axis=1).persist()  # noqa: E731
    finish = lambda d: None  # noqa: E731
else:
    step = lambda: np.min(np.abs(a[:, None] - b[None, :]), axis=1)  # noqa: E731
    finish = lambda d: float(d[0])  # noqa: E731
d = timed(p["reps"], step, finish)
checksum(float(d.sum()))
