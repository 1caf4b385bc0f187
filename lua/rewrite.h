/*
 * rewrite.h — the `parallel<...> do ... end` sugar, and the loaders that
 * apply it.
 *
 *   parallel<mode=all, overdecompose=2> do ... end
 * becomes, on the same line,
 *   do local __tycho_scope <close> = require("tycho").parallel({mode="all",
 *      overdecompose=2}, nil, "scope at file.lua:12"); ... end
 *
 * tl_rewrite is a pure function (no Lua state, no allocation but its output):
 * a host or a test can call it alone. The loaders below (implemented in
 * lpolicy.c) rewrite a text chunk and then load it; binary chunks are
 * refused unless bytecode is allowed (--allow-bytecode), and then load
 * unchanged. Every entry point of the shell and of the binding goes through
 * them, so scripts, the REPL, require, dofile, loadfile, load and busted's
 * spec loader all accept the sugar.
 */
#ifndef TL_REWRITE_H
#define TL_REWRITE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  TL_REWRITE_SAME = 0,   /* no sugar in the chunk: *out is NULL, load src itself */
  TL_REWRITE_DONE = 1,   /* *out (malloc'd, NUL-terminated, free() it) replaces src */
  TL_REWRITE_ERROR = -1, /* bad sugar: err holds "chunk:line: parallel<...>: ..." */
  TL_REWRITE_NOMEM = -2  /* out of memory: err says so */
};

/* Rewrite every `parallel<key=value, ...> do` of a Lua 5.4 text chunk into
 * plain Lua. Keeps every line where it was (the output has the same newlines,
 * each at the same place relative to the code around it), and never touches
 * strings, long strings, comments, or comparisons (`parallel < x`): only
 * `parallel` `<` NAME `=` (not `==`) starts the sugar, and that is never
 * valid Lua. Keys: mode (or parallel), overdecompose, min_chunk, favor,
 * memory, stream, fuse, fastmath. Values: a bare word (all, max-concurrency),
 * a number, a size (64KiB, "256MB"), true/false/on/off. A bad key or value is
 * an error naming chunk:line and the valid values. `chunkname` is Lua's
 * ("@file.lua", "=stdin", or the source of a string chunk); NULL is "?".
 * A header cut short by the end of the chunk fails with a message ending in
 * "near <eof>", which the REPL reads as "incomplete, read another line". */
int tl_rewrite(const char *src, size_t len, const char *chunkname, char **out, size_t *outlen,
               char *err, size_t errlen);

/* ---- loaders (lpolicy.c) ----------------------------------------------------------
 * luaL_loadbufferx and luaL_loadfilex with the rewrite applied to text
 * chunks: same arguments, same results (the chunk or an error message pushed,
 * LUA_OK / LUA_ERRSYNTAX / LUA_ERRFILE / LUA_ERRMEM). A sugar error is
 * LUA_ERRSYNTAX. tl_loadfilex(L, NULL, mode) reads standard input ("=stdin"),
 * skips a first line starting with '#' (keeping its newline, so line numbers
 * stay) and a UTF-8 byte order mark, as luaL_loadfilex does. */
struct lua_State;
int tl_loadbufferx(struct lua_State *L, const char *buf, size_t len, const char *name,
                   const char *mode);
int tl_loadfilex(struct lua_State *L, const char *filename, const char *mode);

#ifdef __cplusplus
}
#endif
#endif /* TL_REWRITE_H */
