-- tests/tools/qemu_smoke.lua — a small array program for the "isa.qemu_nehalem"
-- test (tests/CMakeLists.txt), which runs it in the `tycho` shell under
-- qemu-x86_64 -cpu Nehalem: element-wise math through SLEEF (exp), a fused
-- chain, reductions, a matmul (OpenBLAS) and arange, checked against a
-- checksum computed on an AVX-512 machine. A default build must execute no
-- instruction a Nehalem (x86-64-v2) lacks: qemu stops with SIGILL if it does.
tycho.seed(1)
local x = tycho.random({300, 300})
local y = tycho.exp(x * 0.5) - x / 3
local m = tycho.matmul(y, x)
local s = y:sum():item() + m:sum():item() + m:max(1):sum():item() + tycho.arange(1000):mean():item()
local expected = 1.5479421513e+07 -- %.10e of s at every level
local c = tycho.config()
print(string.format("isa %s (best %s) checksum %.10e", c.isa, c.isa_best, s))
assert(math.abs(s - expected) <= 1e-9 * expected, "checksum differs from " .. expected)
assert(c.isa == "baseline", "a Nehalem must get the baseline kernels, got " .. c.isa)
print("ok")
