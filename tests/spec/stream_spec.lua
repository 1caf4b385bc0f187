-- stream_spec.lua — streaming under a memory budget (the memory axis):
-- results equal a direct computation for budgets from tiny to unlimited,
-- reductions along either axis, the peak of transient bytes under the budget,
-- each strict-mode rule, relaxed cutting, the impossible budget's message.

-- a[i] = 0.37 * i, b[j] = 0.21 * j + 0.1 (exactly what the stores hold)
local function seqs(n, m)
  local a = tycho.arange(n) * 0.37
  local b = tycho.arange(m) * 0.21 + 0.1
  return a, b
end

-- The nearest a for every b (axis 1) or b for every a (axis 2), in plain Lua.
local function direct(n, m, axis)
  local out = {}
  if axis == 1 then
    for j = 0, m - 1 do
      local best = math.huge
      for i = 0, n - 1 do best = math.min(best, math.abs(0.37 * i - (0.21 * j + 0.1))) end
      out[j + 1] = best
    end
  else
    for i = 0, n - 1 do
      local best = math.huge
      for j = 0, m - 1 do best = math.min(best, math.abs(0.37 * i - (0.21 * j + 0.1))) end
      out[i + 1] = best
    end
  end
  return out
end

local function pairwise(n, m, axis, opts)
  local a, b = seqs(n, m)
  tycho.flush()
  local d
  tycho.parallel(opts, function()
    d = tycho.min(tycho.abs(a:expand(2) - b:expand(1)), axis)
  end)
  return d:totable(), tycho.stats().last_flush
end

