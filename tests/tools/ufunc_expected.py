#!/usr/bin/python3
# tests/tools/ufunc_expected.py — writes the numpy-computed expected values of
# tests/spec/ufunc_spec.lua (its DATA table) to stdout. Run by hand with a
# python that has numpy (/usr/bin/python3); the tests never call python.
import numpy as np, warnings
warnings.simplefilter("ignore")

def lua(v):
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        v = int(v)
        return str(v) if v != -2**63 else "math.mininteger"
    v = float(v)
    if v != v: return "NAN"
    if v == float("inf"): return "INF"
    if v == float("-inf"): return "-INF"
    if v == 0 and np.signbit(v): return "-0.0"
    r = repr(v)
    return r if ("." in r or "e" in r) else r + ".0"

def tbl(a): return "{" + ", ".join(lua(x) for x in np.asarray(a).ravel().tolist()) + "}"

FV = [-np.inf, -1e300, -1e20, -710.0, -89.0, -2.5, -1.5, -1.0, -0.75, -0.5, -0.0, 0.0, 1e-310,
      0.5, 0.75, 1.0, 1.5, 2.5, 3.0, 10.0, 88.9, 100.0, 709.5, 710.2, 1e20, 1e155, 1e307,
      np.inf, np.nan]
IV = [-128, -7, -3, -2, -1, 0, 1, 2, 3, 7, 100, 127]
UV = [0, 1, 2, 3, 7, 100, 200, 255]
BV = [True, False]
INS = {"f64": np.array(FV, np.float64), "f32": np.array(FV, np.float32),
       "i64": np.array(IV, np.int64), "i32": np.array(IV, np.int32),
       "u8": np.array(UV, np.uint8), "bool": np.array(BV, np.bool_)}
TY = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32", np.dtype(np.int64): "i64",
      np.dtype(np.int32): "i32", np.dtype(np.uint8): "u8", np.dtype(np.bool_): "bool"}

out = ["local DATA = {}", "DATA.inputs = {"]
for t, a in INS.items(): out.append(f"  {t} = {tbl(a)},")
out.append("}")

TRANSC = ["tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
          "expm1", "log1p", "log2", "log10", "exp2", "cbrt"]
# tycho computes u8 and bool inputs in f32 (numpy: f16; tycho has no f16),
# wider integers in f64 (as numpy)
out.append("DATA.unary = {")
for f in TRANSC:
    out.append(f"  {f} = {{")
    for t, a in INS.items():
        x = a if t in ("f64", "f32") else a.astype(np.float32 if t in ("u8", "bool") else np.float64)
        r = getattr(np, f)(x)
        out.append(f"    {t} = {{{TY[r.dtype]!r}, {tbl(r)}}},".replace("'", '"'))
    out.append("  },")
# exact ones: tycho keeps integer dtypes for rint/trunc (as its floor/ceil)
EXACT = {"sign": ["f64", "f32", "i64", "i32", "u8"], "rint": list(INS), "trunc": list(INS),
         "reciprocal": ["f64", "f32"], "invert": ["i64", "i32", "u8", "bool"],
         "isnan": list(INS), "isinf": list(INS), "isfinite": list(INS),
         "square": ["f64", "f32", "i64", "i32", "u8"], "deg2rad": ["f64", "f32", "i64", "i32"],
         "rad2deg": ["f64", "f32", "i64", "i32"]}
for f, ts in EXACT.items():
    out.append(f"  {f} = {{")
    for t in ts:
        a = INS[t]
        r = getattr(np, f)(a)
        if f in ("rint", "trunc") and t not in ("f64", "f32"): r = a.copy()
        out.append(f"    {t} = {{{TY[r.dtype]!r}, {tbl(r)}}},".replace("'", '"'))
    out.append("  },")
out.append("}")

# binary: every pair of a small set
FA = [-np.inf, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 7.5, np.inf, np.nan]
IA = [-7, -3, -1, 0, 1, 2, 3, 7]
IB = [-3, -2, -1, 0, 1, 2, 3]
def pairs(xs, ys): return [x for x in xs for y in ys], [y for x in xs for y in ys]
fa, fb = pairs(FA, FA)
ia, ib = pairs(IA, IB)
ua, ub = pairs([0, 1, 2, 7, 200, 255], [0, 1, 2, 3, 7, 255])
ba, bb = pairs(BV, BV)
BIN = {"f64": (np.array(fa), np.array(fb)), "f32": (np.array(fa, np.float32), np.array(fb, np.float32)),
       "i64": (np.array(ia + [-2**63], np.int64), np.array(ib + [-1], np.int64)),
       "i32": (np.array(ia + [-2**31], np.int32), np.array(ib + [-1], np.int32)),
       "u8": (np.array(ua, np.uint8), np.array(ub, np.uint8)),
       "bool": (np.array(ba), np.array(bb))}
