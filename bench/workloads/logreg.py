"""logreg.py — the peers of logreg.lua (cuNumeric's logreg.py).

    python3 logreg.py lib=numpy|cupynumeric|dask n=... f=... dtype=f32 iters=... reps=...
"""
from common import ALPHA, array_module, checksum, dask_setup, params, seq, timed

p = params({"n": 10_000_000, "f": 32, "dtype": "f32", "iters": 10, "reps": 5})
lib = p["lib"]
np = array_module(lib)
dt = np.float32 if p["dtype"] == "f32" else np.float64
n, f = p["n"], p["f"]
lr = 1e-5

X = (seq(np, n * f, ALPHA[0], shape=(n, f)) - 0.5).astype(dt)
y = np.floor(seq(np, n, ALPHA[1]) * 2.0).astype(dt)
xp = np
if lib == "dask":
    import dask.array as da
    threads = dask_setup()
    rows = -(-n // (4 * threads))
    X = da.from_array(X, chunks=(rows, f)).persist()
    y = da.from_array(y, chunks=rows).persist()
    xp = da


def step():
    w = np.zeros(f, dtype=dt)
    for _ in range(p["iters"]):
        scores = X.dot(w)
        predictions = 1.0 / (1.0 + xp.exp(-scores))
        err = y - predictions
        g = err.dot(X)
        if lib == "dask":
            g = g.compute()
        w = w + dt(lr) * g
    return w


w = timed(p["reps"], step, lambda w: float(w[0]))
checksum(float(w.astype(np.float64).sum()))
