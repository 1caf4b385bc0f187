"""black_scholes.py — the peers of black_scholes.lua (same formula, inputs).

    python3 black_scholes.py lib=numpy|cupynumeric|numexpr|dask n=... dtype=f64|f32 reps=...
"""
from common import ALPHA, array_module, checksum, dask_setup, numexpr_setup, params, seq, timed

p = params({"n": 10_000_000, "dtype": "f64", "reps": 5})
lib = p["lib"]
np = array_module(lib)
R, V = 0.02, 0.3
A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
RSQRT2PI = 0.39894228040143267793994605993438
dt = np.float32 if p["dtype"] == "f32" else np.float64


def black_scholes(xp, S, K, T):
    def cnd(d):
        k = 1.0 / (xp.absolute(d) * 0.2316419 + 1.0)
        c = xp.exp(d * -0.5 * d) * RSQRT2PI * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1))
        return xp.where(d > 0, 1.0 - c, c)

    sqrt_t = xp.sqrt(T)
    d1 = (xp.log(S / K) + T * (R + 0.5 * V * V)) / (sqrt_t * V)
    d2 = d1 - sqrt_t * V
    cnd_d1, cnd_d2 = cnd(d1), cnd(d2)
    k_exp_rt = K * xp.exp(T * -R)
    call = S * cnd_d1 - k_exp_rt * cnd_d2
    put = k_exp_rt * (1.0 - cnd_d2) - S * (1.0 - cnd_d1)
    return call, put


NE_CND = ("where({d} > 0, 1.0 - c{i}, c{i})")


def numexpr_black_scholes(ne, S, K, T):
    # numexpr's way: one expression per array result, temporaries in cache
    f = dt(0).dtype.type
    consts = dict(R=f(R), V=f(V), A1=f(A1), A2=f(A2), A3=f(A3), A4=f(A4), A5=f(A5),
                  RS=f(RSQRT2PI), H=f(0.5), P=f(0.2316419), ONE=f(1.0), RV=f(R + 0.5 * V * V))
    env = dict(consts, S=S, K=K, T=T)
    d1 = ne.evaluate("(log(S / K) + T * RV) / (sqrt(T) * V)", local_dict=env)
    env["d1"] = d1
    d2 = ne.evaluate("d1 - sqrt(T) * V", local_dict=env)
    env["d2"] = d2
    cnd = ("where({d} > 0, ONE - c, c)")
    for name, d in (("c1", "d1"), ("c2", "d2")):
        k = ne.evaluate(f"ONE / (abs({d}) * P + ONE)", local_dict=env)
        env["k"] = k
        c = ne.evaluate(f"exp({d} * -H * {d}) * RS * (k * (k * (k * (k * (k * A5 + A4) + A3) + A2) + A1))",
                        local_dict=env)
        env["c"] = c
        env[name] = ne.evaluate(cnd.format(d=d), local_dict=env)
    env["ke"] = ne.evaluate("K * exp(T * -R)", local_dict=env)
    call = ne.evaluate("S * c1 - ke * c2", local_dict=env)
    put = ne.evaluate("ke * (ONE - c2) - S * (ONE - c1)", local_dict=env)
    return call, put


n = p["n"]
S = (seq(np, n, ALPHA[0]) * 25.0 + 5.0).astype(dt)
K = (seq(np, n, ALPHA[1]) * 99.0 + 1.0).astype(dt)
T = (seq(np, n, ALPHA[2]) * 9.75 + 0.25).astype(dt)

if lib == "dask":
    import dask.array as da
    threads = dask_setup()
    chunk = max(1, -(-n // (4 * threads)))
    S, K, T = (da.from_array(a, chunks=chunk).persist() for a in (S, K, T))
    step = lambda: tuple(x.persist() for x in black_scholes(da, S, K, T))  # noqa: E731
    finish = lambda cp: None  # noqa: E731  (persist waits)
    total = lambda cp: float(cp[0].astype("f8").sum().compute()) + float(cp[1].astype("f8").sum().compute())  # noqa
elif lib == "numexpr":
    ne = numexpr_setup()
    step = lambda: numexpr_black_scholes(ne, S, K, T)  # noqa: E731
    finish = lambda cp: None  # noqa: E731
    total = lambda cp: float(cp[0].sum(dtype=np.float64)) + float(cp[1].sum(dtype=np.float64))  # noqa
else:
    step = lambda: black_scholes(np, S, K, T)  # noqa: E731
    finish = lambda cp: (float(cp[0][-1]), float(cp[1][-1]))  # noqa: E731
    total = lambda cp: float(cp[0].astype(np.float64).sum()) + float(cp[1].astype(np.float64).sum())  # noqa
cp = timed(p["reps"], step, finish)
checksum(total(cp))
