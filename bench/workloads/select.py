"""select.py — the peers of select.lua: x[x < 0.5], y[x < 0.5] = 0, x[idx], y[idx] = v,
np.sort(x), np.argsort(x).

    python3 select.py lib=numpy op=mask|maskassign|gather|scatter|sort|argsort n=... reps=...
"""
from common import ALPHA, array_module, checksum, params, seq, timed

p = params({"op": "mask", "n": 10_000_000, "reps": 5})
np = array_module(p["lib"])
n = p["n"]
x = seq(np, n, ALPHA[0])
if p["op"] == "mask":
    step, check = (lambda: x[x < 0.5]), (lambda r: float(r.sum()))
elif p["op"] == "maskassign":
    y = x.copy()

    def step():
        y[x < 0.5] = 0
        return y

    check = lambda r: float(r.sum())
elif p["op"] == "gather":
    idx = np.floor(seq(np, n, ALPHA[1]) * n).astype(np.int64)
    step, check = (lambda: x[idx]), (lambda r: float(r.sum()))
elif p["op"] == "scatter":
    idx = np.floor(seq(np, n, ALPHA[1]) * n).astype(np.int64)
    v, y = seq(np, n, ALPHA[3]), x.copy()

    def step():
        y[idx] = v
        return y

    check = lambda r: float(r.sum())
elif p["op"] == "sort":
    step, check = (lambda: np.sort(x)), (lambda r: float(r[::1000].sum()))
elif p["op"] == "argsort":
    step, check = (lambda: np.argsort(x)), (lambda r: float(x[r[::1000]].sum()))
else:
    raise SystemExit(f"bench: op is mask, maskassign, gather, scatter, sort or argsort, got {p['op']}")
r = timed(p["reps"], step, lambda r: float(r[-1]) if len(r) else 0.0)
checksum(check(r))
