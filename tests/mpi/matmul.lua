-- matmul.lua: matrix products of stores split among ranks (docs/mpi.md,
-- "Products"). A split product C = A @ B computes C's row blocks where A's
-- rows are: each rank receives only the rows of A its blocks lack (at most
-- half a block per rank boundary) and B whole, never A whole; the next
-- product with the same A receives nothing of it. compare.sh checks that the
-- printed values and saved .npy files are those of a plain run at every rank
-- count; the asserts check the bytes against the earlier scheme, which made
-- both operands whole.
local out = assert(os.getenv("TYCHO_OUT"), "TYCHO_OUT: the folder for .npy files")
local np = tycho.nranks()
local function hex(v) return string.format("%a", v) end
local function received() return tycho.stats().dist_bytes end
local bytes_checked = np > 1 and os.getenv("TYCHO_MPI_REPLICATED") ~= "1"
-- what making an operand of `elems` f64 elements whole brings one rank:
-- the other ranks' shares (rank 0 holds the first 1/np)
local function whole(elems) return elems * 8 * (np - 1) // np end
-- failure records of a split launch's exchange: 16 bytes a rank a launch
-- (the failed piece, its status, the written arguments the failures reached)
local records = 16 * np

tycho.seed(20)

-- 1. a tall matrix times a small one: A (1000 x 300) split by rows (8 row
-- blocks of 125 rows; rank boundaries at 1000 r / np cut blocks at 3 ranks),
-- B (300 x 64) split too (19,200 elements: over compare.sh's 1,000)
local A = tycho.random.normal({ 1000, 300 }) * 0.5
local B = tycho.random.normal({ 300, 64 }) + 0.25
tycho.flush()
local before = received()
local C = tycho.matmul(A, B)
tycho.flush()
local got = received() - before
-- before: A and B whole (2,551,200 bytes at 3 ranks); now B whole and at
-- most half a block (63 rows of 2,400 bytes) from each neighbour
assert(not bytes_checked or got <= 300 * 64 * 8 + 2 * 63 * 300 * 8 + records,
       "A @ B moved " .. got .. " bytes; expected B's share and at most half a block of A's rows a neighbour")
assert(not bytes_checked or got * 4 < whole(1000 * 300 + 300 * 64),
       "A @ B moved " .. got .. " bytes, not much less than making both whole: " .. whole(1000 * 300 + 300 * 64))
print("matmul", hex(C:sum():item()), hex(C[{ 1, 1 }]:item()), hex(C[{ 1000, 64 }]:item()))
tycho.save(out .. "/matmul.npy", C)

-- 2. the same A again: each rank holds the rows of its blocks now, and B is
-- whole: only the failure records move
before = received()
local C2 = tycho.matmul(A, B * 2)
tycho.flush()
got = received() - before
assert(not bytes_checked or got <= 2 * records + 300 * 64 * 8, -- B * 2 whole (3 pieces: rank 0 may hold none)
       "A @ (2 B) moved " .. got .. " bytes; A's rows should have stayed")
print("matmul_again", hex(C2:sum():item()), hex(C2[{ 500, 32 }]:item()))

-- 3. A read element-wise after the product (its record: the row blocks),
-- then a product of the result: still the same bits
local A2 = A * 2 + 1
local C3 = A2:dot(B)
print("matmul_after", hex(C3:sum():item()), hex(A2:sum():item()))
tycho.save(out .. "/matmul_after.npy", C3)

-- 4. a matrix times a split vector (gemv), in a loop (Jacobi's R x): M's
-- rows stay where they are, the vector is made whole each time
local M = tycho.random.normal({ 1200, 1100 }) * 0.01
local x = tycho.random.uniform(1100) + 0.5
tycho.flush()
before = received()
local y
for _ = 1, 3 do
  y = M:dot(x)
  x = x * 0.5 + y[{ { 1, 1100 } }] * 0.25
  tycho.flush()
end
got = received() - before
-- before: M whole (7.04 MB at 3 ranks); now M's rows its blocks lack, the
-- first time only (10 blocks of 120 rows: half a block, 60 rows of 8,800
-- bytes, from each neighbour), and x and y whole each iteration
local gemv_bound = 2 * 60 * 1100 * 8 + 3 * (1100 + 1200) * 8 + 3 * 2 * records
assert(not bytes_checked or (got <= gemv_bound and got * 5 < whole(1200 * 1100)),
       "three M x products moved " .. got .. " bytes; expected at most " .. gemv_bound
       .. " (making M whole moved " .. whole(1200 * 1100) .. ")")
print("gemv", hex(y:sum():item()), hex(x:sum():item()), hex(y[{ 1 }]:item()))
tycho.save(out .. "/gemv.npy", y)

-- 5. a row vector times a split matrix (a small C: run whole on every rank,
-- both operands whole), and a batched product of split stores
local r = tycho.random.normal(1200)
print("vecmat", hex(r:dot(M):sum():item()))
local P = tycho.random.normal({ 4, 300, 200 })
local Q = tycho.random.normal({ 4, 200, 50 })
print("batched", hex(tycho.matmul(P * 1.0, Q):sum():item()))
