-- tests/spec/conv_blocks_spec.lua — the convolve variant's register blocks
-- (exec/kernels_conv.c): outputs whose taps all read inside x go in blocks
-- that keep their accumulators in registers, the others one tap at a time.
-- Every output must still be 0 + t0 + t1 + ... over the kernel's
-- multi-indices in C order, skipping taps outside x: checked bit for bit
-- against that sum written in Lua, at lengths around the block sizes (16,
-- 32, 64 outputs), for f64 and f32, 1-D and 2-D, every mode, contiguous and
-- strided x, with -0, inf and NaN in the kernel (0 * inf is NaN only where
-- a tap is taken), and at every instruction-set level (TYCHO_ISA).
local tycho = tycho or require "tycho"

local f32 = string.pack and function(v) return string.unpack("f", string.pack("f", v)) end

-- numpy's/scipy's correlation of x (nested tables) with w, as tycho defines
-- convolve: w flipped, then taps in C order from 0; `round` rounds each step
-- (f32).
local function ref1(x, w, mode, round)
  round = round or function(v) return v end
  local n, k = #x, #w
  if k > n then x, w, n, k = w, x, k, n end
  local wf = {}
  for j = 1, k do wf[j] = w[k + 1 - j] end
  local left = mode == "full" and k - 1 or mode == "same" and k // 2 or 0
  local len = mode == "full" and n + k - 1 or mode == "same" and n or n - k + 1
  local out = {}
  for o = 1, len do
    local acc = 0.0
    for j = 1, k do
      local xi = o - 1 - left + (j - 1)
      if xi >= 0 and xi < n then acc = round(acc + round(x[xi + 1] * wf[j])) end
    end
    out[o] = acc
  end
  return out
end

local function same_bits(got, want, path)
  assert(#got == #want, string.format("%s: %d elements, expected %d", path, #got, #want))
  for i = 1, #want do
    local g, w = got[i], want[i]
    local ok = (g ~= g and w ~= w) or (g == w and (g ~= 0 or 1 / g == 1 / w))
    assert(ok, string.format("%s[%d]: got %.17g, expected %.17g", path, i, g, w))
  end
end

local function series(n, seed)
  local t = {}
  for i = 1, n do t[i] = ((i * 7919 + seed * 104729) % 2003) / 97 - 10 end
  return t
end

describe("convolve's register blocks", function()
  it("1-D: the Lua sum's bits at lengths around the blocks, every mode, f64 and f32", function()
    for _, n in ipairs({ 1, 5, 15, 16, 17, 31, 33, 64, 65, 130, 2050, 4200 }) do
      for _, k in ipairs({ 1, 2, 5, 31 }) do
        local xs, ws = series(n, 1), series(k, 2)
        ws[1] = -0.0
        for _, mode in ipairs({ "full", "same", "valid" }) do
          if mode ~= "valid" or n >= k then
            local got = tycho.convolve(tycho.array(xs), tycho.array(ws), mode):totable()
            same_bits(got, ref1(xs, ws, mode), string.format("f64 n=%d k=%d %s", n, k, mode))
            local x32, w32 = tycho.array(xs, "f32"), tycho.array(ws, "f32")
            local xr, wr = x32:totable(), w32:totable()
            local g32 = tycho.convolve(x32, w32, mode)
            assert.are.equal("f32", g32.dtype)
            same_bits(g32:totable(), ref1(xr, wr, mode, f32), string.format("f32 n=%d k=%d %s", n, k, mode))
          end
        end
      end
    end
  end)

  it("inf and NaN in the kernel reach only the outputs whose taps are taken", function()
    local xs = series(100, 3)
    local ws = { 1.5, math.huge, -2, 0 / 0, 0.25 }
    for _, mode in ipairs({ "full", "same", "valid" }) do
      same_bits(tycho.convolve(tycho.array(xs), tycho.array(ws), mode):totable(), ref1(xs, ws, mode), mode)
    end
  end)

  it("a strided x and 2-D inputs give the sum's bits", function()
    local xs = series(300, 4)
    local x = tycho.array(xs)
    local strided = x:narrow(1, 1, 300)[{ { 1, 300, 3 } }]
    local picked = {}
    for i = 1, 300, 3 do picked[#picked + 1] = xs[i] end
    local ws = series(7, 5)
    same_bits(tycho.convolve(strided, tycho.array(ws), "same"):totable(), ref1(picked, ws, "same"), "strided")
    -- 2-D: rows of the 2-D "same" result are sums over the kernel rows in order
    local rows, kr = 9, 3
    local X, K = {}, {}
    for r = 1, rows do X[r] = series(70, r) end
    for r = 1, kr do K[r] = series(5, 10 + r) end
    local got = tycho.convolve(tycho.array(X), tycho.array(K), "same"):totable()
    for r = 1, rows do
      local want = {}
      for c = 1, 70 do want[c] = 0.0 end
      -- kernel rows in C order: flipped K row (kr + 1 - j) against X row r - 1 + (j - 1) - 1 + 1
      for j = 1, kr do
        local xr = r - (kr // 2) + (j - 1)
        if xr >= 1 and xr <= rows then
          local line = X[xr]
          local wrow = K[kr + 1 - j]
          local wf = {}
          for q = 1, 5 do wf[q] = wrow[6 - q] end
          for c = 1, 70 do
            local acc = want[c]
            for q = 1, 5 do
              local xi = c - 1 - 2 + (q - 1)
              if xi >= 0 and xi < 70 then acc = acc + line[xi + 1] * wf[q] end
            end
            want[c] = acc
          end
        end
      end
      same_bits(got[r], want, "2-D row " .. r)
    end
  end)

  it("the same bits at every instruction-set level and piece count", function()
    local code = [[
      local x = tycho.arange(0, 50000):astype("f64") * 0.37 % 11 - 5
      local w = tycho.arange(0, 9):astype("f64") * 1.3 - 4
      local a = tycho.convolve(x, w, "same")
      local img = (tycho.arange(0, 300 * 200) % 17 * 0.5):reshape({ 300, 200 })
      local b = tycho.convolve(img, w:reshape({ 3, 3 }), "full")
      local s = 0
      for _, t in ipairs({ a:totable(), b:ravel():totable() }) do
        for i = 1, #t do s = s + t[i] * ((i % 97) + 1) end
      end
      io.write(string.format("%.17g", s))
    ]]
    local base = spec_lua(code, { TYCHO_ISA = "baseline", TYCHO_CPUS = "1" })
    assert(base:match("^%-?%d"), base)
    for _, env in ipairs({ { TYCHO_ISA = "avx2", TYCHO_CPUS = "3" }, { TYCHO_ISA = "avx512", TYCHO_CPUS = "2" },
                           { TYCHO_CPUS = "4" } }) do
      assert.are.equal(base, spec_lua(code, env))
    end
  end)
end)
