-- LuaRocks: `luarocks make` in a clone builds the Lua module with CMake (the
-- portable build: x86-64-v2, kernels for AVX2 and AVX-512 chosen at run
-- time) and installs tycho.so, so that stock lua5.4 can `require "tycho"`.
-- Needs the Debian packages of scripts/setup (CMake, a C compiler, Lua 5.4,
-- OpenBLAS, SLEEF). tests/tools/rockspec_test.sh checks it (ctest -R rockspec).
rockspec_format = "3.0"
package = "tycho"
version = "0.1.0-1"
source = {
  -- not published: `luarocks make` builds the clone it is run in
  url = "file://.",
}
description = {
  summary = "A task-based array runtime: n-d arrays, fusion, every core, from Lua",
  detailed = [[
tycho defers array operations into a window of launches, fuses chains of
them, splits each launch into pieces and runs the pieces on every CPU core.
]],
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
build = {
  type = "command",
  build_command = [[
cmake -S . -B build.luarocks -DCMAKE_BUILD_TYPE=Release -DTYCHO_WERROR=OFF &&
cmake --build build.luarocks --target tycho_lua_module --parallel "$(nproc 2>/dev/null || echo 2)"
]],
  install = {
    lib = { tycho = "build.luarocks/lua/tycho.so" },
  },
}
