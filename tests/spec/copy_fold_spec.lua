-- tests/spec/copy_fold_spec.lua — copies folded into their producer.
--
-- `A[view] = B - C` fuses as a subtraction into a block slot and a copy of
-- the slot into A's view. The interpreter (fused_cpu.c, elide_copies) drops
-- the copy and lets the subtraction write A itself when nothing can tell:
-- no sub-operation between the two touches A's memory or reads the slot,
-- none after reads the slot before writing it again, and each input of the
-- subtraction is A's own view or memory apart from A. tycho.stats() counts
-- each dropped copy (per piece) in copies_folded. The values must be those
-- of the unfused launches (TYCHO_FUSE=off), to the bit, on any number of
-- processors. Expected values: numpy's, by hand (small integers, exact).

local CASES = [[
  local function row(t)
    local out = {}
    for i = 1, t.size do out[i] = string.format("%.17g", t[i]) end
    return table.concat(out, ",")
  end
  -- a flush with the temporaries collected first (a temporary the program
  -- still holds is a store, not a slot); the copies folded since the last
  local seen = tycho.stats().copies_folded
  local function settle()
    collectgarbage()
    collectgarbage()
    tycho.flush()
    local now = tycho.stats().copies_folded
    local d = now - seen
    seen = now
    return d
  end
  -- 1. the Laplacian of cg.lua: four shifted subtractions assigned to views
  local N = 64
  local v = tycho.arange(N * N):reshape({ N, N }) * 0.001 - 1.5
  settle()
  local Av = v * 4.0
  Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
  Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
  Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
  Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
  local n1 = settle()
  print("lap", string.format("%.17g %.17g %.17g", Av:sum():item(), (Av * Av):sum():item(),
        Av[{ 2, 3 }]:item()))
  print("lapfold", n1)
  -- 2. a shifted view of the same store on the right: never folded
  local a = tycho.arange(1, 6) * 1.0
  settle()
  a[{{2, -1}}] = a[{{1, -2}}] * 2
  print("shiftfold", settle())
  print("shift", row(a))
  -- 3. the assigned view itself on the right: folded, in place
  local b = tycho.arange(1, 6) * 1.0
  settle()
  b[{{2, -1}}] = b[{{2, -1}}] + 10
  print("samefold", settle())
  print("same", row(b))
  -- 4. the slot read again after the copy: not folded
  local x = tycho.arange(1, 6) * 1.0
  local c = tycho.zeros(5)
  settle()
  local u
  do
    local t = x + 1
    c[{{1, -1}}] = t
    u = t * 3
  end
  print("rereadfold", settle())
  print("reread", row(c), row(u))
  -- 5. the argument read between the producer and the copy: not folded
  local d = tycho.arange(1, 6) * 1.0
  settle()
  local w
  do
    local t = d + 1
    w = d * 2
    d[{{1, -1}}] = t
  end
  print("betweenfold", settle())
  print("between", row(d), row(w))
  -- 6. another store's memory apart from the view: folded
  local e = tycho.arange(1, 6) * 1.0
  local g = tycho.arange(1, 6) * 0.5
  settle()
  e[{{1, 3}}] = g[{{3, -1}}] - e[{{1, 3}}]
  print("apartfold", settle())
  print("apart", row(e))
]]

local function run(env) return spec_run_keyed(CASES, env) end

describe("copies folded into their producer", function()
  local unfused = run({ TYCHO_FUSE = "off", TYCHO_CPUS = "1" })

  it("have the values numpy gives where they are exact", function()
    assert.are.equal("1,2,4,6,8", unfused.shift)
    assert.are.equal("1,12,13,14,15", unfused.same)
    assert.are.equal("2,3,4,5,6\t6,9,12,15,18", unfused.reread)
    assert.are.equal("2,3,4,5,6\t2,4,6,8,10", unfused.between)
    assert.are.equal("0.5,0,-0.5,4,5", unfused.apart)
    for _, k in ipairs({ "lapfold", "shiftfold", "samefold", "rereadfold", "betweenfold", "apartfold" }) do
      assert.are.equal("0", unfused[k], k) -- nothing fused, nothing to fold
    end
  end)

  for _, cpus in ipairs({ "1", "2", "3" }) do
    it("give the unfused launches' bits, interpreted, on " .. cpus .. " processors", function()
      local r, out = run({ TYCHO_CODEGEN = "off", TYCHO_CPUS = cpus })
      for _, k in ipairs({ "lap", "shift", "same", "reread", "between", "apart" }) do
        assert.are.equal(unfused[k], r[k], k .. ":\n" .. out)
      end
      -- the Laplacian's four copies at least (once per piece), the in-place
      -- and the apart ones (one piece each); none where it could tell
      assert.is_true(tonumber(r.lapfold) >= 4, out)
      assert.are.equal("1", r.samefold, out)
      assert.are.equal("1", r.apartfold, out)
      assert.are.equal("0", r.shiftfold, out)
      assert.are.equal("0", r.rereadfold, out)
      assert.are.equal("0", r.betweenfold, out)
    end)
  end
end)
