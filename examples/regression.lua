-- examples/regression.lua — linear least squares with tycho.dot, two ways.
--
--   tycho examples/regression.lua [n] [gd_iterations]
--
-- Makes n samples (default 100000) of y = X * beta + noise, where X has an
-- intercept column of ones and 4 uniform [0, 1) features, beta is known and
-- the noise is uniform in [-0.005, 0.005). Then recovers beta
--   1. by the normal equations (X'X) b = X'y: X'X and X'y are tycho.dot
--      products on the n-row data; the 5 x 5 system is solved in plain Lua;
--   2. by gradient descent on the mean squared error (default 1000 steps),
--      every step two tycho.dot products on the data.
-- Both must match the true beta to within 0.01 (the noise allows ~1e-4 at the
-- default n); the script raises an error otherwise.
--
-- Prints both estimates, their largest errors and checksums (the sums of the
-- coefficients of each method, all digits: the same bits for any --cpus or
-- --parallel mode).
local tycho = require "tycho"

local args = arg or {}
-- An integer command-line argument: args[i] if given (an error if it is not
-- an integer >= min), else the default.
local function int_arg(i, default, min, name)
  if args[i] == nil then return default end
  local v = math.tointeger(tonumber(args[i]))
  if not v or v < min then
    error(string.format("%s (argument %d) must be an integer >= %d, got '%s'", name, i, min, args[i]), 0)
  end
  return v
end
local n = int_arg(1, 100000, 50, "n")
local steps = int_arg(2, 1000, 0, "gd_iterations")

local beta = {1.5, -2.0, 0.5, 3.0, -1.0} -- intercept first
local k = #beta
local TOLERANCE = 0.01

tycho.seed(7)
local X = tycho.random({n, k})
X[{{}, 1}] = 1.0 -- the intercept column
local y = X:dot(tycho.array(beta)) + (tycho.random(n) - 0.5) * 0.01

-- Solves the k x k system A x = b (Lua tables) by Gaussian elimination with
-- partial pivoting; A is small and well conditioned here.
local function solve(A, b)
  local m = #b
  local M = {}
  for i = 1, m do
    M[i] = {}
    for j = 1, m do M[i][j] = A[i][j] end
    M[i][m + 1] = b[i]
  end
  for c = 1, m do
    local p = c
    for r = c + 1, m do
      if math.abs(M[r][c]) > math.abs(M[p][c]) then p = r end
    end
    M[c], M[p] = M[p], M[c]
    for r = c + 1, m do
      local f = M[r][c] / M[c][c]
      for j = c, m + 1 do M[r][j] = M[r][j] - f * M[c][j] end
    end
  end
  local x = {}
  for i = m, 1, -1 do
    local s = M[i][m + 1]
    for j = i + 1, m do s = s - M[i][j] * x[j] end
    x[i] = s / M[i][i]
  end
  return x
end

local function max_error(b)
  local e = 0
  for i = 1, k do e = math.max(e, math.abs(b[i] - beta[i])) end
  return e
end

local function show(name, b)
  local parts = {}
  for i = 1, k do parts[i] = string.format("%.6f", b[i]) end
  print(string.format("%-17s {%s}  max error %.3g", name, table.concat(parts, ", "), max_error(b)))
end

local t0 = tycho.clock()

-- 1. Normal equations.
local Xt = X:t()
local XtX = Xt:dot(X):totable()
local Xty = Xt:dot(y):totable()
local b_normal = solve(XtX, Xty)

-- 2. Gradient descent: b <- b - lr * X'(Xb - y) / n. The step 1/L, with L a
-- bound on the largest eigenvalue of X'X/n (its largest absolute row sum),
-- converges without tuning; its rate is set by the condition number (~40 here).
local L = 0
for i = 1, k do
  local s = 0
  for j = 1, k do s = s + math.abs(XtX[i][j]) end
  L = math.max(L, s / n)
end
local b = tycho.zeros(k)
for _ = 1, steps do
  b = b - Xt:dot(X:dot(b) - y) * (1 / (L * n))
end
local b_gd = b:totable()
local elapsed = tycho.clock() - t0

print(string.format("regression: %d samples, %d coefficients, %d gradient steps, %d cpus",
                    n, k, steps, tycho.config().cpus))
show("true", beta)
show("normal equations", b_normal)
if steps > 0 then show("gradient descent", b_gd) end
print(string.format("time: %.6f s", elapsed))
local checksum, gd_checksum = 0, 0
for i = 1, k do checksum, gd_checksum = checksum + b_normal[i], gd_checksum + b_gd[i] end
print(string.format("checksum: %.17g", checksum))
if steps > 0 then print(string.format("gradient descent checksum: %.17g", gd_checksum)) end

assert(max_error(b_normal) < TOLERANCE, "normal equations did not recover beta")
if steps > 0 then
  assert(max_error(b_gd) < TOLERANCE, "gradient descent did not recover beta")
end
print("recovered: yes")
