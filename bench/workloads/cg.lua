-- cg.lua — conjugate gradient on the 2-D Laplacian (5-point, zero Dirichlet
-- boundary) of an n x n grid, matrix-free: A p = 4 p - (the four shifted
-- copies of p), written with views. cuNumeric's cg.py loop: the residual is
-- tested every `check` iterations; stop when ||r|| / ||b|| < tol or after
-- max_iters iterations.
--   tycho cg.lua n=2048 tol=1e-8 max_iters=100 check=25 reps=5
-- b = seq(n*n) - 0.5. Checksum: ||r|| / ||b|| at the end (and info: iterations).
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { n = 2048, tol = 1e-8, max_iters = 100, check = 25, reps = 5 }
local N = p.n

local function laplacian(v)
  local Av = v * 4.0
  Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
  Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
  Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
  Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
  return Av
end

local function vdot(a, b) return (a * b):sum() end -- a 0-d store: stays deferred

local b = C.seq(N * N, C.ALPHA[1], "f64", { N, N }) - 0.5
local bnorm = math.sqrt(vdot(b, b):item())
local iters, relres = 0, 0

local function solve()
  local x = tycho.zeros({ N, N })
  local r = b:copy()
  local pp = r
  local rsold = vdot(r, r)
  local i = 0
  while i < p.max_iters do
    local Ap = laplacian(pp)
    local alpha = rsold / vdot(pp, Ap)
    x = x + alpha * pp
    r = r - alpha * Ap
    local rsnew = vdot(r, r)
    i = i + 1
    if i % p.check == 0 or i == p.max_iters then
      relres = math.sqrt(rsnew:item()) / bnorm
      if relres < p.tol then break end
    end
    pp = r + (rsnew / rsold) * pp
    rsold = rsnew
  end
  iters = i
  return x
end

C.timed(p.reps, solve, C.sync)
C.info("iterations", iters)
C.checksum(relres)
