-- tests/spec/late_stores_spec.lua — a compiled run that writes one argument
-- in several sub-operations stores it once (fused_codegen.c, late_args): the
-- Laplacian's inside region, `Av = v * 4` then `Av = Av - v(shifted)` four
-- times, keeps Av in a register and stores it at the body's end. Only the
-- number of stores changes: numpy's values (pasted; the inputs are exact
-- binary fractions, so the values are exact), the same as the interpreter,
-- on 1 and 3 processors.

local cache = spec_tmpdir()
local run = spec_run

describe("a compiled run writing an argument several times", function()
  it("stores it once an element: the Laplacian's inside, numpy's values", function()
    local code = [[
      local N = 128
      local v = ((tycho.arange(N * N) * 7) % 17 * 0.25 - 1.0):reshape({ N, N })
      local Av = v * 4.0
      Av[{{2, -1}, {}}] = Av[{{2, -1}, {}}] - v[{{1, -2}, {}}]
      Av[{{1, -2}, {}}] = Av[{{1, -2}, {}}] - v[{{2, -1}, {}}]
      Av[{{}, {2, -1}}] = Av[{{}, {2, -1}}] - v[{{}, {1, -2}}]
      Av[{{}, {1, -2}}] = Av[{{}, {1, -2}}] - v[{{}, {2, -1}}]
      local function at(i, j) return Av[{ i, j }]:item() end
      print(at(1, 1), at(6, 8), at(65, 101), at(128, 128), Av:sum():item(), (Av * Av):sum():item())
    ]]
    -- numpy: Av[0, 0], Av[5, 7], Av[64, 100], Av[127, 127], Av.sum(), (Av * Av).sum()
    local want = "-6.75\t0.0\t-4.25\t10.75\t512.0\t763668.75\n"
    for _, env in ipairs({ { TYCHO_CODEGEN = "always", TYCHO_CACHE_DIR = cache, TYCHO_CPUS = "1" },
                           { TYCHO_CODEGEN = "always", TYCHO_CACHE_DIR = cache, TYCHO_CPUS = "3" },
                           { TYCHO_CODEGEN = "off", TYCHO_CPUS = "3" } }) do
      assert.are.equal(want, run(code, env))
    end
    -- the inside region's kernel (2-D rows, five sub-operations writing
    -- argument 0): one store of it, at the end of the body
    local p = assert(io.popen("grep -l 'void ty_fk2' '" .. cache .. "'/fk-*.c 2>/dev/null"))
    local files = {}
    for f in p:lines() do files[#files + 1] = f end
    p:close()
    local found = false
    for _, f in ipairs(files) do
      local src = assert(io.open(f)):read("a")
      -- (a column's kernel, generate_col, has a flat body: not this one)
      local body = src:match("static inline vd body%(.-\n}\n") or ""
      local _, subs = body:gsub(" %- a%d", "")
      if subs == 4 then
        found = true
        local _, stores = body:gsub("st%(p%[0%]", "")
        assert.are.equal(1, stores, body)
        assert.is_truthy(body:find("st%(p%[0%], v%d+%);\n  return"), body)
      end
    end
    -- (none at the baseline level, which generates no code: the values above are the test there)
    assert.are.equal(spec_codegen(), found, table.concat(files, " "))
    os.execute("rm -rf '" .. cache .. "'")
  end)
end)
