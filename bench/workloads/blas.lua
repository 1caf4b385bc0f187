-- blas.lua — matrix-vector and matrix-matrix products (issue 19): what they
-- reach against the machine's limits, the C peer (blas.c) giving those.
--   tycho blas.lua op=gemv n=8192 iters=10          A x, A n x n
--   tycho blas.lua op=gemvt m=10000000 f=32 dtype=f32 iters=10   X^T z, X m x f
--   tycho blas.lua op=gemm n=4096                   A B, n x n
-- One timed step = `iters` products of the same operands (gemv, gemvt) or
-- one (gemm). Prints info: gbs= (the matrix's bytes per second) or gflops=.
-- info: cpu_s= (the process's CPU seconds in a timed step, all threads,
-- median) and cpu_steps= (each step's), beside the steps' wall times: a step
-- whose wall time grows with the same CPU time waited (a worker idle at the
-- end of a wave, or off its core), one whose CPU time grows did more work.
-- info: faults= (the page faults of a timed step, median; Linux's
-- /proc/self/stat): a step that faults in a fresh result clears its pages
-- in the kernel (numpy's gemm 2048^2: ~530 a step, 32 MiB; tycho reuses
-- the freed result's block).
-- Checksum: the sum of the last product.
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { op = "gemv", n = 4096, m = 500000, f = 32, dtype = "f64", iters = 10, reps = 5 }
local A = C.ALPHA
local step, bytes, flops
if p.op == "gemv" then
  local M = C.seq(p.n * p.n, A[1], p.dtype, { p.n, p.n })
  local x = C.seq(p.n, A[2], p.dtype)
  C.sync(M)
  step = function()
    local y
    for _ = 1, p.iters do y = M:dot(x) end
    return y
  end
  bytes = p.iters * p.n * p.n * M.itemsize
elseif p.op == "gemvt" then
  local X = C.seq(p.m * p.f, A[1], p.dtype, { p.m, p.f })
  local z = C.seq(p.m, A[2], p.dtype)
  C.sync(X)
  step = function()
    local w
    for _ = 1, p.iters do w = X:t():dot(z) end
    return w
  end
  bytes = p.iters * p.m * p.f * X.itemsize
elseif p.op == "gemm" then
  local L = C.seq(p.n * p.n, A[1], p.dtype, { p.n, p.n })
  local R = C.seq(p.n * p.n, A[2], p.dtype, { p.n, p.n })
  C.sync(L)
  C.sync(R)
  step = function() return L:dot(R) end
  flops = 2.0 * p.n * p.n * p.n
else
  error("bench: op is gemv, gemvt or gemm, got " .. tostring(p.op), 0)
end

-- gemv, gemvt: a STREAM triad over arrays of the matrix's counted bytes
-- (3 x 8 an element), timed right after each step in this process, gives
-- info: triad_gbs= and of_triad= (gemv bandwidth / triad bandwidth, medians),
-- the ratio least disturbed by other work on a shared machine.
local triad
if bytes then
  local tn = bytes // p.iters // 24
  local b, c = tycho.full(tn, 2.0), tycho.full(tn, 1.0)
  C.sync(b)
  C.sync(c)
  triad = function() -- each result read, or the unread ones would be elided
    local a
    for _ = 1, p.iters do
      a = b + 3.0 * c
      C.sync(a)
    end
    return a
  end
end


local ttimes = {}
local r, times = C.measured_steps(p.reps, step, triad and function(timed)
  local t1 = tycho.clock()
  C.sync(triad())
  if timed then ttimes[#ttimes + 1] = tycho.clock() - t1 end
end)
local median = C.median
local med = median(times)
if bytes then
  C.info("gbs", string.format("%.2f", bytes / med / 1e9))
  C.info("triad_gbs", string.format("%.2f", bytes / median(ttimes) / 1e9))
  C.info("of_triad", string.format("%.2f", median(ttimes) / med))
end
if flops then C.info("gflops", string.format("%.2f", flops / med / 1e9)) end
C.checksum(r:astype("f64"):sum():item())
