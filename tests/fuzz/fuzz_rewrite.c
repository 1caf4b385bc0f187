/*
 * fuzz_rewrite.c — libFuzzer target for the `parallel<...> do` rewrite
 * (lua/rewrite.c, tl_rewrite).
 *
 * Each input is a Lua chunk. Besides ASan and UBSan, the target checks the
 * contract of rewrite.h against Lua 5.4's own compiler (luaL_loadbufferx,
 * text mode only; nothing is run):
 *
 *  1. Lines: a rewritten chunk has as many lines as the input, counted as
 *     Lua counts them (\n, \r, \r\n and \n\r are one line break each).
 *  2. Sugar is never valid Lua: an input Lua compiles as it is must come
 *     back TL_REWRITE_SAME (so a `parallel<` inside a string, a long
 *     bracket or a comment was left alone), and so must any input without
 *     the word `parallel`.
 *  3. Each generated header names its own line: "scope at fuzz:N" stands on
 *     line N of the output.
 *  4. The rewrite adds no syntax error: with every generated header put
 *     back to a plain `do`, the chunk is what the user wrote less the
 *     sugar; when that compiles, the output compiles too.
 *  5. The output has no sugar left: rewriting it again gives SAME.
 *  6. An error is "fuzz:N: parallel<...>: ..." with N a line of the input.
 *  7. The chunk name does not change the outcome: the same input named by
 *     its own text (as load(s) names a string chunk) gives the same result
 *     and the same line count.
 */
#define _GNU_SOURCE /* memmem */
#include "rewrite.h"

#include <lauxlib.h>
#include <lua.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond)                                                                   \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "fuzz_rewrite: %s:%d: property failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                                   \
      abort();                                                                          \
    }                                                                                   \
  } while (0)

/* what rewrite.c writes for each header, up to its fields */
static const char OPEN[] = "do local __tycho_scope <close> = require(\"tycho\").parallel({";
#define OPEN_LEN (sizeof OPEN - 1)
static const char ORIGIN[] = "}, nil, \"scope at fuzz:";
#define ORIGIN_LEN (sizeof ORIGIN - 1)

/* A Lua state per input, with no libraries: chunks are compiled, never run.
 * (One state kept across inputs holds garbage between them, which libFuzzer
 * reads as possible leaks and checks with a full LeakSanitizer pass: 50
 * times slower.) */
static lua_State *L;

/* Lines of s as Lua's lexer counts them (llex.c, inclinenumber). */
static long lua_lines(const char *s, size_t n, size_t upto) {
  long lines = 1;
  for (size_t i = 0; i < n && i < upto;) {
    char c = s[i];
    if (c == '\n' || c == '\r') {
      lines++;
      i++;
      if (i < n && (s[i] == '\n' || s[i] == '\r') && s[i] != c) i++;
    } else {
      i++;
    }
  }
  return lines;
}

static bool compiles(const char *s, size_t n) {
  int r = luaL_loadbufferx(L, s, n, "=fuzz", "t");
  lua_settop(L, 0);
  return r == LUA_OK;
}

/* Find the generated headers of out; check property 3; write into plain
 * (capacity outlen + 1) the output with each of them put back to "do".
 * Returns the headers found. */
static int strip_headers(const char *out, size_t outlen, char *plain, size_t *plainlen) {
  int found = 0;
  size_t k = 0, i = 0;
  while (i < outlen) {
    const char *p = outlen - i >= OPEN_LEN ? memmem(out + i, outlen - i, OPEN, OPEN_LEN) : NULL;
    if (!p) break;
    size_t at = (size_t)(p - out);
    /* fields (no quotes but the values' own, no '}'), then the origin */
    const char *q = p + OPEN_LEN, *e = out + outlen;
    while (q < e && *q != '}') q++;
    long line = -1;
    if ((size_t)(e - q) >= ORIGIN_LEN && memcmp(q, ORIGIN, ORIGIN_LEN) == 0) {
      q += ORIGIN_LEN;
      line = 0;
      while (q < e && *q >= '0' && *q <= '9' && line < 100000000) line = line * 10 + (*q++ - '0');
    }
    REQUIRE(line >= 0 && (size_t)(e - q) >= 3 && memcmp(q, "\");", 3) == 0);
    REQUIRE(line == lua_lines(out, outlen, at));
    memcpy(plain + k, out + i, at - i);
    k += at - i;
    memcpy(plain + k, "do", 2);
    k += 2;
    i = (size_t)(q + 3 - out);
    found++;
  }
  memcpy(plain + k, out + i, outlen - i);
  k += outlen - i;
  *plainlen = k;
  return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *src = (const char *)data;
  L = luaL_newstate();
  REQUIRE(L != NULL);
  char *out = (char *)1;
  size_t outlen = 12345;
  char err[512];
  int r = tl_rewrite(src, size, "=fuzz", &out, &outlen, err, sizeof err);
  REQUIRE(r == TL_REWRITE_SAME || r == TL_REWRITE_DONE || r == TL_REWRITE_ERROR);
  long lines = lua_lines(src, size, size);

  if (r == TL_REWRITE_DONE) {
    REQUIRE(out != NULL && out[outlen] == '\0');
    REQUIRE(memmem(src, size, "parallel", 8) != NULL);
    REQUIRE(!compiles(src, size));                   /* 2 */
    REQUIRE(lua_lines(out, outlen, outlen) == lines); /* 1 */
    /* 3 and 4, unless the input holds a header's text itself (in a string
     * or a comment: it would read as generated) */
    if (!memmem(src, size, OPEN, OPEN_LEN)) {
      char *plain = malloc(outlen + 1);
      size_t plainlen;
      REQUIRE(plain);
      REQUIRE(strip_headers(out, outlen, plain, &plainlen) > 0);
      if (compiles(plain, plainlen)) REQUIRE(compiles(out, outlen));
      free(plain);
    }
    char *again = (char *)1;
    REQUIRE(tl_rewrite(out, outlen, "=fuzz", &again, NULL, NULL, 0) == TL_REWRITE_SAME); /* 5 */
    REQUIRE(again == NULL);
  } else {
    REQUIRE(out == NULL && outlen == 0);
    if (r == TL_REWRITE_SAME) {
      REQUIRE(err[0] == '\0');
    } else { /* 6 */
      long line = 0;
      int used = 0;
      REQUIRE(sscanf(err, "fuzz:%ld: parallel<...>: %n", &line, &used) == 1 && used > 0);
      REQUIRE(line >= 1 && line <= lines);
      REQUIRE(memmem(src, size, "parallel", 8) != NULL);
      REQUIRE(!compiles(src, size)); /* 2 */
    }
  }

  /* 7: named by its own text, up to its first NUL */
  char name[256];
  size_t nl = size < sizeof name - 1 ? size : sizeof name - 1;
  memcpy(name, src, nl);
  name[nl] = '\0';
  char *out2 = NULL;
  size_t outlen2 = 0;
  char err2[512];
  int r2 = tl_rewrite(src, size, name, &out2, &outlen2, err2, sizeof err2);
  REQUIRE(r2 == r);
  if (r2 == TL_REWRITE_DONE) REQUIRE(lua_lines(out2, outlen2, outlen2) == lines);
  if (r2 == TL_REWRITE_ERROR) {
    /* the same message after the chunk's name */
    const char *a = strstr(err, ": parallel<...>: "), *b = strstr(err2, ": parallel<...>: ");
    REQUIRE(a && b);
  }
  free(out2);
  free(out);
  lua_close(L);
  return 0;
}
