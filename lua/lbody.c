/*
 * lbody.c — moving a Lua task body from the state that declares it to the
 * worker states that run it.
 *
 * Lua states are not thread-safe, so a body never runs in the declaring
 * state: it travels as bytecode (lua_dump with debug information, so errors
 * keep the script's file name and line numbers) plus a plan for each of its
 * upvalues, and every worker state loads it once (tl_body_push) and caches
 * the closure.
 *
 * Upvalues are what would tie a body to the declaring state. The rules:
 *  - `_ENV` becomes the worker state's globals (standard libraries and the
 *    worker's `tycho` table), never the caller's;
 *  - a local declared `<const>` whose value can be copied travels by value:
 *    nil, booleans, numbers, strings, and Lua functions that themselves obey
 *    these rules (so `local f <const> = function(x) ... end` can be called
 *    from a body). Literal constants (`local N <const> = 10`) are folded by
 *    the compiler and are not upvalues at all;
 *  - anything else is refused at declaration with a message that names the
 *    upvalue: a plain local may change after the declaration (the body would
 *    see a stale copy), and tables, userdata and C functions cannot be
 *    copied into another state. Scalar arguments are the way in.
 *
 * Whether an upvalue is `<const>` is not visible through the debug API, but
 * Lua 5.4 writes each upvalue's variable kind into the dump (ldump.c,
 * dumpUpvalues); parse_upvalue_kinds reads it back. When the dump does not
 * parse (another Lua build), every upvalue counts as a plain local: the
 * rules only get stricter.
 *
 * Bytecode loaded here is always our own dump (mode "b"), never bytecode a
 * user supplied.
 */
#include "tl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting of `<const>` functions captured by a body: deeper chains are
 * refused (they cannot be cyclic, a `<const>` local cannot see itself). */
#define TL_BODY_DEPTH 16

/* lparser.h: kinds of variables (Lua 5.4) */
#define KIND_REGULAR 0
#define KIND_CONST 1

typedef enum uv_kind { UV_ENV, UV_NIL, UV_BOOL, UV_INT, UV_NUM, UV_STR, UV_FUNC } uv_kind;

typedef struct tl_upval {
  uv_kind kind;
  int b;
  lua_Integer i;
  lua_Number n;
  char *s; /* UV_STR: malloc'd, len bytes (may hold zeros) */
  size_t len;
  tl_body *fn; /* UV_FUNC */
} tl_upval;

struct tl_body {
  char *code; /* lua_dump output */
  size_t len;
  int nup;
  tl_upval *up;
};

void tl_body_free(tl_body *b) {
  if (!b) return;
  for (int i = 0; i < b->nup; i++) {
    free(b->up[i].s);
    tl_body_free(b->up[i].fn);
  }
  free(b->up);
  free(b->code);
  free(b);
}

/* ---- reading upvalue kinds out of a dump --------------------------------------- */

typedef struct cursor {
  const unsigned char *p, *end;
  int isize, nsize; /* sizeof(lua_Integer), sizeof(lua_Number) from the header */
  int instsize;     /* sizeof(Instruction) */
} cursor;

static bool skip(cursor *c, size_t n) {
  if ((size_t)(c->end - c->p) < n) return false;
  c->p += n;
  return true;
}

/* ldump.c's dumpSize: 7 bits per byte, most significant first, the last
 * byte marked with 0x80. */
static bool read_size(cursor *c, size_t *out) {
  size_t x = 0;
  for (int n = 0; n < 10; n++) {
    if (c->p >= c->end) return false;
    unsigned b = *c->p++;
    x = (x << 7) | (b & 0x7f);
    if (b & 0x80) {
      *out = x;
      return true;
    }
  }
  return false;
}

static bool skip_string(cursor *c) {
  size_t n;
  if (!read_size(c, &n)) return false;
  return n == 0 || skip(c, n - 1);
}

