-- products.lua — products and convolution (issue 18): a batched matmul that
-- broadcasts a matrix against a stack, an attention-score einsum, and a
-- direct N-D (2-D "same") and 1-D convolution.
--   tycho products.lua op=bmm b=64 n=256          (b, n, n) @ (n, n)
--   tycho products.lua op=einsum b=8 h=8 n=256 d=64   "bhqd,bhkd->bhqk"
--   tycho products.lua op=conv2d n=2048 k=5        (n, n) * (k, k), "same"
--   tycho products.lua op=conv1d n=10000000 k=31   (n) * (k), "same"
-- Checksum: the sum of the result.
local tycho = require "tycho"
local C = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local p = C.params { op = "bmm", b = 64, h = 8, n = 256, d = 64, k = 5, reps = 5 }
local A = C.ALPHA
local step
if p.op == "bmm" then
  local x = C.seq(p.b * p.n * p.n, A[1], nil, {p.b, p.n, p.n})
  local w = C.seq(p.n * p.n, A[2], nil, {p.n, p.n})
  step = function() return tycho.matmul(x, w) end
elseif p.op == "einsum" then
  local shape = {p.b, p.h, p.n, p.d}
  local q = C.seq(p.b * p.h * p.n * p.d, A[1], nil, shape)
  local k = C.seq(p.b * p.h * p.n * p.d, A[2], nil, shape)
  step = function() return tycho.einsum("bhqd,bhkd->bhqk", q, k) end
elseif p.op == "conv2d" then
  local img = C.seq(p.n * p.n, A[1], nil, {p.n, p.n})
  local ker = C.seq(p.k * p.k, A[2], nil, {p.k, p.k})
  step = function() return tycho.convolve(img, ker, "same") end
elseif p.op == "conv1d" then
  local x, ker = C.seq(p.n, A[1]), C.seq(p.k, A[2])
  step = function() return tycho.convolve(x, ker, "same") end
else
  error("bench: op is bmm, einsum, conv2d or conv1d, got " .. tostring(p.op), 0)
end
local r = C.timed(p.reps, step, C.sync)
C.checksum(r:sum():item())
