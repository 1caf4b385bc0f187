-- jacobi.lua — Jacobi iteration on a dense, diagonally dominant n x n system
-- (cuNumeric's jacobi.py): A = seq + n * I, b = seq; d = diag(A),
-- R = A - diag(d); x <- (b - R x) / d.
--   tycho jacobi.lua n=8192 iters=50 reps=5
-- One timed step = `iters` iterations from x = 0. Checksum: sum(x).
-- info: cpu_s= and cpu_steps= (the process's CPU seconds in a timed step,
-- all threads, median and each) and faults= (a timed step's page faults,
-- median), as blas.lua's. info: of_prod= (the step's median wall time over
-- that of `iters` products R:dot(x0) of the same R and a fixed x0, timed
-- right after each step in this process: 1.00 when an iteration costs its
-- product alone; bench/README "jacobi against numpy: session 19") and
-- prod_s= (those products' median).
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 8192, iters = 50, reps = 5 }
local N = p.n

local A = C.seq(N * N, C.ALPHA[1], "f64", { N, N })
local diag = A:diagonal()
diag[{}] = diag + N                      -- A + N * eye(N)
local b = C.seq(N, C.ALPHA[2])
local d = A:diagonal():copy()
local R = A:copy()
R:diagonal():fill(0)                     -- A - diag(d)
A = nil
C.sync(R)
local x0 = C.seq(N, C.ALPHA[3])
C.sync(x0)


-- C.measured_steps (a warm-up step, then `reps` timed ones), with each
-- step's CPU time and faults, and `iters` products timed after it (untimed)
local function step()
  local x = tycho.zeros(N)
  for _ = 1, p.iters do x = (b - R:dot(x)) / d end
  return x
end
local function products()
  local y
  for _ = 1, p.iters do y = R:dot(x0) end
  return y
end
local prods = {}
local x, times = C.measured_steps(p.reps, step, function(timed)
  local t1 = tycho.clock()
  C.sync(products())
  if timed then prods[#prods + 1] = tycho.clock() - t1 end
end)
local median = C.median
local prod = median(prods)
C.info("prod_s", string.format("%.3f", prod))
C.info("of_prod", string.format("%.2f", median(times) / prod))
C.checksum(x:sum():item())