/* The kinds of the dumped main function's upvalues (nup of them). */
static bool parse_upvalue_kinds(const char *dump, size_t len, int nup, unsigned char *kinds) {
  static const char header[] = "\x1bLua\x54\x00\x19\x93\r\n\x1a\n";
  cursor c = {(const unsigned char *)dump, (const unsigned char *)dump + len, 0, 0, 0};
  if (len < sizeof header - 1 + 3 || memcmp(dump, header, sizeof header - 1) != 0) return false;
  c.p += sizeof header - 1;
  c.instsize = c.p[0];
  c.isize = c.p[1];
  c.nsize = c.p[2];
  c.p += 3;
  if (!skip(&c, (size_t)c.isize + (size_t)c.nsize)) return false; /* LUAC_INT, LUAC_NUM */
  if (!skip(&c, 1)) return false;                                  /* sizeupvalues */
  size_t n;
  if (!skip_string(&c)) return false;      /* source */
  if (!read_size(&c, &n)) return false;    /* linedefined */
  if (!read_size(&c, &n)) return false;    /* lastlinedefined */
  if (!skip(&c, 3)) return false;          /* numparams, is_vararg, maxstacksize */
  if (!read_size(&c, &n) || n > len || !skip(&c, n * (size_t)c.instsize)) return false;
  if (!read_size(&c, &n) || n > len) return false; /* constants */
  for (size_t k = 0; k < n; k++) {
    if (c.p >= c.end) return false;
    unsigned tag = *c.p++;
    switch (tag) {
    case 0x00: case 0x01: case 0x11: break;                  /* nil false true */
    case 0x03: if (!skip(&c, (size_t)c.isize)) return false; break; /* integer */
    case 0x13: if (!skip(&c, (size_t)c.nsize)) return false; break; /* float */
    case 0x04: case 0x14: if (!skip_string(&c)) return false; break;
    default: return false;
    }
  }
  if (!read_size(&c, &n) || n != (size_t)nup) return false;
  for (int k = 0; k < nup; k++) {
    if (!skip(&c, 3)) return false;
    kinds[k] = c.p[-1]; /* instack, idx, kind */
  }
  return true;
}

/* ---- capture ------------------------------------------------------------------- */

typedef struct membuf {
  char *p;
  size_t len, cap;
  bool oom;
} membuf;

static int writer(lua_State *L, const void *data, size_t size, void *ud) {
  (void)L;
  membuf *m = ud;
  if (m->len + size > m->cap) {
    size_t cap = m->cap ? m->cap : 4096;
    while (cap < m->len + size) cap *= 2;
    char *p = realloc(m->p, cap);
    if (!p) {
      m->oom = true;
      return 1;
    }
    m->p = p;
    m->cap = cap;
  }
  memcpy(m->p + m->len, data, size);
  m->len += size;
  return 0;
}

/* What a refusal says about where the upvalue sits: "'n'" for the body's
 * own, "'n' (in the function 'f' the body captures)" deeper. */
static void where(char *buf, size_t len, const char *name, const char *via) {
  if (via && *via)
    snprintf(buf, len, "'%s' (an upvalue of '%s', which the body captures)", name, via);
  else
    snprintf(buf, len, "'%s'", name);
}

