"""overhead.py — the peers of overhead.lua mode=ops: 10 element-wise ops per
loop on n-element arrays.

    python3 overhead.py lib=numpy|cupynumeric|numexpr mode=ops n=1000 loops=... reps=...
"""
from common import ALPHA, array_module, checksum, info, numexpr_setup, params, seq, timed

p = params({"mode": "ops", "n": 1000, "loops": 2000, "reps": 5, "sizes": "", "launches": 0,
            "kind": "fill"})
lib = p["lib"]
np = array_module(lib)
if p["mode"] != "ops":
    raise SystemExit("overhead.py: only mode=ops has Python peers")
x0 = seq(np, p["n"], ALPHA[0])

if lib == "numexpr":
    ne = numexpr_setup()

    def step():
        x = x0
        for _ in range(p["loops"] * 5):
            x = ne.evaluate("x * 0.999")
            x = ne.evaluate("x + 0.001")
        return x
else:
    def step():
        x = x0
        for _ in range(p["loops"]):
            x = x * 0.999 + 0.001
            x = x * 0.999 + 0.001
            x = x * 0.999 + 0.001
            x = x * 0.999 + 0.001
            x = x * 0.999 + 0.001
        return x

x = timed(p["reps"], step, lambda x: float(x[0]))
info("ops", 10 * p["loops"])
checksum(float(x.sum()))
