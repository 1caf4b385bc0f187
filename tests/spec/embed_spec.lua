-- tests/spec/embed_spec.lua — the embedding API from a host's side: runs
-- tests/tools/embed_api.c (built next to tycho), which prints "ok <check>"
-- or "FAIL <check>" for each check. The host application of examples/embed
-- is checked end to end by the CTest entry embed.install_build_run.

local BIN = assert(os.getenv("TYCHO_BIN"), "TYCHO_BIN must name the tycho executable")
local PROG = BIN:match("^(.*)/[^/]*$") .. "/tycho_embed_api"

describe("the embedding API", function()
  it("passes every check of tests/tools/embed_api.c", function()
    local p = assert(io.popen("'" .. PROG .. "' 2>&1"))
    local out = p:read("a")
    local _, _, status = p:close()
    assert.are.equal(0, status, out)
    assert.matches("\nall ok\n$", out)
    assert.is_nil(out:match("FAIL[^\n]*"))
  end)
end)
