"""stencil.py — the peers of stencil.lua (cuNumeric's stencil.py).

    python3 stencil.py lib=numpy|cupynumeric|numexpr n=... iters=... reps=...
"""
from common import array_module, checksum, numexpr_setup, params, timed

p = params({"n": 8192, "iters": 50, "reps": 5})
lib = p["lib"]
np = array_module(lib)
N = p["n"]

grid = np.zeros((N + 2, N + 2))
grid[:, 0] = -273.15
grid[:, -1] = -273.15
grid[-1, :] = -273.15
grid[0, :] = 40.0
center = grid[1:-1, 1:-1]
north = grid[0:-2, 1:-1]
east = grid[1:-1, 2:]
west = grid[1:-1, 0:-2]
south = grid[2:, 1:-1]

if lib == "numexpr":
    ne = numexpr_setup()

    def step():
        for _ in range(p["iters"]):
            center[:] = ne.evaluate("(center + north + east + west + south) * 0.2")
        return center
else:
    def step():
        for _ in range(p["iters"]):
            average = center + north + east + west + south
            center[:] = 0.2 * average
        return center

timed(p["reps"], step, lambda c: float(c[0, 0]))
checksum(float(center.sum()) / (N * N))
