-- bands.lua: rank boundaries on the band edges of ordered reductions
-- (docs/mpi.md, exec/dist_bands.c). A dot product of two vectors that
-- element-wise launches wrote split among ranks reads only the rows its
-- rank holds: the ranks' rows are whole bands of the product (64 bands of a
-- grid of 64 x 65536 elements or more), also where the rank count does not
-- divide 64 (3 ranks: before, the band across each boundary read up to half
-- a band, 185 KB a vector here, from the neighbour). compare.sh checks the
-- bits against a plain run; the asserts check the bytes.
local np = tycho.nranks()
local function hex(v) return string.format("%a", v) end
local function received() return tycho.stats().dist_bytes end
local bytes_checked = np > 1 and os.getenv("TYCHO_MPI_REPLICATED") ~= "1"

tycho.seed(7)
local n = 2100 -- 4.41M elements: 64 bands of 32.8 rows
local a = tycho.random.normal({ n, n }) * 1.5
local b = tycho.random.normal({ n, n }) + 0.25
tycho.flush()
local before = received()
local dots = {}
for i = 1, 3 do
  dots[i] = (a * b):sum()
  a = a + 0.125
  tycho.flush()
end
local got = received() - before
-- only the partials of the 64 bands (8 bytes each, to every rank) and the
-- failure records move, three times
assert(not bytes_checked or got <= 3 * (64 * 8 + 64 * np),
       "three dot products moved " .. got .. " bytes; expected only their partials")
print("dots", hex(dots[1]:item()), hex(dots[2]:item()), hex(dots[3]:item()))

-- a 1-D vector of 64 bands and more: the same
local v = tycho.random.uniform(4200000) - 0.5
local w = v * v + 1
tycho.flush()
before = received()
local s = (v * w):sum()
tycho.flush()
got = received() - before
assert(not bytes_checked or got <= 64 * 8 + 64 * np, "a 1-D dot product moved " .. got .. " bytes")
print("dot_1d", hex(s:item()), hex(v:mean():item()))

-- a grid of 16 bands (1M elements): on several ranks element-wise launches
-- are cut by rows only (4 pieces were 2 x 2, so each of 4 ranks held a
-- quarter and a band read half its rows' columns from another rank); at 2
-- and 4 ranks the rank boundaries are band edges, at 3 a band straddles by
-- half a band (32 rows of 8,000 bytes) at most, for each vector
local c = tycho.random.normal({ 1000, 1000 }) * 2
local d = c + 1
tycho.flush()
before = received()
local e = (c * d):sum()
tycho.flush()
got = received() - before
local straddle = np % 2 == 1 and 2 * 2 * 32 * 1000 * 8 or 0
assert(not bytes_checked or got <= straddle + 16 * 8 + 64 * np,
       "a dot product of 1000 x 1000 grids moved " .. got .. " bytes; expected at most " .. straddle + 16 * 8 + 64 * np)
print("dot_16", hex(e:item()), hex(d[{ 500, 700 }]:item()))

-- a split vector read as a 3-D block with fewer rows than pieces (4 x 300 x
-- 500): each row is cut along dim 1 alike, so every rank's pieces are one
-- range of the vector and it receives only the ends it lacks (1 x 2 x 3
-- tiles gave each rank parts of all 4 rows: the vector was made whole,
-- two thirds of it to each of 3 ranks)
local u = tycho.arange(4 * 300 * 500) * 0.5
u = u + 1
tycho.flush()
before = received()
local g = u:reshape({ 4, 300, 500 }) * 2
tycho.flush()
got = received() - before
assert(not bytes_checked or got * 4 <= 600000 * 8,
       "reading a split vector as 4 x 300 x 500 moved " .. got .. " bytes; expected at most a quarter of it")
print("reshape_3d", hex(g:sum():item()), hex(g[{ 3, 150, 250 }]:item()))