/* Capture the Lua function at idx. On refusal: NULL with a message in err. */
static tl_body *capture(lua_State *L, int idx, int depth, const char *via, char *err,
                        size_t errlen) {
  idx = lua_absindex(L, idx);
  if (depth > TL_BODY_DEPTH) {
    snprintf(err, errlen, "captured <const> functions nest deeper than %d", TL_BODY_DEPTH);
    return NULL;
  }
  tl_body *b = calloc(1, sizeof *b);
  membuf m = {0};
  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">u", &ar);
  int nup = ar.nups;
  lua_pushvalue(L, idx);
  int rc = lua_dump(L, writer, &m, 0);
  lua_pop(L, 1);
  if (!b || rc != 0 || m.oom) {
    free(m.p);
    free(b);
    snprintf(err, errlen, "%s", rc && !m.oom ? "the body cannot be dumped" : "out of memory");
    return NULL;
  }
  b->code = m.p;
  b->len = m.len;
  b->nup = nup;
  unsigned char kinds[256];
  bool known = nup <= 255 && parse_upvalue_kinds(m.p, m.len, nup, kinds);
  if (nup > 0 && !(b->up = calloc((size_t)nup, sizeof *b->up))) {
    tl_body_free(b);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  for (int i = 0; i < nup; i++) {
    tl_upval *u = &b->up[i];
    const char *name = lua_getupvalue(L, idx, i + 1); /* pushes the value */
    char who[200];
    where(who, sizeof who, name ? name : "?", via);
    if (name && strcmp(name, "_ENV") == 0) {
      u->kind = UV_ENV;
      lua_pop(L, 1);
      continue;
    }
    if (!known || kinds[i] != KIND_CONST) {
      snprintf(err, errlen,
               "the body captures the local %s, which may change after the declaration and "
               "does not reach worker threads: pass it as a scalar argument (args = {..., "
               "\"scalar\"}), or declare it <const>",
               who);
      lua_pop(L, 1);
      tl_body_free(b);
      return NULL;
    }
    int t = lua_type(L, -1);
    const char *refuse = NULL;
    switch (t) {
    case LUA_TNIL: u->kind = UV_NIL; break;
    case LUA_TBOOLEAN:
      u->kind = UV_BOOL;
      u->b = lua_toboolean(L, -1);
      break;
    case LUA_TNUMBER:
      if (lua_isinteger(L, -1)) {
        u->kind = UV_INT;
        u->i = lua_tointeger(L, -1);
      } else {
        u->kind = UV_NUM;
        u->n = lua_tonumber(L, -1);
      }
      break;
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      u->kind = UV_STR;
      u->s = malloc(len ? len : 1);
      if (!u->s) refuse = "out of memory";
      else memcpy(u->s, s, len);
      u->len = len;
      break;
    }
    case LUA_TFUNCTION:
      if (lua_iscfunction(L, -1)) {
        refuse = "is a C function; call it through the worker's globals instead (for example "
                 "math.floor)";
      } else {
        char inner[400];
        u->kind = UV_FUNC;
        u->fn = capture(L, -1, depth + 1, name, inner, sizeof inner);
        if (!u->fn) {
          snprintf(err, errlen, "%s", inner);
          lua_pop(L, 1);
          tl_body_free(b);
          return NULL;
        }
      }
      break;
    default:
      refuse = "is a table or another value that cannot be copied to worker threads; pass its "
               "values as scalar arguments, or build it inside the body";
    }
    lua_pop(L, 1);
    if (refuse) {
      snprintf(err, errlen, "the body captures the <const> %s, which %s", who, refuse);
      tl_body_free(b);
      return NULL;
    }
  }
  return b;
}

tl_body *tl_body_capture(lua_State *L, int idx, const char *fn) {
  char err[600];
  if (lua_type(L, idx) != LUA_TFUNCTION || lua_iscfunction(L, idx)) {
    tl_error(L, fn, "body must be a Lua function, got %s", tl_typename(L, idx));
    return NULL;
  }
  tl_body *b = capture(L, idx, 0, NULL, err, sizeof err);
  if (!b) tl_error(L, fn, "%s", err);
  return b;
}

/* ---- loading in a worker state ---------------------------------------------------- */

typedef struct reader_state {
  const char *p;
  size_t len;
} reader_state;

static const char *reader(lua_State *L, void *ud, size_t *size) {
  (void)L;
  reader_state *r = ud;
  *size = r->len;
  r->len = 0;
  return *size ? r->p : NULL;
}

/* Raises (a memory error) only inside a protected call: the caller runs it
 * under lua_pcall. */
void tl_body_push(lua_State *W, const tl_body *b) {
  reader_state r = {b->code, b->len};
  if (lua_load(W, reader, &r, "=(task body)", "b") != LUA_OK) lua_error(W);
  for (int i = 0; i < b->nup; i++) {
    const tl_upval *u = &b->up[i];
    switch (u->kind) {
    case UV_ENV: lua_rawgeti(W, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS); break;
    case UV_NIL: lua_pushnil(W); break;
    case UV_BOOL: lua_pushboolean(W, u->b); break;
    case UV_INT: lua_pushinteger(W, u->i); break;
    case UV_NUM: lua_pushnumber(W, u->n); break;
    case UV_STR: lua_pushlstring(W, u->s, u->len); break;
    case UV_FUNC: tl_body_push(W, u->fn); break;
    }
    lua_setupvalue(W, -2, i + 1);
  }
}
