-- tile_lifetime_spec.lua — a tile is valid only inside the piece it was given
-- to (issue 21, item 7). The worker reuses one record per argument slot, so a
-- tile kept in a worker global used to read and write a later launch's
-- argument in the same slot; every reference now carries the generation of
-- its piece. One worker (TYCHO_CPUS=1), so the later piece surely runs in the
-- state that kept the tile.

local function run(code)
  return spec_lua(code, {TYCHO_CPUS = "1"})
end

describe("a tile kept past its piece", function()
  it("is refused in a later launch that reuses its argument slot, naming task and argument", function()
    local out, code = run([[
      local keep = tycho.task { name = "keep", args = { "in", "out" },
        body = function(ctx, a, b) kept = b; for i = ctx.lo, ctx.hi do b[i] = a[i] end end }
      local use = tycho.task { name = "use", args = { "in", "out" },
        body = function(ctx, a, b)
          for i = ctx.lo, ctx.hi do b[i] = a[i] * 2 end
          local ok, err = pcall(function() return kept[1] end)
          assert(not ok); error(err, 0)
        end }
      print(keep(tycho.arange(3.0)):totable()[3])
      local ok, err = pcall(function() return use(tycho.arange(3.0)):totable() end)
      print(ok, err)
    ]])
    assert.are.equal(0, code, out)
    assert.matches("^2%.0\n", out)
    assert.matches("false\t.*tile used outside the piece it was given to %(task 'keep', argument 2%)", out)
  end)

  it("cannot write into a later launch's argument, even of the same task", function()
    local out, code = run([[
      local t = tycho.task { name = "w", args = { "out" },
        body = function(ctx, y)
          if kept then
            local ok, err = pcall(function() kept[1] = 99 end)
            print("write:", ok, err)
            print("kept:", tostring(kept), _G.tycho.is_tile(kept))
          end
          kept = y
          for i = ctx.lo, ctx.hi do y[i] = 7 end
        end }
      print(table.concat(t(tycho.zeros(2)):totable(), ","))
      print(table.concat(t(tycho.zeros(2)):totable(), ","))
    ]])
    assert.are.equal(0, code, out)
    assert.matches("write:\tfalse\t.*tile used outside the piece it was given to %(task 'w', argument 1%)", out)
    assert.matches("kept:\ttycho.tile %(outside its piece: task 'w', argument 1%)\ttrue", out)
    -- the second launch's result is its own, never 99
    assert.matches("^7%.0,7%.0\nwrite:.*\n7%.0,7%.0\n$", out)
  end)

  it("still works inside its own piece, through every accessor", function()
    local t = tycho.task { name = "acc" .. tostring(os.time()), args = { "in", "out" },
      body = function(ctx, a, b)
        for i = ctx.lo, ctx.hi do b:set(i, a:get(i) + #a) end
        local lo, hi = b:range()
        assert(lo == ctx.lo and hi == ctx.hi and tycho.is_tile(a) and b.ndim == 1)
      end }
    assert.are.same({4, 5, 6, 7}, t(tycho.arange(4.0)):totable())
  end)
end)
