"""shape.py — cumsum over rows and flat, then concatenate; the peers of shape.lua.

    python3 shape.py lib=numpy|cupynumeric n=... reps=... rows=...
"""
from common import array_module, checksum, params, seq, timed, ALPHA

p = params({"n": 10_000_000, "reps": 5, "rows": 4})
np = array_module(p["lib"])
x = seq(np, p["n"], ALPHA[0], shape=(p["rows"], p["n"] // p["rows"]))


def step():
    c = np.cumsum(x, axis=1)
    f = np.cumsum(x)
    return np.concatenate([x, c], axis=0), f


r = timed(p["reps"], step, lambda r: (float(r[0][-1, -1]), float(r[1][-1])))
checksum(float(r[0][-1].sum()) + float(r[1][-1]))
