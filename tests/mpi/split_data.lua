-- split_data.lua: stores left split among ranks (docs/mpi.md, "Split
-- stores"). What split launches write stays with the rank whose pieces wrote
-- it; a later split launch reading it in place (the same view, or a shifted
-- one: a stencil) receives only the halos its pieces need; host reads,
-- views with other strides and whole-array launches make it whole first.
-- compare.sh checks that the printed values and saved .npy files are those
-- of a plain run; the asserts check that far fewer bytes moved than when
-- every split launch sent its whole output to every rank.
local out = assert(os.getenv("TYCHO_OUT"), "TYCHO_OUT: the folder for .npy files")
local np = tycho.nranks()
local function hex(v)
  if math.type(v) == "float" then return string.format("%a", v) end
  return tostring(v)
end
local function received() return tycho.stats().dist_bytes end
-- TYCHO_MPI_REPLICATED=1 (CTest's mpi.split_data_replicated): every split
-- output is sent to every rank, so the byte counts below do not hold
local bytes_checked = os.getenv("TYCHO_MPI_REPLICATED") ~= "1"
-- what the replicated scheme received for `launches` split launches writing
-- `elems` f64 elements each: every other rank's share of each output
local function replicated(launches, elems) return launches * elems * 8 * (np - 1) // np end

tycho.seed(11)
local n = 300007 -- not a multiple of any rank count

-- 1. a chain of element-wise updates over split stores, one flush each
local x = tycho.random.normal(n)
tycho.flush()
local before = received()
for _ = 1, 12 do
  x = x * 1.0001 + 1
  tycho.flush()
end
local chain = received() - before
-- nothing: the outputs stay split, and a built-in element-wise launch cannot
-- fail on its data, so no failure records are exchanged either
assert(not bytes_checked or chain == 0, "the element-wise chain moved " .. chain .. " bytes; expected 0")
-- reading an element or a short slice: only its elements come back
print("chain_item", hex(x[1]), hex(x[n]))
local t = x[{{n - 4, n}}]:totable()
print("chain_totable", hex(t[1]), hex(t[5]))
local part = received() - before - chain
assert(not bytes_checked or part <= 7 * 8, "two elements and a 5-element slice moved " .. part .. " bytes")
-- save: made whole first
tycho.save(out .. "/chain.npy", x)
local whole = received() - before - chain - part
assert(not bytes_checked or whole <= n * 8, "making x whole moved " .. whole .. " bytes; expected at most " .. n * 8)

-- 2. a reduction of a split store (its partials, in piece order)
local y = (x * 0.5):sin()
tycho.flush()
print("reduce_sum", hex(y:sum():item()))
print("reduce_max", hex(y:max():item()), hex(y:argmin():item()))
print("reduce_mean", hex((y * y):mean():item()))

-- 3. a 2-D stencil loop: halos only
local N = 300
local grid = tycho.zeros({N + 2, N + 2})
grid[{{}, 1}] = -273.15
grid[{{}, -1}] = -273.15
grid[{-1, {}}] = -273.15
grid[{1, {}}] = 40.0
local center = grid[{{2, -2}, {2, -2}}]
local north = grid[{{1, -3}, {2, -2}}]
local south = grid[{{3, -1}, {2, -2}}]
local west = grid[{{2, -2}, {1, -3}}]
local east = grid[{{2, -2}, {3, -1}}]
center[{}] = (center + north + east + west + south) * 0.2
tycho.flush()
before = received()
local inplace = tycho.stats().fused_inplace
local iters = 15
for _ = 1, iters do
  center[{}] = (center + north + east + west + south) * 0.2
  tycho.flush()
end
local halos = received() - before
-- one line-buffered pass in place per iteration, on any number of ranks
assert(tycho.stats().fused_inplace - inplace == iters, "the stencil did not run in place")
-- the replicated scheme: two split launches (the mean, the copy) per iteration
assert(not bytes_checked or np == 1 or halos * 10 < replicated(2 * iters, N * N),
       "the stencil moved " .. halos .. " bytes; the replicated scheme " .. replicated(2 * iters, N * N))
print("stencil", hex(center:sum():item()), hex(grid[{2, 2}]:item()), hex(grid[{N // 2, N // 3}]:item()))
tycho.save(out .. "/stencil.npy", grid)

-- 4. 1-D shifted views of a split store (a 3-point smoother, in place)
local u = tycho.random.uniform(n)
local inner, left, right = u[{{2, -2}}], u[{{1, -3}}], u[{{3, -1}}]
for _ = 1, 4 do
  inner[{}] = (left + inner * 2 + right) * 0.25
  tycho.flush()
end
print("smooth", hex(u:sum():item()), hex(u[n // 2]))

-- 5. views with other strides of split stores: a transpose, a strided slice
local m = tycho.random.normal({601, 499})
local mm = m * 3 - 1
tycho.flush()
local tr = mm:transpose() * 2 -- reads mm transposed: made whole first
tycho.save(out .. "/transposed.npy", tr)
local st = mm[{{1, -1, 3}, {2, -1, 2}}] + 1 -- strided
print("strided", hex(st:sum():item()), table.concat(st.shape, "x"))
local z = x[{{1, -2, 2}}] * x[{{2, -1, 2}}] -- two strided views of split x
print("strided_1d", hex(z:sum():item()))

-- 6. a split store written again through another view, then read
local w = tycho.random.normal(n)
w = w * 2
tycho.flush()
w[{{1000, 200000}}] = w[{{1000, 200000}}] + 7
print("rewrite", hex(w:sum():item()), hex(w[1500]))
tycho.save(out .. "/rewrite.npy", w)

-- 7. integers and a mask of a split store (host steps)
local k = tycho.random.integers(-50, 50, {n}) * 3
tycho.flush()
print("int_sum", hex(k:sum():item()), hex((k * k):max():item()))
local sel = x[x:gt(x:mean())]
print("mask", sel.shape[1], hex(sel:sum():item()))

-- 8. a split 1-D vector read as a grid (bench/workloads' C.seq: a reshape):
-- each rank receives only the elements its row pieces lack (element
-- ranges), not the whole vector
local G = 120 -- 112.5 KiB: 2 pieces of whole rows on any machine (64 KiB min chunk)
local v = (tycho.arange(G * G) + 0.5) * 0.6180339887498949
v = v - tycho.floor(v)
tycho.flush()
before = received()
local g = v:reshape({ G, G }) - 0.5
tycho.flush()
local reshaped = received() - before
-- a rank boundary of the vector and of the grid's rows lie within a row
-- (and the failure records): at most two rows for each of the np ranks
assert(not bytes_checked or np == 1 or reshaped <= np * 2 * G * 8 + 64,
       "reading a split vector as a grid moved " .. reshaped .. " bytes; expected at most " .. np * 2 * G * 8 + 64)
print("reshape_read", hex(g:sum():item()), hex(g[{ G, 1 }]:item()), hex(g[{ 1, G }]:item()))
-- the same vector read whole by a small launch, and a grid of one column
print("reshape_small", hex((v:reshape({ G, G })[{ { 1, 3 }, {} }] * 2):sum():item()))

-- 9. dot products of row-split vectors (ordered bands, fixed by the shape):
-- each band is computed on the rank holding most of its rows, also where
-- the rank count does not divide the band count (3 ranks, 4 bands)
local a2 = tycho.random.normal({ 500, 400 }) * 1.5
local b2 = tycho.random.normal({ 500, 400 }) + 0.25
tycho.flush()
before = received()
local dots = {}
for i = 1, 3 do
  dots[i] = (a2 * b2):sum()
  a2 = a2 + 0.125
end
print("dots", hex(dots[1]:item()), hex(dots[2]:item()), hex(dots[3]:item()))
local dotbytes = received() - before
-- 200,000 elements: 4 bands of 125 rows (ty__ordered_tiles); a band goes to
-- the rank holding its middle row, so a rank reads at most half a band (63
-- rows of 3200 bytes) of each vector from each neighbour, besides the
-- partials (the exact split: tests/c/test_dist_owner.c)
assert(not bytes_checked or dotbytes <= 3 * (2 * 2 * 63 * 3200 + 4096),
       "three dot products moved " .. dotbytes .. " bytes; expected at most half a band from each neighbour")