out.append("DATA.binary_inputs = {")
for t, (a, b) in BIN.items(): out.append(f"  {t} = {{{tbl(a)}, {tbl(b)}}},")
out.append("}")
OPS2 = {"arctan2": ["f64", "f32"], "hypot": ["f64", "f32"],
        "floor_divide": ["f64", "f32", "i64", "i32", "u8"], "remainder": ["f64", "f32", "i64", "i32", "u8"],
        "logical_xor": list(BIN), "bitwise_and": ["i64", "i32", "u8", "bool"],
        "bitwise_or": ["i64", "i32", "u8", "bool"], "bitwise_xor": ["i64", "i32", "u8", "bool"]}
out.append("DATA.binary = {")
for f, ts in OPS2.items():
    out.append(f"  {f} = {{")
    for t in ts:
        a, b = BIN[t]
        r = getattr(np, f)(a, b)
        out.append(f"    {t} = {{{TY[r.dtype]!r}, {tbl(r)}}},".replace("'", '"'))
    out.append("  },")
out.append("}")

# shifts: numpy's counts outside [0, bits) included
sa, sb = pairs([-8, -1, 0, 1, 5, 100], [-1, 0, 1, 3, 7, 8, 31, 32, 63, 64, 70])
out.append("DATA.shift_inputs = {" + tbl(sa) + ", " + tbl(sb) + "}")
out.append("DATA.shift = {")
for t, dt in (("i64", np.int64), ("i32", np.int32)):
    a, b = np.array(sa, dt), np.array(sb, dt)
    out.append(f"  {t} = {{left = {tbl(np.left_shift(a, b))}, right = {tbl(np.right_shift(a, b))}}},")
ua8, ub8 = pairs([0, 1, 5, 200, 255], [0, 1, 3, 7, 8, 9])
a, b = np.array(ua8, np.uint8), np.array(ub8, np.uint8)
out.append(f"  u8 = {{a = {tbl(a)}, b = {tbl(b)}, left = {tbl(np.left_shift(a, b))}, right = {tbl(np.right_shift(a, b))}}},")
out.append("}")

# clip, round, nan_to_num
x = np.array(FV)
out.append("DATA.clip = {")
out.append(f"  f64 = {tbl(np.clip(x, -1.0, 2.5))}, lo = {tbl(np.clip(x, 0.0, None))}, hi = {tbl(np.clip(x, None, 0.0))},")
# a NaN bound gives NaN: numpy's rule with array bounds (numpy 1.24's
# contiguous path with a scalar NaN bound skips that bound instead)
out.append(f"  nanlo = {tbl(np.clip(np.array([1.0, -2.0]), np.full(2, np.nan), 3.0))},")
out.append(f"  i32 = {tbl(np.clip(np.array(IV, np.int32), -3, 7))},")
out.append(f"  f32 = {tbl(np.clip(np.array(FV, np.float32), -1.5, 0.75))},")
out.append("}")
R = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1.234567, -1.234567, 15.5, 25.0, 35.0, 0.125, 0.375,
              123.456, -0.0, np.inf, np.nan, 1e300])
out.append("DATA.round_in = " + tbl(R))
out.append("DATA.round = {")
for d in (0, 1, 2, 3, -1, -2):
    out.append(f"  [{d}] = {{f64 = {tbl(np.round(R, d))}, f32 = {tbl(np.round(R.astype(np.float32), d))}}},")
RI = np.array([-35, -25, -15, -5, 5, 15, 25, 35, 149, 150, 151, 250], np.int64)
out.append("  int_in = " + tbl(RI) + ",")
out.append(f"  int_m1 = {tbl(np.round(RI, -1))}, int_m2 = {tbl(np.round(RI, -2))},")
out.append(f"  int_i32_m1 = {tbl(np.round(RI.astype(np.int32), -1))},")
out.append("}")
out.append("DATA.nan_to_num = {")
out.append(f"  f64 = {tbl(np.nan_to_num(x))}, f32 = {tbl(np.nan_to_num(x.astype(np.float32)))},")
out.append(f"  given = {tbl(np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0))},")
out.append("}")
print("\n".join(out))
