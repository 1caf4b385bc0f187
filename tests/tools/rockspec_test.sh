#!/bin/sh
# tests/tools/rockspec_test.sh SRC WORK — `luarocks make` of SRC's rockspec
# into a temporary tree, then `require "tycho"` from stock lua5.4 through
# that tree only. SRC's tracked files are copied to WORK/src first, so the
# build (build.luarocks/) never lands in the clone. Exit 77 (skipped) without
# luarocks or lua5.4 (Debian: luarocks, lua5.4).
set -eu
src=$1 work=$2
for tool in luarocks lua5.4 git; do
  if ! command -v $tool >/dev/null 2>&1; then
    echo "$tool not found: skipped"
    exit 77
  fi
done
rm -rf "$work" && mkdir -p "$work/src"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf -) |
  tar -xf - -C "$work/src"
cd "$work/src"
rock=$(ls tycho-*.rockspec)
# Debian's luarocks runs on Lua 5.1 by default: ask for 5.4
luarocks --lua-version=5.4 make --tree "$work/tree" "$rock"
cd "$work"
LUA_CPATH="$work/tree/lib/lua/5.4/?.so" LUA_PATH="" lua5.4 -e '
  local tycho = require "tycho"
  assert(package.searchpath("tycho", package.cpath):find("/tree/lib/lua/5.4/tycho.so", 1, true))
  local x = tycho.arange(1, 101)
  local s = (x * 2):sum():item()
  local c = tycho.config()
  print("require \"tycho\" from the rock: sum", s, "isa", c.isa, "version", c.version)
  assert(s == 10100, s)
  assert(c.version == "0.1.0")'