describe("streaming", function()
  it("gives the direct results for budgets from tiny to unlimited, either axis", function()
    for _, size in ipairs { {37, 23}, {64, 64}, {101, 7}, {5, 90} } do
      local n, m = size[1], size[2]
      for axis = 1, 2 do
        local want = direct(n, m, axis)
        for _, budget in ipairs { "2KB", "10KB", "100KB", "1GB" } do
          for _, fuse in ipairs { false, true } do
            local got = pairwise(n, m, axis, {memory = budget, fuse = fuse})
            assert.are.equal(#want, #got)
            for k = 1, #want do
              -- the same operations in the same order: exactly equal
              assert.are.equal(want[k], got[k], ("n=%d m=%d axis=%d budget=%s fuse=%s k=%d")
                :format(n, m, axis, budget, tostring(fuse), k))
            end
          end
        end
      end
    end
  end)

  it("keeps the transient peak under a budget 100x smaller than the intermediate", function()
    local n, m = 400, 400 -- an n x m f64 intermediate is 1.28 MB: 100x the budget
    local want = direct(n, m, 1)
    local got, f = pairwise(n, m, 1, {memory = "12800B", fuse = false})
    for k = 1, #want do assert.are.equal(want[k], got[k]) end
    assert.are.equal(12800, f.stream_budget)
    assert.is_true(f.stream_pieces >= 100, "pieces: " .. f.stream_pieces)
    assert.is_true(f.stream_peak > 0 and f.stream_peak <= 12800, "peak: " .. f.stream_peak)
    assert.are.equal(1, f.stream_groups)
    local st = tycho.stats()
    assert.is_true(st.stream_peak <= 12800 * 10) -- over the whole spec, the biggest budget used so far
    assert.is_true(st.stream_groups >= 1)
  end)

  it("accumulates a full reduction across pieces", function()
    local n, m = 120, 77
    local a, b = seqs(n, m)
    local want = 0
    for i = 0, n - 1 do
      for j = 0, m - 1 do want = want + (0.37 * i) * (0.21 * j + 0.1) end
    end
    local s
    tycho.parallel({memory = "4KB", fuse = false}, function()
      s = (a:expand(2) * b:expand(1)):sum()
    end)
    local got = s:item()
    assert.is_true(math.abs(got - want) <= 1e-9 * math.abs(want), got .. " vs " .. want)
    assert.is_true(tycho.stats().last_flush.stream_pieces > 1)
  end)

  it("says in explain how a launch was streamed", function()
    pairwise(50, 60, 1, {memory = "4KB", fuse = false})
    local found
    for _, e in ipairs(tycho.explain(8)) do
      if e.streaming ~= "" and e.task == "abs" then found = e.streaming end
    end
    assert.is_truthy(found)
    assert.matches("pieces of %d+ along dim 2 %(of 60%)", found)
    assert.matches("budget", found)
  end)

  it("runs a scope that fits unsplit as it is", function()
    local got, f = pairwise(30, 40, 2, {memory = "1GB", fuse = false})
    local want = direct(30, 40, 2)
    for k = 1, #want do assert.are.equal(want[k], got[k]) end
    assert.are.equal(1, f.stream_pieces)
    local notes = {}
    for _, e in ipairs(tycho.explain(4)) do notes[#notes + 1] = e.streaming end
    assert.matches("fits the budget unsplit", table.concat(notes, "\n"))
  end)

  it("says the smallest budget that works when one index does not fit", function()
    local a, b = seqs(1000, 1000)
    local ok, err = pcall(function()
      local d
      tycho.parallel({memory = "1KB", fuse = false}, function()
        d = tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 1)
      end)
      return d:item()
    end)
    assert.is_false(ok)
    assert.matches("too small", err)
    assert.matches("smallest budget that works is 15%.6 KiB", err)
    -- the runtime stays usable
    assert.are.equal(6, (tycho.arange(4)):sum():item())
  end)

  describe("strict mode", function()
    local function violation(body)
      local ok, err = pcall(tycho.parallel, {memory = "2KB", fuse = false}, body)
      assert.is_false(ok, "the scope should fail")
      return tostring(err)
    end

    it("refuses a launch with another domain that they depend on and that depends on them", function()
      local a, b = seqs(60, 50)
      local err = violation(function()
        local t = tycho.abs(a:expand(2) - b:expand(1))
        local m = tycho.min(t, 1) * 2 -- domain (50,): reads a streamed result ...
        local d = tycho.min(t - m:expand(1), 1) -- ... which a streamed launch reads
      end)
      assert.matches("strict", err)
      assert.matches("#%d+ mul has domain %(50,%), not the streamed launches' %(60, 50%)", err)
    end)

    it("refuses a store read through another view than it is written", function()
      local x = tycho.arange(40 * 40):reshape(40, 40)
      local err = violation(function()
        local t = x * 2
        local u = t:t() + t -- transposed read of a store written in the scope
        local _ = u:sum()
      end)
      assert.matches("through another view than the scope writes it", err)
      assert.matches("not point%-wise", err)
    end)

    it("refuses a whole read of a store the scope writes", function()
      local x = tycho.arange(30 * 30):reshape(30, 30) / 900
      local err = violation(function()
        local t = x + 1
        local u = tycho.matmul(t, x) + t
        local _ = u:sum()
      end)
      assert.matches("reads store #%d+ whole", err)
    end)

    it("refuses reading a reduction along the streamed dim inside the scope", function()
      local a, b = seqs(50, 40)
      local err = violation(function()
        local t = a:expand(2) * b:expand(1)
        local s = t:sum()
        local u = (t / s):sum() -- reads s, a reduction along every dim
      end)
      assert.matches("a reduction along the streamed dim", err)
    end)

    it("refuses reductions that cannot accumulate along any dim", function()
      local a, b = seqs(50, 40)
      local err = violation(function()
        local t = tycho.abs(a:expand(2) - b:expand(1))
        local m1 = tycho.min(t, 1) -- initialises its output along dim 2
        local m2 = tycho.max(t, 2) -- and this one along dim 1
      end)
      assert.matches("without accumulating", err)
    end)

    it("fails before anything runs and leaves the runtime usable", function()
      local a, b = seqs(60, 50)
      local d
      local ok = pcall(tycho.parallel, {memory = "2KB", fuse = false}, function()
        local t = tycho.abs(a:expand(2) - b:expand(1))
        local m = tycho.min(t, 1) * 2
        d = tycho.min(t - m:expand(1), 1)
      end)
      assert.is_false(ok)
      assert.has_error(function() d:item() end)
      assert.are.equal(15, tycho.arange(6):sum():item())
    end)
  end)

  it("relaxed mode cuts the scope into streamable groups", function()
    local n, m = 60, 50
    local a, b = seqs(n, m)
    local d, e
    tycho.parallel({memory = "2KB", fuse = false, stream = "relaxed"}, function()
      local t = tycho.abs(a:expand(2) - b:expand(1))
      local mn = tycho.min(t, 1) * 2 -- another domain, between dependent launches
      d = tycho.min(t - mn:expand(1), 1)
      e = tycho.abs(b) * 2 -- independent: runs before the pieces
    end)
    local want = direct(n, m, 1)
    local got = d:totable()
    for k = 1, #want do assert.are.equal(-want[k], got[k]) end
    assert.are.equal(0.2, e:totable()[1])
    local f = tycho.stats().last_flush
    assert.is_true(f.stream_groups >= 2, "groups: " .. f.stream_groups)
    local notes = {}
    for _, x in ipairs(tycho.explain(12)) do notes[#notes + 1] = x.streaming end
    assert.matches("cut before launch", table.concat(notes, "\n"))
  end)

  it("defers hundreds of launches past the window size to the scope's end", function()
    local a = tycho.arange(300) * 0.5
    local b = tycho.arange(200) * 0.25
    local acc
    tycho.parallel({memory = "64KB", fuse = false}, function()
      local t = a:expand(2) - b:expand(1)
      acc = t * 0
      for k = 1, 300 do acc = acc + t * k end
      acc = acc:sum()
    end)
    local want = 0
    for i = 0, 299 do for j = 0, 199 do want = want + (i * 0.5 - j * 0.25) * 45150 end end
    assert.are.equal(want, acc:item())
    local f = tycho.stats().last_flush
    assert.is_true(f.launches > 600, "launches: " .. f.launches)
    assert.is_true(f.stream_pieces > 1)
  end)

  it("does not charge a streamed scope's stores at creation", function()
    -- 8000 x 8000 f64 is 512 MB, over a 64 MB host budget: fused and
    -- streamed, the intermediate never exists
    local code = [[
      local a = tycho.arange(8000) * 0.37
      local b = tycho.arange(8000) * 0.21 + 0.1
      local ok = pcall(function() return tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 1) end)
      print("unstreamed", ok)
      local d
      parallel<memory="16MB"> do
        d = tycho.min(tycho.abs(a:expand(2) - b:expand(1)), 1)
      end
      print("streamed", string.format("%.6f", d:sum():item()))
    ]]
    local out, code_ = spec_lua(code, {TYCHO_SYSMEM = "64MB"})
    assert.are.equal(0, code_, out)
    assert.matches("unstreamed%s+false", out)
    assert.matches("streamed%s+%d", out)
  end)
end)

describe("examples/nearest.lua", function()
  it("gives the same checksum streamed and hand-chunked (up to the order of the sums)", function()
    local src = assert(os.getenv("TYCHO_SOURCE_DIR"))
    local bin = assert(os.getenv("TYCHO_BIN"))
    local p = io.popen(bin .. " " .. src .. "/examples/nearest.lua 700 500 64KB 2>&1")
    local out = p:read("a")
    assert.is_true(p:close(), out)
    local s = out:match("streamed%s+checksum (%S+)")
    local c = out:match("hand%-chunked%s+checksum (%S+)")
    assert.is_truthy(s, out)
    assert.is_true(math.abs(tonumber(s) - tonumber(c)) <= 1e-12 * math.abs(tonumber(s)), out)
    assert.matches("peak memory allocated by the runtime", out)
  end)
end)
